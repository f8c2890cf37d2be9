package main

// dotBlockRows: out[r] = Σ_g scales[r·G + g]·Σ_{i<group} w[r·n + g·group + i]·x[g·group + i]
// for r < len(out), n = len(x), G = n/group, group 16 or 32: the output head
// held as a block type (Q8_0, Q4_0: 32 int8 codes per scale; Q6_K: 16),
// |x| ≤ 127. Each group's integer sum is exact; the sums are converted to
// float32 four codes at a time (a lane's partial sum) and multiplied by
// their group's scale with FMA, in the kernel's own order.
//
// Versions:
//
//	dotBlockRowsVNNI  2 rows at a time (rows i and rows/2+i: two streams)
//	                  share x, 256 bytes of each (one prefetch) per step,
//	                  then 64 at a time: per 64 bytes and row,
//	                  vpdpbusd(w XOR 0x80, x) into a copy of xBias (the
//	                  caller's −128·Σ of each 4 x bytes, so the lane is
//	                  Σ w·x exactly), vcvtdq2ps, and an FMA with the
//	                  lanes' scales (4 scales broadcast and permuted to 4
//	                  lanes each for group 16, 2 to 8 lanes for group 32).
//	dotBlockRowsAVX2  2 rows: sign trick (vpsignb, vpabsb, vpmaddubsw,
//	                  vpmaddwd by 1) per 32 bytes into 8 int32 lanes, then
//	                  the same conversion and FMA.
//
// (Two rows, not four: four rows' code and scale pointers would need more
// general registers than amd64 has beside the loop's.) The HW version
// (dotBlockRowsVNNIHW, for Zen 5: no software prefetches) takes four rows
// a quarter of the slice apart, the outer loop's pointers on the stack
// (blockRowsSpread): on one thread of the Zen 5 VM it read 0.75-0.87 of
// the read probe against 0.65-0.80 for two rows (group 16: 28-36 GB/s
// against 24-31; group 32: 25-36 against 22-29; 2026-11-27, the two test
// binaries alternated three times, a noisy hour). n must be a multiple of
// 64 (the Go wrapper checks).

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/gotypes"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

const dotBlockRowsSig = "func(w []int8, scales []float32, group int, x []int8, xBias []int32, out []float32)"

var (
	permQuads  Mem // int32 0,0,0,0,1,1,1,1,2,2,2,2,3,3,3,3: lanes of 4 scales, 4 each
	permOctets Mem // int32 0×8, 1×8: lanes of 2 scales, 8 each
)

func genBlockConsts() {
	permQuads = table("permQuads", 64, func(i int) uint32 { return uint32(i / 16) })
	permOctets = table("permOctets", 64, func(i int) uint32 { return uint32(i / 32) })
}

// blockRowsBody emits the row-group loop of a dotBlockRows kernel for one
// group size: chunk(R, q, s, i, sOff) handles bytes i… of the R rows
// (pointers q) and their scales (pointers s at byte offset sOff).
func blockRowsBody(group int, width int, evex bool) {
	// scaleRowBytes returns a new register holding 4·n/group.
	scaleRowBytes := func() reg.GPVirtual {
		r := load(Param("x").Len())
		SHRQ(U8(bitsLen(group)-2), r)
		return r
	}
	// Scales per chunk of width bytes, and their bytes.
	perChunk := width / group
	sStep := 4 * perChunk

	var flip, ones, idx reg.VecVirtual
	vec := YMM
	if evex {
		vec = ZMM
		flip = ZMM()
		VPBROADCASTD(bytes80, flip)
	} else {
		ones = YMM()
		VMOVDQU(words0001, ones)
	}
	if perChunk > 1 {
		idx = vec()
		if evex {
			VMOVDQU32(map[int]Mem{4: permQuads, 2: permOctets}[perChunk], idx)
		} else {
			VMOVDQU(permQuads, idx) // AVX2, group 16: 2 scales → 0,0,0,0,1,1,1,1
		}
	}
	// rowSums handles the rows at q (scales at s) and returns an xmm per
	// row whose lane 0 is its sum: each row is reduced alone, so a row's
	// bits do not depend on the rows beside it.
	rowSums := func(q, s []reg.GPVirtual) []reg.VecVirtual {
		R := len(q)
		x := load(Param("x").Base())
		n := load(Param("x").Len())
		xb := load(Param("xBias").Base())
		acc := zeroedAccs(R, evex)
		i, j := GP64(), GP64() // byte offsets in the rows of w and of scales
		XORQ(j, j)
		// One set of temporaries for all rows keeps avo's allocator simple.
		u, lane, sv := vec(), vec(), vec()
		// chunk handles the width bytes at i+d of each row, prefetching
		// when pf, and steps j past their scales.
		chunk := func(d int, pf bool) {
			xv := vec()
			if evex {
				VMOVDQU64(Mem{Base: x, Index: i, Scale: 1, Disp: d}, xv)
			} else {
				VMOVDQU(Mem{Base: x, Index: i, Scale: 1, Disp: d}, xv)
			}
			var nb reg.VecVirtual
			if evex {
				nb = ZMM()
				VMOVDQU32(Mem{Base: xb, Index: i, Scale: 1, Disp: d}, nb)
			}
			for r := 0; r < R; r++ {
				if pf {
					prefetch(Mem{Base: q[r], Index: i, Scale: 1, Disp: d})
					prefetchScales(Mem{Base: s[r], Index: j, Scale: 1}, group/4)
				}
				if evex {
					VPXORD(Mem{Base: q[r], Index: i, Scale: 1, Disp: d}, flip, u)
					VMOVDQA32(nb, lane)
					vpdpbusd(xv, u, lane)
				} else {
					VMOVDQU(Mem{Base: q[r], Index: i, Scale: 1, Disp: d}, u)
					VPSIGNB(u, xv, lane) // sign(w)·x
					VPABSB(u, u)         // |w|, 128 for −128 read unsigned
					VPMADDUBSW(lane, u, lane)
					VPMADDWD(ones, lane, lane)
				}
				VCVTDQ2PS(lane, lane)
				sm := Mem{Base: s[r], Index: j, Scale: 1}
				switch {
				case perChunk == 1:
					VBROADCASTSS(sm, sv)
				case evex && perChunk == 4:
					VBROADCASTF32X4(sm, sv)
					VPERMPS(sv, idx, sv)
				default: // 2 scales: group 32 in zmm, group 16 in ymm
					VBROADCASTSD(sm, sv)
					VPERMPS(sv, idx, sv)
				}
				VFMADD231PS(lane, sv, acc[r])
			}
			ADDQ(U8(sStep), j)
		}
		streamLoop(i, n, blockStep, width, chunk)
		return rowTotals(acc, evex)
	}
	blockRows(rowSums, func() reg.GPVirtual { return load(Param("x").Len()) }, scaleRowBytes)
}

// zeroedAccs allocates R zeroed accumulators, one per row: zmm registers
// with evex, else ymm.
func zeroedAccs(R int, evex bool) []reg.VecVirtual {
	acc := make([]reg.VecVirtual, R)
	for r := range acc {
		if evex {
			acc[r] = ZMM()
			zeroZ(acc[r])
		} else {
			acc[r] = YMM()
			VXORPS(acc[r], acc[r], acc[r])
		}
	}
	return acc
}

// rowTotals reduces each row's accumulator alone (a zmm folded to a ymm
// first) and returns an xmm per row whose lane 0 is its sum.
func rowTotals(acc []reg.VecVirtual, evex bool) []reg.VecVirtual {
	l := f32VEX
	ys := acc
	if evex {
		l = f32EVEX
		ys = make([]reg.VecVirtual, len(acc))
		for r := range ys {
			ys[r] = l.fold256(acc[r])
		}
	}
	sums := make([]reg.VecVirtual, len(acc))
	for r := range ys {
		sums[r] = l.sum1(ys[r])
	}
	return sums
}

// blockRows emits the row loop of a dotBlockRows or dotNibbleRows kernel
// around rowSums (see blockRowsBody): rows i and rows/2+i together, or in
// a HW version four rows a quarter of the slice apart (blockRowsSpread).
// codeRowBytes and scaleRowBytes return new registers holding the bytes of
// a row's codes and of its scales.
func blockRows(rowSums func(q, s []reg.GPVirtual) []reg.VecVirtual, codeRowBytes, scaleRowBytes func() reg.GPVirtual) {
	if hwPrefetchOnly {
		blockRowsSpread(rowSums, codeRowBytes, scaleRowBytes)
		return
	}
	w := load(Param("w").Base())
	sc := load(Param("scales").Base())
	n := codeRowBytes()
	out := load(Param("out").Base())
	rows := load(Param("out").Len())
	srb := scaleRowBytes()
	// Rows i and Q+i together (Q = rows/2, kept on the stack for want of
	// registers): two streams half the slice apart, as spreadRows does
	// with four; then the odd row.
	Q := AllocLocal(8)
	cnt := GP64()
	MOVQ(rows, cnt)
	SHRQ(U8(1), cnt)
	MOVQ(cnt, Q)
	done := label("pairsdone")
	TESTQ(cnt, cnt)
	JZ(LabelRef(done))
	loop := label("pairs")
	Label(loop)
	q1, s1 := GP64(), GP64()
	MOVQ(Q, q1)
	IMULQ(n, q1)
	ADDQ(w, q1)
	MOVQ(Q, s1)
	IMULQ(srb, s1)
	ADDQ(sc, s1)
	sums := rowSums([]reg.GPVirtual{w, q1}, []reg.GPVirtual{sc, s1})
	VMOVSS(sums[0], Mem{Base: out})
	o := GP64()
	MOVQ(Q, o)
	VMOVSS(sums[1], Mem{Base: out, Index: o, Scale: 4})
	ADDQ(n, w)
	ADDQ(srb, sc)
	ADDQ(U8(4), out)
	DECQ(cnt)
	JNZ(LabelRef(loop))
	// Past the second half.
	t := GP64()
	MOVQ(Q, t)
	IMULQ(n, t)
	ADDQ(t, w)
	MOVQ(Q, t)
	IMULQ(srb, t)
	ADDQ(t, sc)
	MOVQ(Q, t)
	LEAQ(Mem{Base: out, Index: t, Scale: 4}, out)
	Label(done)
	odd := label("noodd")
	rest := load(Param("out").Len())
	TESTQ(U32(1), rest)
	JZ(LabelRef(odd))
	VMOVSS(rowSums([]reg.GPVirtual{w}, []reg.GPVirtual{sc})[0], Mem{Base: out})
	Label(odd)
}

// blockRowsSpread emits the row loop of a dotBlockRows HW version: with Q
// = rows/4, rows i, Q+i, 2Q+i and 3Q+i together (four streams a quarter
// of the slice apart, as spreadRows takes them; the pointers of the loop
// around them kept on the stack, for want of registers), then the last
// rows % 4 one at a time. Each row is reduced alone, so its bits are
// those of the 2-row version.
func blockRowsSpread(rowSums func(q, s []reg.GPVirtual) []reg.VecVirtual, codeRowBytes, scaleRowBytes func() reg.GPVirtual) {
	Q, W, SC, OUT, CNT := AllocLocal(8), AllocLocal(8), AllocLocal(8), AllocLocal(8), AllocLocal(8)
	for _, v := range []struct {
		m Mem
		c gotypes.Component
	}{{W, Param("w").Base()}, {SC, Param("scales").Base()}, {OUT, Param("out").Base()}} {
		r := load(v.c)
		MOVQ(r, v.m)
	}
	cnt := load(Param("out").Len())
	SHRQ(U8(2), cnt)
	MOVQ(cnt, Q)
	MOVQ(cnt, CNT)
	done := label("quadsdone")
	TESTQ(cnt, cnt)
	JZ(LabelRef(done))
	// quarters returns the four pointers base, base+gap, base+2·gap,
	// base+3·gap, base at m and gap = Q·perRow.
	quarters := func(m Mem, perRow reg.GPVirtual) []reg.GPVirtual {
		p := []reg.GPVirtual{GP64(), GP64(), GP64(), GP64()}
		MOVQ(m, p[0])
		IMULQ(Q, perRow)
		LEAQ(Mem{Base: p[0], Index: perRow, Scale: 1}, p[1])
		LEAQ(Mem{Base: p[0], Index: perRow, Scale: 2}, p[2])
		LEAQ(Mem{Base: p[2], Index: perRow, Scale: 1}, p[3])
		return p
	}
	loop := label("quads")
	Label(loop)
	q := quarters(W, codeRowBytes())
	s := quarters(SC, scaleRowBytes())
	sums := rowSums(q, s)
	o, g := GP64(), GP64()
	MOVQ(OUT, o)
	MOVQ(Q, g)
	SHLQ(U8(2), g) // bytes between the quarters' outputs
	for k, sum := range sums {
		VMOVSS(sum, quarterAt(o, g, k))
	}
	ADDQ(codeRowBytes(), W)
	ADDQ(scaleRowBytes(), SC)
	ADDQ(U8(4), OUT)
	DECQ(CNT)
	JNZ(LabelRef(loop))
	Label(done)
	// Past the other three quarters, then the rest one row at a time.
	w, sc, out := GP64(), GP64(), GP64()
	MOVQ(W, w)
	MOVQ(SC, sc)
	MOVQ(OUT, out)
	qs, oq := codeRowBytes(), GP64()
	IMULQ(Q, qs) // bytes of codes between the quarters
	MOVQ(Q, oq)
	SHLQ(U8(2), oq) // bytes between their outputs
	pastQuarters(w, qs, out, oq)
	ss := scaleRowBytes()
	IMULQ(Q, ss) // and of scales: sc 3·Q rows on too
	LEAQ(Mem{Base: sc, Index: ss, Scale: 2}, sc)
	ADDQ(ss, sc)
	rest := load(Param("out").Len())
	ANDQ(U8(3), rest)
	one, oneDone := label("blocksingle"), label("blocksingledone")
	JZ(LabelRef(oneDone))
	Label(one)
	VMOVSS(rowSums([]reg.GPVirtual{w}, []reg.GPVirtual{sc})[0], Mem{Base: out})
	ADDQ(codeRowBytes(), w)
	ADDQ(scaleRowBytes(), sc)
	ADDQ(U8(4), out)
	DECQ(rest)
	JNZ(LabelRef(one))
	Label(oneDone)
}

func genDotBlockRows(name string, evex bool, doc string) {
	TEXT(kernelName(name), NOSPLIT, dotBlockRowsSig)
	Pragma("noescape")
	kernelDoc(name, doc)
	width := 32
	if evex {
		width = 64
	}
	g := load(Param("group"))
	g32 := label("group32")
	CMPQ(g, U8(32))
	JE(LabelRef(g32))
	blockRowsBody(16, width, evex)
	VZEROUPPER()
	RET()
	Label(g32)
	blockRowsBody(32, width, evex)
	VZEROUPPER()
	RET()
}

func genDotBlockRowsVNNI() {
	genDotBlockRows("dotBlockRowsVNNI", true,
		"dotBlockRowsVNNI is dotBlockRows with AVX-512 VNNI: 2 rows at a time, vpdpbusd(w XOR 0x80, x) from −128·Σx, FMA by the group scales.")
}

func genDotBlockRowsAVX2() {
	genDotBlockRows("dotBlockRowsAVX2", false,
		"dotBlockRowsAVX2 is dotBlockRows with AVX2: 2 rows at a time, vpsignb/vpabsb/vpmaddubsw, FMA by the group scales.")
}

// blockStep is the bytes of each row dotBlockRows takes per step, with one
// prefetch per row: a block-type head's rows read DRAM at 0.80-1.05 of the
// read probe instead of 0.68-0.75 with one prefetch per 64 bytes (Zen 4
// VM, one thread, BenchmarkDotBlockRows; 128 bytes measured the same).
const blockStep = 256

// dotBlockMatMul: out[t·outStride + r] = dotBlockRows of row r for token
// t, for r < rows, t < tokens: a block-type head over a few tokens (a
// speculative verification pass, a step of several served streams). The
// codes are rows × n (n a positive multiple of 64), the scales rows ×
// n/group, x tokens × n, xBias tokens × n/4 (blockBias of each token).
//
// dotBlockMatMulVNNI takes tiles of 4 rows a quarter of the call's rows
// apart (four DRAM streams, as the row kernels take them) × up to
// blockMatMulTokens tokens, then the last rows%4 rows one at a time. Per
// 64 bytes of a row it flips the codes (XOR 0x80) and lays out their
// group scales once, then per token does what dotBlockRowsVNNI does for
// that row: the token's bias, vpdpbusd, vcvtdq2ps and an FMA into the
// (row, token) accumulator, reduced at the end as that kernel reduces
// its rows. So each (row, token) gets dotBlockRowsVNNI's bits, and a
// token's logits do not depend on the tokens beside it. Where the per-
// token calls of dotBlockRows (over blocks of rows that stay in L2) did
// the flip and the scales once per token and read the codes again per
// token, a tile does them once. The x and bias vectors are read from L1
// per (row, token); the outer loops' pointers live on the stack, for want
// of general registers. The HW version prefetches each row's line 2 KiB
// ahead into L1 (PREFETCHNTA, as the other few-token HW versions), the
// other 16 KiB ahead into L2.
const dotBlockMatMulSig = "func(w []int8, scales []float32, group, rows int, x []int8, xBias []int32, n, tokens int, out []float32, outStride int)"

// blockMatMulTokens is the most tokens a dotBlockMatMulVNNI tile takes:
// 4 rows × 6 tokens are 24 accumulators, beside the flip and permutation
// constants, the flipped codes, the scales and the lane being summed.
const blockMatMulTokens = 6

func genDotBlockMatMulVNNI() {
	rowTilesText("dotBlockMatMul", dotBlockMatMulSig, blockMatMulTokens, "dotBlockRowsVNNI")
	g := load(Param("group"))
	g32 := label("bmmgroup32")
	CMPQ(g, U8(32))
	JE(LabelRef(g32))
	blockMatMulBody(16)
	Label(g32)
	blockMatMulBody(32)
}

// blockMatMulBody emits dotBlockMatMulVNNI for one group size.
func blockMatMulBody(group int) {
	st := newRowTiles(bitsLen(group)-2, blockMatMulTokens, func() reg.GPVirtual { return load(Param("n")) }) // bytes of scales = bytes of codes >> shift
	st.body = func(R, T int) {
		Commentf("block tile %d rows × %d tokens, group %d", R, T, group)
		st.blockTile(R, T, group)
	}
	st.rows()
}

// rowTilesText begins op's rowTiles kernel with AVX-512 VNNI (opVNNI, or
// opVNNIHW in a withoutPrefetch), tiles of tokens tokens, and its doc:
// each (row, token) summed as rowKernel sums the row.
func rowTilesText(op, sig string, tokens int, rowKernel string) {
	name := op + "VNNI"
	TEXT(kernelName(name), NOSPLIT, sig)
	Pragma("noescape")
	kernelDoc(name,
		fmt.Sprintf("%s is %s with AVX-512 VNNI: tiles of 4 rows (a quarter of the call's apart) × %d tokens,", name, op, tokens),
		fmt.Sprintf("each (row, token) summed as %s sums the row.", rowKernel))
	if hwPrefetchOnly {
		Doc(name+"HW is "+name+" (the same bits) with other prefetches:",
			fmt.Sprintf("its tiles prefetch each row's lines %d bytes ahead into L1 (PREFETCHNTA).", nearAhead))
	}
}

// rowTiles is where a few-token head kernel (dotBlockMatMulVNNI,
// dotNibbleMatMulVNNI) keeps its loops' pointers: W the row group's first
// row, O its output for token 0, CNT the row groups left, X, B and OT the
// token tile's activations, biases and output, TL the tokens left. Its
// rows run body over tiles of 4 rows a quarter of the call's rows apart
// (four DRAM streams, as the row kernels take them), then the last rows%4
// rows one at a time, each × tiles of up to tokens tokens.
type rowTiles struct {
	W, O, CNT, X, B, OT, TL Mem
	shift                   uint8                // bytes of a row's scales = bytes of its codes >> shift
	biasShift               uint8                // bytes of a token's biases = n >> biasShift
	tokens                  int                  // the most tokens a tile takes
	rowBytes                func() reg.GPVirtual // bytes of a row's codes
	body                    func(R, T int)       // one tile of R rows × T tokens
}

func newRowTiles(shift uint8, tokens int, rowBytes func() reg.GPVirtual) *rowTiles {
	st := &rowTiles{W: AllocLocal(8), O: AllocLocal(8), CNT: AllocLocal(8), shift: shift, tokens: tokens, rowBytes: rowBytes}
	st.X, st.B, st.OT, st.TL = AllocLocal(8), AllocLocal(8), AllocLocal(8), AllocLocal(8)
	return st
}

// rows emits the kernel's loops over its rows, and its return.
func (st *rowTiles) rows() {
	W, O, CNT := st.W, st.O, st.CNT
	w := load(Param("w").Base())
	MOVQ(w, W)
	o := load(Param("out").Base())
	MOVQ(o, O)
	q := load(Param("rows"))
	SHRQ(U8(2), q)
	MOVQ(q, CNT)
	quadsDone := label("bmmquadsdone")
	TESTQ(q, q)
	JZ(LabelRef(quadsDone))
	quads := label("bmmquads")
	Label(quads)
	st.tokenTiles(4)
	ADDQ(st.rowBytes(), W) // the next row of each quarter
	ADDQ(U8(4), O)
	DECQ(CNT)
	JNZ(LabelRef(quads))
	// Past the other three quarters.
	qs, oq := load(Param("rows")), load(Param("rows"))
	SHRQ(U8(2), qs)
	IMULQ(st.rowBytes(), qs) // bytes of codes between the quarters
	ANDQ(I8(-4), oq)         // bytes between their outputs
	w, o = GP64(), GP64()
	MOVQ(W, w)
	MOVQ(O, o)
	pastQuarters(w, qs, o, oq)
	MOVQ(w, W)
	MOVQ(o, O)
	Label(quadsDone)
	rest := load(Param("rows"))
	ANDQ(U8(3), rest)
	MOVQ(rest, CNT)
	done := label("bmmsinglesdone")
	JZ(LabelRef(done))
	singles := label("bmmsingles")
	Label(singles)
	st.tokenTiles(1)
	ADDQ(st.rowBytes(), W)
	ADDQ(U8(4), O)
	DECQ(CNT)
	JNZ(LabelRef(singles))
	Label(done)
	VZEROUPPER()
	RET()
}

// tokenTiles emits the token tiles of the R rows at W: tiles of st.tokens
// tokens, then one of the rest.
func (st *rowTiles) tokenTiles(R int) {
	x := load(Param("x").Base())
	MOVQ(x, st.X)
	b := load(Param("xBias").Base())
	MOVQ(b, st.B)
	o := GP64()
	MOVQ(st.O, o)
	MOVQ(o, st.OT)
	tl := load(Param("tokens"))
	MOVQ(tl, st.TL)
	T := st.tokens
	loop, tail, done := label("bmmtokens"), label("bmmtokenstail"), label("bmmtokensdone")
	Label(loop)
	CMPQ(st.TL, U8(T))
	JB(LabelRef(tail))
	st.tile(R, T)
	step := load(Param("n"))
	IMUL3Q(U32(T), step, step) // bytes of T tokens' x, and of their biases
	ADDQ(step, st.X)
	if st.biasShift > 0 {
		SHRQ(U8(st.biasShift), step)
	}
	ADDQ(step, st.B)
	os := load(Param("outStride"))
	IMUL3Q(U32(4*T), os, os)
	ADDQ(os, st.OT)
	SUBQ(U8(T), st.TL)
	JMP(LabelRef(loop))
	Label(tail)
	for t := T - 1; t >= 1; t-- {
		next := label("bmmtokens")
		CMPQ(st.TL, U8(t))
		JNE(LabelRef(next))
		st.tile(R, t)
		JMP(LabelRef(done))
		Label(next)
	}
	Label(done)
}

// tile emits one tile of R rows (4: a quarter of the call's rows apart; 1)
// × T tokens.
func (st *rowTiles) tile(R, T int) {
	fewTokenPrefetches(true, func() { st.body(R, T) })
}

// tileRows returns the tile's R rows of codes and of scales, strided.
func (st *rowTiles) tileRows(R int) (rws, scs strided) {
	w0 := GP64()
	MOVQ(st.W, w0)
	gap := st.rowBytes()
	if R == 4 {
		q := load(Param("rows"))
		SHRQ(U8(2), q)
		IMULQ(q, gap) // bytes between the quarters' rows
	}
	s0 := GP64()
	MOVQ(w0, s0)
	SUBQ(load(Param("w").Base()), s0)
	SHRQ(U8(st.shift), s0)
	ADDQ(load(Param("scales").Base()), s0) // row 0's scales
	sgap := GP64()
	MOVQ(gap, sgap)
	SHRQ(U8(st.shift), sgap)
	return newStrided(w0, gap, R), newStrided(s0, sgap, R)
}

// tileTokens returns the tile's T tokens' activations and biases, strided.
func (st *rowTiles) tileTokens(T int) (toks, bias strided) {
	xs := load(Param("n")) // bytes between tokens' x, and between their biases
	x0, b0 := GP64(), GP64()
	MOVQ(st.X, x0)
	MOVQ(st.B, b0)
	bs := xs
	if st.biasShift > 0 {
		bs = GP64()
		MOVQ(xs, bs)
		SHRQ(U8(st.biasShift), bs)
	}
	return newStrided(x0, xs, T), newStrided(b0, bs, T)
}

// storeSums reduces the tile's accumulators acc[r·T+t] (each as the row
// kernels reduce a row) into out[t·outStride + r].
func (st *rowTiles) storeSums(acc []reg.VecVirtual, R, T int) {
	o := GP64()
	MOVQ(st.OT, o)
	os := load(Param("outStride"))
	SHLQ(U8(2), os)
	var oq reg.GPVirtual
	if R == 4 {
		oq = load(Param("rows"))
		ANDQ(I8(-4), oq) // bytes between the quarters' outputs
	}
	for t := 0; t < T; t++ {
		for r := 0; r < R; r++ {
			y := f32EVEX.sum1(f32EVEX.fold256(acc[r*T+t]))
			if R == 4 {
				VMOVSS(y, quarterAt(o, oq, r))
			} else {
				VMOVSS(y, Mem{Base: o})
			}
		}
		if t < T-1 {
			ADDQ(os, o)
		}
	}
}

// blockTile emits one dotBlockMatMulVNNI tile of R rows × T tokens.
func (st *rowTiles) blockTile(R, T, group int) {
	rws, scs := st.tileRows(R)
	toks, bias := st.tileTokens(T)

	perChunk := 64 / group
	flip, idx := ZMM(), ZMM()
	VPBROADCASTD(bytes80, flip)
	VMOVDQU32(map[int]Mem{4: permQuads, 2: permOctets}[perChunk], idx)
	acc := zmms(R * T) // [r·T + t]
	u, sv, lane := ZMM(), ZMM(), ZMM()
	c := load(Param("n"))
	SHRQ(U8(6), c)
	loop := label("bmmchunks")
	Label(loop)
	for r := 0; r < R; r++ {
		prefetch(rws.at(r, 0))
		prefetch(scs.at(r, 0))
		VPXORD(rws.at(r, 0), flip, u)
		if perChunk == 4 {
			VBROADCASTF32X4(scs.at(r, 0), sv)
		} else {
			VBROADCASTSD(scs.at(r, 0), sv)
		}
		VPERMPS(sv, idx, sv)
		for t := 0; t < T; t++ {
			VMOVDQU32(bias.at(t, 0), lane)
			vpdpbusd(toks.at(t, 0), u, lane)
			VCVTDQ2PS(lane, lane)
			VFMADD231PS(lane, sv, acc[r*T+t])
		}
	}
	rws.advance(64)
	scs.advance(64 >> st.shift)
	toks.advance(64)
	bias.advance(64)
	DECQ(c)
	JNZ(LabelRef(loop))
	st.storeSums(acc, R, T)
}
