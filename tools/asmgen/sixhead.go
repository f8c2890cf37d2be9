package main

// dotSixRows: a Q6_K head held in 6.75 bits a value instead of as 8-bit
// codes with a float32 per 16 (10 bits): for r < len(out),
//
//	out[r] = Σ_b d_{r,b}·Σ_{k<16} sc_{r,b,k}·Σ_{i<16} (q_r(256b+16k+i) − 32)·x[256b+16k+i]
//
// over the n/256 blocks b of a row (n a multiple of 256), q the 6-bit
// unsigned codes, sc the int8 scale of each group of 16 and d the block's
// float32 scale (a float16 in the file), as Q6_K stores them. The layout
// (cpu.sixRow) puts the values of a block in an order where 64-byte chunk
// c, 4-byte lane k holds values 16k+4c … 16k+4c+3: a lane sums one group
// through the block's four chunks. A block is 192 bytes of codes (the
// low 4 bits of chunks 0, 1 in 64 bytes as nibbleRow packs them, of 2, 3
// in the next 64; then byte j of the last 64 holds bits 5:4 of chunk c's
// value j in bits 2c+1:2c) and 24 of scales (the 16 sc, d, 4 zero bytes).
// The activations come laid out to match (cpu.sixActivations): x, per
// block the 256 values in the codes' order, and xBias, the groups'
// −32·Σx (16 int32 a block).
//
// Per block and row, each chunk's codes are put together from the two
// parts (a shift, a mask, vpternlogd) and summed with vpdpbusd into lanes
// that start from the biases, so lane k ends as group k's exact
// Σ (q − 32)·x; vpmulld by the group's sc (exact: |Σ| ≤ 16·32·127, times
// 128, below 2²⁴), vcvtdq2ps, and an FMA by d into the row's float32
// lanes, reduced at the end as dotBlockRows reduces a row. Rows i and
// rows/2+i together with software prefetches; the HW version takes four
// rows a quarter of the slice apart without them (blockRowsSpread). The
// AVX2 version does each chunk in two halves (vpmaddubsw, vpmaddwd by 1),
// lanes 0-7 and 8-15 in two registers.

import (
	. "github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/gotypes"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

const dotSixRowsSig = "func(w []byte, scales []byte, x []int8, xBias []int32, out []float32)"

const (
	sixCodes = 192 // bytes of a block's codes
	sixMeta  = 24  // bytes of a block's scales: 16 sc, d, 4 zero
)

func genDotSixRows(name string, evex bool, doc ...string) {
	genNibbleConsts()
	TEXT(kernelName(name), NOSPLIT, dotSixRowsSig)
	Pragma("noescape")
	kernelDoc(name, doc...)
	codeRowBytes := func() reg.GPVirtual { return threeOver(Param("x").Len(), 2) }  // 3n/4
	scaleRowBytes := func() reg.GPVirtual { return threeOver(Param("x").Len(), 5) } // 3n/32
	vec := YMM
	if evex {
		vec = ZMM
	}
	m0F, m30 := vec(), vec()
	VPBROADCASTD(bytes0F, m0F)
	VPBROADCASTD(bytes30, m30)
	var ones reg.VecVirtual
	if !evex {
		ones = YMM()
		VMOVDQU(words0001, ones)
	}
	rowSums := func(q, s []reg.GPVirtual) []reg.VecVirtual {
		R := len(q)
		xp := load(Param("x").Base())
		bp := load(Param("xBias").Base())
		end := scaleRowBytes()
		acc := zeroedAccs(R, evex)
		j := GP64() // byte offset in the rows' scales; their codes are at 8j
		XORQ(j, j)
		loop := label("sixblocks")
		Label(loop)
		if evex {
			sixBlockVNNI(q, s, xp, bp, j, acc, m0F, m30)
		} else {
			sixBlockAVX2(q, s, xp, bp, j, acc, m0F, m30, ones)
		}
		ADDQ(U8(sixMeta), j)
		ADDQ(U32(256), xp)
		ADDQ(U8(64), bp)
		CMPQ(j, end)
		JB(LabelRef(loop))
		return rowTotals(acc, evex)
	}
	blockRows(rowSums, codeRowBytes, scaleRowBytes)
	VZEROUPPER()
	RET()
}

// threeOver returns a new register holding 3·(n >> shift), n the value of
// the argument c: the bytes of a row's six-bit codes (shift 2) or scales
// (shift 5) for n values.
func threeOver(c gotypes.Component, shift uint8) reg.GPVirtual {
	r := load(c)
	SHRQ(U8(shift), r)
	LEAQ(Mem{Base: r, Index: r, Scale: 2}, r)
	return r
}

// sixShifts: how chunk c's bits 5:4 reach bits 5:4 of a byte from the
// last 64 bytes of a block (left by 4, left by 2, in place, right by 2).
var sixShifts = [4]int{4, 2, 0, -2}

// sixHigh emits dst = bits 5:4 of chunk c's codes, from h (the block's
// last 64 or 32 bytes), the rest of each byte zero.
func sixHigh(c int, h, dst, m30 reg.VecVirtual, evex bool) {
	src := h
	if s := sixShifts[c]; s != 0 {
		if s > 0 {
			VPSLLW(U8(s), h, dst)
		} else {
			VPSRLW(U8(-s), h, dst)
		}
		src = dst
	}
	if evex {
		VPANDD(m30, src, dst)
	} else {
		VPAND(m30, src, dst)
	}
}

// sixBlockVNNI emits one block of each row at q (scales at s) into the
// rows' accumulators: the activations at xp, their biases at bp, the
// block's codes at q+8j and scales at s+j.
func sixBlockVNNI(q, s []reg.GPVirtual, xp, bp, j reg.GPVirtual, acc []reg.VecVirtual, m0F, m30 reg.VecVirtual) {
	xv := zmms0(4)
	for c := range xv {
		VMOVDQU64(Mem{Base: xp, Disp: 64 * c}, xv[c])
	}
	lane, l, h, lo, code, scl, dv := ZMM(), ZMM(), ZMM(), ZMM(), ZMM(), ZMM(), ZMM()
	for r := range q {
		codes := func(d int) Mem { return Mem{Base: q[r], Index: j, Scale: 8, Disp: d} }
		for d := 0; d < sixCodes; d += 64 {
			prefetch(codes(d))
		}
		prefetchScales(Mem{Base: s[r], Index: j, Scale: 1}, sixCodes/sixMeta)
		VMOVDQU32(Mem{Base: bp}, lane)
		VMOVDQU64(codes(128), h)
		for c := 0; c < 4; c++ {
			if c%2 == 0 {
				VMOVDQU64(codes(32*c), l)
			}
			sixHigh(c, h, code, m30, true)
			src := l
			if c%2 == 1 {
				VPSRLW(U8(4), l, lo)
				src = lo
			}
			// code = m0F ? src : code: the low 4 bits from src, bits 5:4
			// from code (imm 0xD8: C ? B : A, with A the destination).
			VPTERNLOGD(U8(0xD8), m0F, src, code)
			vpdpbusd(xv[c], code, lane)
		}
		VPMOVSXBD(Mem{Base: s[r], Index: j, Scale: 1}, scl)
		VPMULLD(scl, lane, lane)
		VCVTDQ2PS(lane, lane)
		VBROADCASTSS(Mem{Base: s[r], Index: j, Scale: 1, Disp: 16}, dv)
		VFMADD231PS(lane, dv, acc[r])
	}
}

// zmms0 allocates n zmm registers without zeroing them.
func zmms0(n int) []reg.VecVirtual {
	zs := make([]reg.VecVirtual, n)
	for i := range zs {
		zs[i] = ZMM()
	}
	return zs
}

// sixBlockAVX2 is sixBlockVNNI with ymm registers: each chunk in two
// halves of 32 bytes, lanes 0-7 (the first halves) and 8-15 (the second)
// summed in two registers.
func sixBlockAVX2(q, s []reg.GPVirtual, xp, bp, j reg.GPVirtual, acc []reg.VecVirtual, m0F, m30, ones reg.VecVirtual) {
	lanes := []reg.VecVirtual{YMM(), YMM()}
	l, h, code, lo, t, dv := YMM(), YMM(), YMM(), YMM(), YMM(), YMM()
	for r := range q {
		codes := func(d int) Mem { return Mem{Base: q[r], Index: j, Scale: 8, Disp: d} }
		for d := 0; d < sixCodes; d += 64 {
			prefetch(codes(d))
		}
		for half, ln := range lanes {
			VMOVDQU(Mem{Base: bp, Disp: 32 * half}, ln) // the biases
			VMOVDQU(codes(128+32*half), h)
			for c := 0; c < 4; c++ {
				if c%2 == 0 {
					VMOVDQU(codes(32*c+32*half), l)
				}
				sixHigh(c, h, code, m30, false)
				src := l
				if c%2 == 1 {
					VPSRLW(U8(4), l, lo)
					src = lo
				}
				VPAND(m0F, src, lo)
				VPOR(lo, code, code)
				VPMADDUBSW(Mem{Base: xp, Disp: 64*c + 32*half}, code, t)
				VPMADDWD(ones, t, t)
				VPADDD(t, ln, ln)
			}
			VPMOVSXBD(Mem{Base: s[r], Index: j, Scale: 1, Disp: 8 * half}, t)
			VPMULLD(t, ln, ln)
			VCVTDQ2PS(ln, ln)
		}
		VBROADCASTSS(Mem{Base: s[r], Index: j, Scale: 1, Disp: 16}, dv)
		VFMADD231PS(lanes[0], dv, acc[r])
		VFMADD231PS(lanes[1], dv, acc[r])
	}
}

func genDotSixRowsVNNI() {
	genDotSixRows("dotSixRowsVNNI", true,
		"dotSixRowsVNNI is dotSixRows with AVX-512 VNNI: 2 rows at a time, a block's 6-bit codes put together with vpternlogd,",
		"vpdpbusd from −32·Σx, vpmulld by the group scales, FMA by the block's.")
}

func genDotSixRowsAVX2() {
	genDotSixRows("dotSixRowsAVX2", false,
		"dotSixRowsAVX2 is dotSixRows with AVX2: 2 rows at a time, vpmaddubsw, vpmaddwd by 1, plus −32·Σx,",
		"vpmulld by the group scales, FMA by the block's.")
}

// dotSixMatMul: out[t·outStride + r] = dotSixRows of row r for token t,
// for r < rows, t < tokens: a Q6_K head in its 6.75 bits over a few
// tokens (a speculative verification pass, a step of several served
// streams). The codes are rows × 3n/4 bytes (n a positive multiple of
// 256), the scales rows × 3n/32, x tokens × n and xBias tokens × n/16
// (sixActivations of each token).
//
// dotSixMatMulVNNI takes tiles of 4 rows a quarter of the call's rows
// apart × up to sixMatMulTokens tokens, then the last rows%4 rows one at
// a time (rowTiles). Per block of a row it puts the four chunks' codes
// together and loads the group and block scales once, then per token does
// what dotSixRowsVNNI does for that row: the token's biases, four
// vpdpbusd, vpmulld, vcvtdq2ps and an FMA into the (row, token)
// accumulator, reduced at the end as that kernel reduces its rows. So
// each (row, token) gets dotSixRowsVNNI's bits, while the codes are read
// and put together once for all the tokens instead of once per token.
const dotSixMatMulSig = "func(w []byte, scales []byte, rows int, x []int8, xBias []int32, n, tokens int, out []float32, outStride int)"

// sixMatMulTokens is the most tokens a dotSixMatMulVNNI tile takes: 4 rows
// × 5 tokens are 20 accumulators, beside the two masks, a block's four
// chunks of codes, its scales, and the lane being summed.
const sixMatMulTokens = 5

func genDotSixMatMulVNNI() {
	genNibbleConsts()
	// 3n/4 bytes of codes, 3n/32 of scales; n/16 int32 biases a token.
	genTiles("dotSixMatMul", dotSixMatMulSig, sixMatMulTokens, "dotSixRowsVNNI", 3, 2,
		func() reg.GPVirtual { return threeOver(Param("n"), 2) }, "six", (*rowTiles).sixTile)
}

// sixTile emits one dotSixMatMulVNNI tile of R rows × T tokens.
func (st *rowTiles) sixTile(R, T int) {
	rws, scs := st.tileRows(R)
	toks, bias := st.tileTokens(T)

	m0F, m30 := ZMM(), ZMM()
	VPBROADCASTD(bytes0F, m0F)
	VPBROADCASTD(bytes30, m30)
	acc := zmms(R * T) // [r·T + t]
	codes := zmms0(4)
	h, l, lo, lane, scl, dv := ZMM(), ZMM(), ZMM(), ZMM(), ZMM(), ZMM()
	c := load(Param("n"))
	SHRQ(U8(8), c)
	loop := label("smmblocks")
	Label(loop)
	for r := 0; r < R; r++ {
		for d := 0; d < sixCodes; d += 64 {
			prefetch(rws.at(r, d))
		}
		VMOVDQU64(rws.at(r, 128), h)
		for k := 0; k < 4; k++ {
			if k%2 == 0 {
				VMOVDQU64(rws.at(r, 32*k), l)
			}
			sixHigh(k, h, codes[k], m30, true)
			src := l
			if k%2 == 1 {
				VPSRLW(U8(4), l, lo)
				src = lo
			}
			VPTERNLOGD(U8(0xD8), m0F, src, codes[k])
		}
		VPMOVSXBD(scs.at(r, 0), scl)
		VBROADCASTSS(scs.at(r, 16), dv)
		for t := 0; t < T; t++ {
			VMOVDQU32(bias.at(t, 0), lane)
			for k := 0; k < 4; k++ {
				vpdpbusd(toks.at(t, 64*k), codes[k], lane)
			}
			VPMULLD(scl, lane, lane)
			VCVTDQ2PS(lane, lane)
			VFMADD231PS(lane, dv, acc[r*T+t])
		}
	}
	rws.advance(sixCodes)
	scs.advance(sixMeta)
	toks.advance(256)
	bias.advance(64)
	DECQ(c)
	JNZ(LabelRef(loop))
	st.storeSums(acc, R, T)
}
