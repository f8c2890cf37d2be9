// Tests for the I2_S <-> TQ2_0 conversions and the ternary histogram.
package gguf

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"
)

// decodeAll decodes a whole tensor or fails the test.
func decodeAll(t *testing.T, typ Type, data []byte, n int) []float32 {
	t.Helper()
	dst := make([]float32, n)
	if err := Decode(typ, data, n, dst); err != nil {
		t.Fatalf("Decode(%v): %v", typ, err)
	}
	return dst
}

func TestI2SToTQ2RoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for _, scale := range []float32{0.8125, -1.5, 0, 65504, float32(math.Ldexp(1, -24)), float32(math.Inf(1))} {
		for _, n := range []int{0, 256, 512, 256 * 9} {
			tern := randomTernary(r, n)
			i2s, err := EncodeI2_S(tern, scale)
			if err != nil {
				t.Fatal(err)
			}
			tq2, err := I2_SToTQ2_0(i2s, n)
			if err != nil {
				t.Fatalf("scale %g n=%d: %v", scale, n, err)
			}
			a, b := decodeAll(t, TypeI2_S, i2s, n), decodeAll(t, TypeTQ2_0, tq2, n)
			for i := range a {
				if !sameFloat(a[i], b[i]) {
					t.Fatalf("scale %g n=%d value %d: I2_S %g, TQ2_0 %g", scale, n, i, a[i], b[i])
				}
			}
			back, err := TQ2_0ToI2_S(tq2, n)
			if err != nil {
				t.Fatalf("scale %g n=%d back: %v", scale, n, err)
			}
			if n > 0 && !bytes.Equal(back, i2s) {
				t.Fatalf("scale %g n=%d: I2_S -> TQ2_0 -> I2_S changed the bytes", scale, n)
			}
		}
	}
	// The other direction, from a TQ2_0 encoder output with one d.
	n := 256 * 4
	src := make([]float32, n)
	for i, v := range randomTernary(r, n) {
		src[i] = 0.375 * float32(v)
	}
	for b := range 4 {
		src[256*b] = 0.375
	}
	tq2, _ := EncodeTQ2_0(src)
	i2s, err := TQ2_0ToI2_S(tq2, n)
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := I2_SScale(i2s, n); s != 0.375 {
		t.Errorf("scale %g, want 0.375", s)
	}
	back, err := I2_SToTQ2_0(i2s, n)
	if err != nil || !bytes.Equal(back, tq2) {
		t.Fatalf("TQ2_0 -> I2_S -> TQ2_0 changed the bytes (err %v)", err)
	}
	dec := decodeAll(t, TypeI2_S, i2s, n)
	for i := range src {
		if dec[i] != src[i] {
			t.Fatalf("value %d: %g, want %g", i, dec[i], src[i])
		}
	}
}

// tq2Blocks builds a TQ2_0 tensor from per-block codes-as-ternary and F16 d.
func tq2Blocks(t *testing.T, tern []int8, ds []uint16) []byte {
	t.Helper()
	i2s, err := EncodeI2_S(tern, 1)
	if err != nil {
		t.Fatal(err)
	}
	tq2, err := I2_SToTQ2_0(i2s, len(tern))
	if err != nil {
		t.Fatal(err)
	}
	for b, d := range ds {
		binary.LittleEndian.PutUint16(tq2[66*b+64:], d)
	}
	return tq2
}

func TestTQ2ToI2SZeroBlocks(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	n := 256 * 5
	tern := randomTernary(r, n)
	for _, b := range []int{0, 2, 4} { // all-zero blocks
		clear(tern[256*b : 256*b+256])
	}
	// Zero blocks carry d = 0, -3 and the largest finite half; the others 0.5.
	tq2 := tq2Blocks(t, tern, []uint16{0x0000, 0x3800, 0xc200, 0x3800, 0x7bff})
	i2s, err := TQ2_0ToI2_S(tq2, n)
	if err != nil {
		t.Fatal(err)
	}
	a, b := decodeAll(t, TypeTQ2_0, tq2, n), decodeAll(t, TypeI2_S, i2s, n)
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("value %d: TQ2_0 %g, I2_S %g", i, a[i], b[i])
		}
	}
	if s, _ := I2_SScale(i2s, n); s != 0.5 {
		t.Errorf("scale %g, want the shared 0.5", s)
	}
	// All blocks zero: the scale is the first block's d.
	tq2 = tq2Blocks(t, make([]int8, 512), []uint16{0x4000, 0x3c00})
	i2s, err = TQ2_0ToI2_S(tq2, 512)
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := I2_SScale(i2s, 512); s != 2 {
		t.Errorf("all-zero scale %g, want 2", s)
	}
	// A zero block with infinite d decodes to NaN, so it must match.
	tq2 = tq2Blocks(t, tern, []uint16{0x7c00, 0x3800, 0x0000, 0x3800, 0x0000})
	_, err = TQ2_0ToI2_S(tq2, n)
	errContains(t, "zero block with d = Inf", err, "block 1", "block 0")
}

func TestConversionErrors(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	n := 1024
	tern := randomTernary(r, n)

	i2s, _ := EncodeI2_S(tern, 0.1)
	_, err := I2_SToTQ2_0(i2s, n)
	errContains(t, "scale 0.1", err, "scale 0.1 is not exactly representable in F16; TQ2_0 would change the weights")
	i2s, _ = EncodeI2_S(tern, 1e-9) // underflows F16
	_, err = I2_SToTQ2_0(i2s, n)
	errContains(t, "scale 1e-9", err, "not exactly representable")

	i2s, _ = EncodeI2_S(tern, 1)
	bad := bytes.Clone(i2s)
	bad[32*3+5] |= 3 << 2  // value 384 + 64 + 5 = 453
	bad[32*3+20] |= 3 << 6 // value 384 + 20 = 404, the smaller index
	_, err = I2_SToTQ2_0(bad, n)
	errContains(t, "I2_S code 3", err, "value 404", "code 3")
	_, err = I2_SToTQ2_0(i2s[:len(i2s)-128], n-384)
	errContains(t, "I2_S n = 640", err, "640", "256")
	for l := range len(i2s) {
		if _, err := I2_SToTQ2_0(i2s[:l], n); err == nil {
			t.Fatalf("I2_SToTQ2_0 on %d of %d bytes: no error", l, len(i2s))
		}
	}

	tq2, _ := I2_SToTQ2_0(i2s, n)
	diff := bytes.Clone(tq2)
	binary.LittleEndian.PutUint16(diff[66*2+64:], 0x3800)
	_, err = TQ2_0ToI2_S(diff, n)
	errContains(t, "differing d", err, "block 2", "0.5", "block 0")
	diff = bytes.Clone(tq2)
	binary.LittleEndian.PutUint16(diff[66*3+64:], 0xbc00) // -1: sign matters
	_, err = TQ2_0ToI2_S(diff, n)
	errContains(t, "d = -1", err, "block 3")

	bad = bytes.Clone(tq2)
	bad[66*2+32+7] |= 3 << 4 // block 2, chunk 1, group 2, m 7: 512+128+64+7
	_, err = TQ2_0ToI2_S(bad, n)
	errContains(t, "TQ2_0 code 3", err, "value 711", "code 3")
	for l := range len(tq2) {
		if _, err := TQ2_0ToI2_S(tq2[:l], n); err == nil {
			t.Fatalf("TQ2_0ToI2_S on %d of %d bytes: no error", l, len(tq2))
		}
	}
	if _, err := TQ2_0ToI2_S(tq2, 300); err == nil {
		t.Error("TQ2_0ToI2_S n = 300: no error")
	}
}

// refHistogram counts classes value by value: 0 = -1, 1 = 0, 2 = +1,
// 3 = invalid; TQ1_0 canonical bytes are found by brute force.
func refHistogram(typ Type, data []byte, n int) (c [4]uint64, scales []float32) {
	canon := func(b byte, trits int) bool {
		for q := range 243 {
			if trits == 4 && q%3 != 0 {
				continue
			}
			if (q*256+242)/243 == int(b) {
				return true
			}
		}
		return false
	}
	for i := range n {
		switch typ {
		case TypeI2_S:
			blk, j := i/128, i%128
			c[data[32*blk+j%32]>>(6-2*(j/32))&3]++
		case TypeTQ2_0:
			r := i % 256
			c[data[66*(i/256)+32*(r/128)+r%32]>>(2*(r%128/32))&3]++
		case TypeTQ1_0:
			blk, r := data[54*(i/256):], i%256
			var b byte
			var k, trits int
			switch {
			case r < 160:
				b, k, trits = blk[r%32], r/32, 5
			case r < 240:
				b, k, trits = blk[32+(r-160)%16], (r-160)/16, 5
			default:
				b, k, trits = blk[48+(r-240)%4], (r-240)/4, 4
			}
			if !canon(b, trits) {
				c[3]++
			} else {
				c[refTrits(b, trits)[k]]++
			}
		}
	}
	switch typ {
	case TypeI2_S:
		scales = []float32{math.Float32frombits(binary.LittleEndian.Uint32(data[n/4:]))}
	case TypeTQ2_0:
		for b := range n / 256 {
			scales = append(scales, F16ToF32(binary.LittleEndian.Uint16(data[66*b+64:])))
		}
	case TypeTQ1_0:
		for b := range n / 256 {
			scales = append(scales, F16ToF32(binary.LittleEndian.Uint16(data[54*b+52:])))
		}
	}
	return c, scales
}

func TestHistogramVsReference(t *testing.T) {
	r := rand.New(rand.NewPCG(19, 20))
	for _, typ := range []Type{TypeI2_S, TypeTQ2_0, TypeTQ1_0} {
		for _, blocks := range []int{0, 1, 3, 130, 301} {
			n := 256 * blocks
			data := randomBytes(r, typ, n)
			got, err := TernaryHistogram(typ, data, uint64(n))
			if err != nil {
				t.Fatalf("%v n=%d: %v", typ, n, err)
			}
			c, scales := refHistogram(typ, data, n)
			want := TernaryStats{Neg: c[0], Zero: c[1], Pos: c[2], Invalid: c[3], Scales: len(scales)}
			first := true
			for _, s := range scales {
				if isNaN32(s) {
					continue
				}
				if first {
					want.ScaleMin, want.ScaleMax, first = s, s, false
				}
				want.ScaleMin, want.ScaleMax = min(want.ScaleMin, s), max(want.ScaleMax, s)
			}
			if got != want {
				t.Fatalf("%v n=%d:\n got %+v\nwant %+v", typ, n, got, want)
			}
			if got.Total() != uint64(n) {
				t.Errorf("%v n=%d: Total %d", typ, n, got.Total())
			}
		}
	}
}

// TestHistogramLarge fills whole tensors with one byte so a field that
// overflowed its 16-bit accumulator slot would show.
func TestHistogramLarge(t *testing.T) {
	const n = 128 * 40000 // 1.28 MB of I2_S codes: many flushes
	for _, tc := range []struct {
		fill byte
		want TernaryStats
	}{
		{0xaa, TernaryStats{Pos: n}},
		{0xff, TernaryStats{Invalid: n}},
		{0x00, TernaryStats{Neg: n}},
		{0x55, TernaryStats{Zero: n}},
		{0x1b, TernaryStats{Neg: n / 4, Zero: n / 4, Pos: n / 4, Invalid: n / 4}}, // codes 0,1,2,3
	} {
		data := bytes.Repeat([]byte{tc.fill}, n/4+32)
		binary.LittleEndian.PutUint32(data[n/4:], math.Float32bits(2))
		tc.want.ScaleMin, tc.want.ScaleMax, tc.want.Scales = 2, 2, 1
		got, err := TernaryHistogram(TypeI2_S, data, n)
		if err != nil || got != tc.want {
			t.Errorf("I2_S fill %#02x: %+v, %v; want %+v", tc.fill, got, err, tc.want)
		}
	}
	const blocks = 1000
	tq2 := bytes.Repeat([]byte{0xff}, 66*blocks)
	tq1 := bytes.Repeat([]byte{0xff}, 54*blocks) // qs 255: five +1 trits; qh 255: not canonical
	for b := range blocks {
		binary.LittleEndian.PutUint16(tq2[66*b+64:], F32ToF16(float32(b)))
		binary.LittleEndian.PutUint16(tq1[54*b+52:], F32ToF16(-float32(b)))
	}
	got, err := TernaryHistogram(TypeTQ2_0, tq2, 256*blocks)
	if want := (TernaryStats{Invalid: 256 * blocks, ScaleMin: 0, ScaleMax: 999, Scales: blocks}); err != nil || got != want {
		t.Errorf("TQ2_0: %+v, %v; want %+v", got, err, want)
	}
	got, err = TernaryHistogram(TypeTQ1_0, tq1, 256*blocks)
	if want := (TernaryStats{Pos: 240 * blocks, Invalid: 16 * blocks, ScaleMin: -999, ScaleMax: 0, Scales: blocks}); err != nil || got != want {
		t.Errorf("TQ1_0: %+v, %v; want %+v", got, err, want)
	}
}

func TestHistogramNaNScale(t *testing.T) {
	tq2 := tq2Blocks(t, make([]int8, 768), []uint16{0x7e00, 0x4000, 0x3c00})
	got, err := TernaryHistogram(TypeTQ2_0, tq2, 768)
	if want := (TernaryStats{Zero: 768, ScaleMin: 1, ScaleMax: 2, Scales: 3}); err != nil || got != want {
		t.Errorf("%+v, %v; want %+v", got, err, want)
	}
}

func TestHistogramErrors(t *testing.T) {
	for _, typ := range []Type{TypeTL1, TypeTL2} {
		_, err := TernaryHistogram(typ, make([]byte, 1024), 256)
		errContains(t, typ.String(), err, "histogram not supported for "+typ.String()+" (bitvk cannot decode it)")
	}
	for _, typ := range []Type{TypeF32, TypeQ8_0, TypeI8_S, Type(99)} {
		_, err := TernaryHistogram(typ, make([]byte, 1024), 256)
		errContains(t, typ.String(), err, "histogram not supported for "+typ.String())
	}
	for _, typ := range []Type{TypeI2_S, TypeTQ2_0, TypeTQ1_0} {
		size, _ := DataSize(typ, 512)
		data := make([]byte, size)
		for l := range int(size) {
			if _, err := TernaryHistogram(typ, data[:l], 512); err == nil {
				t.Fatalf("%v: %d of %d bytes: no error", typ, l, size)
			}
		}
		_, err := TernaryHistogram(typ, data, 500)
		errContains(t, typ.String()+" n = 500", err, "500")
		_, err = TernaryHistogram(typ, data, math.MaxUint64/256*256)
		if err == nil {
			t.Errorf("%v: huge n: no error", typ)
		}
	}
}

func TestEntropyAndFractions(t *testing.T) {
	for _, tc := range []struct {
		s             TernaryStats
		entropy       float64
		neg, zero, po float64
	}{
		{TernaryStats{Neg: 1000, Zero: 1000, Pos: 1000}, math.Log2(3), 1.0 / 3, 1.0 / 3, 1.0 / 3},
		{TernaryStats{Neg: 7, Zero: 7, Pos: 7, Invalid: 21}, math.Log2(3), 1.0 / 6, 1.0 / 6, 1.0 / 6},
		{TernaryStats{}, 0, 0, 0, 0},
		{TernaryStats{Invalid: 5}, 0, 0, 0, 0},
		{TernaryStats{Zero: 9}, 0, 0, 1, 0},
		{TernaryStats{Neg: 4, Pos: 4}, 1, 0.5, 0, 0.5},
		{TernaryStats{Neg: 1, Zero: 2, Pos: 1}, 1.5, 0.25, 0.5, 0.25},
	} {
		if got := tc.s.Entropy(); math.Abs(got-tc.entropy) > 1e-12 {
			t.Errorf("%+v: Entropy %g, want %g", tc.s, got, tc.entropy)
		}
		neg, zero, pos := tc.s.Fractions()
		if math.Abs(neg-tc.neg) > 1e-12 || math.Abs(zero-tc.zero) > 1e-12 || math.Abs(pos-tc.po) > 1e-12 {
			t.Errorf("%+v: Fractions %g %g %g", tc.s, neg, zero, pos)
		}
	}
	// Real counts from a uniform random tensor come close to log2(3).
	r := rand.New(rand.NewPCG(21, 22))
	data, _ := EncodeI2_S(randomTernary(r, 128*1000), 1)
	s, err := TernaryHistogram(TypeI2_S, data, 128*1000)
	if err != nil || math.Abs(s.Entropy()-math.Log2(3)) > 1e-3 {
		t.Errorf("uniform entropy %g (err %v), want ≈ %g", s.Entropy(), err, math.Log2(3))
	}
}

func TestCrumbTables(t *testing.T) {
	for b := range 256 {
		rv := crumbReverse[b]
		for g := range 4 {
			if rv>>(2*g)&3 != byte(b)>>(6-2*g)&3 {
				t.Fatalf("crumbReverse[%#02x] = %#02x", b, rv)
			}
		}
		if crumbReverse[rv] != byte(b) {
			t.Fatalf("crumbReverse is not an involution at %#02x", b)
		}
		want := false
		for g := range 4 {
			want = want || b>>(2*g)&3 == 3
		}
		if hasCode3[b] != want {
			t.Fatalf("hasCode3[%#02x] = %v", b, hasCode3[b])
		}
	}
}

func BenchmarkTernaryHistogramI2_S(b *testing.B) {
	const n = 128 << 20 // 32 MiB of codes
	r := rand.New(rand.NewPCG(23, 24))
	data := make([]byte, n/4+32)
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := TernaryHistogram(TypeI2_S, data, n); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadBaseline reads the same 32 MiB as BenchmarkTernaryHistogramI2_S
// with the plainest loop there is (XOR of 64-bit words): the yardstick the
// histogram's bytes per second are compared with.
func BenchmarkReadBaseline(b *testing.B) {
	words := make([]uint64, (128<<20)/4/8)
	for i := range words {
		words[i] = uint64(i) * 0x9E3779B97F4A7C15
	}
	b.SetBytes(int64(8 * len(words)))
	var sink uint64
	for b.Loop() {
		var x uint64
		for _, w := range words {
			x ^= w
		}
		sink += x
	}
	if sink == 1 {
		b.Log(sink)
	}
}
