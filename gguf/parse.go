package gguf

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"sort"
)

// Magic is the first four bytes of every GGUF file.
const Magic = "GGUF"

// Parse parses a whole GGUF file held in memory. The File keeps data: tensor
// data are views into it.
func Parse(data []byte) (*File, error) {
	p := &parser{data: data}
	return p.file()
}

// parser reads fields from data at pos, checking each read against the end.
type parser struct {
	data []byte
	pos  int64
}

func (p *parser) left() int64 { return int64(len(p.data)) - p.pos }

// need fails with a FormatError naming field unless n more bytes are there.
func (p *parser) need(n int64, field string) error {
	if n < 0 || p.left() < n {
		return errAt(p.pos, field, "needs %d bytes but the file ends after %d (truncated?)", n, p.left())
	}
	return nil
}

func (p *parser) u8(field string) (uint8, error) {
	if err := p.need(1, field); err != nil {
		return 0, err
	}
	v := p.data[p.pos]
	p.pos++
	return v, nil
}

func (p *parser) u16(field string) (uint16, error) {
	if err := p.need(2, field); err != nil {
		return 0, err
	}
	v := binary.LittleEndian.Uint16(p.data[p.pos:])
	p.pos += 2
	return v, nil
}

func (p *parser) u32(field string) (uint32, error) {
	if err := p.need(4, field); err != nil {
		return 0, err
	}
	v := binary.LittleEndian.Uint32(p.data[p.pos:])
	p.pos += 4
	return v, nil
}

func (p *parser) u64(field string) (uint64, error) {
	if err := p.need(8, field); err != nil {
		return 0, err
	}
	v := binary.LittleEndian.Uint64(p.data[p.pos:])
	p.pos += 8
	return v, nil
}

// count reads a u64 count of items that take at least minSize (≥ 1) bytes
// each and rejects counts the rest of the file cannot hold.
func (p *parser) count(field string, minSize int) (int, error) {
	at := p.pos
	n, err := p.u64(field)
	if err != nil {
		return 0, err
	}
	if n > uint64(p.left())/uint64(minSize) {
		return 0, errAt(at, field, "%d items of at least %d bytes each cannot fit in the %d bytes left in the file", n, minSize, p.left())
	}
	return int(n), nil
}

func (p *parser) str(field string) (string, error) {
	at := p.pos
	n, err := p.u64(field + " length")
	if err != nil {
		return "", err
	}
	if n > uint64(p.left()) {
		return "", errAt(at, field, "string of %d bytes runs past the end of the file (%d bytes left)", n, p.left())
	}
	s := string(p.data[p.pos : p.pos+int64(n)])
	p.pos += int64(n)
	return s, nil
}

func (p *parser) file() (*File, error) {
	if err := p.need(4, "magic"); err != nil {
		return nil, err
	}
	if string(p.data[:4]) != Magic {
		return nil, errAt(0, "magic", "file starts with %q, not %q: not a GGUF file", p.data[:4], Magic)
	}
	p.pos = 4
	version, err := p.u32("version")
	if err != nil {
		return nil, err
	}
	switch {
	case version == 2 || version == 3:
	case version == 1:
		return nil, errAt(4, "version", "GGUF version 1 is unsupported (re-convert the model with a current llama.cpp)")
	case bits.ReverseBytes32(version) >= 1 && bits.ReverseBytes32(version) <= 3:
		return nil, errAt(4, "version", "big-endian GGUF files are unsupported")
	default:
		return nil, errAt(4, "version", "unsupported GGUF version %d (bitvk reads versions 2 and 3)", version)
	}
	f := &File{Version: version, Alignment: DefaultAlignment, Size: uint64(len(p.data)), data: p.data}

	// A tensor info takes at least 8 (name) + 4 (n_dims) + 8 (one dim) + 4 (type) + 8 (offset) bytes,
	// a key-value pair at least 8 (key) + 4 (type) + 1 (smallest value).
	nTensors, err := p.count("header tensor_count", 32)
	if err != nil {
		return nil, err
	}
	nKV, err := p.count("header metadata_kv_count", 13)
	if err != nil {
		return nil, err
	}

	f.Meta = make([]KV, 0, nKV)
	f.index = make(map[string]int, nKV)
	for i := 0; i < nKV; i++ {
		at := p.pos
		key, err := p.str(fmt.Sprintf("metadata key #%d", i))
		if err != nil {
			return nil, err
		}
		if _, dup := f.index[key]; dup {
			return nil, errAt(at, fmt.Sprintf("metadata key %q", key), "appears twice")
		}
		field := fmt.Sprintf("metadata key %q", key)
		typ, err := p.u32(field + " type")
		if err != nil {
			return nil, err
		}
		v, err := p.value(ValueType(typ), field, 0)
		if err != nil {
			return nil, err
		}
		f.index[key] = len(f.Meta)
		f.Meta = append(f.Meta, KV{Key: key, Value: v})
	}

	if v, ok := f.Get(KeyAlignment); ok {
		a, isU32 := v.Any().(uint32)
		if !isU32 || a == 0 || a&(a-1) != 0 {
			return nil, errAt(0, "metadata key \""+KeyAlignment+"\"", "must be a u32 power of two, got %s %v", v.describe(), v.Any())
		}
		f.Alignment = uint64(a)
	}

	f.Tensors = make([]TensorInfo, 0, nTensors)
	f.byNam = make(map[string]int, nTensors)
	infoAt := make([]int64, 0, nTensors)
	for i := 0; i < nTensors; i++ {
		at := p.pos
		t, err := p.tensorInfo(i)
		if err != nil {
			return nil, err
		}
		if _, dup := f.byNam[t.Name]; dup {
			return nil, errAt(at, fmt.Sprintf("tensor %q", t.Name), "name appears twice")
		}
		f.byNam[t.Name] = len(f.Tensors)
		f.Tensors = append(f.Tensors, t)
		infoAt = append(infoAt, at)
	}

	f.DataStart = alignUp(uint64(p.pos), f.Alignment)
	f.dataEnd = uint64(p.pos)
	if err := f.checkData(infoAt); err != nil {
		return nil, err
	}
	for i := range f.Tensors {
		f.dataEnd = max(f.dataEnd, f.DataStart+f.Tensors[i].Offset+f.Tensors[i].Size)
	}
	return f, nil
}

func (p *parser) tensorInfo(i int) (TensorInfo, error) {
	var t TensorInfo
	name, err := p.str(fmt.Sprintf("tensor #%d name", i))
	if err != nil {
		return t, err
	}
	t.Name = name
	field := fmt.Sprintf("tensor %q", name)
	at := p.pos
	nDims, err := p.u32(field + " n_dims")
	if err != nil {
		return t, err
	}
	if nDims == 0 || nDims > maxDims {
		return t, errAt(at, field+" n_dims", "%d dimensions (ggml tensors have 1 to %d)", nDims, maxDims)
	}
	t.Dims = make([]uint64, nDims)
	n := uint64(1)
	for d := range t.Dims {
		at := p.pos
		if t.Dims[d], err = p.u64(fmt.Sprintf("%s dim %d", field, d)); err != nil {
			return t, err
		}
		hi, lo := bits.Mul64(n, t.Dims[d])
		if hi != 0 || lo > math.MaxInt64 {
			return t, errAt(at, fmt.Sprintf("%s dim %d", field, d), "shape %v overflows", t.Dims[:d+1])
		}
		n = lo
	}
	at = p.pos
	typ, err := p.u32(field + " type")
	if err != nil {
		return t, err
	}
	t.Type = Type(typ)
	if !t.Type.Known() {
		return t, errAt(at, field+" type", "unknown ggml tensor type %d", typ)
	}
	if bs := uint64(t.Type.BlockSize()); t.Dims[0]%bs != 0 {
		return t, errAt(at, field+" type", "%s needs rows of a multiple of %d values, but dim 0 is %d", t.Type, bs, t.Dims[0])
	}
	if t.Size, err = DataSize(t.Type, n); err != nil {
		return t, errAt(at, field+" type", "%v", err)
	}
	if t.Offset, err = p.u64(field + " offset"); err != nil {
		return t, err
	}
	return t, nil
}

// value reads one metadata value of type typ.
func (p *parser) value(typ ValueType, field string, depth int) (Value, error) {
	at := p.pos
	switch typ {
	case TypeUint8:
		v, err := p.u8(field)
		return U8(v), err
	case TypeInt8:
		v, err := p.u8(field)
		return I8(int8(v)), err
	case TypeUint16:
		v, err := p.u16(field)
		return U16(v), err
	case TypeInt16:
		v, err := p.u16(field)
		return I16(int16(v)), err
	case TypeUint32:
		v, err := p.u32(field)
		return U32(v), err
	case TypeInt32:
		v, err := p.u32(field)
		return I32(int32(v)), err
	case TypeFloat32:
		v, err := p.u32(field)
		return F32(math.Float32frombits(v)), err
	case TypeBool:
		v, err := p.u8(field)
		if err == nil && v > 1 {
			return Value{}, errAt(at, field, "bool byte is %d, not 0 or 1", v)
		}
		return Bool(v == 1), err
	case TypeString:
		v, err := p.str(field)
		return Str(v), err
	case TypeUint64:
		v, err := p.u64(field)
		return U64(v), err
	case TypeInt64:
		v, err := p.u64(field)
		return I64(int64(v)), err
	case TypeFloat64:
		v, err := p.u64(field)
		return F64(math.Float64frombits(v)), err
	case TypeArray:
		return p.array(field, depth)
	}
	return Value{}, errAt(at-4, field+" type", "unknown metadata value type %d", uint32(typ))
}

func (p *parser) array(field string, depth int) (Value, error) {
	if depth >= maxArrayDepth {
		return Value{}, errAt(p.pos, field, "arrays nested more than %d deep", maxArrayDepth)
	}
	at := p.pos
	et, err := p.u32(field + " array element type")
	if err != nil {
		return Value{}, err
	}
	elem := ValueType(et)
	if elem > TypeFloat64 {
		return Value{}, errAt(at, field+" array element type", "unknown metadata value type %d", et)
	}
	n, err := p.count(field+" array length", elem.minSize())
	if err != nil {
		return Value{}, err
	}
	if sz := elem.fixedSize(); sz > 0 {
		raw := p.data[p.pos : p.pos+int64(n*sz)]
		p.pos += int64(n * sz)
		return decodeFixedArray(elem, raw, n, field, at)
	}
	switch elem {
	case TypeString:
		out := make([]string, n)
		for i := range out {
			if out[i], err = p.str(fmt.Sprintf("%s[%d]", field, i)); err != nil {
				return Value{}, err
			}
		}
		return Array(out), nil
	default: // TypeArray
		out := make([]Value, n)
		for i := range out {
			if out[i], err = p.array(fmt.Sprintf("%s[%d]", field, i), depth+1); err != nil {
				return Value{}, err
			}
		}
		return Value{typ: TypeArray, elem: TypeArray, v: out}, nil
	}
}

// decodeFixedArray decodes n little-endian scalars of type elem.
func decodeFixedArray(elem ValueType, raw []byte, n int, field string, at int64) (Value, error) {
	le := binary.LittleEndian
	switch elem {
	case TypeUint8:
		return Array(append([]uint8{}, raw...)), nil
	case TypeInt8:
		out := make([]int8, n)
		for i := range out {
			out[i] = int8(raw[i])
		}
		return Array(out), nil
	case TypeBool:
		out := make([]bool, n)
		for i := range out {
			if raw[i] > 1 {
				return Value{}, errAt(at, fmt.Sprintf("%s[%d]", field, i), "bool byte is %d, not 0 or 1", raw[i])
			}
			out[i] = raw[i] == 1
		}
		return Array(out), nil
	case TypeUint16:
		out := make([]uint16, n)
		for i := range out {
			out[i] = le.Uint16(raw[2*i:])
		}
		return Array(out), nil
	case TypeInt16:
		out := make([]int16, n)
		for i := range out {
			out[i] = int16(le.Uint16(raw[2*i:]))
		}
		return Array(out), nil
	case TypeUint32:
		out := make([]uint32, n)
		for i := range out {
			out[i] = le.Uint32(raw[4*i:])
		}
		return Array(out), nil
	case TypeInt32:
		out := make([]int32, n)
		for i := range out {
			out[i] = int32(le.Uint32(raw[4*i:]))
		}
		return Array(out), nil
	case TypeFloat32:
		out := make([]float32, n)
		for i := range out {
			out[i] = math.Float32frombits(le.Uint32(raw[4*i:]))
		}
		return Array(out), nil
	case TypeUint64:
		out := make([]uint64, n)
		for i := range out {
			out[i] = le.Uint64(raw[8*i:])
		}
		return Array(out), nil
	case TypeInt64:
		out := make([]int64, n)
		for i := range out {
			out[i] = int64(le.Uint64(raw[8*i:]))
		}
		return Array(out), nil
	default: // TypeFloat64
		out := make([]float64, n)
		for i := range out {
			out[i] = math.Float64frombits(le.Uint64(raw[8*i:]))
		}
		return Array(out), nil
	}
}

// checkData checks that every tensor's data lies inside the file, starts
// aligned, and overlaps no other tensor. infoAt holds the file offset of each
// tensor's info, so errors point at the record that is wrong.
func (f *File) checkData(infoAt []int64) error {
	if f.DataStart > f.Size && len(f.Tensors) > 0 {
		return errAt(int64(f.Size), "data section", "starts at byte %d, beyond the file size %d (truncated download?)", f.DataStart, f.Size)
	}
	order := make([]int, len(f.Tensors))
	for i := range order {
		order[i] = i
	}
	for i := range f.Tensors {
		t := &f.Tensors[i]
		field := fmt.Sprintf("tensor %q", t.Name)
		if t.Offset%f.Alignment != 0 {
			return errAt(infoAt[i], field+" offset", "offset %d is not a multiple of the alignment %d", t.Offset, f.Alignment)
		}
		end, carry := bits.Add64(f.DataStart+t.Offset, t.Size, 0)
		if carry != 0 || t.Offset > f.Size || end > f.Size {
			return errAt(infoAt[i], field+" data", "ends at byte %d, beyond the file size %d (truncated download?)", f.DataStart+t.Offset+t.Size, f.Size)
		}
	}
	sort.Slice(order, func(a, b int) bool { return f.Tensors[order[a]].Offset < f.Tensors[order[b]].Offset })
	for k := 1; k < len(order); k++ {
		prev, cur := &f.Tensors[order[k-1]], &f.Tensors[order[k]]
		if prev.Offset+prev.Size > cur.Offset {
			return errAt(infoAt[order[k]], fmt.Sprintf("tensor %q offset", cur.Name),
				"data at offset %d overlaps tensor %q (offset %d, %d bytes)", cur.Offset, prev.Name, prev.Offset, prev.Size)
		}
	}
	return nil
}

func alignUp(n, a uint64) uint64 { return (n + a - 1) / a * a }
