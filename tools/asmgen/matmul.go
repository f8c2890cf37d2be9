package main

// ternaryMatMul: out[t·outStride + r] = Σ_{i<n} c(w[r·stride:], i)·x[t·xStride + i]
// for r < rows, t < tokens: prefill's matrix product, in the ternary layout
// of ternary.go.
//
// Register tiling: a tile of R rows × T tokens keeps R·T accumulators in
// registers for the whole row; each weight block is loaded and unpacked
// once per tile and applied to the T tokens' activations, loaded straight
// from x. Loop order: row groups outside, token tiles inside, so a row
// group's weights (R·n/4 bytes) stay in L1 while the activations
// (tokens·n bytes, 320 KiB for 128 tokens × 2560) stream from L2. Leftover
// tokens get a tile of the same R and fewer tokens; leftover rows a tile of
// one row.
//
// Versions:
//
//	ternaryMatMulAVX2  1 row × 5 tokens: 4 code vectors (shift+mask), and
//	                   per token an int16 sum and an int32 accumulator, in
//	                   15 of the 16 ymm; per token and block 4 vpmaddubsw
//	                   and 4 vpaddw into the int16 sum, widened (vpmaddwd,
//	                   vpaddd) every 8 blocks: |Σ| ≤ 8·4·2·3·128 = 24576.
//	                   (Before: 1 row × 8 tokens widened every block, one
//	                   more multiply-pipe operation per token and block.)
//	ternaryMatMulVNNI  4 rows × 5 tokens: 20 zmm accumulators, 8 code zmm
//	                   (the rows a quarter of the call's apart for 1-3 tokens).
//	                   The 32-byte block, broadcast to both halves, gives
//	                   v & [0xC0|0x30] (codes of x[0:64] at scale 64, 16)
//	                   and (v<<4) & [0xC0|0x30] (codes of x[64:128] at the
//	                   same scales), so both vpdpbusd of a token feed one
//	                   accumulator whose lanes 0-7 / 8-15 are shifted right
//	                   by 6 / 4 at the end. Exact: a lane gathers ≤ 8·2¹⁴
//	                   = 2¹⁷ in magnitude per block, so it fits int32 for
//	                   n ≤ 2²¹ (−2³¹ exactly at codes 2, x = −128, tested).
//	                   Leftover rows: tiles of 1 row × 8 tokens.
//
// Both prefetch each row's blocks 16 KiB ahead: a pass of a few tokens
// (speculative verification, several sequences) streams the weights from
// DRAM as decode does (without, 1-2 tokens read 14 GB/s on the Zen 5 VM;
// with, 31-32). For 1-3 tokens the VNNI tiles of 4 rows take them a
// quarter of the call's rows apart (four DRAM streams, as spreadRows does
// for the row kernels), and every tile steps two blocks (one 64-byte line
// of each row, one prefetch) at a time: one token 20.6 → 28-35 GB/s from
// DRAM, two 24 → 27.5; four stay at ~18 GB/s (from L3 the same kernel
// reads 27 at 92% of the vpdpbusd peak: from DRAM the stream and the
// arithmetic do not overlap).
//
// ternaryMatMulVNNIHW, for Zen 5 (cpu.hwPrefetcher), runs 1-4 tokens in
// spread tiles with near prefetches instead (nearPrefetch: each row's line
// 2 KiB ahead into L1), and more tokens as ternaryMatMulVNNI.
//
// Measured on Zen 4 (docs/KERNELS.md): avx512vnni ~90% of the vpdpbusd
// peak (64 MAC/cycle), avx2 ~92% of the vpmaddubsw bound (32 MAC/cycle).

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/ir"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

const ternaryMatMulSig = "func(w []byte, stride, rows int, x []int8, xStride, n, tokens int, out []int32, outStride int)"

// Tile shapes, and the most tokens ternaryMatMulVNNI takes in spread tiles.
const (
	matMulSpreadTokens = 3
	matMulAVX2Tokens   = 5
	matMulVNNIRows     = 4
	matMulVNNITokens   = 5
	// matMulNearTokens: the most tokens ternaryMatMulVNNIHW takes in
	// spread tiles, with near prefetches. On the Zen 5 VM (6912×2560 from
	// DRAM, 2026-11-27, alternated in one process): 3 tokens 0.16-0.18 ms
	// with them against 0.19-0.20 with the prefetches into L2 on one
	// thread, 0.18-0.19 against 0.21-0.22 on two; 1-2 tokens as without
	// prefetches or slightly faster (2: 0.29-0.30 against 0.31); 4 tokens
	// 0.21 against 0.23 (2560×6912: 0.22 against 0.25), though in adjacent
	// tiles near prefetches were slower than those into L2 (0.21-0.22
	// against 0.19-0.20); 5 tokens spread or not as fast, and adjacent
	// tiles keep the prefetches into L2. Before, without prefetches
	// against those into L2: 2 tokens 10.1-12.9 ms against 11.3-13.2 for
	// the 2B shape's 210 matrices on two threads; 4 tokens 18.6 against
	// 13.4.
	matMulNearTokens = 4
	// matMulLineSpreadTokens: the most tokens ternaryMatMulVNNILines (for
	// Intel's cores, cpu.linePrefetches) takes in spread tiles. On the
	// Intel Xeon VM (6912×2560 from DRAM, one thread, 2026-11-28, the two
	// versions alternated in one loop): 4 tokens 10.6-10.7 GB/s spread
	// against 9.4 adjacent, 5 tokens 9.2-9.3 against 8.4; 6 tokens 6.9-7.0
	// either way, and up to 10 tokens spread no faster.
	matMulLineSpreadTokens = 5
)

// tileFunc emits one R×T tile: w points at its first row, x at its first
// token's activations, out at out[t0·outStride + r0]; left is the number
// of tokens from t0 to the end (so t0 = tokens − left); g says where the
// tile's other rows and their outputs are.
type tileFunc func(R, T int, w, x, out, left reg.GPVirtual, g tileRows)

// tileRows says where the rows of a tile lie: adjacent, or (spread) a
// quarter of the call's rows apart, as the streaming row kernels take
// them (spreadRows): four DRAM streams instead of one, which a pass of a
// few tokens, reading each weight once, needs as decode does.
type tileRows struct{ spread bool }

// gap returns a register holding the bytes between a tile's rows, given a
// register holding the row stride in bytes (returned itself when the rows
// are adjacent).
func (g tileRows) gap(stride reg.GPVirtual) reg.GPVirtual {
	if !g.spread {
		return stride
	}
	q := load(Param("rows"))
	SHRQ(U8(2), q)
	IMULQ(stride, q)
	return q
}

// outAt returns the address of the output of the tile's row k, row 0's
// being at o.
func (g tileRows) outAt(o reg.GPVirtual, k int) Mem {
	if !g.spread || k == 0 {
		return Mem{Base: o, Disp: 4 * k}
	}
	oq := load(Param("rows"))
	ANDQ(I8(-4), oq) // 4·(rows/4): bytes between the quarters' outputs
	return quarterAt(o, oq, k)
}

// matMulDriver emits the row-group and token-tile loops around tile, for
// weights and activations of one byte (stride counts bytes, x holds int8);
// out holds 4-byte elements. With spread, rowSizes is {4, 1}: with
// Q = rows/4, tile i < Q takes rows i, Q+i, 2Q+i and 3Q+i, then rows 4Q…
// go one at a time.
func matMulDriver(rowSizes []int, tokensFor func(R int) int, spread bool, tile tileFunc) {
	w := load(Param("w").Base())
	rows := load(Param("rows"))
	out := load(Param("out").Base())
	body := func(R int, g tileRows) {
		T := tokensFor(R)
		x := load(Param("x").Base())
		o := GP64()
		MOVQ(out, o)
		tokens := load(Param("tokens"))

		loop, tail, done := label("tokens"), label("tokenstail"), label("tokensdone")
		Label(loop)
		CMPQ(tokens, U32(T))
		JB(LabelRef(tail))
		tile(R, T, w, x, o, tokens, g)
		nextTokens(x, o, T)
		SUBQ(U32(T), tokens)
		JMP(LabelRef(loop))

		// 0 < tokens < T: one tile of exactly that many tokens.
		Label(tail)
		for t := T - 1; t >= 1; t-- {
			next := label("tokens")
			CMPQ(tokens, U32(t))
			JNE(LabelRef(next))
			tile(R, t, w, x, o, tokens, g)
			JMP(LabelRef(done))
			Label(next)
		}
		Label(done)

		stride := load(Param("stride"))
		if g.spread {
			nextRows(w, stride, out, 1) // the next row of each quarter
		} else {
			nextRows(w, stride, out, R)
		}
	}
	if spread {
		if len(rowSizes) != 2 || rowSizes[0] != 4 || rowSizes[1] != 1 {
			panic("matMulDriver: spread tiles take row sizes {4, 1}")
		}
		SHRQ(U8(2), rows) // Q
		done := label("spreadtiles")
		JZ(LabelRef(done))
		loop := label("spreadtile")
		Label(loop)
		body(4, tileRows{spread: true})
		DECQ(rows)
		JNZ(LabelRef(loop))
		oq := load(Param("rows"))
		ANDQ(I8(-4), oq) // 4·Q: bytes between the quarters' outputs
		qs := load(Param("stride"))
		IMULQ(oq, qs)
		SHRQ(U8(2), qs) // Q·stride: bytes between the quarters' rows
		pastQuarters(w, qs, out, oq)
		Label(done)
		Load(Param("rows"), rows)
		ANDQ(U8(3), rows)
		rowSizes = rowSizes[1:]
	}
	rowGroups(rows, rowSizes, func(R int) { body(R, tileRows{}) })
	VZEROUPPER()
	RET()
}

// nextTokens advances x by T·xStride bytes and out by T·outStride 4-byte
// elements.
func nextTokens(x, out reg.GPVirtual, T int) {
	xs := load(Param("xStride"))
	os := load(Param("outStride"))
	IMUL3Q(U32(T), xs, xs)
	IMUL3Q(U32(4*T), os, os)
	ADDQ(xs, x)
	ADDQ(os, out)
}

// strided addresses rows 0..k-1 of a matrix from base pointers each
// covering three rows: (b)(s*0), (b)(s*1), (b)(s*2), then the next base.
type strided struct {
	bases []reg.GPVirtual
	s     reg.GPVirtual
}

func newStrided(first, s reg.GPVirtual, k int) strided {
	p := strided{s: s}
	for i := 0; i < k; i += 3 {
		b := GP64()
		if i == 0 {
			MOVQ(first, b)
		} else {
			LEAQ(Mem{Base: p.bases[i/3-1], Index: s, Scale: 2}, b)
			ADDQ(s, b)
		}
		p.bases = append(p.bases, b)
	}
	return p
}

func (p strided) at(i, disp int) Mem {
	m := Mem{Base: p.bases[i/3], Disp: disp}
	if i%3 > 0 {
		m.Index, m.Scale = p.s, uint8(i%3)
	}
	return m
}

func (p strided) advance(bytes int) {
	for _, b := range p.bases {
		ADDQ(U32(bytes), b)
	}
}

// storeTile stores the R×T tile of int32 sums ys[r·T+t] (ymm) to
// out[t·outStride + r], row r's output where g puts it.
func storeTile(l lanes, ys []reg.VecVirtual, R, T int, out reg.GPVirtual, evex bool, g tileRows) {
	os := load(Param("outStride"))
	SHLQ(U8(2), os)
	o := GP64()
	MOVQ(out, o)
	for t := 0; t < T; t++ {
		col := make([]reg.VecVirtual, R)
		for r := range col {
			col[r] = ys[r*T+t]
		}
		if g.spread && R == 4 {
			storeLanes(l.sum4(col), func(k int) Mem { return g.outAt(o, k) })
		} else {
			storeRowsI32(l, col, o, evex)
		}
		if t < T-1 {
			ADDQ(os, o)
		}
	}
}

func genTernaryMatMulAVX2() {
	TEXT("ternaryMatMulAVX2", NOSPLIT, ternaryMatMulSig)
	Pragma("noescape")
	Doc(fmt.Sprintf("ternaryMatMulAVX2 is ternaryMatMul with AVX2: tiles of 1 row × %d tokens.", matMulAVX2Tokens))
	matMulDriver([]int{1}, func(int) int { return matMulAVX2Tokens }, false, func(R, T int, w, x, out, _ reg.GPVirtual, g tileRows) {
		Commentf("tile %d row × %d tokens", R, T)
		xs := load(Param("xStride"))
		blocks := load(Param("n"))
		SHRQ(U8(7), blocks)
		q := GP64()
		MOVQ(w, q)
		toks := newStrided(x, xs, T)
		acc := ymms(T)
		a16 := ymms(T)
		mask := YMM()
		VMOVDQU(bytes03, mask)
		var c [4]reg.VecVirtual // codes for x[0:32], x[32:64], x[64:96], x[96:128]
		for k := range c {
			c[k] = YMM()
		}
		b := YMM()
		block := func() {
			prefetch(Mem{Base: q})
			VMOVDQU(Mem{Base: q}, c[3])
			for k, sh := range []uint8{6, 4, 2} {
				VPSRLW(U8(sh), c[3], c[k])
				VPAND(mask, c[k], c[k])
			}
			VPAND(mask, c[3], c[3])
			for t := 0; t < T; t++ {
				for k := 0; k < 4; k++ {
					VPMADDUBSW(toks.at(t, 32*k), c[k], b)
					VPADDW(b, a16[t], a16[t])
				}
			}
			ADDQ(U8(32), q)
			toks.advance(128)
		}
		widen := func() {
			for t := 0; t < T; t++ {
				VPMADDWD(words0001, a16[t], a16[t])
				VPADDD(a16[t], acc[t], acc[t])
				VPXOR(a16[t], a16[t], a16[t])
			}
		}
		// Groups of 8 blocks into the int16 sums (|Σ| ≤ 8·4·2·3·128 =
		// 24576, codes ≤ 3), widened after each group and after the rest.
		group, groupDone := label("group"), label("groupdone")
		Label(group)
		CMPQ(blocks, U8(8))
		JB(LabelRef(groupDone))
		in := GP64()
		MOVQ(U32(8), in)
		inner := label("inner")
		Label(inner)
		block()
		DECQ(in)
		JNZ(LabelRef(inner))
		widen()
		SUBQ(U8(8), blocks)
		JMP(LabelRef(group))
		Label(groupDone)
		rest, done := label("rest"), label("restdone")
		TESTQ(blocks, blocks)
		JZ(LabelRef(done))
		Label(rest)
		block()
		DECQ(blocks)
		JNZ(LabelRef(rest))
		widen()
		Label(done)
		storeTile(int32VEX, acc, R, T, out, false, g)
	})
}

func genTernaryMatMulVNNI() {
	TEXT(kernelName("ternaryMatMulVNNI"), NOSPLIT, ternaryMatMulSig)
	Pragma("noescape")
	if linePrefetch {
		Doc(fmt.Sprintf("ternaryMatMulVNNILines is ternaryMatMulVNNI (the same bits) for Intel's cores: it takes up to %d", matMulLineSpreadTokens),
			fmt.Sprintf("tokens (ternaryMatMulVNNI %d) in tiles of rows a quarter of the call's apart.", matMulSpreadTokens))
	} else {
		kernelDoc("ternaryMatMulVNNI", fmt.Sprintf("ternaryMatMulVNNI is ternaryMatMul with AVX-512 VNNI: tiles of %d rows × %d tokens.",
			matMulVNNIRows, matMulVNNITokens))
	}
	nearDoc("ternaryMatMulVNNI", matMulNearTokens)
	tokensFor := func(R int) int {
		if R == 1 {
			return 8
		}
		return matMulVNNITokens
	}
	// A few tokens read the weights at the memory's pace: spread tiles
	// (four DRAM streams) read 1-3 tokens' weights 5-60% faster on the Zen
	// 5 VM; from 4 tokens on the arithmetic sets the pace, and adjacent
	// rows were as fast or up to 10% faster.
	spread := matMulSpreadTokens
	switch {
	case hwPrefetchOnly:
		spread = matMulNearTokens
	case linePrefetch:
		spread = matMulLineSpreadTokens
	}
	fewTokenDrivers([]int{matMulVNNIRows, 1}, tokensFor, spread, vnniTile)
}

// nearDoc documents, in a HW version, the spread tiles with near
// prefetches that it takes for calls of 1…tokens tokens.
func nearDoc(plain string, tokens int) {
	if hwPrefetchOnly {
		Doc(plain+"HW is "+plain+" (the same bits) with other prefetches:",
			fmt.Sprintf("for 1…%d tokens its tiles take rows a quarter of the call's apart and prefetch each row's", tokens),
			fmt.Sprintf("lines %d bytes ahead into L1 (PREFETCHNTA); from %d tokens on it is %s.", nearAhead, tokens+1, plain))
	}
}

// fewTokenDrivers emits the tile loops of a few-token kernel: calls of at
// most spread tokens (none when 0) in tiles of rows a quarter of the
// call's apart, with near prefetches in a HW version, and the others in
// tiles of adjacent rows, with the prefetches into L2.
func fewTokenDrivers(rowSizes []int, tokensFor func(R int) int, spread int, tile tileFunc) {
	with := func(near bool) tileFunc {
		return func(R, T int, w, x, out, left reg.GPVirtual, g tileRows) {
			fewTokenPrefetches(near, func() { tile(R, T, w, x, out, left, g) })
		}
	}
	if spread > 0 {
		tokens := load(Param("tokens"))
		adjacent := label("adjacent")
		CMPQ(tokens, U8(spread))
		JA(LabelRef(adjacent))
		matMulDriver(rowSizes, tokensFor, true, with(true))
		Label(adjacent)
	}
	matMulDriver(rowSizes, tokensFor, false, with(false))
}

// genTernaryMatMulVNNIGFNI writes ternaryMatMulVNNIGFNI: ternaryMatMulVNNI's
// tiles of adjacent rows (with its prefetches into L2) for a prefill's
// chunks of tokens, each block's codes of x[64:128] taken by one
// VGF2P8AFFINEQB instead of a shift and a mask: 2 vector operations per
// row and block beside the tile's 2·T vpdpbusd instead of 3. On the Intel
// Xeon VM (128 tokens through l1Blocks, one thread, best of 10, the two
// kernels alternated, three runs): 3840×2560 256-259 → 273-276 GMAC/s,
// 13824×2560 250-253 → 267-270, 2560×6912 271 → 290-293 (+6.5-7.5%).
func genTernaryMatMulVNNIGFNI() {
	gfniUnpack = true
	defer func() { gfniUnpack = false }()
	TEXT("ternaryMatMulVNNIGFNI", NOSPLIT, ternaryMatMulSig)
	Pragma("noescape")
	Doc("ternaryMatMulVNNIGFNI is ternaryMatMulVNNI (the same bits) in tiles of adjacent rows only, each",
		"block's second half of codes unpacked by one VGF2P8AFFINEQB (GFNI) instead of a shift and a mask:",
		"the chunks of a prefill's tokens (l1Blocks) on CPUs with GFNI.")
	tokensFor := func(R int) int {
		if R == 1 {
			return 8
		}
		return matMulVNNITokens
	}
	fewTokenDrivers([]int{matMulVNNIRows, 1}, tokensFor, 0, vnniTile)
}

// gfniUnpack, while set, makes vnniTile unpack with VGF2P8AFFINEQB.
var gfniUnpack bool

// gf2p8affineqb emits VGF2P8AFFINEQB $0, matrix, src, dst: each byte of
// src through the 8×8 bit matrix of its qword (avo has no GFNI).
func gf2p8affineqb(matrix Mem, src, dst reg.VecVirtual) {
	Instruction(&ir.Instruction{
		Opcode:   "VGF2P8AFFINEQB",
		Operands: []Op{U8(0), matrix, src, dst},
		Inputs:   []Op{matrix, src},
		Outputs:  []Op{dst},
		ISA:      []string{"AVX512F", "GFNI"},
	})
}

// gfLo is vnniTile's VGF2P8AFFINEQB matrix: output bit b of a byte is the
// parity of (matrix byte 7−b) AND the byte, so bits 3:2 go to 7:6 in the
// low half (codes of x[64:96] at scale 64) and bits 1:0 to 5:4 in the high
// half (x[96:128] at scale 16): (byte << 4) & maskHi.
var gfLo Mem

func genGFNIConsts() {
	gfLo = table("gfLo", 64, func(i int) uint32 {
		if i%8 != 0 { // the qword's high half
			return 0
		}
		return pick(i < 32, 0x00000408, 0x01020000)
	})
}

// vnniTile emits one R×T tile of ternaryMatMulVNNI.
func vnniTile(R, T int, w, x, out, _ reg.GPVirtual, g tileRows) {
	Commentf("tile %d rows × %d tokens", R, T)
	stride := load(Param("stride"))
	xs := load(Param("xStride"))
	blocks := load(Param("n"))
	SHRQ(U8(7), blocks)
	rws := newStrided(w, g.gap(stride), R)
	toks := newStrided(x, xs, T)
	mask := ZMM()
	VMOVDQU64(maskHi, mask)
	acc := zmms(R * T) // acc[r·T + t]
	// block multiplies the 128-weight block at byte offset d of each
	// row (activations at 4·d) into acc, prefetching its line when pf.
	block := func(d int, pf bool) {
		hi, lo := make([]reg.VecVirtual, R), make([]reg.VecVirtual, R)
		for r := 0; r < R; r++ {
			hi[r], lo[r] = ZMM(), ZMM()
			if pf {
				prefetch(rws.at(r, d))
			}
			VBROADCASTI64X4(rws.at(r, d), hi[r])
			if gfniUnpack {
				gf2p8affineqb(gfLo, hi[r], lo[r]) // codes of x[64:128] at scales 64, 16
				VPANDD(mask, hi[r], hi[r])        // codes of x[0:64] at scales 64, 16
			} else {
				VPSLLW(U8(4), hi[r], lo[r])
				VPANDD(mask, hi[r], hi[r]) // codes of x[0:64] at scales 64, 16
				VPANDD(mask, lo[r], lo[r]) // codes of x[64:128] at scales 64, 16
			}
		}
		for t := 0; t < T; t++ {
			x0, x1 := ZMM(), ZMM()
			VMOVDQU64(toks.at(t, 4*d), x0)
			VMOVDQU64(toks.at(t, 4*d+64), x1)
			for r := 0; r < R; r++ {
				vpdpbusd(x0, hi[r], acc[r*T+t])
				vpdpbusd(x1, lo[r], acc[r*T+t])
			}
		}
	}
	// Two blocks (one 64-byte line of each row, one prefetch) per
	// step, then an odd last block.
	pairs, pairsDone, done := label("tilepairs"), label("tilepairsdone"), label("tiledone")
	Label(pairs)
	CMPQ(blocks, U8(2))
	JB(LabelRef(pairsDone))
	block(0, true)
	block(32, false)
	rws.advance(64)
	toks.advance(256)
	SUBQ(U8(2), blocks)
	JMP(LabelRef(pairs))
	Label(pairsDone)
	TESTQ(blocks, blocks)
	JZ(LabelRef(done))
	block(0, true)
	Label(done)
	sh := ZMM()
	VMOVDQU64(shiftHi, sh)
	ys := make([]reg.VecVirtual, R*T)
	for i := range ys {
		VPSRAVD(sh, acc[i], acc[i])
		ys[i] = acc[i] // summed by storeTile: four rows' zmm at once (sum4)
		if R%4 != 0 {
			ys[i] = int32EVEX.fold256(acc[i])
		}
	}
	storeTile(int32EVEX, ys, R, T, out, true, g)
}
