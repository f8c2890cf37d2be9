package gguf

import (
	"fmt"
	"math"
)

// ValueType is the type tag of a GGUF metadata value, as stored in the file.
type ValueType uint32

// The 13 GGUF metadata value types.
const (
	TypeUint8   ValueType = 0
	TypeInt8    ValueType = 1
	TypeUint16  ValueType = 2
	TypeInt16   ValueType = 3
	TypeUint32  ValueType = 4
	TypeInt32   ValueType = 5
	TypeFloat32 ValueType = 6
	TypeBool    ValueType = 7
	TypeString  ValueType = 8
	TypeArray   ValueType = 9
	TypeUint64  ValueType = 10
	TypeInt64   ValueType = 11
	TypeFloat64 ValueType = 12
)

var valueTypeNames = [...]string{"u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64"}

func (t ValueType) String() string {
	if int(t) < len(valueTypeNames) {
		return valueTypeNames[t]
	}
	return fmt.Sprintf("value type %d", uint32(t))
}

// fixedSize is the encoded size of a scalar of type t, 0 for string and array.
func (t ValueType) fixedSize() int {
	switch t {
	case TypeUint8, TypeInt8, TypeBool:
		return 1
	case TypeUint16, TypeInt16:
		return 2
	case TypeUint32, TypeInt32, TypeFloat32:
		return 4
	case TypeUint64, TypeInt64, TypeFloat64:
		return 8
	}
	return 0
}

// minSize is the fewest bytes one encoded value of type t can take; it bounds
// array counts by the bytes left in the file before anything is allocated.
func (t ValueType) minSize() int {
	switch t {
	case TypeString:
		return 8 // u64 length
	case TypeArray:
		return 12 // u32 element type + u64 count
	}
	return t.fixedSize()
}

// Value is one metadata value. Scalars hold uint8 … float64, bool or string;
// arrays hold a typed slice ([]uint32, []string, …) or, for arrays of arrays,
// []Value. The zero Value is invalid.
type Value struct {
	typ  ValueType
	elem ValueType // element type, for arrays
	v    any
}

// Scalar constructors.
func U8(v uint8) Value      { return Value{typ: TypeUint8, v: v} }
func I8(v int8) Value       { return Value{typ: TypeInt8, v: v} }
func U16(v uint16) Value    { return Value{typ: TypeUint16, v: v} }
func I16(v int16) Value     { return Value{typ: TypeInt16, v: v} }
func U32(v uint32) Value    { return Value{typ: TypeUint32, v: v} }
func I32(v int32) Value     { return Value{typ: TypeInt32, v: v} }
func F32(v float32) Value   { return Value{typ: TypeFloat32, v: v} }
func Bool(v bool) Value     { return Value{typ: TypeBool, v: v} }
func Str(v string) Value    { return Value{typ: TypeString, v: v} }
func U64(v uint64) Value    { return Value{typ: TypeUint64, v: v} }
func I64(v int64) Value     { return Value{typ: TypeInt64, v: v} }
func F64(v float64) Value   { return Value{typ: TypeFloat64, v: v} }
func (v Value) valid() bool { return v.v != nil }

// Element is a Go type that a GGUF array can hold.
type Element interface {
	uint8 | int8 | uint16 | int16 | uint32 | int32 | float32 | bool | string | uint64 | int64 | float64
}

// Array makes an array value from a typed slice.
func Array[T Element](vals []T) Value {
	var elem ValueType
	switch any(vals).(type) {
	case []uint8:
		elem = TypeUint8
	case []int8:
		elem = TypeInt8
	case []uint16:
		elem = TypeUint16
	case []int16:
		elem = TypeInt16
	case []uint32:
		elem = TypeUint32
	case []int32:
		elem = TypeInt32
	case []float32:
		elem = TypeFloat32
	case []bool:
		elem = TypeBool
	case []string:
		elem = TypeString
	case []uint64:
		elem = TypeUint64
	case []int64:
		elem = TypeInt64
	case []float64:
		elem = TypeFloat64
	}
	if vals == nil {
		vals = []T{}
	}
	return Value{typ: TypeArray, elem: elem, v: vals}
}

// ArrayOfArrays makes an array whose elements are themselves arrays.
func ArrayOfArrays(vals []Value) (Value, error) {
	for i, e := range vals {
		if e.typ != TypeArray {
			return Value{}, fmt.Errorf("gguf: array of arrays: element %d is a %s", i, e.typ)
		}
	}
	if vals == nil {
		vals = []Value{}
	}
	return Value{typ: TypeArray, elem: TypeArray, v: vals}, nil
}

// Type is the value's type tag; for arrays, Elem is the element type.
func (v Value) Type() ValueType { return v.typ }
func (v Value) Elem() ValueType { return v.elem }

// Any returns the Go value: a scalar, a typed slice, or []Value.
func (v Value) Any() any { return v.v }

// Len is the number of elements of an array, 0 for a scalar.
func (v Value) Len() int {
	switch a := v.v.(type) {
	case []uint8:
		return len(a)
	case []int8:
		return len(a)
	case []uint16:
		return len(a)
	case []int16:
		return len(a)
	case []uint32:
		return len(a)
	case []int32:
		return len(a)
	case []float32:
		return len(a)
	case []bool:
		return len(a)
	case []string:
		return len(a)
	case []uint64:
		return len(a)
	case []int64:
		return len(a)
	case []float64:
		return len(a)
	case []Value:
		return len(a)
	}
	return 0
}

// Uint returns an integer scalar as uint64; negative values are an error.
func (v Value) Uint() (uint64, error) {
	i, u, signed, ok := v.integer()
	if !ok {
		return 0, fmt.Errorf("is a %s, not an integer", v.describe())
	}
	if signed {
		if i < 0 {
			return 0, fmt.Errorf("is negative (%d)", i)
		}
		return uint64(i), nil
	}
	return u, nil
}

// Int returns an integer scalar as int64; values beyond int64 are an error.
func (v Value) Int() (int64, error) {
	i, u, signed, ok := v.integer()
	if !ok {
		return 0, fmt.Errorf("is a %s, not an integer", v.describe())
	}
	if !signed {
		if u > math.MaxInt64 {
			return 0, fmt.Errorf("%d does not fit in int64", u)
		}
		return int64(u), nil
	}
	return i, nil
}

func (v Value) integer() (i int64, u uint64, signed, ok bool) {
	switch x := v.v.(type) {
	case uint8:
		return 0, uint64(x), false, true
	case uint16:
		return 0, uint64(x), false, true
	case uint32:
		return 0, uint64(x), false, true
	case uint64:
		return 0, x, false, true
	case int8:
		return int64(x), 0, true, true
	case int16:
		return int64(x), 0, true, true
	case int32:
		return int64(x), 0, true, true
	case int64:
		return x, 0, true, true
	}
	return 0, 0, false, false
}

// Float returns a float32 or float64 scalar as float64.
func (v Value) Float() (float64, error) {
	switch x := v.v.(type) {
	case float32:
		return float64(x), nil
	case float64:
		return x, nil
	}
	return 0, fmt.Errorf("is a %s, not a float", v.describe())
}

// Bool returns a bool scalar.
func (v Value) Bool() (bool, error) {
	if b, ok := v.v.(bool); ok {
		return b, nil
	}
	return false, fmt.Errorf("is a %s, not a bool", v.describe())
}

// Str returns a string scalar.
func (v Value) Str() (string, error) {
	if s, ok := v.v.(string); ok {
		return s, nil
	}
	return "", fmt.Errorf("is a %s, not a string", v.describe())
}

// Strings returns an array of strings.
func (v Value) Strings() ([]string, error) {
	if s, ok := v.v.([]string); ok {
		return s, nil
	}
	return nil, fmt.Errorf("is a %s, not an array of strings", v.describe())
}

// Ints returns an array of any integer type as int64s.
func (v Value) Ints() ([]int64, error) {
	out := make([]int64, 0, v.Len())
	switch a := v.v.(type) {
	case []uint8:
		for _, x := range a {
			out = append(out, int64(x))
		}
	case []int8:
		for _, x := range a {
			out = append(out, int64(x))
		}
	case []uint16:
		for _, x := range a {
			out = append(out, int64(x))
		}
	case []int16:
		for _, x := range a {
			out = append(out, int64(x))
		}
	case []uint32:
		for _, x := range a {
			out = append(out, int64(x))
		}
	case []int32:
		for _, x := range a {
			out = append(out, int64(x))
		}
	case []int64:
		out = append(out, a...)
	case []uint64:
		for i, x := range a {
			if x > math.MaxInt64 {
				return nil, fmt.Errorf("element %d (%d) does not fit in int64", i, x)
			}
			out = append(out, int64(x))
		}
	default:
		return nil, fmt.Errorf("is a %s, not an array of integers", v.describe())
	}
	return out, nil
}

// Floats returns an array of float32 or float64 as float64s.
func (v Value) Floats() ([]float64, error) {
	switch a := v.v.(type) {
	case []float32:
		out := make([]float64, len(a))
		for i, x := range a {
			out[i] = float64(x)
		}
		return out, nil
	case []float64:
		return a, nil
	}
	return nil, fmt.Errorf("is a %s, not an array of floats", v.describe())
}

// Arrays returns the elements of an array of arrays.
func (v Value) Arrays() ([]Value, error) {
	if a, ok := v.v.([]Value); ok {
		return a, nil
	}
	return nil, fmt.Errorf("is a %s, not an array of arrays", v.describe())
}

// describe names the value's type the way an error message should:
// "u32", "array of string".
func (v Value) describe() string {
	if v.typ == TypeArray {
		return "array of " + v.elem.String()
	}
	if !v.valid() {
		return "missing value"
	}
	return v.typ.String()
}

// Describe names the value's type: "u32", "array of string".
func (v Value) Describe() string { return v.describe() }

// Index returns element i of an array as a Value (the zero Value for a scalar).
func (v Value) Index(i int) Value {
	switch a := v.v.(type) {
	case []uint8:
		return U8(a[i])
	case []int8:
		return I8(a[i])
	case []uint16:
		return U16(a[i])
	case []int16:
		return I16(a[i])
	case []uint32:
		return U32(a[i])
	case []int32:
		return I32(a[i])
	case []float32:
		return F32(a[i])
	case []bool:
		return Bool(a[i])
	case []string:
		return Str(a[i])
	case []uint64:
		return U64(a[i])
	case []int64:
		return I64(a[i])
	case []float64:
		return F64(a[i])
	case []Value:
		return a[i]
	}
	return Value{}
}
