// Tests for F16/BF16 conversion against slow, obviously correct
// references: widening by math.Ldexp, narrowing by searching for the
// nearest representable value.
package gguf

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
)

// refF16Value is the value of a binary16 bit pattern, straight from the
// definition (NaN for NaN patterns).
func refF16Value(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	e := int(h>>10) & 0x1f
	m := float64(h & 0x3ff)
	switch e {
	case 0:
		return sign * math.Ldexp(m, -24)
	case 31:
		if m != 0 {
			return math.NaN()
		}
		return math.Inf(int(sign))
	}
	return sign * math.Ldexp(1+m/1024, e-15)
}

// refF16Finite is the ascending list of non-negative finite halves'
// values, indexed by bit pattern 0x0000..0x7bff, plus 65536 (the value the
// pattern 0x7c00 would have if the exponent went on) so rounding between
// 65504 and Inf follows the same tie-to-even rule as everywhere else.
var refF16Finite = func() []float64 {
	v := make([]float64, 0x7c01)
	for h := range 0x7c00 {
		v[h] = refF16Value(uint16(h))
	}
	v[0x7c00] = 65536
	return v
}()

// refF32ToF16 rounds f to the nearest half, ties to the even pattern.
// The differences are exact in float64: both operands are multiples of
// 2^-149 within 2^17 of each other and span at most 2^17..2^-47 when
// nonzero (a float32 above 2^-24 has its last bit at or above 2^-47).
func refF32ToF16(f float32) uint16 {
	x := float64(f)
	if math.IsNaN(x) {
		return 0x7e00 // any NaN; callers compare NaN-ness only
	}
	var sign uint16
	if math.Signbit(x) {
		sign, x = 0x8000, -x
	}
	if math.IsInf(x, 0) || x >= 65536 {
		return sign | 0x7c00
	}
	// Largest pattern whose value is <= x.
	i := sort.Search(len(refF16Finite), func(i int) bool { return refF16Finite[i] > x }) - 1
	lo, hi := uint16(i), uint16(i+1)
	dlo, dhi := x-refF16Finite[lo], refF16Finite[hi]-x
	switch {
	case dlo < dhi || dlo == dhi && lo&1 == 0:
		return sign | lo
	default:
		return sign | hi // hi = 0x7c00 is Inf
	}
}

func isNaN32(f float32) bool { return f != f }

func TestF16ToF32All(t *testing.T) {
	for h := range 1 << 16 {
		got, want := F16ToF32(uint16(h)), refF16Value(uint16(h))
		if math.IsNaN(want) {
			if !isNaN32(got) {
				t.Errorf("F16ToF32(%#04x) = %g, want NaN", h, got)
			}
			continue
		}
		if float64(got) != want || math.Signbit(float64(got)) != math.Signbit(want) {
			t.Errorf("F16ToF32(%#04x) = %g, want %g", h, got, want)
		}
	}
}

func TestF16RoundTripAll(t *testing.T) {
	for h := range 1 << 16 {
		f := F16ToF32(uint16(h))
		back := F32ToF16(f)
		if isNaN32(f) {
			if back&0x7c00 != 0x7c00 || back&0x3ff == 0 {
				t.Errorf("NaN %#04x came back as non-NaN %#04x", h, back)
			}
			continue
		}
		if back != uint16(h) {
			t.Errorf("F32ToF16(F16ToF32(%#04x)) = %#04x", h, back)
		}
	}
}

func TestF32ToF16Cases(t *testing.T) {
	tiny := func(m float64) float32 { return float32(math.Ldexp(m, -24)) } // m units of 2^-24
	for _, tc := range []struct {
		f    float32
		want uint16
	}{
		{0, 0x0000},
		{float32(math.Copysign(0, -1)), 0x8000},
		{1, 0x3c00},
		{-2, 0xc000},
		{65504, 0x7bff},
		{65519.996, 0x7bff},
		{65520, 0x7c00}, // halfway to the next would-be value: ties to even (Inf)
		{-65520, 0xfc00},
		{1e10, 0x7c00},
		{float32(math.Inf(1)), 0x7c00},
		{float32(math.Inf(-1)), 0xfc00},
		{tiny(1), 0x0001},
		{tiny(0.5), 0x0000},                   // half of the smallest subnormal: tie to even 0
		{math.Nextafter32(tiny(0.5), 1), 1},   // just above: rounds up
		{tiny(1.5), 0x0002},                   // tie between 1 and 2: even
		{tiny(2.5), 0x0002},                   // tie between 2 and 3: even
		{tiny(1023.5), 0x0400},                // largest subnormal/smallest normal tie
		{tiny(1022.5), 0x03fe},                //
		{float32(math.Ldexp(1, -14)), 0x0400}, // smallest normal
		{1 + 1.0/2048, 0x3c00},                // tie, even is 1
		{1 + 3.0/2048, 0x3c02},                // tie, even is 1+2/1024
		{math.Nextafter32(1+1.0/2048, 2), 0x3c01},
		{1 + 1023.0/1024, 0x3fff},
		{1 + 1023.5/1024, 0x4000}, // tie between 0x3fff and 0x4000: even
		{math.SmallestNonzeroFloat32, 0x0000},
		{-math.SmallestNonzeroFloat32, 0x8000},
		{float32(math.Ldexp(1, -30)), 0x0000},
	} {
		if got := F32ToF16(tc.f); got != tc.want {
			t.Errorf("F32ToF16(%g) = %#04x, want %#04x", tc.f, got, tc.want)
		}
	}
	for _, bits := range []uint32{0x7fc00000, 0xffc00000, 0x7f800001, 0x7fa00000, 0xff800fff} {
		h := F32ToF16(math.Float32frombits(bits))
		if h&0x7c00 != 0x7c00 || h&0x3ff == 0 {
			t.Errorf("F32ToF16(NaN %#08x) = %#04x, not a NaN", bits, h)
		}
		if h>>15 != uint16(bits>>31) {
			t.Errorf("F32ToF16(NaN %#08x) lost the sign", bits)
		}
	}
}

// TestF32ToF16Halfway checks every midpoint between adjacent halves, and
// the float32 values either side of it, against the reference.
func TestF32ToF16Halfway(t *testing.T) {
	check := func(f float32) {
		t.Helper()
		if got, want := F32ToF16(f), refF32ToF16(f); got != want {
			t.Fatalf("F32ToF16(%g [%#08x]) = %#04x, want %#04x", f, math.Float32bits(f), got, want)
		}
	}
	for h := 0; h < 0x7c00; h++ {
		mid := float32((refF16Finite[h] + refF16Finite[h+1]) / 2) // exact: 12 significant bits
		for _, f := range []float32{mid, math.Nextafter32(mid, 0), math.Nextafter32(mid, 1e9)} {
			check(f)
			check(-f)
		}
	}
}

func TestF32ToF16Random(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 1 << 20 {
		bits := r.Uint32()
		if r.IntN(2) == 0 {
			// Concentrate on the binary16 range: exponents 2^-26..2^17.
			bits = bits&0x807fffff | uint32(127-26+r.IntN(44))<<23
		}
		f := math.Float32frombits(bits)
		got, want := F32ToF16(f), refF32ToF16(f)
		if isNaN32(f) {
			if got&0x7c00 != 0x7c00 || got&0x3ff == 0 {
				t.Fatalf("F32ToF16(NaN %#08x) = %#04x", bits, got)
			}
			continue
		}
		if got != want {
			t.Fatalf("F32ToF16(%g [%#08x]) = %#04x, want %#04x", f, bits, got, want)
		}
	}
}

// refF32ToBF16 picks the nearer of the two bfloat16 neighbours of f
// (truncation and truncation+1 ulp), ties to the even pattern.
func refF32ToBF16(f float32) uint16 {
	bits := math.Float32bits(f)
	lo := uint16(bits >> 16)
	if bits&0xffff == 0 {
		return lo
	}
	hi := lo + 1
	x := math.Abs(float64(f))
	vlo := math.Abs(float64(BF16ToF32(lo)))
	vhi := math.Abs(float64(math.Float32frombits(uint32(hi) << 16)))
	if hi&0x7fff == 0x7f80 {
		vhi = math.Ldexp(1, 128) // rounding up past the largest finite gives Inf
	}
	// Exact in float64: both differences are below one bfloat16 ulp of x.
	dlo, dhi := x-vlo, vhi-x
	if dlo < dhi || dlo == dhi && lo&1 == 0 {
		return lo
	}
	return hi
}

func TestBF16(t *testing.T) {
	for h := range 1 << 16 {
		f := BF16ToF32(uint16(h))
		if math.Float32bits(f) != uint32(h)<<16 {
			t.Fatalf("BF16ToF32(%#04x) bits = %#08x", h, math.Float32bits(f))
		}
		back := F32ToBF16(f)
		if isNaN32(f) {
			if !isNaN32(BF16ToF32(back)) {
				t.Errorf("BF16 NaN %#04x came back as %#04x", h, back)
			}
		} else if back != uint16(h) {
			t.Errorf("F32ToBF16(BF16ToF32(%#04x)) = %#04x", h, back)
		}
	}
	for _, tc := range []struct {
		bits uint32
		want uint16
	}{
		{0x3f808000, 0x3f80}, // tie, even stays
		{0x3f818000, 0x3f82}, // tie, odd rounds up
		{0x3f808001, 0x3f81}, // above the tie
		{0x3f807fff, 0x3f80}, // below the tie
		{0x7f7fffff, 0x7f80}, // largest float32 rounds to Inf
		{0xff7f8000, 0xff80}, // tie to even past the largest finite: -Inf
		{0x7f7f7fff, 0x7f7f},
		{0x00000001, 0x0000}, // tiny subnormal
		{0x80008000, 0x8000},
		{0x7f800000, 0x7f80},
	} {
		if got := F32ToBF16(math.Float32frombits(tc.bits)); got != tc.want {
			t.Errorf("F32ToBF16(%#08x) = %#04x, want %#04x", tc.bits, got, tc.want)
		}
	}
	for _, bits := range []uint32{0x7fc00000, 0x7f800001, 0xff800100, 0x7f80ffff} {
		if h := F32ToBF16(math.Float32frombits(bits)); !isNaN32(BF16ToF32(h)) || h>>15 != uint16(bits>>31) {
			t.Errorf("F32ToBF16(NaN %#08x) = %#04x, not a NaN of the same sign", bits, h)
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 1 << 20 {
		bits := r.Uint32()
		f := math.Float32frombits(bits)
		if isNaN32(f) {
			continue
		}
		if got, want := F32ToBF16(f), refF32ToBF16(f); got != want {
			t.Fatalf("F32ToBF16(%#08x) = %#04x, want %#04x", bits, got, want)
		}
	}
}
