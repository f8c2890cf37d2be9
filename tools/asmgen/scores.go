package main

// kScores: attention's scores over a K cache held in blocks of 16
// positions, positions in SIMD lanes:
//
//	out[j·outStride + p] = Σ_{d<hd} q[j·hd + d] · f16(kt[(p/16)·16·hd + 16·d + p%16])
//
// for j < nq (1…4 queries: the query heads that share a K/V head), p < n
// (a multiple of 16: whole blocks; cpu's wrapper runs the last partial
// block through a scratch), each sum one FMA chain over d = 0, 1, … in
// order from zero: the same bits however many queries and blocks a call
// takes, so a token's scores are the same alone and in a batch. A lane
// holds a position's whole sum, so no score needs a horizontal reduction
// (dotF16Rows over a row-major cache spent as many operations reducing
// a score's 16 lanes as computing them, at head size 128).
//
// Versions:
//
//	kScoresAVX512  per d: each query's value broadcast into a register
//	               once (vbroadcastss) for the step's blocks, each block's
//	               16 keys widened once (vcvtph2ps), then one FMA per
//	               query and block; PB blocks at a time so that PB·nq ≥ 8
//	               accumulator chains hide the FMA latency (nq = 1: 8
//	               blocks, 2, 3 and 4: 4). A step of 4 queries × 4 blocks
//	               loads 8 vectors per 16 FMAs, where 2 blocks with the
//	               values broadcast from memory (m32bcst) by each FMA
//	               loaded 10 per 8: the load queue then holds more of the
//	               stream's lines in flight, and the keys of a long
//	               context read 28-30 GB/s from DRAM instead of 17-23 on
//	               one thread of the Zen 5 VM, 54-56 from L2 instead of 41
//	               (0.90-0.93 of the FMA peak instead of 0.70).
//	kScoresAVX2    the same in ymm halves of a block, each query's value
//	               broadcast into a register (vbroadcastss).
//
// Both step two keys (a 64-byte line of each block) at a time and
// prefetch each block's line 16 KiB on (kScoresAVX512Two, for Intel's
// cores, also 2 KiB on into L1, as the row kernels' Two versions do; see
// genTernaryRowsVNNI): the cache of a long context is
// read once per step from DRAM, and without the prefetches the keys of
// 4,001 positions of the 2B shape (30 layers × 5 K/V heads, 154 MB) read
// 12-13 GB/s on one thread of the Zen 5 VM, with them 20-25 (the read
// probe 35; from the caches the kernel runs at 39 GB/s for 4 queries).

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

const kScoresSig = "func(kt []uint16, hd, n int, q []float32, nq int, out []float32, outStride int)"

// kScoresBlocks is how many blocks of 16 positions a kScores step takes
// for nq queries (AVX-512).
func kScoresBlocks(nq int) int {
	if nq == 1 {
		return 8
	}
	return 4
}

func genKScoresAVX512() {
	TEXT(kernelName("kScoresAVX512"), NOSPLIT, kScoresSig)
	Pragma("noescape")
	kernelDoc("kScoresAVX512", "kScoresAVX512 is kScores with AVX-512: each score one FMA chain over d, positions in lanes,",
		"several blocks of 16 positions at a time.")
	genKScores(16, kScoresBlocks)
	RET()
}

func genKScoresAVX2() {
	TEXT(kernelName("kScoresAVX2"), NOSPLIT, kScoresSig)
	Pragma("noescape")
	kernelDoc("kScoresAVX2", "kScoresAVX2 is kScores with AVX2: each score one FMA chain over d, positions in lanes",
		"(a block of 16 in two ymm halves).")
	genKScores(8, func(nq int) int {
		if nq <= 2 {
			return 2
		}
		return 1
	})
	RET()
}

// genKScores emits the body of a kScores kernel with vectors of lanes
// float32 (16: zmm, 8: ymm), blocks(nq) blocks of 16 positions per step
// (then one block per step for the rest), dispatching on nq = 1…4.
func genKScores(lanes int, blocks func(nq int) int) {
	nq := load(Param("nq"))
	end := label("ksend")
	for Q := 1; Q <= 4; Q++ {
		next := label("ksq")
		CMPQ(nq, U8(Q))
		JNE(LabelRef(next))
		Commentf("%d queries", Q)
		outer := blocks(Q)
		kScoresSteps(lanes, Q, outer, 0)
		if outer > 1 {
			kScoresSteps(lanes, Q, 1, outer)
		}
		JMP(LabelRef(end))
		Label(next)
	}
	Label(end)
	VZEROUPPER()
}

// kScoresStart loads what a loop of kScores steps needs, for a loop from
// position 0 or (after > 0) from where a loop of steps of after blocks
// stopped, n − n mod (16·after): the keys kt and the scores out at that
// position, hd, the queries' argument q (named so), the bytes os between
// queries' rows of out and bb of a block of keys, and left, the positions
// from there on.
func kScoresStart(after int, queries string) (kt, hd, q, out, os, bb, left reg.GPVirtual) {
	n := load(Param("n"))
	kt = load(Param("kt").Base())
	hd = load(Param("hd"))
	q = load(Param(queries).Base())
	out = load(Param("out").Base())
	os = load(Param("outStride"))
	SHLQ(U8(2), os) // bytes between queries' rows of out
	bb = GP64()     // bytes per block: 16·hd·2
	MOVQ(hd, bb)
	SHLQ(U8(5), bb)
	left = GP64()
	MOVQ(n, left)
	if after > 0 {
		// left = n mod (16·after); start = n − left: kt += start/16 · bb,
		// out += start·4.
		ANDQ(U32(16*after-1), left)
		start := GP64()
		MOVQ(n, start)
		SUBQ(left, start)
		LEAQ(Mem{Base: out, Index: start, Scale: 4}, out)
		SHRQ(U8(4), start)
		IMULQ(bb, start)
		ADDQ(start, kt)
	}
	return kt, hd, q, out, os, bb, left
}

// kScoresSteps emits the loop of steps of B blocks for Q queries while at
// least B blocks are left, from position 0 or (after > 0) from the
// positions a loop of steps of after blocks covered: n − n mod (16·after),
// after a power of 2.
func kScoresSteps(lanes, Q, B, after int) {
	halves := 16 / lanes // vectors per block
	kt, hd, q, out, os, bb, left := kScoresStart(after, "q")
	hq := GP64() // bytes per query row of q: hd·4
	MOVQ(hd, hq)
	SHLQ(U8(2), hq)

	loop, done := label("ksteps"), label("kstepsdone")
	Label(loop)
	CMPQ(left, U32(16*B))
	JB(LabelRef(done))

	var acc []reg.VecVirtual // [b][h][j]
	if lanes == 16 {
		acc = zmms(B * Q)
	} else {
		acc = ymms(B * halves * Q)
	}
	// Block b of the step, query j, and query j's row of out, each
	// addressed from base pointers three apart (strided).
	blk := newStrided(kt, bb, B)
	qs := newStrided(q, hq, Q)
	// dStep multiplies key d's values into the accumulators (prefetching
	// each block's line prefetchAhead on when pf) and steps to d+1.
	dStep := func(pf bool) {
		var qv []reg.VecVirtual // the queries' values of key d, broadcast once for the step's blocks
		if lanes == 16 && B > 1 {
			for j := 0; j < Q; j++ {
				v := ZMM()
				VBROADCASTSS(qs.at(j, 0), v)
				qv = append(qv, v)
			}
		}
		for b := 0; b < B; b++ {
			if pf {
				prefetch(blk.at(b, 0))
			}
			for h := 0; h < halves; h++ {
				m := blk.at(b, 16*h)
				var kv reg.VecVirtual
				if lanes == 16 {
					kv = ZMM()
				} else {
					kv = YMM()
				}
				VCVTPH2PS(m, kv)
				for j := 0; j < Q; j++ {
					a := acc[(b*halves+h)*Q+j]
					if qv != nil {
						VFMADD231PS(qv[j], kv, a)
					} else if lanes == 16 {
						VFMADD231PS_BCST(qs.at(j, 0), kv, a)
					} else {
						x := YMM()
						VBROADCASTSS(qs.at(j, 0), x)
						VFMADD231PS(x, kv, a)
					}
				}
			}
		}
		blk.advance(32)
		qs.advance(4)
	}
	// Two keys (a 64-byte line of each block, one prefetch) per
	// iteration, then an odd last one.
	d := GP64()
	MOVQ(hd, d)
	SHRQ(U8(1), d)
	dpairs, dodd := label("ksd"), label("ksdodd")
	JZ(LabelRef(dodd))
	Label(dpairs)
	dStep(true)
	dStep(false)
	DECQ(d)
	JNZ(LabelRef(dpairs))
	Label(dodd)
	TESTQ(U32(1), hd)
	dnone := label("ksdnone")
	JZ(LabelRef(dnone))
	dStep(false)
	Label(dnone)

	// Store: query j's scores of block b at out + j·os + 64·b (+ 32·h).
	outs := newStrided(out, os, Q)
	for b := 0; b < B; b++ {
		for h := 0; h < halves; h++ {
			for j := 0; j < Q; j++ {
				VMOVUPS(acc[(b*halves+h)*Q+j], outs.at(j, 64*b+4*lanes*h))
			}
		}
	}
	kScoresNext(B, kt, out, bb, left, loop, done)
}

// kScoresNext ends a step of B blocks of a kScores loop: the keys kt and
// the scores out move on B blocks, left drops by their positions, and the
// loop goes round; done follows it.
func kScoresNext(B int, kt, out, bb, left reg.GPVirtual, loop, done string) {
	ADDQ(U32(64*B), out)
	for range B {
		ADDQ(bb, kt)
	}
	SUBQ(U32(16*B), left)
	JMP(LabelRef(loop))
	Label(done)
}
