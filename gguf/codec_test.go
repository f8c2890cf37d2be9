// Tests for the block codecs: hand-computed golden blocks, decoders
// against slow per-element references, encode/decode round trips, and
// error handling on bad lengths.
package gguf

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// i2sGolden is one I2_S block of 128 values, computed by hand: values
// 0..31 = +1 (code 2), 32..63 = -1 (code 0), 64..95 = 0 (code 1), 96+m =
// +1 for even m, -1 for odd m. Byte m = code(m)<<6 | code(32+m)<<4 |
// code(64+m)<<2 | code(96+m): even m 0b10_00_01_10 = 0x86, odd m
// 0b10_00_01_00 = 0x84. Then the trailer: scale 0.75 = 0x3f400000
// little-endian, 28 zero bytes.
var i2sGolden = []byte{
	0x86, 0x84, 0x86, 0x84, 0x86, 0x84, 0x86, 0x84, 0x86, 0x84, 0x86, 0x84, 0x86, 0x84, 0x86, 0x84,
	0x86, 0x84, 0x86, 0x84, 0x86, 0x84, 0x86, 0x84, 0x86, 0x84, 0x86, 0x84, 0x86, 0x84, 0x86, 0x84,
	0x00, 0x00, 0x40, 0x3f, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
}

func i2sGoldenValues() []int8 {
	v := make([]int8, 128)
	for m := range 32 {
		v[m], v[32+m], v[64+m] = 1, -1, 0
		v[96+m] = 1 - 2*int8(m%2)
	}
	return v
}

func TestI2SGolden(t *testing.T) {
	vals := i2sGoldenValues()
	enc, err := EncodeI2_S(vals, 0.75)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(enc, i2sGolden) {
		t.Fatalf("EncodeI2_S:\n got % x\nwant % x", enc, i2sGolden)
	}
	got := make([]int8, 128)
	scale, err := UnpackI2_S(i2sGolden, 128, got)
	if err != nil || scale != 0.75 {
		t.Fatalf("UnpackI2_S: scale %g, err %v", scale, err)
	}
	dec := make([]float32, 128)
	if err := Decode(TypeI2_S, i2sGolden, 128, dec); err != nil {
		t.Fatal(err)
	}
	for i, v := range vals {
		if got[i] != v || dec[i] != 0.75*float32(v) {
			t.Fatalf("value %d: unpacked %d, decoded %g; want %d", i, got[i], dec[i], v)
		}
	}
	// Code 3 decodes to 0; the trailer after the scale is never read.
	blk := bytes.Clone(i2sGolden)
	blk[0] = 0xff // values 0, 32, 64, 96 get code 3
	for i := 36; i < 64; i++ {
		blk[i] = 0xa5
	}
	if err := Decode(TypeI2_S, blk, 128, dec); err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 32, 64, 96} {
		if dec[i] != 0 {
			t.Errorf("code 3 at value %d decoded to %g, want 0", i, dec[i])
		}
	}
	if dec[1] != 0.75 || dec[33] != -0.75 || dec[97] != -0.75 {
		t.Errorf("garbage in the trailer changed the values: %g %g %g", dec[1], dec[33], dec[97])
	}
}

// tq2Golden is one TQ2_0 block, d = 1 (F16 0x3c00), computed by hand.
// Chunk 0 (values 0..127), even m: values m, 32+m, 64+m, 96+m = +1, -1,
// 0, +1, codes 2,0,1,2 at shifts 0,2,4,6: 2 | 0<<2 | 1<<4 | 2<<6 = 0x92;
// odd m: all -1, code 0: 0x00. Chunk 1 (values 128..255): 0, +1, -1, -1,
// codes 1,2,0,0: 1 | 2<<2 = 0x09.
var tq2Golden = func() []byte {
	b := make([]byte, 0, 66)
	for m := range 32 {
		b = append(b, []byte{0x92, 0x00}[m%2])
	}
	b = append(b, bytes.Repeat([]byte{0x09}, 32)...)
	return append(b, 0x00, 0x3c)
}()

func tq2GoldenValues() []float32 {
	v := make([]float32, 256)
	for m := range 32 {
		if m%2 == 0 {
			v[m], v[32+m], v[64+m], v[96+m] = 1, -1, 0, 1
		} else {
			v[m], v[32+m], v[64+m], v[96+m] = -1, -1, -1, -1
		}
		v[128+m], v[160+m], v[192+m], v[224+m] = 0, 1, -1, -1
	}
	return v
}

// tq1Golden is one TQ1_0 block, d = 0.5 (F16 0x3800), computed by hand.
// qs[m], m < 32, holds values 32k+m (k = 0..4). Even m: +1,0,-1,+1,0 =
// trits 2,1,0,2,1 -> q = 162+27+0+6+1 = 196, byte ceil(196·256/243) =
// ceil(206.49) = 207 = 0xcf. Odd m: all 0 = trits 1,1,1,1,1 -> q = 121,
// ceil(127.47) = 128 = 0x80. qs[32+m] holds 160+16k+m: -1,-1,0,+1,+1 =
// trits 0,0,1,2,2 -> q = 17, ceil(17.91) = 18 = 0x12. qh[j] holds
// 240+4k+j: 0,+1,-1,0 = trits 1,2,0,1 -> q = 27+18+0+1 = 46, times 3 =
// 138, ceil(145.38) = 146 = 0x92.
var tq1Golden = func() []byte {
	b := make([]byte, 0, 54)
	for m := range 32 {
		b = append(b, []byte{0xcf, 0x80}[m%2])
	}
	b = append(b, bytes.Repeat([]byte{0x12}, 16)...)
	b = append(b, 0x92, 0x92, 0x92, 0x92)
	return append(b, 0x00, 0x38)
}()

func tq1GoldenValues() []float32 {
	v := make([]float32, 256)
	for m := range 32 {
		if m%2 == 0 {
			for k, x := range []float32{1, 0, -1, 1, 0} {
				v[32*k+m] = x / 2
			}
		}
	}
	for m := range 16 {
		for k, x := range []float32{-1, -1, 0, 1, 1} {
			v[160+16*k+m] = x / 2
		}
	}
	for j := range 4 {
		for k, x := range []float32{0, 1, -1, 0} {
			v[240+4*k+j] = x / 2
		}
	}
	return v
}

func TestTQGolden(t *testing.T) {
	for _, tc := range []struct {
		typ    Type
		golden []byte
		values []float32
		enc    func([]float32) ([]byte, error)
	}{
		{TypeTQ2_0, tq2Golden, tq2GoldenValues(), EncodeTQ2_0},
		{TypeTQ1_0, tq1Golden, tq1GoldenValues(), EncodeTQ1_0},
	} {
		enc, err := tc.enc(tc.values)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(enc, tc.golden) {
			t.Errorf("%v encode:\n got % x\nwant % x", tc.typ, enc, tc.golden)
		}
		dec := make([]float32, 256)
		if err := Decode(tc.typ, tc.golden, 256, dec); err != nil {
			t.Fatal(err)
		}
		for i := range dec {
			if dec[i] != tc.values[i] {
				t.Fatalf("%v decode: value %d = %g, want %g", tc.typ, i, dec[i], tc.values[i])
			}
		}
	}
	// TQ2_0 code 3 decodes to +2·d, as ggml does.
	blk := bytes.Clone(tq2Golden)
	blk[1] = 0xc0 // value 96+1 gets code 3
	dec := make([]float32, 256)
	if err := Decode(TypeTQ2_0, blk, 256, dec); err != nil || dec[97] != 2 {
		t.Errorf("TQ2_0 code 3 decoded to %g (err %v), want 2", dec[97], err)
	}
}

// refTrits returns the k most significant base-3 digits of b/256, i.e.
// the digits of floor(b·3^k/256) — how a TQ1_0 byte reads as k trits.
func refTrits(b byte, k int) []int {
	p := 1
	for range k {
		p *= 3
	}
	q := int(b) * p / 256
	d := make([]int, k)
	for i := k - 1; i >= 0; i-- {
		d[i], q = q%3, q/3
	}
	return d
}

// TestTQ1Bytes checks the byte-level trit packing in both directions.
func TestTQ1Bytes(t *testing.T) {
	// Every packed number q = 0..242 survives packing into a byte.
	for q := range 243 {
		b := tq1Pack(uint16(q))
		for i, d := range refTrits(b, 5) {
			wantDigit := q / []int{81, 27, 9, 3, 1}[i] % 3
			if d != wantDigit || int(tq1Trits[b][i]) != wantDigit {
				t.Fatalf("q=%d packed to %d: digit %d reads %d / %d, want %d", q, b, i, d, tq1Trits[b][i], wantDigit)
			}
		}
		if !tq1Canon5[b] {
			t.Fatalf("byte %d written by the encoder is not marked canonical", b)
		}
	}
	// Every byte, canonical or not, decodes by ggml's formula to the digits
	// of floor(b·243/256).
	canon5, canon4 := 0, 0
	for b := range 256 {
		for i, d := range refTrits(byte(b), 5) {
			if int(tq1Trits[b][i]) != d {
				t.Fatalf("byte %d digit %d = %d, want %d", b, i, tq1Trits[b][i], d)
			}
		}
		if tq1Canon5[b] {
			canon5++
		}
		if tq1Canon4[b] {
			canon4++
		}
	}
	if canon5 != 243 || canon4 != 81 {
		t.Errorf("canonical bytes: %d (qs) and %d (qh), want 243 and 81", canon5, canon4)
	}
	// The 13 qs bytes ggml's encoder never writes, listed independently of
	// the table: for these q, ceil(q·256/243) + 1 still decodes to q, so
	// that second byte is never written. ggml's ceiling division reaches 255 (q = 242),
	// so bytes >= 243 are all valid encodings (243 is q = 230).
	var nonCanon []int
	for b := range 256 {
		if !tq1Canon5[b] {
			nonCanon = append(nonCanon, b)
		}
	}
	want := []int{1, 20, 40, 60, 79, 99, 119, 138, 158, 178, 197, 217, 237}
	if !slices.Equal(nonCanon, want) {
		t.Errorf("non-canonical qs bytes %v, want %v", nonCanon, want)
	}
	if tq1Pack(242) != 255 || tq1Pack(230) != 243 {
		t.Errorf("tq1Pack(242) = %d, tq1Pack(230) = %d", tq1Pack(242), tq1Pack(230))
	}
}

// Slow per-element reference decoders: each value finds its own byte.

func refDecodeI2S(data []byte, n, i int) float32 {
	scale := math.Float32frombits(binary.LittleEndian.Uint32(data[n/4:]))
	blk, j := i/128, i%128
	code := data[32*blk+j%32] >> (6 - 2*(j/32)) & 3
	return float32([]int{-1, 0, 1, 0}[code]) * scale
}

func refDecodeTQ2(data []byte, i int) float32 {
	blk := data[66*(i/256):]
	r := i % 256
	c, m, k := r/128, r%32, r%128/32
	code := int(blk[32*c+m] >> (2 * k) & 3)
	return float32(code-1) * F16ToF32(binary.LittleEndian.Uint16(blk[64:]))
}

func refDecodeTQ1(data []byte, i int) float32 {
	blk := data[54*(i/256):]
	r := i % 256
	var trit int
	switch {
	case r < 160:
		trit = refTrits(blk[r%32], 5)[r/32]
	case r < 240:
		trit = refTrits(blk[32+(r-160)%16], 5)[(r-160)/16]
	default:
		trit = refTrits(blk[48+(r-240)%4], 4)[(r-240)/4]
	}
	return float32(trit-1) * F16ToF32(binary.LittleEndian.Uint16(blk[52:]))
}

// refDecodeQ6K uses the fact that each Q6_K scale covers 16 consecutive
// values: y[i] = d·sc[i/16]·q[i], with q[i] found by refQ6Place.
func refDecodeQ6K(data []byte, i int) float32 {
	blk := data[210*(i/256):]
	r := i % 256
	qlIdx, high, qhIdx, shift := refQ6Place(r)
	ql := blk[qlIdx]
	if high {
		ql >>= 4
	}
	q := int(ql&0xf|(blk[128+qhIdx]>>shift&3)<<4) - 32
	d := F16ToF32(binary.LittleEndian.Uint16(blk[208:]))
	return d * float32(int8(blk[192+r/16])) * float32(q)
}

// refQ6Place says where the 6-bit q of value r (0..255) of a Q6_K block
// lives: low 4 bits in ql[qlIdx] (high nibble if high), top 2 bits in
// qh[qhIdx] at shift.
func refQ6Place(r int) (qlIdx int, high bool, qhIdx int, shift uint) {
	h, g, l := r/128, r%128/32, r%32
	return 64*h + l + 32*(g&1), g >= 2, 32*h + l, uint(2 * g)
}

// refDecodeQ4: value j of a block is nibble j%16 of qs, low for j < 16.
func refDecodeQ4(data []byte, i int) float32 {
	blk := data[18*(i/32):]
	j := i % 32
	nib := blk[2+j%16]
	if j >= 16 {
		nib >>= 4
	}
	return float32(int(nib&0xf)-8) * F16ToF32(binary.LittleEndian.Uint16(blk))
}

func refDecodeQ8(data []byte, i int) float32 {
	blk := data[34*(i/32):]
	return F16ToF32(binary.LittleEndian.Uint16(blk)) * float32(int8(blk[2+i%32]))
}

func refDecode(typ Type, data []byte, n, i int) float32 {
	switch typ {
	case TypeF32:
		return math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
	case TypeF16:
		return float32(refF16Value(binary.LittleEndian.Uint16(data[2*i:])))
	case TypeBF16:
		return math.Float32frombits(uint32(binary.LittleEndian.Uint16(data[2*i:])) << 16)
	case TypeQ4_0:
		return refDecodeQ4(data, i)
	case TypeQ8_0:
		return refDecodeQ8(data, i)
	case TypeQ6_K:
		return refDecodeQ6K(data, i)
	case TypeTQ2_0:
		return refDecodeTQ2(data, i)
	case TypeTQ1_0:
		return refDecodeTQ1(data, i)
	case TypeI2_S:
		return refDecodeI2S(data, n, i)
	}
	panic("test: no reference decoder for " + typ.String())
}

func sameFloat(a, b float32) bool {
	return a == b && math.Signbit(float64(a)) == math.Signbit(float64(b)) || isNaN32(a) && isNaN32(b)
}

var decodable = []Type{TypeF32, TypeF16, TypeBF16, TypeQ4_0, TypeQ8_0, TypeQ6_K, TypeTQ2_0, TypeTQ1_0, TypeI2_S}

// randomBytes fills a tensor's bytes at random: every code, every TQ1_0
// byte and every scale pattern (Inf and NaN included) can appear.
func randomBytes(r *rand.Rand, typ Type, n int) []byte {
	size, _ := DataSize(typ, uint64(n))
	b := make([]byte, size)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func TestDecodeVsReference(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, typ := range decodable {
		for _, blocks := range []int{0, 1, 2, 7} {
			n := blocks * 256 // a multiple of every decodable block size
			data := randomBytes(r, typ, n)
			if typ == TypeI2_S && n > 0 {
				binary.LittleEndian.PutUint32(data[n/4:], math.Float32bits(0.625))
			}
			dst := make([]float32, n+3)
			dst[n] = 42 // past n: must stay untouched
			if err := Decode(typ, data, n, dst); err != nil {
				t.Fatalf("%v n=%d: %v", typ, n, err)
			}
			for i := range n {
				if want := refDecode(typ, data, n, i); !sameFloat(dst[i], want) {
					t.Fatalf("%v n=%d: value %d = %g, want %g", typ, n, i, dst[i], want)
				}
			}
			if dst[n] != 42 {
				t.Errorf("%v: Decode wrote past n", typ)
			}
		}
	}
}

// TestQ6KHandBuilt builds a block from chosen 6-bit q's and checks each
// value against d·sc·(q-32) computed directly.
func TestQ6KHandBuilt(t *testing.T) {
	var q [256]uint8
	var sc [16]int8
	for i := range q {
		q[i] = uint8((i*37 + 11) % 64)
	}
	q[5], q[200] = 0, 63 // the extremes -32 and +31
	for i := range sc {
		sc[i] = int8(i*9 - 70)
	}
	sc[3] = -128
	blk := make([]byte, 210)
	for r := range q {
		qlIdx, high, qhIdx, shift := refQ6Place(r)
		if high {
			blk[qlIdx] |= (q[r] & 0xf) << 4
		} else {
			blk[qlIdx] |= q[r] & 0xf
		}
		blk[128+qhIdx] |= (q[r] >> 4) << shift
	}
	for i, s := range sc {
		blk[192+i] = byte(s)
	}
	binary.LittleEndian.PutUint16(blk[208:], 0x3400) // d = 0.25
	dst := make([]float32, 256)
	if err := Decode(TypeQ6_K, blk, 256, dst); err != nil {
		t.Fatal(err)
	}
	for i := range dst {
		want := 0.25 * float32(sc[i/16]) * float32(int(q[i])-32)
		if dst[i] != want {
			t.Fatalf("value %d = %g, want %g", i, dst[i], want)
		}
	}
}

// TestQ4_0HandBuilt: a block written by hand, every nibble once in each
// half, against values worked out on paper.
func TestQ4_0HandBuilt(t *testing.T) {
	blk := make([]byte, 18)
	binary.LittleEndian.PutUint16(blk, 0x3800) // d = 0.5
	for j := 0; j < 16; j++ {
		blk[2+j] = byte(j) | byte(15-j)<<4 // value j: nibble j; value 16+j: nibble 15−j
	}
	dst := make([]float32, 32)
	if err := Decode(TypeQ4_0, blk, 32, dst); err != nil {
		t.Fatal(err)
	}
	want := []float32{
		-4, -3.5, -3, -2.5, -2, -1.5, -1, -0.5, 0, 0.5, 1, 1.5, 2, 2.5, 3, 3.5, // (j − 8)/2
		3.5, 3, 2.5, 2, 1.5, 1, 0.5, 0, -0.5, -1, -1.5, -2, -2.5, -3, -3.5, -4, // (7 − j)/2
	}
	if !slices.Equal(dst, want) {
		t.Fatalf("decoded %v\nwant    %v", dst, want)
	}
	// The encoder maps the value of largest magnitude to nibble 0 (−8·d):
	// here −4 → d = 0.5, and the rest exactly back.
	enc, err := EncodeQ4_0(want)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(enc, blk) {
		t.Fatalf("encoded % x\nwant    % x", enc, blk)
	}
}

// TestQ4_0RoundTrip: values within half a step (plus F16's error in d) of
// the input, the largest magnitude exactly −8·d; ggml's rounding
// (trunc(x/d + 8.5), capped at 15) on chosen ties.
func TestQ4_0RoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, blocks := range []int{0, 1, 3, 16} {
		n := 32 * blocks
		src := make([]float32, n)
		for i := range src {
			src[i] = float32(r.NormFloat64() * 2)
		}
		enc, err := EncodeQ4_0(src)
		if err != nil || len(enc) != 18*blocks {
			t.Fatalf("EncodeQ4_0: len %d, err %v", len(enc), err)
		}
		dec := make([]float32, n)
		if err := Decode(TypeQ4_0, enc, n, dec); err != nil {
			t.Fatal(err)
		}
		for b := range blocks {
			amax := float32(0)
			for _, v := range src[32*b : 32*b+32] {
				amax = max(amax, abs32(v))
			}
			// The step is amax/8: half of it, but a whole step for a value
			// near −m, which level 16 would need (the levels are −8…7);
			// plus d's F16 error times 8 steps.
			tol := float64(amax/8 + amax/256 + 1e-6)
			for j := 32 * b; j < 32*b+32; j++ {
				if diff := math.Abs(float64(dec[j] - src[j])); diff > tol {
					t.Fatalf("n=%d value %d: %g -> %g (tolerance %g)", n, j, src[j], dec[j], tol)
				}
			}
		}
	}
	// d = −8/−8 = 1: 0.5 → trunc(9.0) = 9 (+1); −0.5 → 8 (0); 7.9 → 15 (+7).
	src := make([]float32, 32)
	src[0], src[1], src[2], src[17] = -8, 0.5, -0.5, 7.9
	enc, _ := EncodeQ4_0(src)
	if got := []byte{enc[2] & 0xf, enc[3] & 0xf, enc[4] & 0xf, enc[3] >> 4}; !bytes.Equal(got, []byte{0, 9, 8, 15}) {
		t.Errorf("Q4_0 rounding: nibbles %v, want [0 9 8 15]", got)
	}
	// An all-zero block: d = 0/−8 = −0 (F16 0x8000, as ggml writes it),
	// every nibble 8.
	if enc, _ := EncodeQ4_0(make([]float32, 32)); !bytes.Equal(enc, append([]byte{0, 0x80}, bytes.Repeat([]byte{0x88}, 16)...)) {
		t.Errorf("zero block encoded as % x", enc)
	}
}

// TestQ6_KRoundTrip: every value within one step d·|sc| of its sub-block
// (the codes are a least-squares fit, not a rounding of each value) plus
// the scales' own rounding; all-zero blocks encode to zero bytes; values
// that are exactly d·sc·q come back exactly.
func TestQ6_KRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, blocks := range []int{0, 1, 4} {
		n := 256 * blocks
		src := make([]float32, n)
		for i := range src {
			src[i] = float32(r.NormFloat64() * float64(1+i/16%5))
		}
		enc, err := EncodeQ6_K(src)
		if err != nil || len(enc) != 210*blocks {
			t.Fatalf("EncodeQ6_K: len %d, err %v", len(enc), err)
		}
		dec := make([]float32, n)
		if err := Decode(TypeQ6_K, enc, n, dec); err != nil {
			t.Fatal(err)
		}
		var worst float64
		for g := 0; g < n/16; g++ {
			amax := float32(0)
			for _, v := range src[16*g : 16*g+16] {
				amax = max(amax, abs32(v))
			}
			for j := 16 * g; j < 16*g+16; j++ {
				rel := math.Abs(float64(dec[j]-src[j])) / float64(amax)
				worst = max(worst, rel)
				if rel > 1.0/32 { // a 6-bit step of the sub-block's range
					t.Fatalf("n=%d value %d: %g -> %g (sub-block max %g)", n, j, src[j], dec[j], amax)
				}
			}
		}
		t.Logf("%d blocks: largest error %.3g of a sub-block's max", blocks, worst)
	}
	if enc, _ := EncodeQ6_K(make([]float32, 256)); !bytes.Equal(enc, make([]byte, 210)) {
		t.Errorf("zero block not all zero bytes")
	}
	// A block that is exactly representable: q/8 with q in [−32, 31] and
	// −4 (q = −32) the largest magnitude of every sub-block, so each
	// sub-block's scale is 1/8, the int8 scales all −128 and d = −1/1024.
	exact := make([]float32, 256)
	for i := range exact {
		exact[i] = float32((i*7)%64-32) / 8
		if i%16 == 0 {
			exact[i] = -4
		}
	}
	enc, _ := EncodeQ6_K(exact)
	dec := make([]float32, 256)
	if err := Decode(TypeQ6_K, enc, 256, dec); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(dec, exact) {
		t.Fatalf("exact block: decoded %v\nwant %v", dec, exact)
	}
	if _, err := EncodeQ6_K(make([]float32, 100)); err == nil {
		t.Errorf("EncodeQ6_K(100): no error")
	}
	if _, err := EncodeQ4_0(make([]float32, 33)); err == nil {
		t.Errorf("EncodeQ4_0(33): no error")
	}
}

func TestEncodeF16(t *testing.T) {
	src := []float32{0, 1, -2, 65504, 1e6, 1e-8, 0.1}
	enc := EncodeF16(src)
	if len(enc) != 2*len(src) {
		t.Fatalf("len %d", len(enc))
	}
	if enc[2] != 0x00 || enc[3] != 0x3c {
		t.Errorf("1.0 encoded as % x, want 00 3c", enc[2:4])
	}
	dec := make([]float32, len(src))
	if err := Decode(TypeF16, enc, len(src), dec); err != nil {
		t.Fatal(err)
	}
	for i, v := range src {
		if want := F16ToF32(F32ToF16(v)); dec[i] != want {
			t.Errorf("value %d: %g, want %g", i, dec[i], want)
		}
	}
}

func TestQ8_0RoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, blocks := range []int{0, 1, 3, 16} {
		n := 32 * blocks
		// Exact case: x = d·q with d F16-exact and max|q| = 127 in every block.
		exact := make([]float32, n)
		for b := range blocks {
			d := F16ToF32(F32ToF16(float32(r.Float64()*2 + 0.001)))
			for j := range 32 {
				exact[32*b+j] = d * float32(r.IntN(255)-127)
			}
			exact[32*b+r.IntN(32)] = d * 127 * float32(1-2*r.IntN(2))
		}
		random := make([]float32, n)
		for i := range random {
			random[i] = float32(r.NormFloat64() * 3)
		}
		for name, src := range map[string][]float32{"exact": exact, "random": random} {
			enc, err := EncodeQ8_0(src)
			if err != nil || len(enc) != 34*blocks {
				t.Fatalf("EncodeQ8_0: len %d, err %v", len(enc), err)
			}
			dec := make([]float32, n)
			if err := Decode(TypeQ8_0, enc, n, dec); err != nil {
				t.Fatal(err)
			}
			for b := range blocks {
				amax := float32(0)
				for _, v := range src[32*b : 32*b+32] {
					amax = max(amax, float32(math.Abs(float64(v))))
				}
				// Half a step, plus F16's relative error in d (2^-11) times 127 steps.
				tol := amax/127/2 + amax/2048 + 1e-6
				if name == "exact" {
					tol = 0
				}
				for j := 32 * b; j < 32*b+32; j++ {
					if diff := math.Abs(float64(dec[j] - src[j])); diff > float64(tol) {
						t.Fatalf("%s n=%d value %d: %g -> %g (tolerance %g)", name, n, j, src[j], dec[j], tol)
					}
				}
			}
		}
	}
	// An all-zero block gets d = 0 and q = 0.
	enc, _ := EncodeQ8_0(make([]float32, 32))
	if !bytes.Equal(enc, make([]byte, 34)) {
		t.Errorf("zero block encoded as % x", enc)
	}
	// Ties round away from zero: 0.5 steps of d = 1 (amax 127).
	src := make([]float32, 32)
	src[0], src[1], src[2] = 127, 2.5, -2.5
	enc, _ = EncodeQ8_0(src)
	if int8(enc[3]) != 3 || int8(enc[4]) != -3 || int8(enc[2]) != 127 {
		t.Errorf("Q8_0 rounding: % d", []int8{int8(enc[2]), int8(enc[3]), int8(enc[4])})
	}
}

// randomTernary returns n values in {-1, 0, 1}.
func randomTernary(r *rand.Rand, n int) []int8 {
	v := make([]int8, n)
	for i := range v {
		v[i] = int8(r.IntN(3) - 1)
	}
	return v
}

func TestTQRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, typ := range []Type{TypeTQ2_0, TypeTQ1_0} {
		enc := map[Type]func([]float32) ([]byte, error){TypeTQ2_0: EncodeTQ2_0, TypeTQ1_0: EncodeTQ1_0}[typ]
		unpack := map[Type]func([]byte, int, []int8, []float32) (int, error){TypeTQ2_0: UnpackTQ2_0, TypeTQ1_0: UnpackTQ1_0}[typ]
		for _, blocks := range []int{0, 1, 2, 5, 33} {
			n := 256 * blocks
			tern := randomTernary(r, n)
			src := make([]float32, n)
			scales := make([]float32, blocks)
			for b := range blocks {
				scales[b] = F16ToF32(F32ToF16(float32(r.Float64() * 4)))
				if b == 1 {
					scales[b] = 0 // an all-zero block
				}
				tern[256*b+r.IntN(256)] = 1 // make max|x| = scale
				for j := 256 * b; j < 256*b+256; j++ {
					if scales[b] == 0 {
						tern[j] = 0
					}
					src[j] = float32(tern[j]) * scales[b]
				}
			}
			data, err := enc(src)
			if err != nil {
				t.Fatal(err)
			}
			if want, _ := DataSize(typ, uint64(n)); uint64(len(data)) != want {
				t.Fatalf("%v: encoded %d bytes, want %d", typ, len(data), want)
			}
			dec := make([]float32, n)
			if err := Decode(typ, data, n, dec); err != nil {
				t.Fatal(err)
			}
			gotT, gotS := make([]int8, n), make([]float32, blocks)
			invalid, err := unpack(data, n, gotT, gotS)
			if err != nil || invalid != 0 {
				t.Fatalf("%v unpack: invalid %d, err %v", typ, invalid, err)
			}
			for i := range n {
				if dec[i] != src[i] || gotT[i] != tern[i] {
					t.Fatalf("%v n=%d value %d: decoded %g unpacked %d, want %g (%d)", typ, n, i, dec[i], gotT[i], src[i], tern[i])
				}
			}
			for b := range blocks {
				if gotS[b] != scales[b] {
					t.Fatalf("%v block %d: scale %g, want %g", typ, b, gotS[b], scales[b])
				}
			}
		}
	}
}

func TestUnpackTQInvalid(t *testing.T) {
	// TQ2_0: code 3 unpacks to 0 and is counted.
	blk := bytes.Clone(tq2Golden)
	blk[0] = 0xff // four code-3 values
	blk[40] = 0x03
	dst, sc := make([]int8, 256), make([]float32, 1)
	inv, err := UnpackTQ2_0(blk, 256, dst, sc)
	if err != nil || inv != 5 || sc[0] != 1 {
		t.Fatalf("UnpackTQ2_0: invalid %d, scale %g, err %v; want 5, 1", inv, sc[0], err)
	}
	for _, i := range []int{0, 32, 64, 96, 128 + 8} {
		if dst[i] != 0 {
			t.Errorf("code 3 at %d unpacked to %d", i, dst[i])
		}
	}
	// TQ1_0: non-canonical bytes decode by ggml's formula and are counted
	// per value held.
	blk = bytes.Clone(tq1Golden)
	blk[3] = 20   // not canonical: pack(18) = 19, pack(19) = 21
	blk[49] = 255 // qh: not a multiple-of-3 encoding
	inv, err = UnpackTQ1_0(blk, 256, dst, sc)
	if err != nil || inv != 9 || sc[0] != 0.5 {
		t.Fatalf("UnpackTQ1_0: invalid %d, scale %g, err %v; want 9, 0.5", inv, sc[0], err)
	}
	for k, d := range refTrits(20, 5) {
		if int(dst[32*k+3]) != d-1 {
			t.Errorf("byte 20 trit %d unpacked to %d, want %d", k, dst[32*k+3], d-1)
		}
	}
	for k, d := range refTrits(255, 4) {
		if int(dst[240+4*k+1]) != d-1 {
			t.Errorf("qh byte 255 trit %d unpacked to %d, want %d", k, dst[240+4*k+1], d-1)
		}
	}
}

func TestI2SRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, n := range []int{0, 128, 256, 384, 128 * 51} {
		tern := randomTernary(r, n)
		scale := float32(r.Float64())
		data, err := EncodeI2_S(tern, scale)
		if err != nil || len(data) != n/4+32 {
			t.Fatalf("EncodeI2_S(%d): len %d, err %v", n, len(data), err)
		}
		if !bytes.Equal(data[n/4+4:], make([]byte, 28)) {
			t.Errorf("trailer after the scale is not zero")
		}
		if s, err := I2_SScale(data, n); err != nil || s != scale {
			t.Errorf("I2_SScale = %g, %v; want %g", s, err, scale)
		}
		got := make([]int8, n)
		s, err := UnpackI2_S(data, n, got)
		if err != nil || s != scale {
			t.Fatalf("UnpackI2_S: %g, %v", s, err)
		}
		dec := make([]float32, n)
		if err := Decode(TypeI2_S, data, n, dec); err != nil {
			t.Fatal(err)
		}
		for i := range n {
			if got[i] != tern[i] || dec[i] != float32(tern[i])*scale {
				t.Fatalf("n=%d value %d: %d / %g, want %d", n, i, got[i], dec[i], tern[i])
			}
		}
	}
}

// errContains fails unless err is non-nil and mentions every string.
func errContains(t *testing.T, what string, err error, subs ...string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: no error", what)
		return
	}
	for _, s := range subs {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("%s: error %q does not mention %q", what, err, s)
		}
	}
}

func TestEncodeErrors(t *testing.T) {
	_, err := EncodeQ8_0(make([]float32, 33))
	errContains(t, "EncodeQ8_0(33)", err, "33", "32")
	_, err = EncodeTQ2_0(make([]float32, 128))
	errContains(t, "EncodeTQ2_0(128)", err, "128", "256")
	_, err = EncodeTQ1_0(make([]float32, 300))
	errContains(t, "EncodeTQ1_0(300)", err, "300", "256")
	_, err = EncodeI2_S(make([]int8, 100), 1)
	errContains(t, "EncodeI2_S(100)", err, "100", "128")
	v := make([]int8, 256)
	v[77] = 2
	_, err = EncodeI2_S(v, 1)
	errContains(t, "EncodeI2_S(2 at 77)", err, "index 77")
	v[77], v[3] = 0, -2
	_, err = EncodeI2_S(v, 1)
	errContains(t, "EncodeI2_S(-2 at 3)", err, "index 3")
	// Odd inputs do not panic and give in-range codes.
	odd := make([]float32, 256)
	odd[0], odd[1], odd[2] = float32(math.NaN()), float32(math.Inf(1)), -3
	if _, err := EncodeQ8_0(odd); err != nil {
		t.Errorf("Q8_0 odd inputs: %v", err)
	}
	for typ, enc := range map[Type]func([]float32) ([]byte, error){TypeTQ2_0: EncodeTQ2_0, TypeTQ1_0: EncodeTQ1_0} {
		data, err := enc(odd)
		if err != nil {
			t.Fatalf("%v odd inputs: %v", typ, err)
		}
		if s, err := TernaryHistogram(typ, data, 256); err != nil || s.Invalid != 0 {
			t.Errorf("%v odd inputs: %+v, %v; want no invalid codes", typ, s, err)
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	dst := make([]float32, 1024)
	for _, typ := range decodable {
		n := 512
		size, _ := DataSize(typ, uint64(n))
		data := make([]byte, size)
		// Every truncation, including to nothing, is an error.
		for l := range int(size) {
			if err := Decode(typ, data[:l], n, dst); err == nil {
				t.Fatalf("%v: %d of %d bytes: no error", typ, l, size)
			}
		}
		if err := Decode(typ, data, n, dst[:n-1]); err == nil {
			t.Errorf("%v: short dst: no error", typ)
		}
		if err := Decode(typ, data, -256, dst); err == nil {
			t.Errorf("%v: negative n: no error", typ)
		}
		if bs := typ.BlockSize(); bs > 1 {
			errContains(t, typ.String()+" n not a multiple", Decode(typ, data, n-1, dst), typ.String(), "511")
		}
		if err := Decode(typ, data, n, dst); err != nil {
			t.Errorf("%v: full data: %v", typ, err)
		}
	}
	for _, typ := range []Type{TypeQ4_1, TypeQ4_K, TypeIQ2_XXS, TypeTL1, TypeI8_S, TypeI8, Type(99)} {
		errContains(t, "Decode "+typ.String(), Decode(typ, make([]byte, 4096), 256, dst), typ.String())
	}
}

func TestUnpackErrors(t *testing.T) {
	i2s, _ := EncodeI2_S(make([]int8, 256), 1)
	for l := range len(i2s) {
		if _, err := UnpackI2_S(i2s[:l], 256, make([]int8, 256)); err == nil {
			t.Fatalf("UnpackI2_S: %d bytes: no error", l)
		}
		if _, err := I2_SScale(i2s[:l], 256); err == nil {
			t.Fatalf("I2_SScale: %d bytes: no error", l)
		}
	}
	if _, err := UnpackI2_S(i2s, 256, make([]int8, 255)); err == nil {
		t.Error("UnpackI2_S: short dst: no error")
	}
	if _, err := UnpackI2_S(i2s, 192, make([]int8, 256)); err == nil {
		t.Error("UnpackI2_S: n = 192: no error")
	}
	if _, err := I2_SScale(i2s, -128); err == nil {
		t.Error("I2_SScale: negative n: no error")
	}
	for _, tc := range []struct {
		typ    Type
		unpack func([]byte, int, []int8, []float32) (int, error)
	}{{TypeTQ2_0, UnpackTQ2_0}, {TypeTQ1_0, UnpackTQ1_0}} {
		size, _ := DataSize(tc.typ, 512)
		data := make([]byte, size)
		for l := range int(size) {
			if _, err := tc.unpack(data[:l], 512, make([]int8, 512), make([]float32, 2)); err == nil {
				t.Fatalf("%v unpack: %d bytes: no error", tc.typ, l)
			}
		}
		if _, err := tc.unpack(data, 512, make([]int8, 511), make([]float32, 2)); err == nil {
			t.Errorf("%v unpack: short dst: no error", tc.typ)
		}
		if _, err := tc.unpack(data, 512, make([]int8, 512), make([]float32, 1)); err == nil {
			t.Errorf("%v unpack: short scales: no error", tc.typ)
		}
		if _, err := tc.unpack(data, 300, make([]int8, 512), make([]float32, 2)); err == nil {
			t.Errorf("%v unpack: n = 300: no error", tc.typ)
		}
	}
}
