// Ternary conversions (I2_S <-> TQ2_0) and weight statistics.
//
// I2_S and TQ2_0 use the same 2-bit codes (code = value + 1: 0 = -1,
// 1 = 0, 2 = +1, 3 = not ternary) and both interleave 128 values over 32
// bytes, value 32g + m in byte m. They differ only in where group g sits
// in the byte: I2_S at bit shift 6 - 2g, TQ2_0 at 2g. So a TQ2_0 block
// (256 values) is two I2_S blocks with the four 2-bit fields of every byte
// reversed, plus d; I2_S's single float32 scale becomes every block's F16
// d. The conversion is lossless exactly when the scale is representable in
// F16 (I2_S -> TQ2_0) or all blocks share one d (TQ2_0 -> I2_S), and no
// code 3 appears (ggml decodes TQ2_0 code 3 as +2·d, I2_S as 0).
//
// Statistics count weights per class with a 256-entry table mapping a
// byte to its packed counts (four 16-bit fields: neg | zero<<16 |
// pos<<32 | invalid<<48), so the inner loop is one load and one add per
// byte, with no per-value branches. Accumulators are flushed into the
// 64-bit totals before any 16-bit field can overflow.
package gguf

import (
	"encoding/binary"
	"fmt"
	"math"
)

// crumbReverse[b] is b with its four 2-bit fields in reverse order: the
// I2_S byte <-> TQ2_0 byte mapping (an involution).
var crumbReverse = func() (t [256]byte) {
	for b := range t {
		x := byte(b)
		t[b] = x>>6 | x>>2&0x0c | x<<2&0x30 | x<<6
	}
	return t
}()

// hasCode3[b] reports whether any 2-bit field of b is 3.
var hasCode3 = func() (t [256]bool) {
	for b := range t {
		x := byte(b)
		t[b] = x&3 == 3 || x>>2&3 == 3 || x>>4&3 == 3 || x>>6 == 3
	}
	return t
}()

// Packed per-byte counts; see the file comment.
const (
	fieldNeg  = 0
	fieldZero = 16
	fieldPos  = 32
	fieldInv  = 48
)

// codeField maps a 2-bit code (I2_S and TQ2_0 alike) to its count field.
var codeField = [4]uint{fieldNeg, fieldZero, fieldPos, fieldInv}

// crumbCounts[b] counts the classes of the four 2-bit codes in byte b.
var crumbCounts = func() (t [256]uint64) {
	for b := range t {
		for k := 0; k < 4; k++ {
			t[b] += 1 << codeField[b>>(2*k)&3]
		}
	}
	return t
}()

// tq1Counts5 / tq1Counts4 count the trits of a TQ1_0 qs / qh byte. A byte
// ggml's encoder never writes (see tq1Canon5) counts all its values as
// invalid: it still decodes, but was not written by a conforming encoder,
// so its values are not trusted as weights.
var tq1Counts5, tq1Counts4 = func() (c5, c4 [256]uint64) {
	for b := range c5 {
		if !tq1Canon5[b] {
			c5[b] = 5 << fieldInv
		} else {
			for _, t := range tq1Trits[b] {
				c5[b] += 1 << codeField[t]
			}
		}
		if !tq1Canon4[b] {
			c4[b] = 4 << fieldInv
		} else {
			for _, t := range tq1Trits[b][:4] {
				c4[b] += 1 << codeField[t]
			}
		}
	}
	return c5, c4
}()

// firstCode3 returns the smallest value index (within the 128 values of
// one 32-byte I2_S block or TQ2_0 chunk) whose code is 3; shift(g) is the
// bit shift of group g. It returns -1 when there is none.
func firstCode3(qs []byte, shift func(g int) int) int {
	for g := 0; g < 4; g++ {
		for m, q := range qs {
			if q>>shift(g)&3 == 3 {
				return 32*g + m
			}
		}
	}
	return -1
}

func i2sShift(g int) int        { return 6 - 2*g }
func tq2Shift(g int) int        { return 2 * g }
func isFiniteF16(h uint16) bool { return h&0x7c00 != 0x7c00 }

// I2_SToTQ2_0 converts an I2_S tensor of n values (n a multiple of 256)
// to TQ2_0 without changing any decoded weight: every block gets
// d = F16(scale). It fails if the scale is not exactly representable in
// F16 or a code 3 appears.
func I2_SToTQ2_0(data []byte, n int) ([]byte, error) {
	if n%256 != 0 {
		return nil, fmt.Errorf("gguf: I2_S -> TQ2_0: %d values is not a multiple of the TQ2_0 block size 256", n)
	}
	scale, err := I2_SScale(data, n)
	if err != nil {
		return nil, err
	}
	d := F32ToF16(scale)
	if math.Float32bits(F16ToF32(d)) != math.Float32bits(scale) {
		return nil, fmt.Errorf("gguf: I2_S -> TQ2_0: scale %g is not exactly representable in F16; TQ2_0 would change the weights", scale)
	}
	out := make([]byte, n/256*66)
	for b := 0; b < n/256; b++ {
		src := data[64*b : 64*b+64]
		blk := out[66*b : 66*b+66]
		for i, q := range src {
			if hasCode3[q] {
				c := i / 32
				j := firstCode3(src[32*c:32*c+32], i2sShift)
				return nil, fmt.Errorf("gguf: I2_S -> TQ2_0: value %d has code 3, which is not ternary", 256*b+128*c+j)
			}
			blk[i] = crumbReverse[q]
		}
		binary.LittleEndian.PutUint16(blk[64:], d)
	}
	return out, nil
}

// TQ2_0ToI2_S converts a TQ2_0 tensor of n values to I2_S without
// changing any decoded weight. All blocks must share one d (compared
// bit for bit); a block whose codes are all 1 (all weights zero) may have
// any finite d. The I2_S scale is the shared d, or the first block's d
// when every block is zero. It fails on a differing d or a code 3.
func TQ2_0ToI2_S(data []byte, n int) ([]byte, error) {
	if _, err := checkData(TypeTQ2_0, data, n); err != nil {
		return nil, err
	}
	blocks := n / 256
	shared, sharedBlock := uint16(0), -1
	for b := 0; b < blocks; b++ {
		blk := data[66*b : 66*b+66]
		d := binary.LittleEndian.Uint16(blk[64:])
		if isFiniteF16(d) && allZeroTQ2(blk[:64]) {
			continue
		}
		if sharedBlock < 0 {
			shared, sharedBlock = d, b
		} else if d != shared {
			return nil, fmt.Errorf("gguf: TQ2_0 -> I2_S: block %d has d = %g but block %d has d = %g; I2_S has one scale per tensor",
				b, F16ToF32(d), sharedBlock, F16ToF32(shared))
		}
	}
	if sharedBlock < 0 && blocks > 0 {
		shared = binary.LittleEndian.Uint16(data[64:])
	}
	out := make([]byte, n/4+i2sTrailer)
	for b := 0; b < blocks; b++ {
		src := data[66*b : 66*b+64]
		dst := out[64*b : 64*b+64]
		for i, q := range src {
			if hasCode3[q] {
				c := i / 32
				j := firstCode3(src[32*c:32*c+32], tq2Shift)
				return nil, fmt.Errorf("gguf: TQ2_0 -> I2_S: value %d has code 3 (+2·d), which is not ternary", 256*b+128*c+j)
			}
			dst[i] = crumbReverse[q]
		}
	}
	binary.LittleEndian.PutUint32(out[n/4:], math.Float32bits(F16ToF32(shared)))
	return out, nil
}

// allZeroTQ2 reports whether all codes are 1 (byte 0b01010101).
func allZeroTQ2(qs []byte) bool {
	for _, q := range qs {
		if q != 0x55 {
			return false
		}
	}
	return true
}

// TernaryStats is the histogram of a ternary tensor's weights.
//
// Invalid counts weights whose stored encoding a conforming encoder never
// writes; they are not in Neg, Zero or Pos, so Total() is the tensor's
// value count. I2_S and TQ2_0: code 3. TQ1_0: every value held in a byte
// that ggml's encoder never writes (13 of the 256 qs byte values, 175 of
// the 256 qh byte values) — such bytes decode to well-defined trits, but a
// tensor containing them was not written by ggml's quantizer.
//
// ScaleMin and ScaleMax range over the Scales scales (I2_S: 1, TQ1_0 and
// TQ2_0: one per 256-block, widened from F16); NaN scales are counted in
// Scales but skipped for the range.
type TernaryStats struct {
	Neg, Zero, Pos, Invalid uint64
	ScaleMin, ScaleMax      float32
	Scales                  int
}

// Total is the number of weights counted, Invalid included.
func (s TernaryStats) Total() uint64 { return s.Neg + s.Zero + s.Pos + s.Invalid }

// Entropy is the Shannon entropy, in bits per weight, of the -1/0/+1
// histogram (Invalid excluded); 0 when there are no valid weights. A
// uniform third each gives log2(3) ≈ 1.585, the floor for lossless
// ternary storage.
func (s TernaryStats) Entropy() float64 {
	valid := s.Neg + s.Zero + s.Pos
	if valid == 0 {
		return 0
	}
	var h float64
	for _, c := range [3]uint64{s.Neg, s.Zero, s.Pos} {
		if c != 0 {
			p := float64(c) / float64(valid)
			h -= p * math.Log2(p)
		}
	}
	return h
}

// Fractions are Neg, Zero and Pos as fractions of Total() (so they sum to
// 1 - Invalid/Total); all 0 when Total is 0.
func (s TernaryStats) Fractions() (neg, zero, pos float64) {
	t := s.Total()
	if t == 0 {
		return 0, 0, 0
	}
	ft := float64(t)
	return float64(s.Neg) / ft, float64(s.Zero) / ft, float64(s.Pos) / ft
}

// addPacked adds packed counts (see the file comment) to s.
func (s *TernaryStats) addPacked(acc uint64) {
	s.Neg += acc >> fieldNeg & 0xffff
	s.Zero += acc >> fieldZero & 0xffff
	s.Pos += acc >> fieldPos & 0xffff
	s.Invalid += acc >> fieldInv & 0xffff
}

// scaleRange accumulates TernaryStats' scale fields; have tells an empty
// range (or only NaNs so far) from one that holds a value.
type scaleRange struct {
	n      int
	lo, hi float32
	have   bool
}

func (r *scaleRange) add(v float32) {
	r.n++
	switch {
	case v != v:
	case !r.have:
		r.lo, r.hi, r.have = v, v, true
	default:
		r.lo = min(r.lo, v)
		r.hi = max(r.hi, v)
	}
}

func (r *scaleRange) store(s *TernaryStats) {
	s.Scales, s.ScaleMin, s.ScaleMax = r.n, r.lo, r.hi
}

// TernaryHistogram counts the weights of a ternary tensor of n values of
// type t (I2_S, TQ2_0 or TQ1_0) stored in data; see TernaryStats.
func TernaryHistogram(t Type, data []byte, n uint64) (TernaryStats, error) {
	var s TernaryStats
	switch t {
	case TypeI2_S, TypeTQ2_0, TypeTQ1_0:
	case TypeTL1, TypeTL2:
		return s, fmt.Errorf("gguf: histogram not supported for %v (bitvk cannot decode it)", t)
	default:
		return s, fmt.Errorf("gguf: histogram not supported for %v (not a ternary type bitvk decodes)", t)
	}
	if _, err := checkSize(t, data, n); err != nil {
		return s, err
	}
	var r scaleRange
	switch t {
	case TypeI2_S:
		histI2S(&s, data[:n/4])
		r.add(math.Float32frombits(binary.LittleEndian.Uint32(data[n/4:])))
	case TypeTQ2_0:
		histTQ2(&s, &r, data, int(n/256))
	case TypeTQ1_0:
		histTQ1(&s, &r, data, int(n/256))
	}
	r.store(&s)
	return s, nil
}

// histI2S counts the codes in p, 8 KiB at a time: each of the two
// accumulators takes 4 bytes of every 8-byte word, so it sees at most
// 4096 bytes · 4 codes = 16384 per field before the flush.
func histI2S(s *TernaryStats, p []byte) {
	const chunk = 8192
	for len(p) > 0 {
		c := p[:min(len(p), chunk)]
		p = p[len(c):]
		var a0, a1 uint64
		for len(c) >= 8 {
			w := binary.LittleEndian.Uint64(c)
			a0 += crumbCounts[uint8(w)] + crumbCounts[uint8(w>>8)] +
				crumbCounts[uint8(w>>16)] + crumbCounts[uint8(w>>24)]
			a1 += crumbCounts[uint8(w>>32)] + crumbCounts[uint8(w>>40)] +
				crumbCounts[uint8(w>>48)] + crumbCounts[uint8(w>>56)]
			c = c[8:]
		}
		for _, q := range c {
			a0 += crumbCounts[q]
		}
		s.addPacked(a0)
		s.addPacked(a1)
	}
}

// tqFlushBlocks is how many 256-value blocks fit in a packed accumulator
// (256 per block · 128 = 32768 < 65536 per field).
const tqFlushBlocks = 128

// histTQ2 counts the codes and scales of blocks TQ2_0 blocks.
func histTQ2(s *TernaryStats, r *scaleRange, data []byte, blocks int) {
	var acc uint64
	for b := 0; b < blocks; b++ {
		blk := data[66*b : 66*b+66]
		for _, q := range blk[:64] {
			acc += crumbCounts[q]
		}
		r.add(F16ToF32(binary.LittleEndian.Uint16(blk[64:])))
		if (b+1)%tqFlushBlocks == 0 {
			s.addPacked(acc)
			acc = 0
		}
	}
	s.addPacked(acc)
}

// histTQ1 counts the trits and scales of blocks TQ1_0 blocks.
func histTQ1(s *TernaryStats, r *scaleRange, data []byte, blocks int) {
	var acc uint64
	for b := 0; b < blocks; b++ {
		blk := data[54*b : 54*b+54]
		for _, q := range blk[:48] {
			acc += tq1Counts5[q]
		}
		for _, q := range blk[48:52] {
			acc += tq1Counts4[q]
		}
		r.add(F16ToF32(binary.LittleEndian.Uint16(blk[52:])))
		if (b+1)%tqFlushBlocks == 0 {
			s.addPacked(acc)
			acc = 0
		}
	}
	s.addPacked(acc)
}
