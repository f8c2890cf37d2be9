package cpu

import (
	"encoding/binary"
	"math"
)

// A Q6_K head in its own bits (dotSixRows): Q6_K stores each block of 256
// values as 6-bit codes q (value = d·sc·(q − 32)), an int8 scale sc per
// group of 16 and a float16 d per block, 6.56 bits a value. The CPU holds
// it in 6.75: per block, 192 bytes of codes in w and 24 bytes of scales
// (the 16 sc, d as a float32, 4 zero bytes) in scales, where 8-bit codes
// and a float32 per group took 10 bits.
//
// Inside a block the values are reordered so that 4-byte lane k of each
// 64-byte chunk c (position p = 64c + 4k + e, e < 4) holds value
// 16k + 4c + e (sixValue): a SIMD lane sums one group of 16 through the
// block's four chunks, and a block's 16 lane sums are its 16 group sums.
// The codes of positions 0…127 and 128…255 are packed as nibbleRow packs
// 128 values (low 4 bits: position j of the 128 in the low half of byte j,
// position 64+j in the high half); then byte j of the last 64 holds bits
// 5:4 of position 64c + j in its bits 2c+1:2c, for c < 4.
const (
	sixBlock      = 256 // values a block
	sixCodeBytes  = 192 // bytes of a block's codes
	sixScaleBytes = 24  // bytes of a block's scales
)

// sixValue is the value (within its block) at position p.
func sixValue(p int) int { return 16*(p%64/4) + 4*(p/64) + p%4 }

// sixRow writes a row of Q6_K values in dotSixRows' layout: codes [n] (q −
// 32, in [−32, 31]) into dst [3n/4], the group scales sc [n/16] and block
// scales d [n/256] into dstScales [3n/32]. n is a multiple of 256.
func sixRow(dst, dstScales []byte, codes, sc []int8, d []float32) {
	for b := 0; b < len(codes)/sixBlock; b++ {
		blk := dst[b*sixCodeBytes : (b+1)*sixCodeBytes]
		clear(blk)
		for p := 0; p < sixBlock; p++ {
			q := byte(codes[b*sixBlock+sixValue(p)] + 32)
			m := p % 128
			blk[p/128*64+m%64] |= q & 15 << (4 * (m / 64))
			blk[128+p%64] |= q >> 4 << (2 * (p / 64))
		}
		s := dstScales[b*sixScaleBytes : (b+1)*sixScaleBytes]
		for k := 0; k < 16; k++ {
			s[k] = byte(sc[b*16+k])
		}
		binary.LittleEndian.PutUint32(s[16:], math.Float32bits(d[b]))
		clear(s[20:])
	}
}

// sixActivations writes, for the activations x [n] (n a multiple of 256),
// xs [n]: per block the 256 values in position order (xs[256b + p] =
// x[256b + sixValue(p)]), and bias [n/16]: each group's −32·Σx (what
// dotSixRows, which multiplies the unsigned codes q, starts its lanes
// from).
func sixActivations(x, xs []int8, bias []int32) {
	for b := 0; b < len(x)/sixBlock; b++ {
		xb, a := x[b*sixBlock:(b+1)*sixBlock], xs[b*sixBlock:(b+1)*sixBlock]
		sums := bias[16*b : 16*b+16]
		clear(sums)
		for p := 0; p < sixBlock; p++ {
			v := xb[sixValue(p)]
			a[p] = v
			sums[p%64/4] -= 32 * int32(v)
		}
	}
}

// dotSixRowsGeneric sums each group exactly and the groups in order in
// float64, with the scales d·sc (exact in float32): the bits
// dotBlockRowsGeneric gives for the same values as codes and group scales.
func dotSixRowsGeneric(w []byte, scales []byte, xs []int8, _ []int32, out []float32) {
	B := len(xs) / sixBlock
	for r := range out {
		row, rs := w[r*B*sixCodeBytes:(r+1)*B*sixCodeBytes], scales[r*B*sixScaleBytes:(r+1)*B*sixScaleBytes]
		var acc float64
		for b := 0; b < B; b++ {
			blk, s, a := row[b*sixCodeBytes:(b+1)*sixCodeBytes], rs[b*sixScaleBytes:(b+1)*sixScaleBytes], xs[b*sixBlock:(b+1)*sixBlock]
			var sums [16]int32
			for c := 0; c < 4; c++ {
				lo, hi := blk[c/2*64:c/2*64+64], blk[128:192]
				shLo, shHi := 4*(c%2), 2*c
				ac := a[64*c : 64*c+64]
				for k := range sums {
					l, h, x := lo[4*k:4*k+4], hi[4*k:4*k+4], ac[4*k:4*k+4]
					sums[k] += (int32(l[0]>>shLo&15|(h[0]>>shHi&3)<<4)-32)*int32(x[0]) +
						(int32(l[1]>>shLo&15|(h[1]>>shHi&3)<<4)-32)*int32(x[1]) +
						(int32(l[2]>>shLo&15|(h[2]>>shHi&3)<<4)-32)*int32(x[2]) +
						(int32(l[3]>>shLo&15|(h[3]>>shHi&3)<<4)-32)*int32(x[3])
				}
			}
			d := math.Float32frombits(binary.LittleEndian.Uint32(s[16:]))
			for k, sum := range sums {
				acc += float64(d*float32(int8(s[k]))) * float64(sum)
			}
		}
		out[r] = float32(acc)
	}
}

// blockedSix makes dotSixMatMul from a set's dotSixRows: over blocks of
// rowBlock rows (which stay in L2 while every token passes), each token's
// rows summed by the row kernel itself, so that a batch gives each token
// its one-token bits.
func blockedSix(rowsFn func(w []byte, scales []byte, x []int8, xBias []int32, out []float32)) func(w []byte, scales []byte, rows int, x []int8, xBias []int32, n, tokens int, out []float32, outStride int) {
	return func(w []byte, scales []byte, rows int, x []int8, xBias []int32, n, tokens int, out []float32, outStride int) {
		cb, sb := 3*n/4, 3*n/32
		for r0 := 0; r0 < rows; r0 += rowBlock {
			r1 := min(r0+rowBlock, rows)
			for t := 0; t < tokens; t++ {
				rowsFn(w[r0*cb:r1*cb], scales[r0*sb:r1*sb], x[t*n:(t+1)*n], xBias[t*n/16:(t+1)*n/16], out[t*outStride+r0:t*outStride+r1])
			}
		}
	}
}
