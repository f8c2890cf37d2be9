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
// the Intel Xeon VM; expSumAVX512 0.10-0.12 ms, expSumAVX2 0.15-0.21).

import (
	"fmt"
	"math"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

const expSumSig = "func(x []float32, m float64, table *float64) float64"

// expSumConsts: the kernels' constants, 4 copies each (32 bytes: the AVX2
// kernel's memory operands; the AVX-512 kernel broadcasts the first).
var expSumConsts struct {
	invStep, shifter, stepHi, stepLo, one, half, sixth, limit Mem // float64
	bias, bias21, low11                                       Mem // int64: 1023, 2²¹, 2047
}

func genExpSumConsts() {
	f64x4 := func(name string, v float64) Mem {
		b := math.Float64bits(v)
		return table(name, 32, func(i int) uint32 { return pick(i%8 == 0, uint32(b), uint32(b>>32)) })
	}
	i64x4 := func(name string, v uint32) Mem {
		return table(name, 32, func(i int) uint32 { return pick(i%8 == 0, v, 0) })
	}
	c := &expSumConsts
	c.invStep = f64x4("expinvstep", 2048/math.Ln2)
	c.shifter = f64x4("expshifter", 0x1.8p52)
	c.stepHi = f64x4("expstephi", 6.93147180369123816490e-01/2048)
	c.stepLo = f64x4("expsteplo", 1.90821492927058770002e-10/2048)
	c.one = f64x4("expone", 1)
	c.half = f64x4("exphalf", 1.0/2)
	c.sixth = f64x4("expsixth", 1.0/6)
	c.limit = f64x4("explimit", -708)
	c.bias = i64x4("expbias", 1023)
	c.bias21 = i64x4("expbias21", 1<<21)
	c.low11 = i64x4("explow11", 2047)
}

// expOps are the float64 constants of a term, as registers or memory.
type expOps struct{ invStep, shifter, stepHi, stepLo, one, half, sixth Op }

// expTerm emits the arithmetic of a term that both kernels share, every
// operation rounded alone as nn's expNonPos (Go without fused
// multiply-adds) rounds it, on the lanes of d (x − m): t = d·2048/ln2 +
// 1.5·2⁵² (its low bits hold k), kf = t − 1.5·2⁵² = round(d·2048/ln2),
// and p = (1 + r) + (r·r)·(½ + r·⅙) with r = (d − kf·hi) − kf·lo.
func expTerm(d reg.VecVirtual, c expOps, vec func() reg.VecVirtual) (t, kf, p reg.VecVirtual) {
	t, kf, r, u := vec(), vec(), vec(), vec()
	VMULPD(c.invStep, d, t)
	VADDPD(c.shifter, t, t)
	VSUBPD(c.shifter, t, kf)
	VMULPD(c.stepHi, kf, r)
	VSUBPD(r, d, r)
	VMULPD(c.stepLo, kf, u)
	VSUBPD(u, r, r)
	p = vec()
	VMULPD(c.sixth, r, u)
	VADDPD(c.half, u, u)
	VMULPD(r, r, p)
	VMULPD(u, p, u)
	VADDPD(c.one, r, p)
	VADDPD(u, p, p)
	return t, kf, p
}

// expSteps emits the loops over whole steps of lanes floats of x (n
// of them): two terms a step (into acc[0] and acc[1]) while 2·lanes
// floats are left, then one (into acc[0]); it returns the register
// holding the index of the first float left.
func expSteps(x, n reg.GPVirtual, lanes int, acc []reg.VecVirtual, term func(p Mem, a reg.VecVirtual)) reg.GPVirtual {
	i := GP64()
	XORQ(i, i)
	whileRoom(i, n, 2*lanes, func() {
		term(Mem{Base: x, Index: i, Scale: 4}, acc[0])
		term(Mem{Base: x, Index: i, Scale: 4, Disp: 4 * lanes}, acc[1])
		ADDQ(U8(2*lanes), i)
	})
	whileRoom(i, n, lanes, func() {
		term(Mem{Base: x, Index: i, Scale: 4}, acc[0])
		ADDQ(U8(lanes), i)
	})
	return i
}

// expSumBegin begins the kernel name of lanes float64 lanes: it returns
// registers holding x, len(x) and the table, and m in every lane of a new
// vector from vec.
func expSumBegin(name string, lanes int, vec func() reg.VecVirtual) (x, n, tab reg.GPVirtual, m reg.VecVirtual) {
	TEXT(name, NOSPLIT, expSumSig)
	Pragma("noescape")
	Doc(fmt.Sprintf("%s is Σ exp(x_i − m) with each term as nn.ExpSum computes it, %d float64", name, lanes),
		"lanes a step (see asmgen's expsum.go); m must be finite.")
	x = load(Param("x").Base())
	n = load(Param("x").Len())
	tab = load(Param("table"))
	mx := XMM()
	Load(Param("m"), mx)
	m = vec()
	VBROADCASTSD(mx, m)
	return x, n, tab, m
}

// genExpSumAVX512 writes expSumAVX512.
func genExpSumAVX512() {
	x, n, tab, m := expSumBegin("expSumAVX512", 8, ZMM)
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
	ops := expOps{bc(c.invStep), bc(c.shifter), bc(c.stepHi), bc(c.stepLo), bc(c.one), bc(c.half), bc(c.sixth)}
	limit, bias, low11 := bc(c.limit), bq(c.bias), bq(c.low11)
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
		_, kf, pv := expTerm(d, ops, ZMM)
		ki := ZMM()
		VCVTTPD2QQ(kf, ki)
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
		VMULPD(pv, g, g)
		VADDPD(g, a, valid, a) // only the valid lanes
	}
	i := expSteps(x, n, 8, acc, func(p Mem, a reg.VecVirtual) { term(p, nil, a) })
	rem := GP64()
	MOVQ(n, rem)
	SUBQ(i, rem)
	remMask(rem, func(k reg.Register) {
		term(Mem{Base: x, Index: i, Scale: 4}, k, acc[1])
	})
	VADDPD(acc[1], acc[0], acc[0])
	hi := YMM()
	VEXTRACTF64X4(U8(1), acc[0], hi)
	VADDPD(hi, acc[0].AsY(), hi)
	Store(sumF64x4(hi, true), ReturnIndex(0))
	VZEROUPPER()
	RET()
}

// genExpSumAVX2 writes expSumAVX2: expSumAVX512's terms in 4 float64
// lanes of ymm registers. AVX2 has no float64 → int64 conversion and no
// 64-bit arithmetic shift: k is the low bits of t (the shifter's own bits
// subtracted: exact for |k| < 2⁵¹), and ⌊k/2048⌋ + 1023 = ((k + 2²¹) >>
// 11) − 1 for k > −2²¹ (every valid term: d > −708); the tail's up to 3
// floats come through a masked load. The constants stay in memory (VEX
// has no broadcast operands; in registers they would take most of the
// ymm registers 0-15 that VEX encodes).
func genExpSumAVX2() {
	x, n, tab, m := expSumBegin("expSumAVX2", 4, YMM)
	c := &expSumConsts
	ops := expOps{c.invStep, c.shifter, c.stepHi, c.stepLo, c.one, c.half, c.sixth}
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
		VCMPPD(U8(0x1E), c.limit, d, valid) // d > −708, ordered: false for NaN
		if tm != nil {
			wide := YMM()
			VPMOVSXDQ(tm, wide)
			VANDPD(wide, valid, valid)
		}
		t, _, pv := expTerm(d, ops, YMM)
		ki := YMM()
		VPSUBQ(c.shifter, t, ki) // k: the low bits of t
		// scale = 2^⌊k/2048⌋: ((k + 2²¹) >> 11) − 1 = ⌊k/2048⌋ + 1023, << 52
		sc := YMM()
		VPADDQ(c.bias21, ki, sc)
		VPSRLQ(U8(11), sc, sc)
		VPCMPEQQ(t, t, t) // −1 in every lane
		VPADDQ(t, sc, sc)
		VPSLLQ(U8(52), sc, sc)
		VPAND(c.low11, ki, ki)
		g, gm := YMM(), YMM()
		VXORPD(g, g, g)
		VMOVAPD(valid, gm)
		VGATHERQPD(gm, Mem{Base: tab, Index: ki, Scale: 8}, g)
		VMULPD(sc, g, g)
		VMULPD(pv, g, g)
		VANDPD(valid, g, g) // 0 in the lanes not valid
		VADDPD(g, a, a)
	}
	i := expSteps(x, n, 4, acc, func(p Mem, a reg.VecVirtual) { term(p, nil, a) })
	tailLanes(i, n, XMM, func(tm reg.VecVirtual) { term(Mem{Base: x, Index: i, Scale: 4}, tm, acc[1]) })
	VADDPD(acc[1], acc[0], acc[0])
	storeSumPD(acc[0])
	VZEROUPPER()
	RET()
}
