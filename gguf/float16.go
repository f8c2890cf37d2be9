// F16 (IEEE 754 binary16) and BF16 (bfloat16) scalars.
//
// binary16: sign(1) | exponent(5, bias 15) | mantissa(10).
//
//	e = 0:       (-1)^s · m · 2^-24            (zero and subnormals)
//	0 < e < 31:  (-1)^s · (1 + m/1024) · 2^(e-15)
//	e = 31:      ±Inf (m = 0) or NaN (m != 0)
//
// bfloat16 is the upper half of a float32: sign(1) | exponent(8, bias 127) |
// mantissa(7), so widening is a 16-bit shift.
//
// Narrowing rounds to nearest, ties to even, in integer arithmetic so the
// result does not depend on the host's float behaviour. NaN payloads are
// kept where they fit; a NaN whose kept bits would all be zero gets the
// quiet bit so it stays NaN instead of turning into Inf.
package gguf

import "math"

// F16ToF32 widens an IEEE binary16 value to float32 (exact).
func F16ToF32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch {
	case exp == 0:
		// Zero or subnormal: m·2^-24, exact in float32 (m < 2^10).
		v := float32(mant) * (1.0 / (1 << 24))
		return math.Float32frombits(math.Float32bits(v) | sign)
	case exp == 0x1f:
		// Inf or NaN: the 10-bit payload moves to the top of float32's 23.
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	default:
		// Rebias the exponent: 15 -> 127.
		return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
	}
}

// F32ToF16 narrows a float32 to IEEE binary16, rounding to nearest even.
// Values too large for binary16 (|f| >= 65520) become ±Inf; values that
// round below the smallest subnormal (|f| <= 2^-25) become ±0.
func F32ToF16(f float32) uint16 {
	bits := math.Float32bits(f)
	sign := uint16(bits>>16) & 0x8000
	exp := int(bits>>23) & 0xff
	mant := bits & 0x7fffff

	if exp == 0xff {
		if mant == 0 {
			return sign | 0x7c00
		}
		m := uint16(mant >> 13)
		if m == 0 {
			m = 0x200 // the payload did not fit: keep it a (quiet) NaN
		}
		return sign | 0x7c00 | m
	}

	e := exp - 127 + 15 // binary16 biased exponent
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e <= 0 {
		// Subnormal (or zero) result: the value is (1.mant)·2^(e-15) =
		// m24·2^(e-39), i.e. m24 >> (14-e) units of 2^-24. float32
		// subnormals (exp = 0) are far below 2^-25 and round to zero.
		if e < -10 || exp == 0 {
			return sign
		}
		m := mant | 0x800000
		shift := uint(14 - e) // 14..24
		h := m >> shift
		rem := m & (1<<shift - 1)
		half := uint32(1) << (shift - 1)
		if rem > half || rem == half && h&1 == 1 {
			h++ // may carry into the exponent field: smallest normal, correct
		}
		return sign | uint16(h)
	}
	h := uint32(e)<<10 | mant>>13
	rem := mant & 0x1fff
	if rem > 0x1000 || rem == 0x1000 && h&1 == 1 {
		h++ // a carry out of the mantissa bumps the exponent; 0x7c00 is Inf
	}
	return sign | uint16(h)
}

// BF16ToF32 widens a bfloat16 value to float32 (exact).
func BF16ToF32(h uint16) float32 {
	return math.Float32frombits(uint32(h) << 16)
}

// F32ToBF16 narrows a float32 to bfloat16, rounding to nearest even;
// overflow becomes ±Inf and NaN stays NaN.
func F32ToBF16(f float32) uint16 {
	bits := math.Float32bits(f)
	if bits&0x7fffffff > 0x7f800000 {
		h := uint16(bits >> 16)
		if h&0x7f == 0 {
			h |= 0x40 // the payload did not fit: keep it a (quiet) NaN
		}
		return h
	}
	// Adding 0x7fff plus the lowest kept bit rounds half to even; a carry
	// propagates into the exponent (and to Inf) naturally.
	bits += 0x7fff + (bits>>16)&1
	return uint16(bits >> 16)
}
