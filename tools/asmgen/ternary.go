package main

// ternaryRows: out[r] = Σ_{i<n} c(w[r·stride:], i)·x[i], n = len(x).
//
// Layout: a row is n/4 bytes in blocks of 32 bytes = 128 weights; byte j of
// a block holds the codes (0, 1, 2) of weights j, 32+j, 64+j, 96+j in bits
// 7:6, 5:4, 3:2, 1:0. So (v>>6)&3, (v>>4)&3, (v>>2)&3, v&3 of a 32-byte load
// are four code vectors lined up with x[0:32], x[32:64], x[64:96], x[96:128]
// of the block, and an unsigned×signed byte multiply (vpmaddubsw, vpdpbusd)
// of codes by activations gives the sum.
//
// Versions:
//
//	ternaryRowsAVX2  4 rows at a time, activations as memory operands.
//	                 One shift per block: v & 3, v & 0xC, (v>>4) & 3,
//	                 (v>>4) & 0xC are the codes of x[96:128], x[64:96],
//	                 x[32:64], x[0:32], the second and fourth scaled by
//	                 4 (a u8 ≤ 12, |pair| ≤ 2·12·128, no saturation);
//	                 vpmaddubsw into int16 sums per scale (t1, t4) over 4
//	                 blocks, then t1 + t4/4 (exact) widened by vpmaddwd
//	                 into int32. Three shifts and one widening per block
//	                 before: 18% more L3 throughput on Zen 4.
//	ternaryRowsVNNI  4 rows at a time, two blocks per 64-byte load. No
//	                 shifts: v & 0xC0, 0x30, 0x0C, 0x03 are the codes of
//	                 x[0:32], x[32:64], x[64:96], x[96:128] of each block
//	                 scaled by 64, 16, 4, 1 (a u8 ≤ 128), each fed to
//	                 vpdpbusd into an accumulator of its own scale, removed
//	                 by one arithmetic shift at the end (exact: a lane
//	                 gathers ≤ 4·64·2·128 = 2¹⁶ per block it sees, < 2³¹
//	                 for n ≤ 2²¹). The activations of the two blocks are
//	                 paired per row group with vinserti64x4 (4 per 2
//	                 blocks, shared by the 4 rows); an odd last block runs
//	                 in the low halves with the high halves zero. (A
//	                 32-byte broadcast per block, avoiding the inserts, ran
//	                 20% slower: the broadcast costs a shuffle per row.)
//
// Both take the 4 rows of a group a quarter of the rows apart (spreadRows)
// and prefetch each row 16 KiB ahead (see prefetchAhead).

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

const ternaryRowsSig = "func(w []byte, stride int, x []int8, out []int32)"

// ternaryRowsArgs loads the arguments of a ternaryRows function that the
// row loops do not (spreadRows loads w and out).
func ternaryRowsArgs() (x, rowBytes reg.GPVirtual) {
	x = load(Param("x").Base())
	rowBytes = load(Param("x").Len())
	SHRQ(U8(2), rowBytes) // n/4 bytes per row, a multiple of 32
	return
}

// paramStride returns a function loading the stride argument anew, times
// scale (1 or 2: bytes per element), for spreadRows.
func paramStride(scale int) func() reg.GPVirtual {
	return func() reg.GPVirtual {
		s := load(Param("stride"))
		if scale == 2 {
			SHLQ(U8(1), s)
		}
		return s
	}
}

// rowGroups emits, for each R of sizes in turn, a loop running body(R)
// while at least R rows are left; body advances its own pointers.
func rowGroups(rows reg.GPVirtual, sizes []int, body func(R int)) {
	for _, R := range sizes {
		loop, next := label("rows"), label("rowsdone")
		Label(loop)
		CMPQ(rows, U32(R))
		JB(LabelRef(next))
		body(R)
		SUBQ(U32(R), rows)
		JMP(LabelRef(loop))
		Label(next)
	}
}

// spreadRows emits the row loop of a streaming rows kernel (one call reads
// a whole matrix slice once). With Q = rows/4, step i < Q handles rows i,
// Q+i, 2Q+i and 3Q+i together: four streams a quarter of the slice apart,
// which keep more DRAM pages and prefetch streams busy than four adjacent
// rows, one stream (on a Zen 5 VM ternaryRowsVNNI read DRAM at 16 GB/s
// with adjacent rows, 30-35 with spread ones, sumBytes 33-40). Then rows
// 4Q… one at a time. Every row is a group row or a single row exactly as
// in a plain 4-then-1 loop (the first 4Q rows are in groups), so a float
// kernel's summation order per row is unchanged.
//
// group(q, outAt) handles the rows at q[0..3] and stores row k's result at
// outAt(k); single(q, out) handles the one row at q and stores at out.
// stride() returns a register holding the row stride in bytes (it may
// load it anew, sparing a register in the loops). spreadRows loads w, out
// and len(out) itself.
func spreadRows(stride func() reg.GPVirtual, group func(q []reg.GPVirtual, outAt func(k int) Mem), single func(q reg.GPVirtual, out Mem)) {
	w := load(Param("w").Base())
	out := load(Param("out").Base())
	cnt := load(Param("out").Len())
	SHRQ(U8(2), cnt) // Q
	done := label("spreaddone")
	TESTQ(cnt, cnt)
	JZ(LabelRef(done))
	qs, oq := GP64(), GP64()
	MOVQ(cnt, qs)
	IMULQ(stride(), qs) // bytes between the streams
	MOVQ(cnt, oq)
	SHLQ(U8(2), oq) // bytes between their outputs
	loop := label("spread")
	Label(loop)
	group(rowPtrs(w, qs, 4), func(k int) Mem { return quarterAt(out, oq, k) })
	ADDQ(stride(), w)
	ADDQ(U8(4), out)
	DECQ(cnt)
	JNZ(LabelRef(loop))
	pastQuarters(w, qs, out, oq)
	Label(done)

	rest := load(Param("out").Len())
	ANDQ(U8(3), rest)
	oneLoop, oneDone := label("single"), label("singledone")
	JZ(LabelRef(oneDone))
	Label(oneLoop)
	single(w, Mem{Base: out})
	ADDQ(stride(), w)
	ADDQ(U8(4), out)
	DECQ(rest)
	JNZ(LabelRef(oneLoop))
	Label(oneDone)
}

// quarterAt returns the address k quarters (k < 4) of gap bytes after the
// one in base: where row k of a spread group stores its output.
func quarterAt(base, gap reg.GPVirtual, k int) Mem {
	switch k {
	case 0:
		return Mem{Base: base}
	case 1, 2:
		return Mem{Base: base, Index: gap, Scale: uint8(k)}
	}
	p := GP64()
	LEAQ(Mem{Base: base, Index: gap, Scale: 2}, p)
	return Mem{Base: p, Index: gap, Scale: 1}
}

// pastQuarters advances w and out past the other three quarters of a
// spread call (qs, oq bytes each), once its first quarter is done.
func pastQuarters(w, qs, out, oq reg.GPVirtual) {
	LEAQ(Mem{Base: w, Index: qs, Scale: 2}, w)
	ADDQ(qs, w)
	LEAQ(Mem{Base: out, Index: oq, Scale: 2}, out)
	ADDQ(oq, out)
}

// storeLanes stores lanes 0-3 of the xmm s (int32 or float32 bits) at
// outAt(0..3).
func storeLanes(s reg.VecVirtual, outAt func(k int) Mem) {
	storeFirstLanes(s, outAt, 4)
}

// storeFirstLanes stores lanes 0…n−1 of the xmm s at outAt(0…n−1).
func storeFirstLanes(s reg.VecVirtual, outAt func(k int) Mem, n int) {
	VMOVD(s, outAt(0))
	for k := 1; k < n; k++ {
		t := XMM()
		VPSHUFD(U8(k), s, t)
		VMOVD(t, outAt(k))
	}
}

// blockLoop emits for off := 0; off < end; off += step { body() }.
func blockLoop(off, end reg.GPVirtual, step int, body func()) {
	loop, done := label("loop"), label("loopdone")
	XORQ(off, off)
	CMPQ(off, end)
	JAE(LabelRef(done))
	Label(loop)
	body()
	ADDQ(U32(step), off)
	CMPQ(off, end)
	JB(LabelRef(loop))
	Label(done)
}

// unrolledLoop emits a loop over off from 0 to end (a multiple of step)
// that runs body(0, true) and body(step, false) per iteration, then
// body(0, false) once if one step is left; body addresses its data at
// off+d, and prefetches when first (once per 2·step = 64 bytes of a row).
func unrolledLoop(off, end reg.GPVirtual, step int, body func(d int, first bool)) {
	blockLoop(off, roundDown(end, 2*step), 2*step, func() {
		body(0, true)
		body(step, false)
	})
	skip := label("odd")
	CMPQ(off, end)
	JAE(LabelRef(skip))
	body(0, false)
	Label(skip)
}

// nextRows advances a row pointer by R rows and an out pointer by R int32s
// or float32s.
func nextRows(w, stride, out reg.GPVirtual, R int) {
	switch R {
	case 1:
		ADDQ(stride, w)
	case 2, 4, 8:
		LEAQ(Mem{Base: w, Index: stride, Scale: uint8(R)}, w)
	default:
		for r := 0; r < R; r++ {
			ADDQ(stride, w)
		}
	}
	ADDQ(U32(4*R), out)
}

// storeRowsI32 stores the R int32 row sums held in the ymm registers ys to
// out[0:R] (R = 1 or a multiple of 4).
func storeRowsI32(l lanes, ys []reg.VecVirtual, out reg.GPVirtual, evex bool) {
	if len(ys) == 1 {
		VMOVD(l.sum1(ys[0]), Mem{Base: out})
		return
	}
	for g := 0; g < len(ys); g += 4 {
		s := l.sum4(ys[g : g+4])
		if evex {
			VMOVDQU32(s, Mem{Base: out, Disp: 4 * g})
		} else {
			VMOVDQU(s, Mem{Base: out, Disp: 4 * g})
		}
	}
}

func genTernaryRowsAVX2() {
	TEXT("ternaryRowsAVX2", NOSPLIT, ternaryRowsSig)
	Pragma("noescape")
	Doc("ternaryRowsAVX2 is ternaryRows with AVX2: 4 rows at a time, one shift",
		"per block, vpmaddubsw into int16 sums widened every 4 blocks.")
	x, rowBytes := ternaryRowsArgs()
	m03, m0C := YMM(), YMM()
	VMOVDQU(bytes03, m03)
	VPBROADCASTD(bytes0C, m0C)

	// rowSums returns the 8 int32 lanes of each of the rows at q.
	rowSums := func(q []reg.GPVirtual) []reg.VecVirtual {
		acc := ymms(len(q))
		t1, t4 := make([]reg.VecVirtual, len(q)), make([]reg.VecVirtual, len(q))
		for r := range q {
			t1[r], t4[r] = YMM(), YMM()
		}
		v, c := YMM(), YMM()
		off := GP64()
		xAt := func(d, k int) Mem { return Mem{Base: x, Index: off, Scale: 4, Disp: 4*d + 32*k} }
		// block adds the block at off+d of each row to t1 (codes at
		// scale 1) and t4 (codes at scale 4), or sets them when fresh;
		// it prefetches when first.
		block := func(d int, first, fresh bool) {
			for r := range q {
				if first {
					prefetch(Mem{Base: q[r], Index: off, Scale: 1, Disp: d})
				}
				VMOVDQU(Mem{Base: q[r], Index: off, Scale: 1, Disp: d}, v)
				// v & 3 ↔ x[96:128], v & 0xC ↔ x[64:96]; then v >> 4:
				// & 3 ↔ x[32:64], & 0xC ↔ x[0:32].
				for half := 0; half < 2; half++ {
					if half == 1 {
						VPSRLW(U8(4), v, v)
					}
					for s, t := range [][]reg.VecVirtual{t1, t4} {
						m := []reg.VecVirtual{m03, m0C}[s]
						VPAND(m, v, c)
						k := 3 - s - 2*half
						if fresh && half == 0 {
							VPMADDUBSW(xAt(d, k), c, t[r])
						} else {
							VPMADDUBSW(xAt(d, k), c, c)
							VPADDW(c, t[r], t[r])
						}
					}
				}
			}
		}
		// widen adds t1 + t4/4 to the int32 sums (t4 holds exact
		// multiples of 4).
		widen := func() {
			for r := range q {
				VPSRAW(U8(2), t4[r], t4[r])
				VPADDW(t4[r], t1[r], t1[r])
				VPMADDWD(words0001, t1[r], t1[r])
				VPADDD(t1[r], acc[r], acc[r])
			}
		}
		// 4 blocks of 32 bytes per iteration, then the rest one block at
		// a time. Per block |t1| ≤ 2·2·3·128 = 1536 and |t4| ≤ 4·1536
		// (codes ≤ 3), so over 4 blocks |t4| ≤ 24576 and t1 + t4/4 ≤
		// 12288 fit int16.
		blockLoop(off, roundDown(rowBytes, 4*32), 4*32, func() {
			for b := 0; b < 4; b++ {
				block(32*b, b%2 == 0, b == 0)
			}
			widen()
		})
		done := label("tail")
		CMPQ(off, rowBytes)
		JAE(LabelRef(done))
		for r := range q {
			VPXOR(t1[r], t1[r], t1[r])
			VPXOR(t4[r], t4[r], t4[r])
		}
		tail := label("tailloop")
		Label(tail)
		block(0, false, false)
		ADDQ(U8(32), off)
		CMPQ(off, rowBytes)
		JB(LabelRef(tail))
		widen()
		Label(done)
		return acc
	}
	spreadRows(paramStride(1),
		func(q []reg.GPVirtual, outAt func(int) Mem) {
			storeLanes(int32VEX.sum4(rowSums(q)), outAt)
		},
		func(q reg.GPVirtual, out Mem) {
			VMOVD(int32VEX.sum1(rowSums([]reg.GPVirtual{q})[0]), out)
		})
	VZEROUPPER()
	RET()
}

// genTernaryRowsVNNI writes ternaryRowsVNNI, or in a withoutPrefetch its
// HW version (the same bits). On the Zen 5 VM a decode step's sequence of
// ternary products (the 2B shape's 30 layers, cold) read DRAM at 63-64
// GB/s on two threads without software prefetches against 57-61 with
// them, 33 against 32 on one; on the Zen 4 VM the hardware prefetcher
// alone left the row kernels at half the speed. The avx512vnni set takes
// the HW version on AMD's family 1Ah (cpu/cpuid_amd64.go).
//
// In a twoLevels it writes ternaryRowsVNNITwo, for Intel's cores: each
// line prefetched 16 KiB ahead into L2 (as here) and again 2 KiB ahead
// into L1 (PREFETCHT0). On the Intel Xeon VM (Emerald Rapids) a streaming
// loop over four DRAM streams read the read probe's rate with the
// prefetches alone, but 0.90-0.92 of it once 16 vector operations per
// four lines (this kernel's masks) waited on the loads, 0.88-0.91 with its
// 16 vpdpbusd too, and 0.98-1.04 again with the second prefetch: a load
// that waits on L2 holds its dependent operations in the scheduler, and
// fewer loads are then in flight. The 2B shape's ternary products of a
// decode step (516 MB), the versions in turn: 0.82-0.84 → 0.94-0.97 of the
// probe on one thread, 0.79-0.85 → 0.90-0.92 on two.
func genTernaryRowsVNNI() {
	TEXT(kernelName("ternaryRowsVNNI"), NOSPLIT, ternaryRowsSig)
	Pragma("noescape")
	kernelDoc("ternaryRowsVNNI", "ternaryRowsVNNI is ternaryRows with AVX-512 VNNI: 4 rows at a time, two blocks",
		"per 64-byte load masked at four scales, vpdpbusd.")
	x, rowBytes := ternaryRowsArgs()
	// mask[s] keeps bits 7-2s:6-2s of every byte: the code of weight
	// 32s+j of a block, scaled by 4^(3-s).
	var mask [4]reg.VecVirtual
	for s, m := range []Mem{bytesC0, bytes30, bytes0C, bytes03} {
		mask[s] = ZMM()
		VPBROADCASTD(m, mask[s])
	}

	// rowSums returns the 256-bit folds of the sums of the rows at q.
	rowSums := func(q []reg.GPVirtual) []reg.VecVirtual {
		R := len(q)
		acc := zmms(4 * R) // acc[4r+s]: row r, scale 4^(3-s)
		off := GP64()
		// One set of temporaries for both bodies and all rows keeps the
		// interference graph simple enough for avo's greedy allocator.
		var xs [4]reg.VecVirtual // xs[s] = x[32s:32s+32] of each block
		for s := range xs {
			xs[s] = ZMM()
		}
		v, c := ZMM(), ZMM()
		// body handles blocks off/32 and off/32+1 (pair), or off/32 alone
		// in the low half of the registers.
		body := func(pair bool, d int) {
			for s := range xs {
				VMOVDQU64(Mem{Base: x, Index: off, Scale: 4, Disp: 4*d + 32*s}, xs[s].AsY())
				if pair {
					VINSERTI64X4(U8(1), Mem{Base: x, Index: off, Scale: 4, Disp: 4*d + 128 + 32*s}, xs[s], xs[s])
				}
			}
			for r := 0; r < R; r++ {
				if pair {
					prefetch(Mem{Base: q[r], Index: off, Scale: 1, Disp: d})
					VMOVDQU64(Mem{Base: q[r], Index: off, Scale: 1, Disp: d}, v)
				} else {
					VMOVDQU64(Mem{Base: q[r], Index: off, Scale: 1, Disp: d}, v.AsY()) // upper half 0
				}
				for s := range xs {
					VPANDD(mask[s], v, c)
					vpdpbusd(xs[s], c, acc[4*r+s])
				}
			}
		}
		// 128 bytes of each row per iteration (the loop's own work is
		// then a smaller share: 47-55 GB/s from L3 against 41-45 with 64),
		// then 64 if left, then an odd block.
		blockLoop(off, roundDown(rowBytes, 128), 128, func() { body(true, 0); body(true, 64) })
		one := label("one")
		left := GP64()
		MOVQ(rowBytes, left)
		SUBQ(off, left)
		CMPQ(left, U8(64))
		JB(LabelRef(one))
		body(true, 0)
		ADDQ(U8(64), off)
		Label(one)
		odd := label("odd")
		CMPQ(off, rowBytes)
		JAE(LabelRef(odd))
		body(false, 0)
		Label(odd)

		ys := make([]reg.VecVirtual, R)
		for r := range ys {
			a := acc[4*r : 4*r+4]
			VPSRAD(U8(6), a[0], a[0])
			VPSRAD(U8(4), a[1], a[1])
			VPSRAD(U8(2), a[2], a[2])
			VPADDD(a[1], a[0], a[0])
			VPADDD(a[3], a[2], a[2])
			VPADDD(a[2], a[0], a[0])
			ys[r] = int32EVEX.fold256(a[0])
		}
		return ys
	}
	spreadRows(paramStride(1),
		func(q []reg.GPVirtual, outAt func(int) Mem) {
			storeLanes(int32EVEX.sum4(rowSums(q)), outAt)
		},
		func(q reg.GPVirtual, out Mem) {
			VMOVD(int32EVEX.sum1(rowSums([]reg.GPVirtual{q})[0]), out)
		})
	VZEROUPPER()
	RET()
}
