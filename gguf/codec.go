// Block codecs: Decode for F32, F16, BF16, Q4_0, Q8_0, Q6_K, TQ1_0, TQ2_0
// and I2_S, plus the encoders and ternary unpackers. All multi-byte fields
// are little-endian.
//
//	F32, F16, BF16: one scalar per value.
//	Q4_0  (32 values, 18 B):  f16 d; u8 qs[16]. Value j < 16 is the low
//	      nibble of qs[j], value 16 + j its high nibble; x = (nibble − 8)·d.
//	Q8_0  (32 values, 34 B):  f16 d; int8 qs[32].            x = d·q
//	Q6_K  (256 values, 210 B): u8 ql[128]; u8 qh[64]; i8 sc[16]; f16 d.
//	      Half h (128 values) uses ql[64h:], qh[32h:], sc[8h:]; for
//	      l < 32, quarter g < 4: q = (low or high nibble of ql[l+32(g&1)],
//	      high nibble when g >= 2) | ((qh[l] >> 2g) & 3) << 4, minus 32;
//	      y[128h + 32g + l] = d·sc[l/16 + 2g]·q.
//	TQ2_0 (256 values, 66 B):  u8 qs[64]; f16 d. Byte qs[32c+m] holds
//	      value 128c + m + 32k at bit shift 2k; y = (code-1)·d (code 3 -> 2d,
//	      as ggml decodes it).
//	TQ1_0 (256 values, 54 B):  u8 qs[48]; u8 qh[4]; f16 d. A byte b holds
//	      base-3 digits of b·3^5/256 (most significant first); digit k is
//	      ((uint8(b·3^k))·3) >> 8. qs[m], m < 32: values 32k + m (k < 5);
//	      qs[32+m], m < 16: values 160 + 16k + m (k < 5); qh[j]: values
//	      240 + 4k + j (k < 4). y = (digit-1)·d.
//	I2_S  (Microsoft BitNet, x86 layout): blocks of 128 values in 32 bytes,
//	      value j of a block at byte j%32, bit shift 6 - 2·(j/32); codes
//	      0 -> -1, 1 -> 0, 2 -> +1, 3 -> 0. After the n/4 code bytes comes a
//	      32-byte trailer: float32 scale, then 28 bytes that are never read.
//	      y = map[code]·scale.
package gguf

import (
	"encoding/binary"
	"fmt"
	"math"
)

// checkData validates n against t's block size and data's length and
// returns the tensor's size in bytes.
func checkData(t Type, data []byte, n int) (int, error) {
	if n < 0 {
		return 0, fmt.Errorf("gguf: %v tensor: negative value count %d", t, n)
	}
	return checkSize(t, data, uint64(n))
}

// checkSize is checkData for a uint64 count. The returned size is at most
// len(data), so it (and n/BlockSize) fits in an int.
func checkSize(t Type, data []byte, n uint64) (int, error) {
	size, err := DataSize(t, n)
	if err != nil {
		return 0, err
	}
	if uint64(len(data)) < size {
		return 0, fmt.Errorf("gguf: %v tensor of %d values needs %d bytes, have %d", t, n, size, len(data))
	}
	return int(size), nil
}

// Decode writes the n values of a tensor of type t stored in data to dst
// (len(dst) >= n). It fails for a type without decoder, n not a multiple
// of the block size, or data shorter than DataSize(t, n).
func Decode(t Type, data []byte, n int, dst []float32) error {
	if !t.CanDecode() {
		return fmt.Errorf("gguf: no decoder for tensor type %v", t)
	}
	size, err := checkData(t, data, n)
	if err != nil {
		return err
	}
	if len(dst) < n {
		return fmt.Errorf("gguf: decoding %d %v values into a buffer of %d", n, t, len(dst))
	}
	data, dst = data[:size], dst[:n]
	switch t {
	case TypeF32:
		for i := range dst {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
		}
	case TypeF16:
		for i := range dst {
			dst[i] = F16ToF32(binary.LittleEndian.Uint16(data[2*i:]))
		}
	case TypeBF16:
		for i := range dst {
			dst[i] = BF16ToF32(binary.LittleEndian.Uint16(data[2*i:]))
		}
	case TypeQ4_0:
		decodeQ4_0(data, dst)
	case TypeQ8_0:
		decodeQ8_0(data, dst)
	case TypeQ6_K:
		decodeQ6_K(data, dst)
	case TypeTQ2_0:
		decodeTQ2_0(data, dst)
	case TypeTQ1_0:
		decodeTQ1_0(data, dst)
	case TypeI2_S:
		decodeI2_S(data, dst)
	}
	return nil
}

// decodeQ4_0: x = (nibble − 8)·d per 18-byte block, the low nibbles first.
func decodeQ4_0(data []byte, dst []float32) {
	for b := 0; b < len(dst)/32; b++ {
		blk := data[18*b : 18*b+18]
		d := F16ToF32(binary.LittleEndian.Uint16(blk))
		y := dst[32*b : 32*b+32]
		for j := 0; j < 16; j++ {
			y[j] = float32(int32(blk[2+j]&0xf)-8) * d
			y[16+j] = float32(int32(blk[2+j]>>4)-8) * d
		}
	}
}

// decodeQ8_0: x = d·q per 34-byte block.
func decodeQ8_0(data []byte, dst []float32) {
	for b := 0; b < len(dst)/32; b++ {
		blk := data[34*b : 34*b+34]
		d := F16ToF32(binary.LittleEndian.Uint16(blk))
		y := dst[32*b : 32*b+32]
		for j := range y {
			y[j] = d * float32(int8(blk[2+j]))
		}
	}
}

// decodeQ6_K follows ggml's loop order; the product is (d·sc)·q in float32
// as ggml computes it.
func decodeQ6_K(data []byte, dst []float32) {
	for b := 0; b < len(dst)/256; b++ {
		blk := data[210*b : 210*b+210]
		d := F16ToF32(binary.LittleEndian.Uint16(blk[208:]))
		y := dst[256*b : 256*b+256]
		for h := 0; h < 2; h++ {
			ql := blk[64*h : 64*h+64]
			qh := blk[128+32*h : 128+32*h+32]
			sc := blk[192+8*h : 192+8*h+8]
			yh := y[128*h : 128*h+128]
			for l := 0; l < 32; l++ {
				is := l / 16
				q1 := int32(ql[l]&0xf|(qh[l]>>0&3)<<4) - 32
				q2 := int32(ql[l+32]&0xf|(qh[l]>>2&3)<<4) - 32
				q3 := int32(ql[l]>>4|(qh[l]>>4&3)<<4) - 32
				q4 := int32(ql[l+32]>>4|(qh[l]>>6&3)<<4) - 32
				yh[l] = d * float32(int8(sc[is])) * float32(q1)
				yh[l+32] = d * float32(int8(sc[is+2])) * float32(q2)
				yh[l+64] = d * float32(int8(sc[is+4])) * float32(q3)
				yh[l+96] = d * float32(int8(sc[is+6])) * float32(q4)
			}
		}
	}
}

// decodeTQ2_0: codes 0..3 decode to (code-1)·d.
func decodeTQ2_0(data []byte, dst []float32) {
	for b := 0; b < len(dst)/256; b++ {
		blk := data[66*b : 66*b+66]
		d := F16ToF32(binary.LittleEndian.Uint16(blk[64:]))
		vals := [4]float32{-1 * d, 0 * d, 1 * d, 2 * d}
		y := dst[256*b : 256*b+256]
		for c := 0; c < 2; c++ {
			qs := blk[32*c : 32*c+32]
			yc := y[128*c : 128*c+128]
			for m, q := range qs {
				yc[m] = vals[q&3]
				yc[m+32] = vals[q>>2&3]
				yc[m+64] = vals[q>>4&3]
				yc[m+96] = vals[q>>6]
			}
		}
	}
}

// tq1Trits[b] are the five base-3 digits ggml's decoder extracts from byte
// b, most significant first: digit k = ((uint8(b·3^k))·3) >> 8, which is
// digit k of floor(b·243/256) in base 3.
var tq1Trits = func() (t [256][5]uint8) {
	pow3 := [5]uint8{1, 3, 9, 27, 81}
	for b := range t {
		for k, p := range pow3 {
			q := uint8(b) * p // wraps mod 256, as in ggml
			t[b][k] = uint8(uint16(q) * 3 >> 8)
		}
	}
	return t
}()

// tq1Pack is ggml's reference byte for a packed trit number q (0..242):
// the ceiling of q·256/243, the smallest byte whose digits decode to q.
func tq1Pack(q uint16) uint8 {
	return uint8((q*256 + 242) / 243)
}

// tq1Canon5[b] / tq1Canon4[b] report whether byte b is one that ggml's
// encoder writes into qs (5 trits) / qh (4 trits, then a 0 digit). Every
// byte decodes to valid trits, but 13 of the 256 qs bytes and 175 of the
// 256 qh bytes are never written by the encoder: a tensor containing them
// was not produced by a conforming TQ1_0 quantizer. (The ceiling division
// reaches 255 for q = 242, so bytes >= 243 are ordinary encodings; the
// unused qs bytes are 1, 20, 40, ..., 237, each a second byte for its q.)
var tq1Canon5, tq1Canon4 = func() (c5, c4 [256]bool) {
	for q := uint16(0); q < 243; q++ {
		c5[tq1Pack(q)] = true
	}
	for q := uint16(0); q < 81; q++ {
		c4[tq1Pack(3*q)] = true
	}
	return c5, c4
}()

// decodeTQ1_0: each trit decodes to (trit-1)·d.
func decodeTQ1_0(data []byte, dst []float32) {
	for b := 0; b < len(dst)/256; b++ {
		blk := data[54*b : 54*b+54]
		d := F16ToF32(binary.LittleEndian.Uint16(blk[52:]))
		vals := [3]float32{-1 * d, 0 * d, 1 * d}
		y := dst[256*b : 256*b+256]
		for m := 0; m < 32; m++ {
			tr := &tq1Trits[blk[m]]
			for k := 0; k < 5; k++ {
				y[32*k+m] = vals[tr[k]]
			}
		}
		for m := 0; m < 16; m++ {
			tr := &tq1Trits[blk[32+m]]
			for k := 0; k < 5; k++ {
				y[160+16*k+m] = vals[tr[k]]
			}
		}
		for j := 0; j < 4; j++ {
			tr := &tq1Trits[blk[48+j]]
			for k := 0; k < 4; k++ {
				y[240+4*k+j] = vals[tr[k]]
			}
		}
	}
}

// decodeI2_S: map {-1, 0, +1, 0}·scale, codes most significant first.
func decodeI2_S(data []byte, dst []float32) {
	n := len(dst)
	scale := math.Float32frombits(binary.LittleEndian.Uint32(data[n/4:]))
	vals := [4]float32{-1 * scale, 0 * scale, 1 * scale, 0 * scale}
	for b := 0; b < n/128; b++ {
		qs := data[32*b : 32*b+32]
		y := dst[128*b : 128*b+128]
		for m, q := range qs {
			y[m] = vals[q>>6]
			y[m+32] = vals[q>>4&3]
			y[m+64] = vals[q>>2&3]
			y[m+96] = vals[q&3]
		}
	}
}

// EncodeF16 returns src as little-endian binary16 values.
func EncodeF16(src []float32) []byte {
	out := make([]byte, 2*len(src))
	for i, v := range src {
		binary.LittleEndian.PutUint16(out[2*i:], F32ToF16(v))
	}
	return out
}

// roundAway rounds half away from zero (C's roundf/lroundf) and clamps to
// [lo, hi]; NaN becomes 0. The clamp never triggers for the encoders'
// finite inputs (|x·id| <= 1 up to rounding); it keeps odd inputs (NaN,
// Inf) from reaching an implementation-defined float->int conversion.
func roundAway(v float32, lo, hi int) int {
	r := math.Round(float64(v))
	switch {
	case r != r:
		return 0
	case r < float64(lo):
		return lo
	case r > float64(hi):
		return hi
	}
	return int(r)
}

// absMax returns max |x| over xs (NaNs are skipped).
func absMax(xs []float32) float32 {
	var m float32
	for _, x := range xs {
		if a := float32(math.Abs(float64(x))); a > m {
			m = a
		}
	}
	return m
}

// EncodeQ8_0 quantizes src (len a multiple of 32) as ggml's reference
// quantizer does: amax = max|x|, d = amax/127, id = d ? 1/d : 0,
// q = round-half-away(x·id), d stored as F16.
func EncodeQ8_0(src []float32) ([]byte, error) {
	if len(src)%32 != 0 {
		return nil, fmt.Errorf("gguf: Q8_0 encode of %d values: not a multiple of the block size 32", len(src))
	}
	out := make([]byte, len(src)/32*34)
	for b := 0; b < len(src)/32; b++ {
		x := src[32*b : 32*b+32]
		blk := out[34*b : 34*b+34]
		d := absMax(x) / 127
		var id float32
		if d != 0 {
			id = 1 / d
		}
		binary.LittleEndian.PutUint16(blk, F32ToF16(d))
		for j, v := range x {
			blk[2+j] = byte(int8(roundAway(v*id, -127, 127)))
		}
	}
	return out, nil
}

// EncodeQ4_0 quantizes src (len a multiple of 32) as ggml's reference
// quantizer does: m = the value of largest magnitude (the first on ties),
// d = m/−8, id = d ? 1/d : 0, nibble = min(15, trunc(x·id + 8.5)), d stored
// as F16 (so m itself maps to nibble 0, −8·d).
func EncodeQ4_0(src []float32) ([]byte, error) {
	if len(src)%32 != 0 {
		return nil, fmt.Errorf("gguf: Q4_0 encode of %d values: not a multiple of the block size 32", len(src))
	}
	out := make([]byte, len(src)/32*18)
	for b := 0; b < len(src)/32; b++ {
		x := src[32*b : 32*b+32]
		blk := out[18*b : 18*b+18]
		var amax, m float32
		for _, v := range x {
			if a := abs32(v); amax < a {
				amax, m = a, v
			}
		}
		d := m / -8
		var id float32
		if d != 0 {
			id = 1 / d
		}
		binary.LittleEndian.PutUint16(blk, F32ToF16(d))
		nibble := func(v float32) byte {
			t := v*id + 8.5
			if !(t > 0) { // NaN or below: ggml's int8 conversion would be undefined
				return 0
			}
			return byte(min(15, int(t)))
		}
		for j := 0; j < 16; j++ {
			blk[2+j] = nibble(x[j]) | nibble(x[16+j])<<4
		}
	}
	return out, nil
}

func abs32(x float32) float32 { return math.Float32frombits(math.Float32bits(x) &^ (1 << 31)) }

// nearestInt rounds half to even, as ggml's nearest_int (which adds and
// subtracts 1.5·2²³) does for |x| < 2²².
func nearestInt(x float32) int {
	return int(math.RoundToEven(float64(x)))
}

// groupMaxEps is ggml's GROUP_MAX_EPS: a group whose largest magnitude is
// below it quantizes to zeros.
const groupMaxEps = 1e-15

// makeQXQuants is ggml's make_qx_quants with rmse_type 1 (weights x²) and
// no importance: the scale of a group of values and their codes L in
// [0, 2·nmax), chosen as the best least-squares fit over 19 trial scales
// around −nmax/max.
func makeQXQuants(nmax int, x []float32, L []int8) float32 {
	var amax, m float32
	for _, v := range x {
		if a := abs32(v); a > amax {
			amax, m = a, v
		}
	}
	if amax < groupMaxEps {
		clear(L)
		return 0
	}
	fit := func(iscale float32) (sumlx, suml2 float32) {
		for _, v := range x {
			l := max(-nmax, min(nmax-1, nearestInt(iscale*v)))
			w := v * v
			sumlx += w * v * float32(l)
			suml2 += w * float32(l) * float32(l)
		}
		return
	}
	codes := func(iscale float32) {
		for i, v := range x {
			L[i] = int8(nmax + max(-nmax, min(nmax-1, nearestInt(iscale*v))))
		}
	}
	iscale := -float32(nmax) / m
	sumlx, suml2 := fit(iscale)
	codes(iscale)
	var scale float32
	if suml2 != 0 {
		scale = sumlx / suml2
	}
	best := scale * sumlx
	for is := -9; is <= 9; is++ {
		if is == 0 {
			continue
		}
		iscale = -(float32(nmax) + 0.1*float32(is)) / m
		sumlx, suml2 = fit(iscale)
		if suml2 > 0 && sumlx*sumlx > best*suml2 {
			codes(iscale)
			scale = sumlx / suml2
			best = scale * sumlx
		}
	}
	return scale
}

// EncodeQ6_K quantizes src (len a multiple of 256) after ggml's reference
// quantizer (quantize_row_q6_K_ref): each 16 values get a scale from
// makeQXQuants(32); the block's d = −max_scale/128 (the scale of largest
// magnitude), the int8 scales round(scale/d) capped at 127, and each q =
// clamp(round(x/(d·sc)), −32, 31) + 32, packed as the decoder reads it.
// Non-finite inputs give a block of unspecified (but decodable) values.
func EncodeQ6_K(src []float32) ([]byte, error) {
	if len(src)%256 != 0 {
		return nil, fmt.Errorf("gguf: Q6_K encode of %d values: not a multiple of the block size 256", len(src))
	}
	out := make([]byte, len(src)/256*210)
	var L [256]int8
	var scales [16]float32
	for b := 0; b < len(src)/256; b++ {
		x := src[256*b : 256*b+256]
		blk := out[210*b : 210*b+210]
		var maxScale, maxAbs float32
		for ib := range scales {
			scales[ib] = makeQXQuants(32, x[16*ib:16*ib+16], L[16*ib:16*ib+16])
			if a := abs32(scales[ib]); a > maxAbs {
				maxAbs, maxScale = a, scales[ib]
			}
		}
		if maxAbs < groupMaxEps {
			continue // all zero: d = 0, every byte 0
		}
		iscale := -128 / maxScale
		binary.LittleEndian.PutUint16(blk[208:], F32ToF16(1/iscale))
		d16 := F16ToF32(binary.LittleEndian.Uint16(blk[208:]))
		for ib := range scales {
			blk[192+ib] = byte(int8(max(-128, min(127, nearestInt(iscale*scales[ib])))))
		}
		for j := 0; j < 16; j++ {
			d := d16 * float32(int8(blk[192+j]))
			if d == 0 {
				continue // ggml leaves these codes as makeQXQuants chose them
			}
			for ii := 0; ii < 16; ii++ {
				l := nearestInt(x[16*j+ii] / d)
				L[16*j+ii] = int8(max(-32, min(31, l)) + 32)
			}
		}
		for h := 0; h < 2; h++ {
			ql := blk[64*h : 64*h+64]
			qh := blk[128+32*h : 128+32*h+32]
			Lh := L[128*h : 128*h+128]
			for l := 0; l < 32; l++ {
				q1, q2, q3, q4 := uint8(Lh[l]), uint8(Lh[l+32]), uint8(Lh[l+64]), uint8(Lh[l+96])
				ql[l] = q1&0xf | (q3&0xf)<<4
				ql[l+32] = q2&0xf | (q4&0xf)<<4
				qh[l] = q1>>4 | (q2>>4)<<2 | (q3>>4)<<4 | (q4>>4)<<6
			}
		}
	}
	return out, nil
}

// ternaryScale returns the per-block scale d = max|x| and id = d ? 1/d : 0,
// the parameters of ggml's reference TQ1_0/TQ2_0 quantizers.
func ternaryScale(x []float32) (d, id float32) {
	d = absMax(x)
	if d != 0 {
		id = 1 / d
	}
	return d, id
}

// EncodeTQ2_0 quantizes src (len a multiple of 256) as ggml's reference
// quantizer does: per block d = max|x|, code = round-half-away(x/d) + 1.
func EncodeTQ2_0(src []float32) ([]byte, error) {
	if len(src)%256 != 0 {
		return nil, fmt.Errorf("gguf: TQ2_0 encode of %d values: not a multiple of the block size 256", len(src))
	}
	out := make([]byte, len(src)/256*66)
	for b := 0; b < len(src)/256; b++ {
		x := src[256*b : 256*b+256]
		blk := out[66*b : 66*b+66]
		d, id := ternaryScale(x)
		for c := 0; c < 2; c++ {
			for m := 0; m < 32; m++ {
				var q byte
				for k := 0; k < 4; k++ {
					code := roundAway(x[128*c+32*k+m]*id, -1, 1) + 1
					q |= byte(code) << (2 * k)
				}
				blk[32*c+m] = q
			}
		}
		binary.LittleEndian.PutUint16(blk[64:], F32ToF16(d))
	}
	return out, nil
}

// EncodeTQ1_0 quantizes src (len a multiple of 256) as ggml's reference
// quantizer does: per block d = max|x|, trit = round-half-away(x/d) + 1,
// q = Σ t_k·3^(4-k) (qh bytes: Σ t_k·3^(3-k), times 3), byte = ceil(q·256/243).
func EncodeTQ1_0(src []float32) ([]byte, error) {
	if len(src)%256 != 0 {
		return nil, fmt.Errorf("gguf: TQ1_0 encode of %d values: not a multiple of the block size 256", len(src))
	}
	out := make([]byte, len(src)/256*54)
	for b := 0; b < len(src)/256; b++ {
		x := src[256*b : 256*b+256]
		blk := out[54*b : 54*b+54]
		d, id := ternaryScale(x)
		trit := func(i int) uint16 { return uint16(roundAway(x[i]*id, -1, 1) + 1) }
		for m := 0; m < 32; m++ {
			var q uint16
			for k := 0; k < 5; k++ {
				q = 3*q + trit(32*k+m)
			}
			blk[m] = tq1Pack(q)
		}
		for m := 0; m < 16; m++ {
			var q uint16
			for k := 0; k < 5; k++ {
				q = 3*q + trit(160+16*k+m)
			}
			blk[32+m] = tq1Pack(q)
		}
		for j := 0; j < 4; j++ {
			var q uint16
			for k := 0; k < 4; k++ {
				q = 3*q + trit(240+4*k+j)
			}
			blk[48+j] = tq1Pack(3 * q) // first trit to the most significant digit
		}
		binary.LittleEndian.PutUint16(blk[52:], F32ToF16(d))
	}
	return out, nil
}

// EncodeI2_S packs ternary values t (each -1, 0 or +1; len a multiple of
// 128) and the per-tensor scale into I2_S: len(t)/4 code bytes, then a
// 32-byte trailer holding the float32 scale followed by 28 zero bytes.
func EncodeI2_S(t []int8, scale float32) ([]byte, error) {
	if len(t)%128 != 0 {
		return nil, fmt.Errorf("gguf: I2_S encode of %d values: not a multiple of the block size 128", len(t))
	}
	n := len(t)
	out := make([]byte, n/4+i2sTrailer)
	for i, v := range t {
		if v < -1 || v > 1 {
			return nil, fmt.Errorf("gguf: I2_S encode: value %d at index %d is not ternary", v, i)
		}
		// code = v+1: 0 = -1, 1 = 0, 2 = +1.
		blk, j := i/128, i%128
		out[32*blk+j%32] |= byte(v+1) << (6 - 2*(j/32))
	}
	binary.LittleEndian.PutUint32(out[n/4:], math.Float32bits(scale))
	return out, nil
}

// I2_SScale returns the per-tensor scale of an I2_S tensor of n values.
func I2_SScale(data []byte, n int) (float32, error) {
	if _, err := checkData(TypeI2_S, data, n); err != nil {
		return 0, err
	}
	return math.Float32frombits(binary.LittleEndian.Uint32(data[n/4:])), nil
}

// i2sTernary maps an I2_S code to its ternary value (code 3 -> 0, as
// Microsoft's dequantizer does).
var i2sTernary = [4]int8{-1, 0, 1, 0}

// UnpackI2_S writes the n ternary values of an I2_S tensor to dst
// (len(dst) >= n) and returns its scale. Code 3 unpacks to 0.
func UnpackI2_S(data []byte, n int, dst []int8) (scale float32, err error) {
	if _, err := checkData(TypeI2_S, data, n); err != nil {
		return 0, err
	}
	if len(dst) < n {
		return 0, fmt.Errorf("gguf: unpacking %d I2_S values into a buffer of %d", n, len(dst))
	}
	for b := 0; b < n/128; b++ {
		qs := data[32*b : 32*b+32]
		y := dst[128*b : 128*b+128]
		for m, q := range qs {
			y[m] = i2sTernary[q>>6]
			y[m+32] = i2sTernary[q>>4&3]
			y[m+64] = i2sTernary[q>>2&3]
			y[m+96] = i2sTernary[q&3]
		}
	}
	return math.Float32frombits(binary.LittleEndian.Uint32(data[n/4:])), nil
}

// checkUnpack validates the buffers of the TQ unpackers.
func checkUnpack(t Type, data []byte, n int, dst []int8, scales []float32) error {
	if _, err := checkData(t, data, n); err != nil {
		return err
	}
	if len(dst) < n {
		return fmt.Errorf("gguf: unpacking %d %v values into a buffer of %d", n, t, len(dst))
	}
	if len(scales) < n/256 {
		return fmt.Errorf("gguf: unpacking %d %v blocks into a scale buffer of %d", n/256, t, len(scales))
	}
	return nil
}

// UnpackTQ2_0 writes the n ternary values of a TQ2_0 tensor to dst
// (len(dst) >= n) and each 256-block's d to scales (len >= n/256).
// Code 3 (which ggml decodes as +2·d) is not ternary: it unpacks to 0 and
// is counted in invalid.
func UnpackTQ2_0(data []byte, n int, dst []int8, scales []float32) (invalid int, err error) {
	if err := checkUnpack(TypeTQ2_0, data, n, dst, scales); err != nil {
		return 0, err
	}
	for b := 0; b < n/256; b++ {
		blk := data[66*b : 66*b+66]
		scales[b] = F16ToF32(binary.LittleEndian.Uint16(blk[64:]))
		y := dst[256*b : 256*b+256]
		for c := 0; c < 2; c++ {
			for m, q := range blk[32*c : 32*c+32] {
				for k := 0; k < 4; k++ {
					code := q >> (2 * k) & 3
					if code == 3 {
						invalid++
					}
					y[128*c+32*k+m] = i2sTernary[code]
				}
			}
		}
	}
	return invalid, nil
}

// UnpackTQ1_0 writes the n ternary values of a TQ1_0 tensor to dst
// (len(dst) >= n) and each 256-block's d to scales (len >= n/256). Every
// byte is decoded with ggml's formula; the values held in a byte that
// ggml's encoder never writes (see tq1Canon5) are still unpacked but are
// counted in invalid (5 per qs byte, 4 per qh byte).
func UnpackTQ1_0(data []byte, n int, dst []int8, scales []float32) (invalid int, err error) {
	if err := checkUnpack(TypeTQ1_0, data, n, dst, scales); err != nil {
		return 0, err
	}
	for b := 0; b < n/256; b++ {
		blk := data[54*b : 54*b+54]
		scales[b] = F16ToF32(binary.LittleEndian.Uint16(blk[52:]))
		y := dst[256*b : 256*b+256]
		for m := 0; m < 32; m++ {
			if !tq1Canon5[blk[m]] {
				invalid += 5
			}
			for k, t := range tq1Trits[blk[m]] {
				y[32*k+m] = int8(t) - 1
			}
		}
		for m := 0; m < 16; m++ {
			if !tq1Canon5[blk[32+m]] {
				invalid += 5
			}
			for k, t := range tq1Trits[blk[32+m]] {
				y[160+16*k+m] = int8(t) - 1
			}
		}
		for j := 0; j < 4; j++ {
			if !tq1Canon4[blk[48+j]] {
				invalid += 4
			}
			for k, t := range tq1Trits[blk[48+j]][:4] {
				y[240+4*k+j] = int8(t) - 1
			}
		}
	}
	return invalid, nil
}
