package main

// expSub: x[i] = exp(x[i] − m) in float32, returning Σ x[i] (the new
// values) in float64: the exponentials of attention's softmax. The Go twin
// rounds float64 math.Exp to float32; these kernels compute in float32
// (Cody-Waite reduction t = n·ln2 + r, |r| ≤ ln2/2, with ln2 split in two
// parts, then a degree-7 Taylor polynomial of e^r, truncation error
// ≤ 5.2e-9 relative, then · 2^n), within a few float32 ulps of the twin:
// the freedom bitnet.cpp takes too (ggml's softmax uses a SIMD expf).
// Arguments below −87.33 (e^t under the smallest normal float32) are
// raised to it, so such a value is ~1.2e-38 instead of a subnormal or 0.
// The sum adds the values as float64 lanes, in the kernel's order.
//
// Versions:
//
//	expSubAVX512  32 values per step in two independent chains, 16, then
//	              a masked step; 2^n by vscalefps.
//	expSubAVX2    8 per step; 2^n built in the exponent bits (n ≥ −126
//	              after the clamp); the tail through vmaskmovps.

import (
	"fmt"
	"math"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

const expSubSig = "func(x []float32, m float32) float64"

// expConsts are broadcast to every lane: see expPoly.
var (
	expLo, expLog2e, expLn2Hi, expLn2Lo Mem
	expCoef                             []Mem // c7 … c0 of e^r ≈ Σ c_k r^k
	expBias                             Mem   // int32 127
	expTail                             Mem   // 8 × int32 −1, then 8 × 0
	negInf                              Mem   // float32 −Inf
)

func genExpConsts() {
	f := func(name string, v float32) Mem {
		return table(name, 4, func(int) uint32 { return math.Float32bits(v) })
	}
	expLo = f("expLo", -87.33654)
	expLog2e = f("expLog2e", float32(math.Log2E))
	expLn2Hi = f("expLn2Hi", 0.693359375)
	expLn2Lo = f("expLn2Lo", -2.12194440e-4)
	fact := 1.0
	coef := make([]float32, 8)
	for k := range coef {
		if k > 0 {
			fact *= float64(k)
		}
		coef[k] = float32(1 / fact)
	}
	for k := 7; k >= 0; k-- {
		expCoef = append(expCoef, f("expC"+string(rune('0'+k)), coef[k]))
	}
	expBias = table("expBias", 4, func(int) uint32 { return 127 })
	negInf = table("negInf", 4, func(int) uint32 { return 0xFF800000 })
	expTail = table("expTail", 64, func(i int) uint32 { return pick(i < 32, 0xFFFFFFFF, 0) })
}

// expPoly emits e = e^t for t ≥ −87.33 (already clamped) and returns the
// 2^n scale left to apply: n = round(t·log2e), r = t − n·ln2, e ≈ p(r).
// load broadcasts a constant into a new register of the width.
func expPoly(t, n, e reg.VecVirtual, round func(t, n reg.VecVirtual), load func(Mem) reg.VecVirtual) {
	VMULPS(load(expLog2e), t, n)
	round(n, n)
	VFNMADD231PS(load(expLn2Hi), n, t) // t −= n·ln2hi
	VFNMADD231PS(load(expLn2Lo), n, t) // t −= n·ln2lo: now r
	VMOVAPS(load(expCoef[0]), e)
	for _, c := range expCoef[1:] {
		VFMADD213PS(load(c), t, e) // e = e·r + c
	}
}

func genExpSubAVX512() {
	TEXT("expSubAVX512", NOSPLIT, expSubSig)
	Pragma("noescape")
	Doc("expSubAVX512 is expSub with AVX-512: 32 values per step, masked tail, vscalefps.")
	x := load(Param("x").Base())
	n := load(Param("x").Len())
	m := broadcastParam("m", ZMM)
	lo := ZMM()
	VBROADCASTSS(expLo, lo)
	consts := map[Mem]reg.VecVirtual{}
	bc := func(c Mem) reg.VecVirtual {
		if z, ok := consts[c]; ok {
			return z
		}
		z := ZMM()
		VBROADCASTSS(c, z)
		consts[c] = z
		return z
	}
	for _, c := range append([]Mem{expLog2e, expLn2Hi, expLn2Lo}, expCoef...) {
		bc(c)
	}
	sum := zmms(2)
	// one computes e^(x−m) of the 16 values at i+disp (lanes masked by k
	// when not nil), stores them and adds them to sum.
	one := func(i reg.GPVirtual, disp int, k reg.Register) {
		t, nn, e := ZMM(), ZMM(), ZMM()
		at := Mem{Base: x, Index: i, Scale: 4, Disp: disp}
		if k == nil {
			VMOVUPS(at, t)
		} else {
			VMOVUPS_Z(at, k, t)
		}
		VSUBPS(m, t, t)
		VMAXPS(lo, t, t)
		expPoly(t, nn, e, func(a, b reg.VecVirtual) { VRNDSCALEPS(U8(0), a, b) }, bc)
		VSCALEFPS(nn, e, e)
		if k == nil {
			VMOVUPS(e, at)
		} else {
			VMOVUPS_Z(e, k, e) // 0 in the lanes past the end
			VMOVUPS(e, k, at)
		}
		d0, d1, hi := ZMM(), ZMM(), YMM()
		VCVTPS2PD(e.AsY(), d0)
		VEXTRACTF64X4(U8(1), e, hi)
		VCVTPS2PD(hi, d1)
		VADDPD(d0, sum[0], sum[0])
		VADDPD(d1, sum[1], sum[1])
	}
	i := GP64()
	blockLoop(i, roundDown(n, 32), 32, func() { one(i, 0, nil); one(i, 64, nil) })
	ifRoom(i, n, 16, func() { one(i, 0, nil); ADDQ(U8(16), i) })
	tailMask(i, n, func(k reg.Register) { one(i, 0, k) })
	VADDPD(sum[1], sum[0], sum[0])
	h := YMM()
	VEXTRACTF64X4(U8(1), sum[0], h)
	VADDPD(sum[0].AsY(), h, h)
	storeSumPD(h)
	VZEROUPPER()
	RET()
}

// storeSumPD returns the sum of the 4 float64 lanes of ymm h.
func storeSumPD(h reg.VecVirtual) {
	q := XMM()
	VEXTRACTF128(U8(1), h, q)
	VADDPD(h.AsX(), q, q)
	s := XMM()
	VPERMILPD(U8(1), q, s)
	VADDSD(q, s, s)
	Store(s, ReturnIndex(0))
}

func genExpSubAVX2() {
	TEXT("expSubAVX2", NOSPLIT, expSubSig)
	Pragma("noescape")
	Doc("expSubAVX2 is expSub with AVX2 and FMA: 8 values per step, 2^n in the exponent bits, a masked tail.")
	x := load(Param("x").Base())
	n := load(Param("x").Len())
	m := broadcastParam("m", YMM)
	bc := func(c Mem) reg.VecVirtual { // few registers: load each use
		y := YMM()
		VBROADCASTSS(c, y)
		return y
	}
	sum := ymms(2)
	one := func(i reg.GPVirtual, mask reg.VecVirtual) {
		t, nn, e := YMM(), YMM(), YMM()
		at := Mem{Base: x, Index: i, Scale: 4}
		if mask == nil {
			VMOVUPS(at, t)
		} else {
			VMASKMOVPS(at, mask, t)
		}
		VSUBPS(m, t, t)
		VMAXPS(bc(expLo), t, t)
		expPoly(t, nn, e, func(a, b reg.VecVirtual) { VROUNDPS(U8(0), a, b) }, bc)
		VCVTPS2DQ(nn, nn)
		VPADDD(bc(expBias), nn, nn)
		VPSLLD(U8(23), nn, nn) // 2^n as float32 bits
		VMULPS(nn, e, e)
		if mask == nil {
			VMOVUPS(e, at)
		} else {
			VANDPS(mask, e, e)
			VMASKMOVPS(e, mask, at)
		}
		d0, d1, hi := YMM(), YMM(), XMM()
		VCVTPS2PD(e.AsX(), d0)
		VEXTRACTF128(U8(1), e, hi)
		VCVTPS2PD(hi, d1)
		VADDPD(d0, sum[0], sum[0])
		VADDPD(d1, sum[1], sum[1])
	}
	i := GP64()
	blockLoop(i, roundDown(n, 8), 8, func() { one(i, nil) })
	tailLanes(i, n, YMM, func(mask reg.VecVirtual) { one(i, mask) })
	VADDPD(sum[1], sum[0], sum[0])
	storeSumPD(sum[0])
	VZEROUPPER()
	RET()
}

const scaleMaxSig = "func(x []float32, s float32) float32"

// genScaleMax emits scaleMax: x[i] = x[i]·s in float32 (each product
// rounded once, as the Go twin rounds it) and returns max x[i] (−Inf for
// none): attention's scaled scores and their maximum, and with the maximum
// unused, the softmax's normalization. The maximum of floats is exact in
// any order (NaN aside).
func genScaleMax(name string, isa vecISA) {
	TEXT(name, NOSPLIT, scaleMaxSig)
	Pragma("noescape")
	Doc(name + " is scaleMax: " + fmt.Sprint(4*isa.width) + " values per step.")
	x := load(Param("x").Base())
	n := load(Param("x").Len())
	s, mx := broadcastParam("s", isa.alloc), isa.alloc()
	VBROADCASTSS(negInf, mx)
	acc := []reg.VecVirtual{mx, isa.alloc(), isa.alloc(), isa.alloc()}
	for _, a := range acc[1:] {
		VMOVAPS(mx, a)
	}
	w := isa.width * 4 // bytes per vector
	i := GP64()
	blockLoop(i, roundDown(n, 4*isa.width), 4*isa.width, func() {
		for j, a := range acc {
			v := isa.alloc()
			VMULPS(Mem{Base: x, Index: i, Scale: 4, Disp: j * w}, s, v)
			VMOVUPS(v, Mem{Base: x, Index: i, Scale: 4, Disp: j * w})
			VMAXPS(v, a, a)
		}
	})
	for _, a := range acc[1:] {
		VMAXPS(a, mx, mx)
	}
	l := maxF32VEX
	if isa.width == 16 {
		l = maxF32EVEX
		mx = l.fold256(mx)
	}
	m := l.sum1(mx)
	// The rest one at a time.
	loop, done := label("scalemax"), label("scalemaxdone")
	CMPQ(i, n)
	JAE(LabelRef(done))
	Label(loop)
	v := XMM()
	VMULSS(Mem{Base: x, Index: i, Scale: 4}, s.AsX(), v)
	VMOVSS(v, Mem{Base: x, Index: i, Scale: 4})
	VMAXSS(v, m, m)
	INCQ(i)
	CMPQ(i, n)
	JB(LabelRef(loop))
	Label(done)
	Store(m, ReturnIndex(0))
	VZEROUPPER()
	RET()
}

// tailLanes emits: if i < n { body(mask) }, mask a new vector from vec (an
// xmm for up to 3 elements left, a ymm for up to 7) whose int32 lanes
// 0…n−i−1 are −1 and the others 0: expTail from 4·(lanes − (n − i))
// bytes on.
func tailLanes(i, n reg.GPVirtual, vec func() reg.VecVirtual, body func(mask reg.VecVirtual)) {
	skip := label("notail")
	rem := GP64()
	MOVQ(n, rem)
	SUBQ(i, rem)
	JE(LabelRef(skip))
	off := GP64()
	MOVQ(U32(8), off)
	SUBQ(rem, off)
	tbl := GP64()
	LEAQ(expTail, tbl)
	mask := vec()
	VMOVDQU(Mem{Base: tbl, Index: off, Scale: 4}, mask)
	body(mask)
	Label(skip)
}
