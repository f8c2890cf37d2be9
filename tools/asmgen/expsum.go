package main

// expSum: Σ exp(x_i − m) over the float32 x_i, for a finite m no smaller
// than any of them, in float64 lanes with nn.ExpSum's algorithm term for
// term (nn/expsum.go): d = x − m, terms with d ≤ −708 (and NaN d) count 0;
// k = round(d·2048/ln2) by the shifter trick, r = (d − k·hi) − k·lo,
// exp(d) = (2^(j/2048) · 2^⌊k/2048⌋) · ((1 + r) + r²·(½ + r/6)) with
// j = k mod 2048 from the caller's table (nn's: 2048 float64s), every
// operation rounded alone as nn's Go rounds it on amd64 (no fused
// multiply-adds). Only the order of the sum differs: 16 partial sums (two
// accumulators of 8 lanes) where nn's loop keeps 4. The server computes it
// for every token whose log-probability a client asks for, over the whole
// vocabulary (128,256 logits of the 2B model: 0.85 ms in Go on one core of
// the Intel Xeon VM; expSumAVX512 0.10-0.11 ms, expSumAVX2 0.21).

import (
	"math"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

const expSumSig = "func(x []float32, m float64, table *float64) float64"

var expSumConsts struct {
	invStep, shifter, stepHi, stepLo, one, half, sixth, limit Mem // float64, broadcast
	bias, low11                                               Mem // int64, broadcast
}

func genExpSumConsts() {
	f64 := func(name string, v float64) Mem {
		b := math.Float64bits(v)
		return table(name, 8, func(i int) uint32 { return pick(i == 0, uint32(b), uint32(b>>32)) })
	}
	c := &expSumConsts
	c.invStep = f64("expinvstep", 2048/math.Ln2)
	c.shifter = f64("expshifter", 0x1.8p52)
	c.stepHi = f64("expstephi", 6.93147180369123816490e-01/2048)
	c.stepLo = f64("expsteplo", 1.90821492927058770002e-10/2048)
	c.one = f64("expone", 1)
	c.half = f64("exphalf", 1.0/2)
	c.sixth = f64("expsixth", 1.0/6)
	c.limit = f64("explimit", -708)
	c.bias = table("expbias", 8, func(i int) uint32 { return pick(i == 0, 1023, 0) })
	c.low11 = table("explow11", 8, func(i int) uint32 { return pick(i == 0, 2047, 0) })
}

// genExpSumAVX512 writes expSumAVX512.
func genExpSumAVX512() {
	TEXT("expSumAVX512", NOSPLIT, expSumSig)
	Pragma("noescape")
	Doc("expSumAVX512 is Σ exp(x_i − m) with each term as nn.ExpSum computes it, 8 float64",
		"lanes a step (see asmgen's expsum.go); m must be finite.")
	x := load(Param("x").Base())
	n := load(Param("x").Len())
	tab := load(Param("table"))
	mx := XMM()
	Load(Param("m"), mx)
	c := &expSumConsts
	bc := func(mem Mem) reg.VecVirtual {
		v := ZMM()
		VBROADCASTSD(mem, v)
		return v
	}
	bq := func(mem Mem) reg.VecVirtual {
		v := ZMM()
		VPBROADCASTQ(mem, v)
		return v
	}
	m := ZMM()
	VBROADCASTSD(mx, m)
	invStep, shifter, stepHi, stepLo := bc(c.invStep), bc(c.shifter), bc(c.stepHi), bc(c.stepLo)
	one, half, sixth, limit := bc(c.one), bc(c.half), bc(c.sixth), bc(c.limit)
	bias, low11 := bq(c.bias), bq(c.low11)
	acc := zmms(2)

	// term adds the terms of the 8 floats at p (those kt selects, when kt
	// is not nil) into a.
	term := func(p Mem, kt reg.Register, a reg.VecVirtual) {
		d := ZMM()
		if kt == nil {
			VCVTPS2PD(p, d)
		} else {
			VCVTPS2PD_Z(p, kt, d)
		}
		VSUBPD(m, d, d)
		valid := K()
		if kt == nil {
			VCMPPD(U8(0x1E), limit, d, valid) // d > −708, ordered: false for NaN
		} else {
			VCMPPD(U8(0x1E), limit, d, kt, valid)
		}
		t, kf, r := ZMM(), ZMM(), ZMM()
		VMULPD(invStep, d, t)
		VADDPD(shifter, t, t)
		VSUBPD(shifter, t, kf) // round(d·2048/ln2), exactly
		VMULPD(stepHi, kf, t)
		VSUBPD(t, d, r)
		VMULPD(stepLo, kf, t)
		VSUBPD(t, r, r) // (d − k·hi) − k·lo
		ki := ZMM()
		VCVTTPD2QQ(kf, ki)
		// p = (1 + r) + (r·r)·(½ + r·⅙)
		u, v := ZMM(), ZMM()
		VMULPD(sixth, r, u)
		VADDPD(half, u, u)
		VMULPD(r, r, v)
		VMULPD(u, v, u)
		VADDPD(one, r, v)
		VADDPD(u, v, v)
		// scale = 2^⌊k/2048⌋: (k>>11 + 1023) << 52
		sc := ZMM()
		VPSRAQ(U8(11), ki, sc)
		VPADDQ(bias, sc, sc)
		VPSLLQ(U8(52), sc, sc)
		// g = table[k & 2047], gathered for the valid lanes (0 elsewhere)
		VPANDQ(low11, ki, ki)
		g, gk := ZMM(), K()
		VPXORQ(g, g, g)
		KMOVB(valid, gk)
		VGATHERQPD(Mem{Base: tab, Index: ki, Scale: 8}, gk, g)
		VMULPD(sc, g, g)
		VMULPD(v, g, g)
		VADDPD(g, a, valid, a) // only the valid lanes
	}
	i := GP64()
	XORQ(i, i)
	whileRoom(i, n, 16, func() {
		term(Mem{Base: x, Index: i, Scale: 4}, nil, acc[0])
		term(Mem{Base: x, Index: i, Scale: 4, Disp: 32}, nil, acc[1])
		ADDQ(U8(16), i)
	})
	whileRoom(i, n, 8, func() {
		term(Mem{Base: x, Index: i, Scale: 4}, nil, acc[0])
		ADDQ(U8(8), i)
	})
	rem := GP64()
	MOVQ(n, rem)
	SUBQ(i, rem)
	remMask(rem, func(k reg.Register) {
		term(Mem{Base: x, Index: i, Scale: 4}, k, acc[1])
	})
	VADDPD(acc[1], acc[0], acc[0])
	hi := YMM()
	VEXTRACTF64X4(U8(1), acc[0], hi)
	lo := acc[0].AsY()
	VADDPD(hi, lo, lo)
	h2 := XMM()
	VEXTRACTF128(U8(1), lo, h2)
	l2 := acc[0].AsX()
	VADDPD(h2, l2, l2)
	h1 := XMM()
	VUNPCKHPD(l2, l2, h1)
	VADDSD(h1, l2, l2)
	Store(l2, ReturnIndex(0))
	VZEROUPPER()
	RET()
}

var expTailMask Mem // int32 −1 × 4, then 0 × 4: the first rem lanes from offset 4·(4 − rem)

// genExpSumAVX2 writes expSumAVX2: expSumAVX512's terms in 4 float64
// lanes of ymm registers. AVX2 has no float64 → int64 conversion and no
// 64-bit arithmetic shift: k is the low bits of d·2048/ln2 + 1.5·2⁵²
// (the shifter's own bits subtracted: exact for |k| < 2⁵¹), and
// ⌊k/2048⌋ + 1023 = ((k + 2²¹) >> 11) − 1 for k > −2²¹ (every valid term:
// d > −708); the tail's up to 3 floats come through a masked load.
func genExpSumAVX2() {
	expTailMask = table("exptailmask", 32, func(i int) uint32 { return pick(i < 16, 0xFFFFFFFF, 0) })
	TEXT("expSumAVX2", NOSPLIT, expSumSig)
	Pragma("noescape")
	Doc("expSumAVX2 is Σ exp(x_i − m) with each term as nn.ExpSum computes it, 4 float64",
		"lanes a step (see asmgen's expsum.go); m must be finite.")
	x := load(Param("x").Base())
	n := load(Param("x").Len())
	tab := load(Param("table"))
	mx := XMM()
	Load(Param("m"), mx)
	// The constants stay in memory (32 bytes each, VEX has no broadcast
	// operands): with them in registers the ymm registers 0-15 that VEX
	// encodes run out.
	c := &expSumAVX2Consts
	m := YMM()
	VBROADCASTSD(mx, m)
	invStep, shifter, stepHi, stepLo := c.invStep, c.shifter, c.stepHi, c.stepLo
	one, half, sixth, limit := c.one, c.half, c.sixth, c.limit
	bias21, low11 := c.bias21, c.low11
	acc := []reg.VecVirtual{YMM(), YMM()}
	for _, a := range acc {
		VXORPD(a, a, a)
	}
	// term adds the terms of the 4 floats at p (the first of them that
	// the int32 lanes of tm select, when tm is not nil) into a.
	term := func(p Mem, tm reg.VecVirtual, a reg.VecVirtual) {
		d := YMM()
		if tm == nil {
			VCVTPS2PD(p, d)
		} else {
			f := XMM()
			VMASKMOVPS(p, tm, f)
			VCVTPS2PD(f, d)
		}
		VSUBPD(m, d, d)
		valid := YMM()
		VCMPPD(U8(0x1E), limit, d, valid) // d > −708, ordered: false for NaN
		if tm != nil {
			wide := YMM()
			VPMOVSXDQ(tm, wide)
			VANDPD(wide, valid, valid)
		}
		t, kf, r := YMM(), YMM(), YMM()
		VMULPD(invStep, d, t)
		VADDPD(shifter, t, t)
		VSUBPD(shifter, t, kf) // round(d·2048/ln2), exactly
		ki := YMM()
		VPSUBQ(shifter, t, ki) // its integer: the low bits of t
		VMULPD(stepHi, kf, t)
		VSUBPD(t, d, r)
		VMULPD(stepLo, kf, t)
		VSUBPD(t, r, r) // (d − k·hi) − k·lo
		u, v := YMM(), YMM()
		VMULPD(sixth, r, u)
		VADDPD(half, u, u)
		VMULPD(r, r, v)
		VMULPD(u, v, u)
		VADDPD(one, r, v)
		VADDPD(u, v, v)
		// scale = 2^⌊k/2048⌋: ((k + 2²¹) >> 11) − 1 = ⌊k/2048⌋ + 1023, << 52
		sc := YMM()
		VPADDQ(bias21, ki, sc)
		VPSRLQ(U8(11), sc, sc)
		VPCMPEQQ(t, t, t) // −1 in every lane
		VPADDQ(t, sc, sc)
		VPSLLQ(U8(52), sc, sc)
		VPAND(low11, ki, ki)
		g, gm := YMM(), YMM()
		VXORPD(g, g, g)
		VMOVAPD(valid, gm)
		VGATHERQPD(gm, Mem{Base: tab, Index: ki, Scale: 8}, g)
		VMULPD(sc, g, g)
		VMULPD(v, g, g)
		VANDPD(valid, g, g) // 0 in the lanes not valid
		VADDPD(g, a, a)
	}
	i := GP64()
	XORQ(i, i)
	whileRoom(i, n, 8, func() {
		term(Mem{Base: x, Index: i, Scale: 4}, nil, acc[0])
		term(Mem{Base: x, Index: i, Scale: 4, Disp: 16}, nil, acc[1])
		ADDQ(U8(8), i)
	})
	whileRoom(i, n, 4, func() {
		term(Mem{Base: x, Index: i, Scale: 4}, nil, acc[0])
		ADDQ(U8(4), i)
	})
	rem := GP64()
	MOVQ(n, rem)
	SUBQ(i, rem)
	skip := label("exptaildone")
	JZ(LabelRef(skip))
	off := GP64()
	MOVQ(U32(4), off)
	SUBQ(rem, off)
	tp := GP64()
	LEAQ(expTailMask, tp)
	tm := XMM()
	VMOVDQU(Mem{Base: tp, Index: off, Scale: 4}, tm)
	term(Mem{Base: x, Index: i, Scale: 4}, tm, acc[1])
	Label(skip)
	VADDPD(acc[1], acc[0], acc[0])
	h := XMM()
	VEXTRACTF128(U8(1), acc[0], h)
	l := acc[0].AsX()
	VADDPD(h, l, l)
	VUNPCKHPD(l, l, h)
	VADDSD(h, l, l)
	Store(l, ReturnIndex(0))
	VZEROUPPER()
	RET()
}

var expSumAVX2Consts struct {
	invStep, shifter, stepHi, stepLo, one, half, sixth, limit Mem // 4 float64 each
	bias21, low11                                             Mem // 4 int64 each
}

func genExpSumAVX2Consts() {
	f64x4 := func(name string, v float64) Mem {
		b := math.Float64bits(v)
		return table(name, 32, func(i int) uint32 { return pick(i%8 == 0, uint32(b), uint32(b>>32)) })
	}
	i64x4 := func(name string, v uint32) Mem {
		return table(name, 32, func(i int) uint32 { return pick(i%8 == 0, v, 0) })
	}
	c := &expSumAVX2Consts
	c.invStep = f64x4("expinvstep4", 2048/math.Ln2)
	c.shifter = f64x4("expshifter4", 0x1.8p52)
	c.stepHi = f64x4("expstephi4", 6.93147180369123816490e-01/2048)
	c.stepLo = f64x4("expsteplo4", 1.90821492927058770002e-10/2048)
	c.one = f64x4("expone4", 1)
	c.half = f64x4("exphalf4", 1.0/2)
	c.sixth = f64x4("expsixth4", 1.0/6)
	c.limit = f64x4("explimit4", -708)
	c.bias21 = i64x4("expbias21", 1<<21)
	c.low11 = i64x4("explow114", 2047)
}
