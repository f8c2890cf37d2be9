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
//	ternaryRowsAVX2  4 rows at a time share the block's four activation
//	                 vectors; per row shift+mask into 4 code vectors,
//	                 vpmaddubsw (|pair| ≤ 2·2·128 = 512, no saturation),
//	                 add the four int16 results (≤ 2048), vpmaddwd by 1
//	                 into int32.
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
// Both prefetch each row 16 KiB ahead (see prefetchAhead).

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

const ternaryRowsSig = "func(w []byte, stride int, x []int8, out []int32)"

// ternaryRowsArgs loads the arguments of a ternaryRows function.
func ternaryRowsArgs() (w, stride, x, rowBytes, out, rows reg.GPVirtual) {
	w = load(Param("w").Base())
	stride = load(Param("stride"))
	x = load(Param("x").Base())
	rowBytes = load(Param("x").Len())
	SHRQ(U8(2), rowBytes) // n/4 bytes per row, a multiple of 32
	out = load(Param("out").Base())
	rows = load(Param("out").Len())
	return
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
	Doc("ternaryRowsAVX2 is ternaryRows with AVX2: 4 rows at a time, vpmaddubsw.")
	w, stride, x, rowBytes, out, rows := ternaryRowsArgs()
	mask, ones := YMM(), YMM()
	VMOVDQU(bytes03, mask)
	VMOVDQU(words0001, ones)

	rowGroups(rows, []int{4, 1}, func(R int) {
		q := rowPtrs(w, stride, R)
		acc := ymms(R)
		off := GP64()
		unrolledLoop(off, rowBytes, 32, func(d int, first bool) {
			var xv [4]reg.VecVirtual // x[0:32], x[32:64], x[64:96], x[96:128] of the block
			for k := range xv {
				xv[k] = YMM()
				VMOVDQU(Mem{Base: x, Index: off, Scale: 4, Disp: 4*d + 32*k}, xv[k])
			}
			for r := 0; r < R; r++ {
				if first {
					prefetch(Mem{Base: q[r], Index: off, Scale: 1, Disp: d})
				}
				v, c, t := YMM(), YMM(), YMM()
				VMOVDQU(Mem{Base: q[r], Index: off, Scale: 1, Disp: d}, v)
				VPAND(mask, v, c) // bits 1:0 ↔ x[96:128]
				VPMADDUBSW(xv[3], c, t)
				for k, sh := range []uint8{6, 4, 2} { // ↔ x[0:32], x[32:64], x[64:96]
					VPSRLW(U8(sh), v, c)
					VPAND(mask, c, c)
					VPMADDUBSW(xv[k], c, c)
					VPADDW(c, t, t)
				}
				VPMADDWD(ones, t, t)
				VPADDD(t, acc[r], acc[r])
			}
		})
		storeRowsI32(int32VEX, acc, out, false)
		nextRows(w, stride, out, R)
	})
	VZEROUPPER()
	RET()
}

func genTernaryRowsVNNI() {
	TEXT("ternaryRowsVNNI", NOSPLIT, ternaryRowsSig)
	Pragma("noescape")
	Doc("ternaryRowsVNNI is ternaryRows with AVX-512 VNNI: 4 rows at a time, two blocks",
		"per 64-byte load masked at four scales, vpdpbusd.")
	w, stride, x, rowBytes, out, rows := ternaryRowsArgs()
	// mask[s] keeps bits 7-2s:6-2s of every byte: the code of weight
	// 32s+j of a block, scaled by 4^(3-s).
	var mask [4]reg.VecVirtual
	for s, m := range []Mem{bytesC0, bytes30, bytes0C, bytes03} {
		mask[s] = ZMM()
		VPBROADCASTD(m, mask[s])
	}

	rowGroups(rows, []int{4, 1}, func(R int) {
		q := rowPtrs(w, stride, R)
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
		body := func(pair bool) {
			for s := range xs {
				VMOVDQU64(Mem{Base: x, Index: off, Scale: 4, Disp: 32 * s}, xs[s].AsY())
				if pair {
					VINSERTI64X4(U8(1), Mem{Base: x, Index: off, Scale: 4, Disp: 128 + 32*s}, xs[s], xs[s])
				}
			}
			for r := 0; r < R; r++ {
				if pair {
					prefetch(Mem{Base: q[r], Index: off, Scale: 1})
					VMOVDQU64(Mem{Base: q[r], Index: off, Scale: 1}, v)
				} else {
					VMOVDQU64(Mem{Base: q[r], Index: off, Scale: 1}, v.AsY()) // upper half 0
				}
				for s := range xs {
					VPANDD(mask[s], v, c)
					vpdpbusd(xs[s], c, acc[4*r+s])
				}
			}
		}
		blockLoop(off, roundDown(rowBytes, 64), 64, func() { body(true) })
		odd := label("odd")
		CMPQ(off, rowBytes)
		JAE(LabelRef(odd))
		body(false)
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
		storeRowsI32(int32EVEX, ys, out, true)
		nextRows(w, stride, out, R)
	})
	VZEROUPPER()
	RET()
}
