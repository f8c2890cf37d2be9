// Command asmgen writes bitvk's amd64 SIMD kernels with avo: the assembly
// cpu/kernels_amd64.s and its Go declarations cpu/kernels_stubs_amd64.go.
// It lives in its own module so that avo never enters bitvk's go.mod.
//
//	go run . -out ../../cpu/kernels_amd64.s -stubs ../../cpu/kernels_stubs_amd64.go -pkg cpu
//
// Two kernel sets, each a function per operation of cpu.kernels (see
// cpu/kernels.go for the exact semantics):
//
//	avx2        AVX2 + FMA + F16C + BMI2, ymm registers 0-15 only
//	avx512vnni  AVX-512 F/BW/VL + VNNI (vpdpbusd), zmm registers and masks;
//	            also BMI2 (bzhi) and VEX AVX2 forms, so it needs the avx2 features
//	            (its float32 sgemm kernels use only AVX-512 F)
//
// Files: ternary.go (matrix-vector), matmul.go (matrix-matrix), float.go
// (float16 rows), softmax.go (attention's exponentials), elementwise.go (per-element float32 steps), quant.go (int8 quantization), half.go (float16 conversion), int8.go (int8 rows, byte sum), head.go (float16 and int8
// rows against a few tokens), blockhead.go (int8 codes with group scales), nibblehead.go (Q4_0 in 4.5 bits), sixhead.go (Q6_K in 6.75 bits), sumsq.go (RMSNorm's float64 sum of squares), sgemm.go (the trainer's
// float32 matrix-product micro-kernels, FMA peak probe). This file holds the
// constants and the helpers they share.
package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/gotypes"
	"github.com/mmcloughlin/avo/ir"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

func main() {
	ConstraintExpr("!purego")
	genConsts()
	genBlockConsts()
	genExpConsts()
	genQuantConsts()
	genSumSquaresConsts()

	genTernaryRowsAVX2()
	genTernaryRowsVNNI()
	withoutPrefetch(genTernaryRowsVNNI)
	genTernaryMatMulAVX2()
	genTernaryMatMulVNNI()
	withoutPrefetch(genTernaryMatMulVNNI)
	genDotF16RowsAVX2()
	genDotF16RowsAVX512()
	withoutPrefetch(genDotF16RowsAVX512)
	genAxpyF16AVX2()
	genAxpyF16AVX512()
	genAxpyF16RowsAVX512()
	genAxpyF16Rows4AVX512()
	genAxpyF16Rows4AVX2()
	genDotI8RowsAVX2()
	genDotI8RowsVNNI()
	withoutPrefetch(genDotI8RowsVNNI)
	genDotF16MatMulAVX512()
	withoutPrefetch(genDotF16MatMulAVX512)
	genDotF16MatMulAVX2()
	genKScoresAVX512()
	genKScoresAVX2()
	genDotI8MatMulVNNI()
	withoutPrefetch(genDotI8MatMulVNNI)
	genDotBlockRowsAVX2()
	genDotBlockRowsVNNI()
	withoutPrefetch(genDotBlockRowsVNNI)
	genDotBlockMatMulVNNI()
	withoutPrefetch(genDotBlockMatMulVNNI)
	genScaleI8("scaleI8AVX2", false)
	genScaleI8("scaleI8AVX512", true)
	genSumSquares("sumSquaresAVX2", false)
	genSumSquares("sumSquaresAVX512", true)
	genMaxAbs("maxAbsAVX2", false)
	genMaxAbs("maxAbsAVX512", true)
	genQuantizeI8AVX2()
	genQuantizeI8AVX512()
	genHalf("f32ToF16AVX2", false, false)
	genHalf("f32ToF16AVX512", false, true)
	genHalf("roundF16AVX2", true, false)
	genHalf("roundF16AVX512", true, true)
	genExpSubAVX2()
	genScaleMax("scaleMaxAVX2", isaAVX2)
	genScaleMax("scaleMaxAVX512", isaAVX512)
	genExpSubAVX512()
	for _, v := range []struct {
		suffix string
		isa    vecISA
	}{{"AVX2", isaAVX2}, {"AVX512", isaAVX512}} {
		genScaleSums("scaleSums"+v.suffix, v.isa)
		genNormScale("normScale"+v.suffix, v.isa)
		genReluSqMul("reluSqMul"+v.suffix, v.isa)
		genAddF32("addF32"+v.suffix, v.isa)
	}
	genSumBytesAVX2()
	genSumBytesAVX512()
	genSgemmTileAVX2()
	genSgemmTileAVX512()
	genFMALoopAVX2()
	genFMALoopAVX512()
	genInt8Loop("int8LoopAVX2", false)
	genInt8Loop("int8LoopVNNI", true)
	genRopeNeox("ropeNeoxAVX2", false)
	genRopeNeox("ropeNeoxAVX512", true)
	genDotNibbleRowsAVX2()
	genDotNibbleRowsVNNI()
	withoutPrefetch(genDotNibbleRowsVNNI)
	genDotNibbleMatMulVNNI()
	withoutPrefetch(genDotNibbleMatMulVNNI)
	genDotSixRowsAVX2()
	genDotSixRowsVNNI()
	withoutPrefetch(genDotSixRowsVNNI)
	genDotSixMatMulVNNI()
	withoutPrefetch(genDotSixMatMulVNNI)
	genExpSumConsts()
	genExpSumAVX512()
	genExpSumAVX2()
	everyLine(genTernaryMatMulVNNI)
	genGFNIConsts()
	genTernaryMatMulVNNIGFNI()
	twoLevels(genTernaryRowsVNNI)
	twoLevels(genDotF16RowsAVX512)
	twoLevels(genDotI8RowsVNNI)
	twoLevels(genDotBlockRowsVNNI)
	twoLevels(genDotNibbleRowsVNNI)
	twoLevels(genDotSixRowsVNNI)
	twoLevelsNear(1024, genDotF16MatMulAVX512)
	twoLevels(genKScoresAVX512)
	twoLevels(genAxpyF16Rows4AVX512)
	twoLevelsNear(1024, genDotI8MatMulVNNI)
	twoLevels(genDotF16RowsAVX2)
	twoLevels(genDotI8RowsAVX2)
	twoLevels(genDotBlockRowsAVX2)
	twoLevels(genDotNibbleRowsAVX2)
	twoLevels(genDotSixRowsAVX2)
	twoLevels(genKScoresAVX2)
	twoLevels(genAxpyF16Rows4AVX2)
	twoLevelsNear(1024, genDotF16MatMulAVX2)
	genSumSquares8("sumSquares8AVX512", true)
	genSumSquares8("sumSquares8AVX2", false)
	genReluSqSums("reluSqSumsAVX2", isaAVX2)
	genReluSqSums("reluSqSumsAVX512", isaAVX512)
	genNormScaleMax("normScaleMaxAVX2", false)
	genNormScaleMax("normScaleMaxAVX512", true)
	genKScoresWideAVX512()
	genAxpyF16RowsWideAVX512()

	Generate()
}

// Read-only constants. Each is as wide as the widest register that reads it
// as a memory operand.
var (
	bytes03   Mem // 32 × 0x03: mask of one 2-bit code
	words0001 Mem // 16 × int16 1: vpmaddwd multiplier summing int16 pairs
	bytes01   Mem // 4 × 0x01: broadcast, u8 ones for vpdpbusd byte sums
	bytes80   Mem // 4 × 0x80: broadcast, the +128 bias of dotI8RowsVNNI
	bytesC0   Mem // 4 × 0xC0: broadcast, bits 7:6 of each byte
	bytes30   Mem // 4 × 0x30: broadcast, bits 5:4
	bytes0C   Mem // 4 × 0x0C: broadcast, bits 3:2
	maskHi    Mem // 32 × 0xC0, 32 × 0x30: bits 7:6 of block byte j in lanes 0-31, bits 5:4 in 32-63
	shiftHi   Mem // 8 × 6, 8 × 4 (int32): undo maskHi's scale 64 / 16
)

func genConsts() {
	bytes03 = table("bytes03", 32, func(int) uint32 { return 0x03030303 })
	words0001 = table("words0001", 32, func(int) uint32 { return 0x00010001 })
	bytes01 = table("bytes01", 4, func(int) uint32 { return 0x01010101 })
	bytes80 = table("bytes80", 4, func(int) uint32 { return 0x80808080 })
	bytesC0 = table("bytesC0", 4, func(int) uint32 { return 0xC0C0C0C0 })
	bytes30 = table("bytes30", 4, func(int) uint32 { return 0x30303030 })
	bytes0C = table("bytes0C", 4, func(int) uint32 { return 0x0C0C0C0C })
	maskHi = table("maskHi", 64, func(i int) uint32 { return pick(i < 32, 0xC0C0C0C0, 0x30303030) })
	shiftHi = table("shiftHi", 64, func(i int) uint32 { return pick(i < 32, 6, 4) })
}

// table emits a read-only global of size bytes whose 32-bit word at byte
// offset i is f(i).
func table(name string, size int, f func(i int) uint32) Mem {
	m := GLOBL(name, RODATA|NOPTR)
	for i := 0; i < size; i += 4 {
		DATA(i, U32(f(i)))
	}
	return m
}

func pick(c bool, a, b uint32) uint32 {
	if c {
		return a
	}
	return b
}

// prefetchAhead is how far ahead of a streaming read, in bytes of its
// address, the memory-bound kernels ask for data with PREFETCHT1 (into
// L2). The hardware prefetcher alone left the row kernels at 8-15 GB/s
// from DRAM on Zen 4; 16 KiB ahead they stream at 24-28 GB/s (8 KiB and
// 32 KiB measured slightly slower, PREFETCHT0 much slower). A prefetch
// never faults, so one that reaches past the end of a slice is harmless:
// it reads nothing the program can observe.
const prefetchAhead = 16384

// prefetch emits a prefetch of the line prefetchAhead bytes after m (in a
// nearPrefetches, of the line nearAhead bytes after m into L1).
func prefetch(m Mem) {
	if nearPrefetch {
		m.Disp += nearAhead
		PREFETCHNTA(m)
		return
	}
	if hwPrefetchOnly {
		return
	}
	far := m
	far.Disp += prefetchAhead
	PREFETCHT1(far)
	if twoLevel {
		m.Disp += twoNear
		PREFETCHT0(m)
	}
}

// prefetchScales emits, in a twoLevels, the prefetches of a stream of
// scales read alongside a stream of codes at 1/ratio of its pace (m the
// scales being read): as far ahead in time as prefetch's of the codes,
// prefetchAhead/ratio bytes into L2 and twoNear/ratio into L1. Outside a
// twoLevels it emits nothing: the scales stream is left to the hardware.
func prefetchScales(m Mem, ratio int) {
	if !twoLevel {
		return
	}
	far := m
	far.Disp += prefetchAhead / ratio
	PREFETCHT1(far)
	m.Disp += twoNear / ratio
	PREFETCHT0(m)
}

// twoNear is how far ahead a twoLevels kernel also asks for each line
// into L1 (PREFETCHT0), beside the prefetch prefetchAhead on into L2. On
// the Intel Xeon VM 1, 2 and 4 KiB (and PREFETCHNTA at 2) measured alike,
// 512 bytes slower (ternaryRowsVNNITwo, the 2B shape's products of a
// decode step from DRAM); so did 1 and 2 KiB for the float16 head's rows
// and attention's kernels. twoLevelsNear sets another distance.
var twoNear = 2048

// twoLevel, while set, makes prefetch emit a second prefetch of each line,
// twoNear bytes ahead into L1 (and streamLoop's bodies prefetch every
// line, as in an everyLine): the "Two" version of a kernel, for Intel's
// cores (see genTernaryRowsVNNI).
var twoLevel bool

// twoLevels runs gen with twoLevel and linePrefetch set: it writes the
// Two version of gen's kernel, named by kernelName.
func twoLevels(gen func()) {
	twoLevel, linePrefetch = true, true
	defer func() { twoLevel, linePrefetch = false, false }()
	gen()
}

// twoLevelsNear is twoLevels with the near prefetch near bytes ahead: the
// float16 and int8 heads' few-token tiles (1 KiB), whose 4-token tiles
// spend about twice the row kernels' time on a line. The 2B head from
// DRAM, four tokens, on the Intel Xeon VM: float16, 1 KiB against 2 KiB
// alternated in one loop (18 runs of a thread count), 0.74-0.83 of the
// probe against 0.68-0.81, means 0.79 and 0.74, 512 bytes as 1 KiB; int8,
// against the plain version (6 runs), means 0.91 and 0.87, where at 2 KiB
// the two had come out even.
func twoLevelsNear(near int, gen func()) {
	saved := twoNear
	twoNear = near
	defer func() { twoNear = saved }()
	twoLevels(gen)
}

// nearAhead is how far ahead a nearPrefetches kernel asks for each row's
// line with PREFETCHNTA: 2 KiB, which on the Zen 5 VM was as fast as 1 KiB
// and faster than 4 (docs/KERNELS.md).
const nearAhead = 2048

// nearPrefetch, while set, makes prefetch emit PREFETCHNTA nearAhead bytes
// ahead: the HW versions of the few-token kernels, whose rows stream from
// DRAM through the hardware prefetcher while the tokens' activations
// (T·n bytes or floats, 7.5-60 KiB at the 2B shape) are read again for
// every row. Each weight line then comes into L1 shortly before its use,
// marked to leave first, instead of on demand, evicting activations that
// are read again (from L2, which the DRAM stream keeps busy).
var nearPrefetch bool

// nearPrefetches runs gen with nearPrefetch set.
func nearPrefetches(gen func()) {
	nearPrefetch = true
	defer func() { nearPrefetch = false }()
	gen()
}

// hwPrefetchOnly, while set, makes prefetch emit nothing: the "HW" version
// of a kernel, for CPUs whose hardware prefetcher streams faster without
// the software prefetches (AMD's Zen 5: see genTernaryRowsVNNI).
var hwPrefetchOnly bool

// withoutPrefetch runs gen with hwPrefetchOnly set: it writes the HW
// version of gen's kernel, named by kernelName.
func withoutPrefetch(gen func()) {
	hwPrefetchOnly = true
	defer func() { hwPrefetchOnly = false }()
	gen()
}

// fewTokenPrefetches runs gen, a tile of a few-token kernel: in a
// withoutPrefetch with near prefetches when near, else with the
// prefetches into L2, since with more tokens per weight the arithmetic
// sets the pace and the hardware prefetcher alone falls behind it.
func fewTokenPrefetches(near bool, gen func()) {
	switch {
	case !hwPrefetchOnly:
		gen()
	case near:
		nearPrefetches(gen)
	default:
		hwPrefetchOnly = false
		defer func() { hwPrefetchOnly = true }()
		gen()
	}
}

// linePrefetch, while set, makes streamLoop's bodies prefetch each of
// their chunks (a 64-byte line of each row) instead of one per step of
// 256 bytes, and ternaryMatMulVNNI take up to 5 tokens in spread tiles:
// for Intel's cores, whose read probe streams from one core at 12-16 GB/s
// and whose kernels keep up with it only with a prefetch per line
// (cpu.linePrefetches; see genDotF16RowsAVX512 and docs/KERNELS.md). The
// row kernels' versions for those cores prefetch each line twice
// (twoLevels, which sets it); ternaryMatMulVNNILines once (everyLine).
var linePrefetch bool

// everyLine runs gen with linePrefetch set: it writes the Lines version of
// gen's kernel (ternaryMatMulVNNILines), named by kernelName.
func everyLine(gen func()) {
	linePrefetch = true
	defer func() { linePrefetch = false }()
	gen()
}

// kernelName returns name, or name+"HW" in a withoutPrefetch, name+"Two"
// in a twoLevels, name+"Lines" in an everyLine.
func kernelName(name string) string {
	switch {
	case hwPrefetchOnly:
		return name + "HW"
	case twoLevel:
		return name + "Two"
	case linePrefetch:
		return name + "Lines"
	}
	return name
}

// kernelDoc writes the doc of the function just begun, plain's kernel:
// doc, or in a withoutPrefetch that it is plain (the same bits) without
// software prefetches, or in an everyLine that it prefetches every line.
func kernelDoc(plain string, doc ...string) {
	switch {
	case hwPrefetchOnly:
		Doc(plain + "HW is " + plain + " (the same bits) without software prefetches.")
	case twoLevel:
		Doc(plain+"Two is "+plain+" (the same bits) prefetching each 64-byte line it streams twice:",
			fmt.Sprintf("16 KiB ahead into L2 and %d bytes ahead into L1.", twoNear))
	case linePrefetch:
		Doc(plain + "Lines is " + plain + " (the same bits) prefetching every 64-byte line of each row.")
	default:
		Doc(doc...)
	}
}

// broadcastParam loads the float32 argument name into every lane of a new
// vector register from alloc (a YMM or ZMM).
func broadcastParam(name string, alloc func() reg.VecVirtual) reg.VecVirtual {
	x, v := XMM(), alloc()
	Load(Param(name), x)
	VBROADCASTSS(x, v)
	return v
}

// load loads an argument into a new 64-bit register.
func load(c gotypes.Component) reg.GPVirtual {
	r := GP64()
	Load(c, r)
	return r
}

// label returns a label name unique in the file, so that a loop emitted
// twice in one function (once per tile shape) never clashes.
var labelCount int

func label(name string) string {
	labelCount++
	return fmt.Sprintf("%s_%d", name, labelCount)
}

// vpdpbusd emits VPDPBUSD s, u, acc: acc.int32[i] += Σ_{k<4} u.u8[4i+k]·s.s8[4i+k]
// (avo v0.5.0 does not know the VNNI instructions; the Go assembler does).
// Operand order is Go's: the signed source (register or memory) first, then
// the unsigned one, then the accumulator.
func vpdpbusd(s, u, acc Op) {
	Instruction(&ir.Instruction{
		Opcode:   "VPDPBUSD",
		Operands: []Op{s, u, acc},
		Inputs:   []Op{s, u, acc},
		Outputs:  []Op{acc},
		ISA:      []string{"AVX512_VNNI"},
	})
}

// zeroZ zeroes a zmm register with VPXORD z, z, z, marked as a zero idiom
// so that the register allocator does not think z is read.
func zeroZ(z reg.Register) {
	Instruction(&ir.Instruction{
		Opcode:           "VPXORD",
		Operands:         []Op{z, z, z},
		Inputs:           []Op{z, z},
		Outputs:          []Op{z},
		CancellingInputs: true,
		ISA:              []string{"AVX512F"},
	})
}

// zmms allocates n zmm registers, zeroed.
func zmms(n int) []reg.VecVirtual {
	zs := make([]reg.VecVirtual, n)
	for i := range zs {
		zs[i] = ZMM()
		zeroZ(zs[i])
	}
	return zs
}

// ymms allocates n ymm registers, zeroed.
func ymms(n int) []reg.VecVirtual {
	ys := make([]reg.VecVirtual, n)
	for i := range ys {
		ys[i] = YMM()
		VPXOR(ys[i], ys[i], ys[i])
	}
	return ys
}

// rowPtrs returns pointers to rows 0..R-1 of a matrix whose row 0 starts
// at base and whose rows are stride bytes apart (row 0 is base itself).
func rowPtrs(base, stride reg.GPVirtual, R int) []reg.GPVirtual {
	q := []reg.GPVirtual{base}
	for r := 1; r < R; r++ {
		p := GP64()
		LEAQ(Mem{Base: q[r-1], Index: stride, Scale: 1}, p)
		q = append(q, p)
	}
	return q
}

// lanes names the instructions that add and shuffle 32-bit lanes, integer
// or float, VEX (the avx2 set, registers 0-15) or EVEX-encodable (the
// avx512vnni set, whose registers may be 16-31).
type lanes struct {
	add, unpackLo, unpackHi, unpackLoQ, unpackHiQ func(...Op)
	extract128, extract256                        func(...Op)
}

var (
	int32VEX  = lanes{VPADDD, VPUNPCKLDQ, VPUNPCKHDQ, VPUNPCKLQDQ, VPUNPCKHQDQ, variadic(VEXTRACTI128), nil}
	int32EVEX = lanes{VPADDD, VPUNPCKLDQ, VPUNPCKHDQ, VPUNPCKLQDQ, VPUNPCKHQDQ, VEXTRACTI32X4, VEXTRACTI64X4}
	f32VEX    = lanes{VADDPS, VUNPCKLPS, VUNPCKHPS, VUNPCKLPD, VUNPCKHPD, variadic(VEXTRACTF128), nil}
	f32EVEX   = lanes{VADDPS, VUNPCKLPS, VUNPCKHPS, VUNPCKLPD, VUNPCKHPD, VEXTRACTF32X4, VEXTRACTF64X4}
	// The maxima of float32 lanes and of unsigned int32 lanes, for fold256
	// and sum1 (which then take a maximum instead of a sum).
	maxF32VEX  = lanes{add: VMAXPS, extract128: variadic(VEXTRACTF128)}
	maxF32EVEX = lanes{add: VMAXPS, extract128: VEXTRACTF32X4, extract256: VEXTRACTF64X4}
	maxU32VEX  = lanes{add: VPMAXUD, extract128: variadic(VEXTRACTI128)}
	maxU32EVEX = lanes{add: VPMAXUD, extract128: VEXTRACTI32X4, extract256: VEXTRACTI64X4}
)

// variadic adapts a three-operand avo instruction to the lanes fields.
func variadic(f func(a, b, c Op)) func(...Op) {
	return func(o ...Op) { f(o[0], o[1], o[2]) }
}

// fold256 returns a ymm holding lanes i + (i+8) of zmm z.
func (l lanes) fold256(z reg.VecVirtual) reg.VecVirtual {
	y := YMM()
	l.extract256(U8(1), z, y)
	l.add(z.AsY(), y, y)
	return y
}

// sum4 returns an xmm holding [Σa[0], Σa[1], Σa[2], Σa[3]], the sums of
// the lanes of each ymm (eight) or zmm (sixteen) a[r]: a 4×8 or 4×16
// transpose-and-add, zmm folded to ymm only after the transposition (13
// operations for four zmm, against 8 more to fold each first).
func (l lanes) sum4(a []reg.VecVirtual) reg.VecVirtual {
	vec := YMM
	if a[0].Size() == 64 {
		vec = ZMM
	}
	pair := func(p, q reg.VecVirtual) reg.VecVirtual {
		lo, hi := vec(), vec()
		l.unpackLo(q, p, lo) // [p0 q0 p1 q1 | p4 q4 p5 q5 | …]
		l.unpackHi(q, p, hi) // [p2 q2 p3 q3 | p6 q6 p7 q7 | …]
		l.add(hi, lo, lo)    // [p02 q02 p13 q13 | ...]
		return lo
	}
	s01, s23 := pair(a[0], a[1]), pair(a[2], a[3])
	lo, hi := vec(), vec()
	l.unpackLoQ(s23, s01, lo) // [a0_02 a1_02 a2_02 a3_02 | ...]
	l.unpackHiQ(s23, s01, hi) // [a0_13 a1_13 a2_13 a3_13 | ...]
	l.add(hi, lo, lo)
	if a[0].Size() == 64 {
		lo = l.fold256(lo)
	}
	x := XMM()
	l.extract128(U8(1), lo, x)
	l.add(lo.AsX(), x, x)
	return x
}

// sum1 returns an xmm whose lane 0 is the sum of the eight lanes of ymm y.
func (l lanes) sum1(y reg.VecVirtual) reg.VecVirtual {
	x, t := XMM(), XMM()
	l.extract128(U8(1), y, x)
	l.add(y.AsX(), x, x)
	VPSHUFD(U8(0x4E), x, t) // swap the 64-bit halves
	l.add(t, x, x)
	VPSHUFD(U8(0xB1), x, t) // swap neighbouring lanes
	l.add(t, x, x)
	return x
}
