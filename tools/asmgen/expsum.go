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
// the Intel Xeon VM).

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
