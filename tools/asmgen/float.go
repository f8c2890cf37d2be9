package main

// dotF16Rows: out[r] = Σ_{i<n} f16(w[r·stride + i])·x[i], n = len(x), float32
// accumulation: the float16 output head and attention scores over the K
// cache. axpyF16: y[i] += a·f16(v[i]) for i < len(y): attention's weighted
// sum over the V cache. float16 is widened with vcvtph2ps (F16C) and
// multiplied with FMA, so sums differ from the sequential Go twins by
// rounding only.
//
// Versions:
//
//	dotF16RowsAVX2    4 rows at a time share x; per row two 8-wide
//	                  accumulators over 128 elements (one prefetch) per
//	                  step, then 32 at a time, one 16- and one 8-element
//	                  step, then a scalar tail that
//	                  gathers the 4 rows' halves into one xmm (vcvtph2ps
//	                  of 4 at once).
//	dotF16RowsAVX512  4 rows, one 16-wide zmm accumulator per row, 128
//	                  elements (256 bytes of each row, one prefetch) per
//	                  step, then 32 at a time, one 16-element step, then
//	                  one masked step (vmovdqu16/vmovups with zeroing, no
//	                  scalar loop): lane j sums elements j, j+16, j+32, …
//	                  in order, which dotF16MatMulAVX512 repeats for any
//	                  number of tokens. Four dependency chains of FMA are
//	                  ~1 FMA a cycle, several times what DRAM or L3 feed.
//	axpyF16AVX2       16 per step (vcvtph2ps + vfmadd213ps from y), 8,
//	                  then scalar.
//	axpyF16AVX512     32 per step, 16, then a masked load/FMA/store.
//
// The row kernels prefetch each row 16 KiB ahead (see prefetchAhead).

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

const dotF16RowsSig = "func(w []uint16, stride int, x []float32, out []float32)"

// roundDown returns a new register holding n &^ (m-1), m a power of 2.
func roundDown(n reg.GPVirtual, m int) reg.GPVirtual {
	r := GP64()
	MOVQ(n, r)
	ANDQ(I32(-m), r)
	return r
}

// ifRoom emits: if i + step ≤ n { body() } (i += step is body's job).
func ifRoom(i, n reg.GPVirtual, step int, body func()) {
	skip := label("skip")
	e := GP64()
	LEAQ(Mem{Base: i, Disp: step}, e)
	CMPQ(e, n)
	JA(LabelRef(skip))
	body()
	Label(skip)
}

// streamLoop emits the row loop of a streaming head kernel: body(d, pf)
// handles width units at offset i+d of each row, prefetching them when pf;
// step units (a multiple of width) per iteration with one prefetch per row,
// then width at a time without, while that many are left (the head
// kernels' 256 bytes of a row per prefetch: see f16Step). In an everyLine
// every body prefetches (a width of 64 bytes: one line of each row).
func streamLoop(i, n reg.GPVirtual, step, width int, body func(d int, pf bool)) {
	blockLoop(i, roundDown(n, step), step, func() {
		for d := 0; d < step; d += width {
			body(d, d == 0 || linePrefetch)
		}
	})
	whileRoom(i, n, width, func() {
		body(0, linePrefetch)
		ADDQ(U8(width), i) // width < 128
	})
}

// whileRoom emits: while i + step ≤ n { body() } (i += step is body's job).
func whileRoom(i, n reg.GPVirtual, step int, body func()) {
	loop, done := label("room"), label("roomdone")
	e := GP64()
	Label(loop)
	LEAQ(Mem{Base: i, Disp: step}, e)
	CMPQ(e, n)
	JA(LabelRef(done))
	body()
	JMP(LabelRef(loop))
	Label(done)
}

// tailMask emits: if i < n { body(k) } with opmask k selecting lanes
// 0..n-i-1 (n-i < 64).
func tailMask(i, n reg.GPVirtual, body func(k reg.Register)) {
	rem := GP64()
	MOVQ(n, rem)
	SUBQ(i, rem)
	remMask(rem, body)
}

// whileRem emits: for rem ≥ width { body(); rem −= width }, its labels
// named after name.
func whileRem(rem reg.GPVirtual, width int, name string, body func()) {
	loop, done := label(name), label(name+"done")
	Label(loop)
	CMPQ(rem, U32(width))
	JB(LabelRef(done))
	body()
	SUBQ(U32(width), rem)
	JMP(LabelRef(loop))
	Label(done)
}

// remMask emits: if rem > 0 { body(k) } with opmask k selecting lanes
// 0..rem-1 (0 ≤ rem < 64).
func remMask(rem reg.GPVirtual, body func(k reg.Register)) {
	skip := label("notail")
	TESTQ(rem, rem)
	JZ(LabelRef(skip))
	bits, ones := GP64(), GP64()
	MOVQ(I32(-1), ones)
	BZHIQ(rem, ones, bits) // bits = 1<<rem - 1
	k := K()
	KMOVQ(bits, k)
	body(k)
	Label(skip)
}

func genDotF16RowsAVX2() {
	TEXT(kernelName("dotF16RowsAVX2"), NOSPLIT, dotF16RowsSig)
	Pragma("noescape")
	kernelDoc("dotF16RowsAVX2", fmt.Sprintf("dotF16RowsAVX2 is dotF16Rows with F16C and FMA: 4 rows at a time, %d elements per step.", f16Step))
	x := load(Param("x").Base())
	n := load(Param("x").Len())

	// rowSums handles the rows at q and passes their sums (lanes of an
	// xmm) to store.
	rowSums := func(q []reg.GPVirtual, store func(s reg.VecVirtual)) {
		R := len(q)
		acc0, acc1 := ymms(R), ymms(R)
		i := GP64()
		// chunk multiplies elements i..i+k-1 of the rows by x, 8 at a time,
		// alternating between the two accumulators of each row.
		chunk := func(e, k int, pf bool) {
			for j := 0; j < k; j += 8 {
				xv := YMM()
				VMOVUPS(Mem{Base: x, Index: i, Scale: 4, Disp: 4 * (e + j)}, xv)
				for r := 0; r < R; r++ {
					if pf && j == 0 {
						prefetch(Mem{Base: q[r], Index: i, Scale: 2, Disp: 2 * e})
					}
					h := YMM()
					VCVTPH2PS(Mem{Base: q[r], Index: i, Scale: 2, Disp: 2 * (e + j)}, h)
					VFMADD231PS(xv, h, []reg.VecVirtual{acc0[r], acc1[r]}[j/8%2])
				}
			}
		}
		streamLoop(i, n, f16Step, 32, func(e int, pf bool) { chunk(e, 32, pf) })
		ifRoom(i, n, 16, func() { chunk(0, 16, false); ADDQ(U8(16), i) })
		ifRoom(i, n, 8, func() { chunk(0, 8, false); ADDQ(U8(8), i) })
		for r := 0; r < R; r++ {
			VADDPS(acc1[r], acc0[r], acc0[r])
		}

		// The scalar tail (< 8 elements) adds to the row sums: s holds
		// [Σ0 Σ1 Σ2 Σ3] (R = 4) or [Σ0 …] (R = 1).
		var s reg.VecVirtual
		if R == 4 {
			s = f32VEX.sum4(acc0)
		} else {
			s = f32VEX.sum1(acc0[0])
		}
		loop, done := label("tail"), label("taildone")
		CMPQ(i, n)
		JAE(LabelRef(done))
		Label(loop)
		h := XMM()
		if R == 4 {
			// Gather w[r][i] of the 4 rows into one qword, widen all four.
			g, t := GP64(), GP64()
			MOVWQZX(Mem{Base: q[3], Index: i, Scale: 2}, g)
			for r := 2; r >= 0; r-- {
				SHLQ(U8(16), g)
				MOVWQZX(Mem{Base: q[r], Index: i, Scale: 2}, t)
				ORQ(t, g)
			}
			VMOVQ(g, h)
			VCVTPH2PS(h, h)
			xb := XMM()
			VBROADCASTSS(Mem{Base: x, Index: i, Scale: 4}, xb)
			VFMADD231PS(xb, h, s)
		} else {
			g := GP32()
			MOVWLZX(Mem{Base: q[0], Index: i, Scale: 2}, g)
			VMOVD(g, h)
			VCVTPH2PS(h, h)
			VFMADD231SS(Mem{Base: x, Index: i, Scale: 4}, h, s)
		}
		INCQ(i)
		CMPQ(i, n)
		JB(LabelRef(loop))
		Label(done)
		store(s)
	}
	spreadRows(paramStride(2),
		func(q []reg.GPVirtual, outAt func(int) Mem) {
			rowSums(q, func(s reg.VecVirtual) { storeLanes(s, outAt) })
		},
		func(q reg.GPVirtual, out Mem) {
			rowSums([]reg.GPVirtual{q}, func(s reg.VecVirtual) { VMOVSS(s, out) })
		})
	VZEROUPPER()
	RET()
}

// genDotF16RowsAVX512 writes dotF16RowsAVX512, which prefetches each row
// once per step of f16Step elements (256 bytes); in a twoLevels,
// dotF16RowsAVX512Two, the same arithmetic prefetching every 64-byte line
// of each row twice (into L2 16 KiB ahead, into L1 2 KiB ahead); in a
// withoutPrefetch, the HW version, with no prefetch at all. Which streams
// faster depends on the machine (BenchmarkDotF16Rows, the versions
// alternated in one process): on the Zen 4 VM one prefetch per 256 bytes
// read 0.89-0.97 of the read probe against 0.76-0.79 per line (see
// f16Step); on the Intel Xeon VM (Emerald Rapids) one per line read
// 0.88-0.92 against 0.77-0.80 per 256 bytes, and each line twice
// 0.97-1.01 against 0.89-0.92 once (see genTernaryRowsVNNI); on the Zen 5
// VM none at all read 0.85-0.88 against 0.76-0.79 per line and 0.65-0.73
// per 256 bytes, at any distance ahead from 4 to 32 KiB and with
// PREFETCHT0, T1 or NTA. The avx512vnni set takes the CPU's version
// (forPrefetcher in cpu/cpuid_amd64.go): Two on Intel's, HW on AMD's
// family 1Ah (Zen 5), the per-step one on the others.
func genDotF16RowsAVX512() {
	TEXT(kernelName("dotF16RowsAVX512"), NOSPLIT, dotF16RowsSig)
	Pragma("noescape")
	kernelDoc("dotF16RowsAVX512", fmt.Sprintf("dotF16RowsAVX512 is dotF16Rows with AVX-512: 4 rows at a time, one accumulator each, %d elements per step, masked tail.", f16Step))
	x := load(Param("x").Base())
	n := load(Param("x").Len())

	// rowSums returns the 256-bit folds of the sums of the rows at q: one
	// accumulator per row, each 16-element chunk added in order.
	rowSums := func(q []reg.GPVirtual) []reg.VecVirtual {
		R := len(q)
		acc := zmms(R)
		i := GP64()
		streamLoop(i, n, f16Step, 32, func(e int, pf bool) {
			for c := 0; c < 2; c++ {
				xc := ZMM()
				VMOVUPS(Mem{Base: x, Index: i, Scale: 4, Disp: 4 * (e + 16*c)}, xc)
				for r := 0; r < R; r++ {
					if pf && c == 0 {
						prefetch(Mem{Base: q[r], Index: i, Scale: 2, Disp: 2 * e})
					}
					h := ZMM()
					VCVTPH2PS(Mem{Base: q[r], Index: i, Scale: 2, Disp: 2 * (e + 16*c)}, h)
					VFMADD231PS(xc, h, acc[r])
				}
			}
		})
		ifRoom(i, n, 16, func() {
			x0 := ZMM()
			VMOVUPS(Mem{Base: x, Index: i, Scale: 4}, x0)
			for r := 0; r < R; r++ {
				h := ZMM()
				VCVTPH2PS(Mem{Base: q[r], Index: i, Scale: 2}, h)
				VFMADD231PS(x0, h, acc[r])
			}
			ADDQ(U8(16), i)
		})
		tailMask(i, n, func(k reg.Register) {
			x0 := ZMM()
			VMOVUPS_Z(Mem{Base: x, Index: i, Scale: 4}, k, x0)
			for r := 0; r < R; r++ {
				h16, h := YMM(), ZMM()
				VMOVDQU16_Z(Mem{Base: q[r], Index: i, Scale: 2}, k, h16)
				VCVTPH2PS(h16, h)
				VFMADD231PS(x0, h, acc[r])
			}
		})
		ys := make([]reg.VecVirtual, R)
		for r := range ys {
			ys[r] = f32EVEX.fold256(acc[r])
		}
		return ys
	}
	spreadRows(paramStride(2),
		func(q []reg.GPVirtual, outAt func(int) Mem) {
			storeLanes(f32EVEX.sum4(rowSums(q)), outAt)
		},
		func(q reg.GPVirtual, out Mem) {
			VMOVSS(f32EVEX.sum1(rowSums([]reg.GPVirtual{q})[0]), out)
		})
	VZEROUPPER()
	RET()
}

const axpyF16Sig = "func(a float32, v []uint16, y []float32)"

// axpyArgs loads the arguments of axpyF16: a broadcast to every lane of a
// (a ymm or zmm), v, y and len(y).
func axpyArgs(a reg.VecVirtual) (v, y, n reg.GPVirtual) {
	a1 := XMM()
	Load(Param("a"), a1)
	VBROADCASTSS(a1, a)
	v = load(Param("v").Base())
	y = load(Param("y").Base())
	n = load(Param("y").Len())
	return
}

func genAxpyF16AVX2() {
	TEXT("axpyF16AVX2", NOSPLIT, axpyF16Sig)
	Pragma("noescape")
	Doc("axpyF16AVX2 is axpyF16 with F16C and FMA: 16 elements per step.")
	a := YMM()
	v, y, n := axpyArgs(a)
	i := GP64()
	step := func(k int) {
		for j := 0; j < k; j += 8 {
			h := YMM()
			VCVTPH2PS(Mem{Base: v, Index: i, Scale: 2, Disp: 2 * j}, h)
			VFMADD213PS(Mem{Base: y, Index: i, Scale: 4, Disp: 4 * j}, a, h) // h = a·h + y
			VMOVUPS(h, Mem{Base: y, Index: i, Scale: 4, Disp: 4 * j})
		}
	}
	blockLoop(i, roundDown(n, 16), 16, func() { step(16) })
	ifRoom(i, n, 8, func() { step(8); ADDQ(U8(8), i) })
	loop, done := label("tail"), label("taildone")
	CMPQ(i, n)
	JAE(LabelRef(done))
	Label(loop)
	g, h := GP32(), XMM()
	MOVWLZX(Mem{Base: v, Index: i, Scale: 2}, g)
	VMOVD(g, h)
	VCVTPH2PS(h, h)
	VFMADD213SS(Mem{Base: y, Index: i, Scale: 4}, a.AsX(), h)
	VMOVSS(h, Mem{Base: y, Index: i, Scale: 4})
	INCQ(i)
	CMPQ(i, n)
	JB(LabelRef(loop))
	Label(done)
	VZEROUPPER()
	RET()
}

func genAxpyF16AVX512() {
	TEXT("axpyF16AVX512", NOSPLIT, axpyF16Sig)
	Pragma("noescape")
	Doc("axpyF16AVX512 is axpyF16 with AVX-512: 32 elements per step, masked tail.")
	a := ZMM()
	v, y, n := axpyArgs(a)
	i := GP64()
	step := func(k int) {
		for j := 0; j < k; j += 16 {
			h := ZMM()
			VCVTPH2PS(Mem{Base: v, Index: i, Scale: 2, Disp: 2 * j}, h)
			VFMADD213PS(Mem{Base: y, Index: i, Scale: 4, Disp: 4 * j}, a, h)
			VMOVUPS(h, Mem{Base: y, Index: i, Scale: 4, Disp: 4 * j})
		}
	}
	blockLoop(i, roundDown(n, 32), 32, func() { step(32) })
	ifRoom(i, n, 16, func() { step(16); ADDQ(U8(16), i) })
	tailMask(i, n, func(k reg.Register) {
		h16, h, t := YMM(), ZMM(), ZMM()
		VMOVDQU16_Z(Mem{Base: v, Index: i, Scale: 2}, k, h16)
		VCVTPH2PS(h16, h)
		VMOVUPS_Z(Mem{Base: y, Index: i, Scale: 4}, k, t)
		VFMADD231PS(h, a, t)
		VMOVUPS(t, k, Mem{Base: y, Index: i, Scale: 4})
	})
	VZEROUPPER()
	RET()
}

const axpyF16RowsSig = "func(a []float32, v []uint16, stride int, y []float32)"

// genAxpyF16RowsAVX512 emits axpyF16Rows: y[i] += a[p]·f16(v[p·stride + i])
// for p = 0, 1, … in order and i < len(y), each step one FMA per element as
// axpyF16AVX512 takes it (so the result is bit for bit that of calling it
// per p): attention's weighted sum over the V cache in one call. y is held
// in registers 64 elements at a time while every row passes, then 16, then
// a masked tail.
func genAxpyF16RowsAVX512() {
	TEXT("axpyF16RowsAVX512", NOSPLIT, axpyF16RowsSig)
	Pragma("noescape")
	Doc("axpyF16RowsAVX512 is axpyF16Rows with AVX-512: y held in registers 64 elements at a time",
		"while every row of v passes (one FMA per element and row, in row order), then 16, then masked.")
	a := load(Param("a").Base())
	na := load(Param("a").Len())
	v := load(Param("v").Base())
	stride := load(Param("stride"))
	SHLQ(U8(1), stride) // bytes
	y := load(Param("y").Base())
	n := load(Param("y").Len())
	i := GP64()
	XORQ(i, i)
	// chunk emits the loop over rows for elements i…i+16·k−1 (masked by
	// mk when not nil, k = 1).
	chunk := func(k int, mk reg.Register) {
		acc := make([]reg.VecVirtual, k)
		for j := range acc {
			acc[j] = ZMM()
			if mk == nil {
				VMOVUPS(Mem{Base: y, Index: i, Scale: 4, Disp: 64 * j}, acc[j])
			} else {
				VMOVUPS_Z(Mem{Base: y, Index: i, Scale: 4}, mk, acc[j])
			}
		}
		vp, p := GP64(), GP64()
		LEAQ(Mem{Base: v, Index: i, Scale: 2}, vp)
		XORQ(p, p)
		loop, done := label("rows"), label("rowsdone")
		CMPQ(p, na)
		JAE(LabelRef(done))
		Label(loop)
		ab := ZMM()
		VBROADCASTSS(Mem{Base: a, Index: p, Scale: 4}, ab)
		for j := range acc {
			h := ZMM()
			if mk == nil {
				VCVTPH2PS(Mem{Base: vp, Disp: 32 * j}, h)
			} else {
				h16 := YMM()
				VMOVDQU16_Z(Mem{Base: vp}, mk, h16)
				VCVTPH2PS(h16, h)
			}
			VFMADD231PS(h, ab, acc[j])
		}
		ADDQ(stride, vp)
		INCQ(p)
		CMPQ(p, na)
		JB(LabelRef(loop))
		Label(done)
		for j := range acc {
			if mk == nil {
				VMOVUPS(acc[j], Mem{Base: y, Index: i, Scale: 4, Disp: 64 * j})
			} else {
				VMOVUPS(acc[j], mk, Mem{Base: y, Index: i, Scale: 4})
			}
		}
	}
	chunkLoops(i, func() reg.GPVirtual { return n }, chunk)
	VZEROUPPER()
	RET()
}

// chunkLoops emits the element loops of the axpyF16Rows kernels: chunk(4,
// nil) for elements i…i+63 while 64 are left, then chunk(1, nil) while 16
// are, then chunk(1, mask) for the rest; n() gives len(y) in a register.
func chunkLoops(i reg.GPVirtual, n func() reg.GPVirtual, chunk func(k int, mk reg.Register)) {
	for _, k := range []int{4, 1} {
		loop, done := label("chunks"), label("chunksdone")
		Label(loop)
		e := GP64()
		LEAQ(Mem{Base: i, Disp: 16 * k}, e)
		CMPQ(e, n())
		JA(LabelRef(done))
		chunk(k, nil)
		ADDQ(U8(16*k), i)
		JMP(LabelRef(loop))
		Label(done)
	}
	tailMask(i, n(), func(mk reg.Register) { chunk(1, mk) })
}

const axpyF16Rows4Sig = "func(a []float32, aStride, np int, v []uint16, stride int, y []float32, yStride, n int)"

// genAxpyF16Rows4AVX512 emits axpyF16Rows4: axpyF16Rows for 4 weight
// vectors at once over the same rows of v (the query heads that share a
// K/V head), y_j[i] += a_j[p]·f16(v[p·stride + i]) for j < 4, p < np in
// order, i < n, where a_j = a[j·aStride:] and y_j = y[j·yStride:]: each
// row of v is read and widened once for the four, and each y_j gets
// exactly the FMAs axpyF16RowsAVX512 gives it. The four y_j are held in
// registers 64 elements at a time (16 zmm), then 16, then masked.
func genAxpyF16Rows4AVX512() {
	TEXT(kernelName("axpyF16Rows4AVX512"), NOSPLIT, axpyF16Rows4Sig)
	Pragma("noescape")
	kernelDoc("axpyF16Rows4AVX512", "axpyF16Rows4AVX512 is axpyF16Rows4 with AVX-512: four y held in registers 64 elements at a time",
		fmt.Sprintf("while a block of %d rows of v passes, then 16, then masked; then the next block.", axpyRowBlock))
	i, p0 := GP64(), GP64()
	XORQ(p0, p0)
	yAt := func(j int) reg.GPVirtual { return axpyYAt(i, j) }
	chunk := func(k int, mk reg.Register) {
		acc := make([][]reg.VecVirtual, 4)
		for j := range acc {
			yp := yAt(j)
			for d := 0; d < k; d++ {
				z := ZMM()
				if mk == nil {
					VMOVUPS(Mem{Base: yp, Disp: 64 * d}, z)
				} else {
					VMOVUPS_Z(Mem{Base: yp}, mk, z)
				}
				acc[j] = append(acc[j], z)
			}
		}
		axpyBlockRows(i, p0, func(as []reg.GPVirtual, p, vp reg.GPVirtual) {
			hs := make([]reg.VecVirtual, k)
			for d := range hs {
				hs[d] = ZMM()
				if d == 0 && mk == nil {
					// Rows of more than 64 elements are read a chunk at a
					// time, lines apart: no stream the hardware follows.
					// Each chunk prefetches the 4 lines from its own
					// start, so the first chunk of a row of 128 asks for
					// the whole row: the values of 4,001 positions of the
					// 2B shape read 24-31 GB/s from DRAM instead of 21-28
					// asking for each chunk's 2 lines (Zen 5 VM, one
					// thread, alternated in one process).
					for l := 0; l < 4; l++ {
						prefetch(Mem{Base: vp, Disp: 64 * l})
					}
				}
				if mk == nil {
					VCVTPH2PS(Mem{Base: vp, Disp: 32 * d}, hs[d])
				} else {
					h16 := YMM()
					VMOVDQU16_Z(Mem{Base: vp}, mk, h16)
					VCVTPH2PS(h16, hs[d])
				}
			}
			for j := range acc {
				ab := ZMM()
				VBROADCASTSS(Mem{Base: as[j], Index: p, Scale: 4}, ab)
				for d := range hs {
					VFMADD231PS(hs[d], ab, acc[j][d])
				}
			}
		})
		for j := range acc {
			yp := yAt(j)
			for d, z := range acc[j] {
				if mk == nil {
					VMOVUPS(z, Mem{Base: yp, Disp: 64 * d})
				} else {
					VMOVUPS(z, mk, Mem{Base: yp})
				}
			}
		}
	}
	// Blocks of rows: every 64-element chunk of y passes a block before
	// the next block, so a row longer than 64 elements (a head of 128) is
	// read from DRAM once and from L1 by the later chunks; y goes to
	// memory between blocks, and each element still gets its rows' FMAs
	// in row order.
	axpyRowBlocks(i, p0, func() {
		chunkLoops(i, func() reg.GPVirtual { return load(Param("n")) }, chunk)
	})
}

// genAxpyF16Rows4AVX2 emits axpyF16Rows4AVX2: axpyF16Rows4 with AVX2 for
// the first n &^ 15 elements of each y_j (cpu's wrapper does the rest one
// head at a time): the four y_j held in registers 16 elements at a time (8
// ymm) while a block of axpyRowBlock rows of v passes, each row's 16
// values widened once for the four (two vcvtph2ps), each y_j[i] getting
// its rows' FMAs in row order as axpyF16AVX2 gives them. Before, the avx2
// set ran the four heads' rows one axpyF16AVX2 call each (a call per row
// and head, y loaded and stored by every call): the values of 4,001
// cached positions of the 2B shape read 6 GB/s on one Zen 5 thread.
func genAxpyF16Rows4AVX2() {
	TEXT(kernelName("axpyF16Rows4AVX2"), NOSPLIT, axpyF16Rows4Sig)
	Pragma("noescape")
	kernelDoc("axpyF16Rows4AVX2", "axpyF16Rows4AVX2 is axpyF16Rows4 with AVX2 for the first n &^ 15 elements: four y held in",
		fmt.Sprintf("registers 16 elements at a time while a block of %d rows of v passes; then the next block.", axpyRowBlock))
	i, p0 := GP64(), GP64()
	XORQ(p0, p0)
	yAt := func(j int) reg.GPVirtual { return axpyYAt(i, j) }
	chunk := func() {
		acc := make([][2]reg.VecVirtual, 4)
		for j := range acc {
			yp := yAt(j)
			for d := range acc[j] {
				acc[j][d] = YMM()
				VMOVUPS(Mem{Base: yp, Disp: 32 * d}, acc[j][d])
			}
		}
		axpyBlockRows(i, p0, func(as []reg.GPVirtual, p, vp reg.GPVirtual) {
			// Rows are read 32 bytes a chunk, lines apart: no stream the
			// hardware follows; one prefetch per row and chunk.
			prefetch(Mem{Base: vp})
			h := [2]reg.VecVirtual{YMM(), YMM()}
			for d := range h {
				VCVTPH2PS(Mem{Base: vp, Disp: 16 * d}, h[d])
			}
			for j := range acc {
				ab := YMM()
				VBROADCASTSS(Mem{Base: as[j], Index: p, Scale: 4}, ab)
				for d := range h {
					VFMADD231PS(h[d], ab, acc[j][d])
				}
			}
		})
		for j := range acc {
			yp := yAt(j)
			for d := range acc[j] {
				VMOVUPS(acc[j][d], Mem{Base: yp, Disp: 32 * d})
			}
		}
	}
	axpyRowBlocks(i, p0, func() {
		whileRoom(i, load(Param("n")), 16, func() {
			chunk()
			ADDQ(U8(16), i)
		})
	})
}

// axpyYAt returns the address of y_j[i] in a new register (axpyF16Rows4).
func axpyYAt(i reg.GPVirtual, j int) reg.GPVirtual {
	p := load(Param("y").Base())
	if j > 0 {
		ys := load(Param("yStride"))
		IMUL3Q(U8(j), ys, ys)
		LEAQ(Mem{Base: p, Index: ys, Scale: 4}, p)
	}
	LEAQ(Mem{Base: p, Index: i, Scale: 4}, p)
	return p
}

// axpyBlockRows emits the row loop of an axpyF16Rows4 chunk at element i:
// for p from p0 to min(p0 + axpyRowBlock, np), row(as, p, vp) with as the
// four weight vectors' addresses (a_j[p] at as[j] + 4·p) and vp the address
// of v[p·stride + i].
func axpyBlockRows(i, p0 reg.GPVirtual, row func(as []reg.GPVirtual, p, vp reg.GPVirtual)) {
	as := make([]reg.GPVirtual, 4)
	as[0] = load(Param("a").Base())
	aStride := load(Param("aStride"))
	for j := 1; j < 4; j++ {
		as[j] = GP64()
		LEAQ(Mem{Base: as[j-1], Index: aStride, Scale: 4}, as[j])
	}
	stride, vp := valueRow(p0, i)
	np := GP64() // the block's end: min(p0 + axpyRowBlock, np)
	LEAQ(Mem{Base: p0, Disp: axpyRowBlock}, np)
	end := load(Param("np"))
	CMPQ(np, end)
	CMOVQGT(end, np)
	p := GP64()
	MOVQ(p0, p)
	loop, done := label("rows"), label("rowsdone")
	CMPQ(p, np)
	JAE(LabelRef(done))
	Label(loop)
	row(as, p, vp)
	ADDQ(stride, vp)
	INCQ(p)
	CMPQ(p, np)
	JB(LabelRef(loop))
	Label(done)
}

// valueRow returns the bytes between the rows of the float16 values v
// (the stride argument, in elements) and the address of v[p0·stride + i].
func valueRow(p0, i reg.GPVirtual) (stride, vp reg.GPVirtual) {
	stride = load(Param("stride"))
	SHLQ(U8(1), stride) // bytes
	vp = GP64()
	MOVQ(p0, vp)
	IMULQ(stride, vp)
	ADDQ(load(Param("v").Base()), vp)
	LEAQ(Mem{Base: vp, Index: i, Scale: 2}, vp)
	return stride, vp
}

// axpyRowBlocks emits the block loop of an axpyF16Rows4 kernel: for each
// block of axpyRowBlock rows from p0 = 0, chunks (from element i = 0),
// then the function's end.
func axpyRowBlocks(i, p0 reg.GPVirtual, chunks func()) {
	blocks, blocksDone := label("rowblocks"), label("rowblocksdone")
	Label(blocks)
	CMPQ(p0, load(Param("np")))
	JAE(LabelRef(blocksDone))
	XORQ(i, i)
	chunks()
	ADDQ(U32(axpyRowBlock), p0)
	JMP(LabelRef(blocks))
	Label(blocksDone)
	VZEROUPPER()
	RET()
}

// axpyRowBlock is the rows of v axpyF16Rows4AVX512 passes per chunk of y:
// 64 rows of a head of 128 are 16 KiB.
const axpyRowBlock = 64

// f16Step is the elements of each row dotF16Rows takes per step, with one
// prefetch per row: 256 bytes, as sumBytes takes its streams. Against one
// prefetch per 64 bytes (32 elements), the 2B shape's head rows read DRAM
// at 0.89-0.97 of the read probe instead of 0.76-0.79 with AVX-512 and at
// 0.87-0.90 instead of 0.76-0.79 with AVX2 on the Zen 4 VM (one thread,
// BenchmarkDotF16Rows, old and new binaries alternated); 256 elements per
// step measured the same as 128.
const f16Step = 128
