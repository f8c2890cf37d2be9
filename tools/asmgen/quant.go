package main

// quantizeI8: q[i] = clamp(round_half_even(float32(x[i]·s)), −128, 127)
// for i < len(x), returning Σ q[i]: the int8 quantization of a BitLinear
// input. vcvtps2dq rounds half to even (the default MXCSR mode), as the Go
// twin's magic-number rounding does; the clamp is on the int32 result, so
// the kernels equal the twin whenever |x·s| < 2³¹ (the callers' products
// are at most 127: s = 127/max|x|), NaN aside.
//
// Versions:
//
//	quantizeI8AVX512  32 values per step, vpmovdb to bytes, masked tail.
//	quantizeI8AVX2    8 per step, packed to bytes with vpackssdw and
//	                  vpacksswb (in-lane: the low 4 bytes of each lane),
//	                  then a scalar tail.

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

const quantizeI8Sig = "func(x []float32, s float32, q []int8) int32"

var int127, intM128, absMask Mem // int32 127, −128, and 0x7FFFFFFF

func genQuantConsts() {
	int127 = table("int127", 4, func(int) uint32 { return 127 })
	intM128 = table("intM128", 4, func(int) uint32 { return 0xFFFFFF80 })
	absMask = table("absMask", 4, func(int) uint32 { return 0x7FFFFFFF })
}

func genQuantizeI8AVX512() {
	TEXT("quantizeI8AVX512", NOSPLIT, quantizeI8Sig)
	Pragma("noescape")
	Doc("quantizeI8AVX512 is quantizeI8 with AVX-512: 32 values per step, vpmovdb, masked tail.")
	x := load(Param("x").Base())
	n := load(Param("x").Len())
	q := load(Param("q").Base())
	s, hi, lo := broadcastParam("s", ZMM), ZMM(), ZMM()
	VPBROADCASTD(int127, hi)
	VPBROADCASTD(intM128, lo)
	acc := zmms(2)
	one := func(i reg.GPVirtual, d int, k reg.Register) {
		v := ZMM()
		at := Mem{Base: x, Index: i, Scale: 4, Disp: 4 * d}
		if k == nil {
			VMULPS(at, s, v)
		} else {
			VMOVUPS_Z(at, k, v) // 0 past the end: adds 0
			VMULPS(v, s, v)
		}
		VCVTPS2DQ(v, v)
		VPMINSD(hi, v, v)
		VPMAXSD(lo, v, v)
		VPADDD(v, acc[d/16%2], acc[d/16%2])
		out := Mem{Base: q, Index: i, Scale: 1, Disp: d}
		if k == nil {
			VPMOVDB(v, out)
		} else {
			VPMOVDB(v, k, out)
		}
	}
	i := GP64()
	blockLoop(i, roundDown(n, 32), 32, func() { one(i, 0, nil); one(i, 16, nil) })
	ifRoom(i, n, 16, func() { one(i, 0, nil); ADDQ(U8(16), i) })
	tailMask(i, n, func(k reg.Register) { one(i, 0, k) })
	VPADDD(acc[1], acc[0], acc[0])
	sum := GP32()
	VMOVD(int32EVEX.sum1(int32EVEX.fold256(acc[0])), sum)
	Store(sum, ReturnIndex(0))
	VZEROUPPER()
	RET()
}

func genQuantizeI8AVX2() {
	TEXT("quantizeI8AVX2", NOSPLIT, quantizeI8Sig)
	Pragma("noescape")
	Doc("quantizeI8AVX2 is quantizeI8 with AVX2: 8 values per step packed to bytes, then scalar.")
	x := load(Param("x").Base())
	n := load(Param("x").Len())
	q := load(Param("q").Base())
	s, hi, lo := broadcastParam("s", YMM), YMM(), YMM()
	VPBROADCASTD(int127, hi)
	VPBROADCASTD(intM128, lo)
	acc := ymms(1)[0]
	i := GP64()
	blockLoop(i, roundDown(n, 8), 8, func() {
		v, t := YMM(), YMM()
		VMULPS(Mem{Base: x, Index: i, Scale: 4}, s, v)
		VCVTPS2DQ(v, v)
		VPMINSD(hi, v, v)
		VPMAXSD(lo, v, v)
		VPADDD(v, acc, acc)
		VPACKSSDW(v, v, t) // each lane: its 4 int16, twice
		VPACKSSWB(t, t, t) // each lane: its 4 bytes, 4 times
		VMOVD(t.AsX(), Mem{Base: q, Index: i, Scale: 1})
		h := XMM()
		VEXTRACTI128(U8(1), t, h)
		VMOVD(h, Mem{Base: q, Index: i, Scale: 1, Disp: 4})
	})
	sum := GP32()
	VMOVD(int32VEX.sum1(acc), sum)
	loop, done := label("quant"), label("quantdone")
	CMPQ(i, n)
	JAE(LabelRef(done))
	Label(loop)
	v := XMM()
	VMULSS(Mem{Base: x, Index: i, Scale: 4}, s.AsX(), v)
	c, b := GP32(), GP32()
	VCVTSS2SI(v, c) // rounds half to even
	MOVL(U32(127), b)
	CMPL(c, b)
	CMOVLGT(b, c)
	MOVL(I32(-128), b)
	CMPL(c, b)
	CMOVLLT(b, c)
	MOVB(c.As8(), Mem{Base: q, Index: i, Scale: 1})
	ADDL(c, sum)
	INCQ(i)
	CMPQ(i, n)
	JB(LabelRef(loop))
	Label(done)
	Store(sum, ReturnIndex(0))
	VZEROUPPER()
	RET()
}

const maxAbsSig = "func(x []float32) float32"

// genMaxAbs emits maxAbs: max |x[i]| (0 for none), comparing the bits of
// |x| as unsigned integers as the Go twin does (for non-NaN floats the same
// order; a NaN, whose bits exceed +Inf's, wins as it does in the twin).
func genMaxAbs(name string, evex bool) {
	TEXT(name, NOSPLIT, maxAbsSig)
	Pragma("noescape")
	Doc(name + " is maxAbs: the largest |x| as unsigned bits, 4 vectors per step.")
	x := load(Param("x").Base())
	n := load(Param("x").Len())
	maxAbsLoops(n, evex, func(_ func() reg.VecVirtual, i reg.GPVirtual, disp int) Op {
		return Mem{Base: x, Index: i, Scale: 4, Disp: disp}
	}, func(i reg.GPVirtual) reg.GPVirtual {
		b := GP32()
		MOVL(Mem{Base: x, Index: i, Scale: 4}, b)
		return b
	})
}

const normScaleMaxSig = "func(dst, x []float32, scale float32, w []float32) float32"

// genNormScaleMax emits normScaleMax: normScale (dst[i] = float32(x[i]·
// scale)·w[i]) that also returns maxAbs(dst), as the two kernels compute
// them, in one pass: RMSNorm's last step and the absmax that BitLinear's
// quantization of its output needs, without reading the row again.
func genNormScaleMax(name string, evex bool) {
	TEXT(name, NOSPLIT, normScaleMaxSig)
	Pragma("noescape")
	Doc(name + " is normScale returning maxAbs(dst): 4 vectors per step, then one element at a time.")
	scx, sc := XMM(), reg.VecVirtual(YMM())
	if evex {
		sc = ZMM()
	}
	Load(Param("scale"), scx)
	VBROADCASTSS(scx, sc)
	dst := load(Param("dst").Base())
	x := load(Param("x").Base())
	w := load(Param("w").Base())
	n := load(Param("dst").Len())
	maxAbsLoops(n, evex, func(vec func() reg.VecVirtual, i reg.GPVirtual, disp int) Op {
		at := func(base reg.GPVirtual) Mem { return Mem{Base: base, Index: i, Scale: 4, Disp: disp} }
		v := vec()
		VMULPS(at(x), sc, v)
		VMULPS(at(w), v, v)
		VMOVUPS(v, at(dst))
		return v
	}, func(i reg.GPVirtual) reg.GPVirtual {
		v, t := XMM(), XMM()
		VMOVSS(Mem{Base: x, Index: i, Scale: 4}, v)
		VMULSS(scx, v, v)
		VMOVSS(Mem{Base: w, Index: i, Scale: 4}, t)
		VMULSS(t, v, v)
		VMOVSS(v, Mem{Base: dst, Index: i, Scale: 4})
		b := GP32()
		VMOVD(v, b)
		return b
	})
}

// maxAbsLoops emits the loops of a kernel over n elements that returns
// maxAbs of values it makes: vector(vec, i, disp) gives the vector (a
// register from vec, or memory) of the elements at i + disp/4 (4 a step,
// unsigned maxima of |v|'s bits in 4 accumulators), one(i) the bits of
// element i's value (the rest, one at a time); then it returns the maximum.
func maxAbsLoops(n reg.GPVirtual, evex bool, vector func(vec func() reg.VecVirtual, i reg.GPVirtual, disp int) Op, one func(i reg.GPVirtual) reg.GPVirtual) {
	vec, width := YMM, 8
	if evex {
		vec, width = ZMM, 16
	}
	abs := vec()
	VPBROADCASTD(absMask, abs)
	acc := make([]reg.VecVirtual, 4)
	for k := range acc {
		acc[k] = vec()
		if evex {
			zeroZ(acc[k])
		} else {
			VPXOR(acc[k], acc[k], acc[k])
		}
	}
	i := GP64()
	blockLoop(i, roundDown(n, 4*width), 4*width, func() {
		for k, a := range acc {
			v, m := vector(vec, i, 4*width*k), vec()
			if evex {
				VPANDD(v, abs, m)
			} else {
				VPAND(v, abs, m)
			}
			VPMAXUD(m, a, a)
		}
	})
	VPMAXUD(acc[1], acc[0], acc[0])
	VPMAXUD(acc[3], acc[2], acc[2])
	VPMAXUD(acc[2], acc[0], acc[0])
	l, y := maxU32VEX, acc[0]
	if evex {
		l = maxU32EVEX
		y = l.fold256(acc[0])
	}
	m := l.sum1(y)
	r := GP32()
	VMOVD(m, r)
	loop, done := label("maxabs"), label("maxabsdone")
	CMPQ(i, n)
	JAE(LabelRef(done))
	Label(loop)
	b := one(i)
	ANDL(U32(0x7FFFFFFF), b)
	CMPL(b, r)
	CMOVLHI(b, r)
	INCQ(i)
	CMPQ(i, n)
	JB(LabelRef(loop))
	Label(done)
	f := XMM()
	VMOVD(r, f)
	Store(f, ReturnIndex(0))
	VZEROUPPER()
	RET()
}
