package main

// dotI8Rows: out[r] = Σ_{i<n} w[r·stride + i]·x[i], n = len(x), exact in
// int32 (wrapping), |x| ≤ 127: the int8 output head. sumBytes: the wrapping
// sum of b read as little-endian uint64 words, len(b) a multiple of 64: a
// plain streaming read that measures the machine's read bandwidth.
//
// Versions:
//
//	dotI8RowsAVX2    sign trick, 4 rows at a time: vpmaddubsw(|w|,
//	                 sign(w)·x) (|pair| ≤ 2·128·127 < 2¹⁵, no saturation),
//	                 vpmaddwd by 1; 256 bytes of each row (one prefetch)
//	                 per step, then 32 at a time; a scalar tail for n mod
//	                 32.
//	dotI8RowsVNNI    bias trick, 4 rows at a time: u = w XOR 0x80 = w+128
//	                 is an unsigned byte, so vpdpbusd(u, x) = Σ w·x +
//	                 128·Σx; Σx is computed once per call (vpdpbusd(1, x))
//	                 and 128·Σx subtracted per row. Two instructions per 64
//	                 bytes of a row, 256 bytes of each row (one prefetch)
//	                 per step, then 64 at a time, exact modulo 2³²; a
//	                 masked tail.
//	sumBytesAVX2     8 streams (the eighths of b) advance together, 256
//	sumBytesAVX512   bytes each per step, into 4 accumulators of vpaddq
//	                 (ymm or zmm), each stream prefetched 16 KiB ahead
//	                 once per step; then the last < 8·256 bytes, 64 at a
//	                 time. Wrapping sums commute, so any order gives the
//	                 twin's result.
//
// The row kernels prefetch each row 16 KiB ahead (see prefetchAhead).

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

const dotI8RowsSig = "func(w []int8, stride int, x []int8, out []int32)"

func genDotI8RowsAVX2() {
	TEXT(kernelName("dotI8RowsAVX2"), NOSPLIT, dotI8RowsSig)
	Pragma("noescape")
	kernelDoc("dotI8RowsAVX2", "dotI8RowsAVX2 is dotI8Rows with AVX2: 4 rows at a time, vpsignb/vpabsb/vpmaddubsw.")
	x := load(Param("x").Base())
	n := load(Param("x").Len())
	ones := YMM()
	VMOVDQU(words0001, ones)

	// rowSums stores the sums of the rows at q at outAt(0…).
	rowSums := func(q []reg.GPVirtual, outAt func(int) Mem) {
		R := len(q)
		acc := ymms(R)
		i := GP64()
		// chunk handles bytes i+d..i+d+31 of the rows.
		chunk := func(d int, pf bool) {
			xv := YMM()
			VMOVDQU(Mem{Base: x, Index: i, Scale: 1, Disp: d}, xv)
			for r := 0; r < R; r++ {
				if pf && d%64 == 0 { // a chunk is half a line: one prefetch a line
					prefetch(Mem{Base: q[r], Index: i, Scale: 1, Disp: d})
				}
				wv, s := YMM(), YMM()
				VMOVDQU(Mem{Base: q[r], Index: i, Scale: 1, Disp: d}, wv)
				VPSIGNB(wv, xv, s) // sign(w)·x
				VPABSB(wv, wv)     // |w|, 128 for −128 read unsigned
				VPMADDUBSW(s, wv, s)
				VPMADDWD(ones, s, s)
				VPADDD(s, acc[r], acc[r])
			}
		}
		streamLoop(i, n, i8Step, 32, chunk)
		if R == 4 {
			storeLanes(int32VEX.sum4(acc), outAt)
		} else {
			VMOVD(int32VEX.sum1(acc[0]), outAt(0))
		}

		// Scalar tail: out[r] += Σ_{j ≥ i} w[r][j]·x[j].
		done := label("taildone")
		CMPQ(i, n)
		JAE(LabelRef(done))
		for r := 0; r < R; r++ {
			loop := label("tail")
			j, sum, a, b := GP64(), GP32(), GP32(), GP32()
			MOVQ(i, j)
			XORL(sum, sum)
			Label(loop)
			MOVBLSX(Mem{Base: q[r], Index: j, Scale: 1}, a)
			MOVBLSX(Mem{Base: x, Index: j, Scale: 1}, b)
			IMULL(b, a)
			ADDL(a, sum)
			INCQ(j)
			CMPQ(j, n)
			JB(LabelRef(loop))
			ADDL(sum, outAt(r))
		}
		Label(done)
	}
	spreadRows(paramStride(1), rowSums,
		func(q reg.GPVirtual, out Mem) {
			rowSums([]reg.GPVirtual{q}, func(int) Mem { return out })
		})
	VZEROUPPER()
	RET()
}

// genDotI8RowsVNNI writes dotI8RowsVNNI, or in a withoutPrefetch its HW
// version (the same bits): on the Zen 5 VM the int8 head's rows read DRAM
// at 29 GB/s without software prefetches against 24 with them on one
// thread, 69 against 64 on two (taken there, as ternaryRowsVNNIHW is).
func genDotI8RowsVNNI() {
	TEXT(kernelName("dotI8RowsVNNI"), NOSPLIT, dotI8RowsSig)
	Pragma("noescape")
	kernelDoc("dotI8RowsVNNI", "dotI8RowsVNNI is dotI8Rows with AVX-512 VNNI: 4 rows at a time,",
		"vpdpbusd(w+128, x) − 128·Σx.")
	x := load(Param("x").Base())
	n := load(Param("x").Len())

	// bias = 128·Σx in every lane of an xmm.
	sx := zmms(1)[0]
	ones := ZMM()
	VPBROADCASTD(bytes01, ones)
	i := GP64()
	blockLoop(i, roundDown(n, 64), 64, func() {
		vpdpbusd(Mem{Base: x, Index: i, Scale: 1}, ones, sx)
	})
	tailMask(i, n, func(k reg.Register) {
		t := ZMM()
		VMOVDQU8_Z(Mem{Base: x, Index: i, Scale: 1}, k, t)
		vpdpbusd(t, ones, sx)
	})
	bias := int32EVEX.sum1(int32EVEX.fold256(sx))
	VPSLLD(U8(7), bias, bias)
	VPBROADCASTD(bias, bias)
	flip := ZMM()
	VPBROADCASTD(bytes80, flip)

	// rowSums returns the 256-bit folds of the sums of the rows at q.
	rowSums := func(q []reg.GPVirtual) []reg.VecVirtual {
		R := len(q)
		acc := zmms(R)
		i := GP64()
		// block multiplies the 64 bytes at offset i+d of each row.
		block := func(d int, pf bool) {
			xv := ZMM()
			VMOVDQU64(Mem{Base: x, Index: i, Scale: 1, Disp: d}, xv)
			for r := 0; r < R; r++ {
				if pf {
					prefetch(Mem{Base: q[r], Index: i, Scale: 1, Disp: d})
				}
				u := ZMM()
				VPXORD(Mem{Base: q[r], Index: i, Scale: 1, Disp: d}, flip, u)
				vpdpbusd(xv, u, acc[r])
			}
		}
		streamLoop(i, n, i8Step, 64, block)
		tailMask(i, n, func(k reg.Register) {
			xv := ZMM()
			VMOVDQU8_Z(Mem{Base: x, Index: i, Scale: 1}, k, xv) // x = 0 past the end
			for r := 0; r < R; r++ {
				u := ZMM()
				VMOVDQU8_Z(Mem{Base: q[r], Index: i, Scale: 1}, k, u)
				VPXORD(flip, u, u)
				vpdpbusd(xv, u, acc[r])
			}
		})
		ys := make([]reg.VecVirtual, R)
		for r := range ys {
			ys[r] = int32EVEX.fold256(acc[r])
		}
		return ys
	}
	spreadRows(paramStride(1),
		func(q []reg.GPVirtual, outAt func(int) Mem) {
			s := int32EVEX.sum4(rowSums(q))
			VPSUBD(bias, s, s)
			storeLanes(s, outAt)
		},
		func(q reg.GPVirtual, out Mem) {
			s := int32EVEX.sum1(rowSums([]reg.GPVirtual{q})[0])
			VPSUBD(bias, s, s)
			VMOVD(s, out)
		})
	VZEROUPPER()
	RET()
}

// sumBytes reads sumStreams far-apart parts of the buffer at once,
// sumStep bytes of each per step with one prefetch: on Zen 4 eight
// streams read DRAM at ~35 GB/s where one stream reads ~24 GB/s, and one
// prefetch per 256 bytes beat one per 64 (which cost L2 and L3 reads
// 25%: 80 against 110 GB/s from L2).
const (
	sumStreams = 8
	sumStep    = 256
)

// bitsLen returns log2(s) for a power of 2.
func bitsLen(s int) uint8 {
	b := uint8(0)
	for ; s > 1; s >>= 1 {
		b++
	}
	return b
}

const sumBytesSig = "func(b []byte) uint64"

// genSumBytes emits sumBytes for vectors of the given width (32 or 64
// bytes): sumStreams streams into 4 accumulators, then single 64-byte
// steps, then the sum of the 64-bit lanes.
func genSumBytes(name string, width int) {
	TEXT(name, NOSPLIT, sumBytesSig)
	Pragma("noescape")
	Doc(name + " is sumBytes: 8 streams, 4 accumulators of vpaddq.")
	p := load(Param("b").Base())
	n := load(Param("b").Len())
	vec := YMM
	if width == 64 {
		vec = ZMM
	}
	acc := make([]reg.VecVirtual, 4)
	for k := range acc {
		acc[k] = vec()
		if width == 64 {
			zeroZ(acc[k])
		} else {
			VPXOR(acc[k], acc[k], acc[k])
		}
	}
	// S streams, each over chunk = n/S rounded down to 64 bytes, advance
	// together; then the single-stream rest.
	S := sumStreams
	chunk := GP64()
	MOVQ(n, chunk)
	SHRQ(U8(bitsLen(S)), chunk)
	ANDQ(I32(-sumStep), chunk)
	bases := rowPtrs(p, chunk, S)
	i := GP64()
	per := sumStep / width
	blockLoop(i, chunk, sumStep, func() {
		for st := 0; st < S; st++ {
			prefetch(Mem{Base: bases[st], Index: i, Scale: 1})
			for k := 0; k < per; k++ {
				a := acc[(st*per+k)%len(acc)]
				VPADDQ(Mem{Base: bases[st], Index: i, Scale: 1, Disp: k * width}, a, a)
			}
		}
	})
	IMUL3Q(U8(S), chunk, i)
	loop, done := label("sum64"), label("sum64done")
	CMPQ(i, n)
	JAE(LabelRef(done))
	Label(loop)
	for k := 0; k < 64/width; k++ {
		VPADDQ(Mem{Base: p, Index: i, Scale: 1, Disp: k * width}, acc[k], acc[k])
	}
	ADDQ(U8(64), i)
	CMPQ(i, n)
	JB(LabelRef(loop))
	Label(done)
	VPADDQ(acc[1], acc[0], acc[0])
	VPADDQ(acc[3], acc[2], acc[2])
	VPADDQ(acc[2], acc[0], acc[0])
	y := acc[0]
	if width == 64 {
		y = YMM()
		VEXTRACTI64X4(U8(1), acc[0], y)
		VPADDQ(acc[0].AsY(), y, y)
	}
	s, t := XMM(), XMM()
	if width == 64 {
		VEXTRACTI32X4(U8(1), y, s)
	} else {
		VEXTRACTI128(U8(1), y, s)
	}
	VPADDQ(y.AsX(), s, s)
	VPSHUFD(U8(0x4E), s, t)
	VPADDQ(t, s, s)
	r := GP64()
	VMOVQ(s, r)
	Store(r, ReturnIndex(0))
	VZEROUPPER()
	RET()
}

func genSumBytesAVX2()   { genSumBytes("sumBytesAVX2", 32) }
func genSumBytesAVX512() { genSumBytes("sumBytesAVX512", 64) }

// i8Step is the bytes of each row dotI8Rows takes per step, with one
// prefetch per row, as dotF16Rows and sumBytes take theirs: the int8 head's
// rows read DRAM at 0.90-1.06 of the read probe instead of 0.80-0.82 with
// one prefetch per 64 bytes with AVX-512 VNNI, 0.85-1.02 instead of
// 0.77-0.85 with AVX2 (Zen 4 VM, one thread, BenchmarkDotI8Rows; 128 bytes
// measured the same as 256).
const i8Step = 256
