package main

// dotNibbleRows: out[r] = Σ_g f16(scales[r·G + g])·Σ_{i<32} (nibble(w_r, 32g+i) − 8)·x[32g + i]
// for r < len(out), n = len(x) a multiple of 128, G = n/32: a Q4_0 head
// held as the file holds it, 4-bit codes (a row is n/2 bytes: per 128
// values 64 bytes, value j in the low half of byte j and value 64+j in the
// high half) and a float16 scale per group of 32. Each group's integer sum
// is exact; the sums are converted to float32 four codes at a time (a
// lane's partial sum) and multiplied by their group's scale with FMA, in
// the kernel's own order, as dotBlockRows does.
//
// Versions:
//
//	dotNibbleRowsVNNI  per 64 bytes of a row (128 values): the low and
//	                   the high halves masked out (vpandd, vpsrlw),
//	                   vpdpbusd(nibbles, x) into a copy of xBias (the
//	                   caller's −8·Σ of each 4 x bytes, so the lane is
//	                   Σ (nibble − 8)·x exactly), vcvtdq2ps, and an FMA
//	                   with the lanes' scales (the chunk's 4 float16
//	                   scales converted with vcvtph2ps, permuted to 8
//	                   lanes each). Rows i and rows/2+i together, one
//	                   prefetch per 256 bytes of each; the HW version
//	                   (dotNibbleRowsVNNIHW) takes four rows a quarter of
//	                   the slice apart, without software prefetches, as
//	                   dotBlockRowsVNNIHW does.
//	dotNibbleRowsAVX2  per 32 bytes of a row and half: vpmaddubsw(nibbles,
//	                   x), vpmaddwd by 1 into 8 int32 lanes (one group),
//	                   plus xBias, vcvtdq2ps, and an FMA by the group's
//	                   scale (vpbroadcastw, vcvtph2ps). Two rows at a time.

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

const dotNibbleRowsSig = "func(w []byte, scales []uint16, x []int8, xBias []int32, out []float32)"

var (
	bytes0F   Mem // 4 × 0x0F: broadcast, the low nibble of each byte
	permPairs Mem // int32 0×8, 1×8, 2×8, 3×8: lanes of scales 0, 1 and of 2, 3
)

// genNibbleConsts emits dotNibbleRows' constants (once).
func genNibbleConsts() {
	if bytes0F.Symbol.Name != "" {
		return
	}
	bytes0F = table("bytes0F", 4, func(int) uint32 { return 0x0F0F0F0F })
	permPairs = table("permPairs", 128, func(i int) uint32 { return uint32(i / 32) })
}

// nibbleStep is the bytes of a row's codes one 128-value chunk takes.
const nibbleStep = 64

func genDotNibbleRows(name string, evex bool, doc string) {
	genNibbleConsts()
	TEXT(kernelName(name), NOSPLIT, dotNibbleRowsSig)
	Pragma("noescape")
	kernelDoc(name, doc)
	codeRowBytes := func() reg.GPVirtual { // n/2
		r := load(Param("x").Len())
		SHRQ(U8(1), r)
		return r
	}
	scaleRowBytes := func() reg.GPVirtual { // 2·n/32
		r := load(Param("x").Len())
		SHRQ(U8(4), r)
		return r
	}
	vec := YMM
	if evex {
		vec = ZMM
	}
	mask := vec()
	VPBROADCASTD(bytes0F, mask)
	var ones, idxLo, idxHi reg.VecVirtual
	if evex {
		idxLo, idxHi = ZMM(), ZMM()
		VMOVDQU32(permPairs, idxLo)
		VMOVDQU32(permPairs.Offset(64), idxHi)
	} else {
		ones = YMM()
		VMOVDQU(words0001, ones)
	}
	// rowSums handles the rows at q (scales at s) and returns an xmm per
	// row whose lane 0 is its sum: each row reduced alone.
	rowSums := func(q, s []reg.GPVirtual) []reg.VecVirtual {
		R := len(q)
		x := load(Param("x").Base())
		xb := load(Param("xBias").Base())
		nb := codeRowBytes()
		acc := zeroedAccs(R, evex)
		i, j := GP64(), GP64() // byte offsets in the rows of w and of scales
		XORQ(j, j)
		// The activations and biases of value v are at byte 2i+… of x
		// and of xBias (4 bytes of bias per 4 values).
		at := func(base reg.GPVirtual, d int) Mem { return Mem{Base: base, Index: i, Scale: 2, Disp: d} }
		u, lo, hi := vec(), vec(), vec()
		var chunk func(d int, pf bool)
		if evex {
			laneLo, laneHi, sx, svLo, svHi := ZMM(), ZMM(), ZMM(), ZMM(), ZMM()
			chunk = func(d int, pf bool) {
				xlo, xhi, blo, bhi := ZMM(), ZMM(), ZMM(), ZMM()
				VMOVDQU64(at(x, 2*d), xlo)
				VMOVDQU64(at(x, 2*d+64), xhi)
				VMOVDQU32(at(xb, 2*d), blo)
				VMOVDQU32(at(xb, 2*d+64), bhi)
				for r := 0; r < R; r++ {
					m := Mem{Base: q[r], Index: i, Scale: 1, Disp: d}
					if pf {
						prefetch(m)
						prefetchScales(Mem{Base: s[r], Index: j, Scale: 1}, 8)
					}
					VMOVDQU64(m, u)
					VPANDD(mask, u, lo)
					VPSRLW(U8(4), u, hi)
					VPANDD(mask, hi, hi)
					VMOVDQA32(blo, laneLo)
					vpdpbusd(xlo, lo, laneLo)
					VMOVDQA32(bhi, laneHi)
					vpdpbusd(xhi, hi, laneHi)
					VCVTDQ2PS(laneLo, laneLo)
					VCVTDQ2PS(laneHi, laneHi)
					VCVTPH2PS(Mem{Base: s[r], Index: j, Scale: 1}, sx.AsX())
					VPERMPS(sx, idxLo, svLo)
					VPERMPS(sx, idxHi, svHi)
					VFMADD231PS(laneLo, svLo, acc[r])
					VFMADD231PS(laneHi, svHi, acc[r])
				}
				ADDQ(U8(8), j)
			}
		} else {
			lane, sx, sv := YMM(), XMM(), YMM()
			chunk = func(d int, pf bool) {
				for r := 0; r < R; r++ {
					if pf {
						prefetch(Mem{Base: q[r], Index: i, Scale: 1, Disp: d})
					}
					// Bytes e…e+31 of the chunk: values e… (group e/32)
					// in the low halves, 64+e… (group 2+e/32) in the high.
					for e := 0; e < nibbleStep; e += 32 {
						VMOVDQU(Mem{Base: q[r], Index: i, Scale: 1, Disp: d + e}, u)
						VPAND(mask, u, lo)
						VPSRLW(U8(4), u, hi)
						VPAND(mask, hi, hi)
						for k, half := range []reg.VecVirtual{lo, hi} {
							v := 2*d + e + 64*k // the first value's offset in x
							VPMADDUBSW(at(x, v), half, lane)
							VPMADDWD(ones, lane, lane)
							VPADDD(at(xb, v), lane, lane)
							VCVTDQ2PS(lane, lane)
							VPBROADCASTW(Mem{Base: s[r], Index: j, Scale: 1, Disp: 2 * (e/32 + 2*k)}, sx)
							VCVTPH2PS(sx, sv)
							VFMADD231PS(lane, sv, acc[r])
						}
					}
				}
				ADDQ(U8(8), j)
			}
		}
		streamLoop(i, nb, blockStep, nibbleStep, chunk)
		return rowTotals(acc, evex)
	}
	blockRows(rowSums, codeRowBytes, scaleRowBytes)
	VZEROUPPER()
	RET()
}

func genDotNibbleRowsVNNI() {
	genDotNibbleRows("dotNibbleRowsVNNI", true,
		"dotNibbleRowsVNNI is dotNibbleRows with AVX-512 VNNI: 2 rows at a time, vpdpbusd(nibbles, x) from −8·Σx, FMA by the group scales.")
}

func genDotNibbleRowsAVX2() {
	genDotNibbleRows("dotNibbleRowsAVX2", false,
		"dotNibbleRowsAVX2 is dotNibbleRows with AVX2: 2 rows at a time, vpmaddubsw(nibbles, x), vpmaddwd by 1, plus −8·Σx, FMA by the group scales.")
}

// dotNibbleMatMul: out[t·outStride + r] = dotNibbleRows of row r for token
// t, for r < rows, t < tokens: a Q4_0 head in its 4.5 bits over a few
// tokens (a speculative verification pass, a step of several served
// streams). The codes are rows × n/2 bytes (n a positive multiple of 128),
// the scales rows × n/32, x tokens × n, xBias tokens × n/4 (nibbleBias of
// each token).
//
// dotNibbleMatMulVNNI takes tiles of 4 rows a quarter of the call's rows
// apart × up to nibbleMatMulTokens tokens, then the last rows%4 rows one
// at a time (rowTiles, as dotBlockMatMulVNNI). Per 64 bytes of a row it
// masks out the low and the high halves and lays out the 4 group scales
// once, then per token does what dotNibbleRowsVNNI does for that row: the
// token's bias, vpdpbusd, vcvtdq2ps and an FMA into the (row, token)
// accumulator, low half then high half, reduced at the end as that kernel
// reduces its rows. So each (row, token) gets dotNibbleRowsVNNI's bits,
// while the codes are read and unpacked once for all the tokens instead
// of once per token. The HW version prefetches each row's line 2 KiB
// ahead into L1 (PREFETCHNTA), the other 16 KiB ahead into L2.
const dotNibbleMatMulSig = "func(w []byte, scales []uint16, rows int, x []int8, xBias []int32, n, tokens int, out []float32, outStride int)"

// nibbleMatMulTokens is the most tokens a dotNibbleMatMulVNNI tile takes:
// 4 rows × 6 tokens are 24 accumulators, beside the mask, the two
// permutations, the chunk's two halves and two scale vectors, and the lane
// being summed: all 32 registers.
const nibbleMatMulTokens = 6

func genDotNibbleMatMulVNNI() {
	genNibbleConsts()
	genTiles("dotNibbleMatMul", dotNibbleMatMulSig, nibbleMatMulTokens, "dotNibbleRowsVNNI", 3, 0, func() reg.GPVirtual { // n/2 bytes of codes, n/16 of scales
		r := load(Param("n"))
		SHRQ(U8(1), r)
		return r
	}, "nibble", (*rowTiles).nibbleTile)
}

// genTiles writes op's rowTiles kernel with AVX-512 VNNI (see
// rowTilesText and newRowTiles): tiles of up to tokens tokens, each
// emitted by tile; what names them in the assembly's comments.
func genTiles(op, sig string, tokens int, rowKernel string, shift, biasShift uint8, rowBytes func() reg.GPVirtual, what string, tile func(st *rowTiles, R, T int)) {
	rowTilesText(op, sig, tokens, rowKernel)
	st := newRowTiles(shift, tokens, rowBytes)
	st.biasShift = biasShift
	st.body = func(R, T int) {
		Commentf("%s tile %d rows × %d tokens", what, R, T)
		tile(st, R, T)
	}
	st.rows()
}

// nibbleTile emits one dotNibbleMatMulVNNI tile of R rows × T tokens.
func (st *rowTiles) nibbleTile(R, T int) {
	rws, scs := st.tileRows(R)
	toks, bias := st.tileTokens(T)

	mask, idxLo, idxHi := ZMM(), ZMM(), ZMM()
	VPBROADCASTD(bytes0F, mask)
	VMOVDQU32(permPairs, idxLo)
	VMOVDQU32(permPairs.Offset(64), idxHi)
	acc := zmms(R * T) // [r·T + t]
	lo, hi, svLo, svHi, lane := ZMM(), ZMM(), ZMM(), ZMM(), ZMM()
	zeroZ(svLo) // a full write: the register allocator takes vcvtph2ps's xmm one for a partial one
	c := load(Param("n"))
	SHRQ(U8(7), c)
	loop := label("nmmchunks")
	Label(loop)
	for r := 0; r < R; r++ {
		prefetch(rws.at(r, 0))
		VMOVDQU64(rws.at(r, 0), hi)
		VPANDD(mask, hi, lo)
		VPSRLW(U8(4), hi, hi)
		VPANDD(mask, hi, hi)
		VCVTPH2PS(scs.at(r, 0), svLo.AsX())
		VPERMPS(svLo, idxHi, svHi)
		VPERMPS(svLo, idxLo, svLo)
		for t := 0; t < T; t++ {
			for k, v := range []struct{ codes, scales reg.VecVirtual }{{lo, svLo}, {hi, svHi}} {
				VMOVDQU32(bias.at(t, 64*k), lane)
				vpdpbusd(toks.at(t, 64*k), v.codes, lane)
				VCVTDQ2PS(lane, lane)
				VFMADD231PS(lane, v.scales, acc[r*T+t])
			}
		}
	}
	rws.advance(nibbleStep)
	scs.advance(nibbleStep >> st.shift)
	toks.advance(2 * nibbleStep)
	bias.advance(2 * nibbleStep)
	DECQ(c)
	JNZ(LabelRef(loop))
	st.storeSums(acc, R, T)
}
