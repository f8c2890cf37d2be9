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
// general registers than amd64 has beside the loop's.) n must be a
// multiple of 64 (the Go wrapper checks).

import (
	. "github.com/mmcloughlin/avo/build"
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
	w := load(Param("w").Base())
	sc := load(Param("scales").Base())
	x := load(Param("x").Base())
	n := load(Param("x").Len())
	xb := load(Param("xBias").Base())
	out := load(Param("out").Base())
	rows := load(Param("out").Len())
	scaleRowBytes := GP64() // 4·n/group
	MOVQ(n, scaleRowBytes)
	SHRQ(U8(bitsLen(group)-2), scaleRowBytes)
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
		acc := make([]reg.VecVirtual, R)
		for r := range acc {
			acc[r] = vec()
			if evex {
				zeroZ(acc[r])
			} else {
				VXORPS(acc[r], acc[r], acc[r])
			}
		}
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
		l := f32VEX
		ys := acc
		if evex {
			l = f32EVEX
			ys = make([]reg.VecVirtual, R)
			for r := range ys {
				ys[r] = l.fold256(acc[r])
			}
		}
		sums := make([]reg.VecVirtual, R)
		for r := range ys {
			sums[r] = l.sum1(ys[r])
		}
		return sums
	}
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
	IMULQ(scaleRowBytes, s1)
	ADDQ(sc, s1)
	sums := rowSums([]reg.GPVirtual{w, q1}, []reg.GPVirtual{sc, s1})
	VMOVSS(sums[0], Mem{Base: out})
	o := GP64()
	MOVQ(Q, o)
	VMOVSS(sums[1], Mem{Base: out, Index: o, Scale: 4})
	ADDQ(n, w)
	ADDQ(scaleRowBytes, sc)
	ADDQ(U8(4), out)
	DECQ(cnt)
	JNZ(LabelRef(loop))
	// Past the second half.
	t := GP64()
	MOVQ(Q, t)
	IMULQ(n, t)
	ADDQ(t, w)
	MOVQ(Q, t)
	IMULQ(scaleRowBytes, t)
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
