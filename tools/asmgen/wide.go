package main

// A long prompt's attention in items of many queries (cpu's attendRun:
// 8-16 query heads of one K/V head, of several tokens). kScores and
// axpyF16Rows4 take four queries a call, so each float16 key or value is
// widened (vcvtph2ps, two operations on the two 512-bit ports of Intel's
// cores) once per four FMAs, and read again for every four queries. These
// take up to 16 at once:
//
//	kScoresWide     out[j·outStride + p] = Σ_{d<hd} qT[d·qStride + j] · f16(kt[(p/16)·16·hd + 16·d + p%16])
//	                for j < nq ∈ {1, 2, 4, 8, 16}, p < n (a multiple of
//	                16): kScores with the queries transposed (the values
//	                of key d together, one register for their address).
//	                Each score is one FMA chain over d from zero, kScores'
//	                chain, so the same bits.
//	axpyF16RowsWide y_j[i] += a_j[p] · f16(v[p·stride + i]) for j < nq ∈
//	                {1, 2, 4, 8, 16}, p < np in order, i < n (a multiple
//	                of 16), a_j = a[j·aStride:], y_j = y[j·n:]:
//	                axpyF16Rows4's sums, each y_j[i] getting the same FMAs
//	                in the same order.
//
// Both hold 16 accumulators: nq queries × 16/nq blocks of 16 positions (at
// most 8), or nq queries × 16/nq vectors of 16 elements (at most 8); each
// FMA takes its query's value straight from memory (m32bcst), so a step
// widens one vector of keys or values per nq FMAs.

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// wideQueries are the query counts the kernels take; cpu's wrappers
// split any count into them.
var wideQueries = []int{16, 8, 4, 2, 1}

// wideWidth is how many 16-lane vectors each query gets in a step: 16
// accumulators in all, at most 8 a query.
func wideWidth(Q int) int { return min(8, 16/Q) }

func genKScoresWideAVX512() {
	TEXT("kScoresWideAVX512", NOSPLIT, "func(kt []uint16, hd, n int, qT []float32, qStride, nq int, out []float32, outStride int)")
	Pragma("noescape")
	Doc(fmt.Sprintf("kScoresWideAVX512 is kScores with the queries transposed, nq ∈ %v, n a multiple of 16:", wideQueries),
		"nq × 16/nq blocks of 16 positions a step (at most 8), each query's value broadcast from memory by its FMA.")
	eachQueries(func(Q int) {
		B := wideWidth(Q)
		kScoresWideSteps(Q, B, 0)
		if B > 1 {
			kScoresWideSteps(Q, 1, B)
		}
	})
}

// eachQueries emits, for each count Q of wideQueries, body(Q) run when the
// nq argument is Q, then the function's end.
func eachQueries(body func(Q int)) {
	nq := load(Param("nq"))
	end := label("wideend")
	for _, Q := range wideQueries {
		next := label("wideq")
		CMPQ(nq, U8(Q))
		JNE(LabelRef(next))
		Commentf("%d queries", Q)
		body(Q)
		JMP(LabelRef(end))
		Label(next)
	}
	Label(end)
	VZEROUPPER()
	RET()
}

// kScoresWideSteps emits the loop of steps of B blocks for Q queries while
// at least B blocks are left, from position 0 or (after > 0) from where a
// loop of steps of after blocks stopped: n − n mod (16·after).
func kScoresWideSteps(Q, B, after int) {
	kt, hd, q, out, os, bb, left := kScoresStart(after, "qT")
	loop, done := label("ksfsteps"), label("ksfstepsdone")
	Label(loop)
	CMPQ(left, U32(16*B))
	JB(LabelRef(done))

	acc := zmms(B * Q) // acc[b·Q + j]
	blk := newStrided(kt, bb, B)
	qp := GP64()
	MOVQ(q, qp)
	qs := load(Param("qStride"))
	SHLQ(U8(2), qs) // bytes between key d's values and key d+1's
	d := GP64()
	MOVQ(hd, d)
	dloop := label("ksfd")
	Label(dloop)
	kv := make([]reg.VecVirtual, B)
	for b := range kv {
		kv[b] = ZMM()
		VCVTPH2PS(blk.at(b, 0), kv[b])
	}
	for j := 0; j < Q; j++ {
		for b := 0; b < B; b++ {
			VFMADD231PS_BCST(Mem{Base: qp, Disp: 4 * j}, kv[b], acc[b*Q+j])
		}
	}
	blk.advance(32)
	ADDQ(qs, qp)
	DECQ(d)
	JNZ(LabelRef(dloop))

	outs := newStrided(out, os, Q)
	for b := 0; b < B; b++ {
		for j := 0; j < Q; j++ {
			VMOVUPS(acc[b*Q+j], outs.at(j, 64*b))
		}
	}
	kScoresNext(B, kt, out, bb, left, loop, done)
}

func genAxpyF16RowsWideAVX512() {
	TEXT("axpyF16RowsWideAVX512", NOSPLIT, "func(a []float32, aStride, nq, np int, v []uint16, stride int, y []float32, n int)")
	Pragma("noescape")
	Doc(fmt.Sprintf("axpyF16RowsWideAVX512 is axpyF16Rows4's sums for nq ∈ %v queries, y_j at y[j·n:], n a", wideQueries),
		"multiple of 16: nq × 16/nq vectors of y (at most 8) held while a block of 64 rows passes, each query's weight",
		"broadcast from memory by its FMA, four rows a step; then the next block.")
	eachQueries(func(Q int) {
		C := wideWidth(Q)
		// Blocks of wideRowBlock rows: every chunk of y passes a block
		// before the next, so the block's rows are read from L1 by the
		// chunks after the first; y goes to memory between blocks, and
		// each element still gets its rows' FMAs in row order.
		p0 := GP64()
		XORQ(p0, p0)
		blocks, blocksDone := label("axfblocks"), label("axfblocksdone")
		Label(blocks)
		CMPQ(p0, load(Param("np")))
		JAE(LabelRef(blocksDone))
		i := GP64()
		XORQ(i, i)
		axpyWideChunks(Q, C, i, p0)
		if C > 1 { // the last elements, 16 at a time
			axpyWideChunks(Q, 1, i, p0)
		}
		ADDQ(U32(wideRowBlock), p0)
		JMP(LabelRef(blocks))
		Label(blocksDone)
	})
}

// wideRowBlock is the rows axpyF16RowsWideAVX512 passes per chunk of y: 64
// rows of a head of 128 are 16 KiB.
const wideRowBlock = 64

// axpyWideChunks emits, while C vectors of elements are left from element
// i, the sums of Q queries' y over those 16·C elements and the rows p0…
// p0+wideRowBlock−1 (at most np): loaded, the rows added in order, stored;
// i steps on.
func axpyWideChunks(Q, C int, i, p0 reg.GPVirtual) {
	loop, done := label("axfchunks"), label("axfchunksdone")
	Label(loop)
	e := GP64()
	LEAQ(Mem{Base: i, Disp: 16 * C}, e)
	CMPQ(e, load(Param("n")))
	JA(LabelRef(done))

	// y_j's chunk at y + 4·(j·n + i): Q rows of y, n·4 bytes apart.
	yRows := func() strided {
		y := load(Param("y").Base())
		LEAQ(Mem{Base: y, Index: i, Scale: 4}, y)
		ys := load(Param("n"))
		SHLQ(U8(2), ys)
		return newStrided(y, ys, Q)
	}
	acc := make([]reg.VecVirtual, Q*C) // acc[j·C + c]
	ys := yRows()
	for j := 0; j < Q; j++ {
		for c := 0; c < C; c++ {
			acc[j*C+c] = ZMM()
			VMOVUPS(ys.at(j, 64*c), acc[j*C+c])
		}
	}
	// The weights a_j[p] at as.at(j, 0) + 4·p: bases stepped 16 bytes
	// (four rows) at a time.
	aStride := load(Param("aStride"))
	SHLQ(U8(2), aStride)
	a := load(Param("a").Base())
	LEAQ(Mem{Base: a, Index: p0, Scale: 4}, a)
	as := newStrided(a, aStride, Q)
	stride, vp := valueRow(p0, i)
	rows := load(Param("np")) // min(np − p0, wideRowBlock)
	SUBQ(p0, rows)
	most := GP64()
	MOVQ(U32(wideRowBlock), most)
	CMPQ(rows, most)
	CMOVQGT(most, rows)
	row := func(k int) { // row k of the step: v at vp, a_j at disp 4·k
		vv := make([]reg.VecVirtual, C)
		for c := range vv {
			vv[c] = ZMM()
			VCVTPH2PS(Mem{Base: vp, Disp: 32 * c}, vv[c])
		}
		for j := 0; j < Q; j++ {
			for c := 0; c < C; c++ {
				VFMADD231PS_BCST(as.at(j, 4*k), vv[c], acc[j*C+c])
			}
		}
		ADDQ(stride, vp)
	}
	fours, foursDone := label("axfrows"), label("axfrowsdone")
	Label(fours)
	CMPQ(rows, U8(4))
	JB(LabelRef(foursDone))
	for k := 0; k < 4; k++ {
		row(k)
	}
	as.advance(16)
	SUBQ(U8(4), rows)
	JMP(LabelRef(fours))
	Label(foursDone)
	ones, onesDone := label("axfrow"), label("axfrowdone")
	Label(ones)
	TESTQ(rows, rows)
	JZ(LabelRef(onesDone))
	row(0)
	as.advance(4)
	DECQ(rows)
	JMP(LabelRef(ones))
	Label(onesDone)

	ys = yRows()
	for j := 0; j < Q; j++ {
		for c := 0; c < C; c++ {
			VMOVUPS(acc[j*C+c], ys.at(j, 64*c))
		}
	}
	ADDQ(U8(16*C), i)
	JMP(LabelRef(loop))
	Label(done)
}
