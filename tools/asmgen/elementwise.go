package main

// Element-wise kernels: the per-element float32 steps of a forward pass
// that the Go compiler leaves scalar (it does not vectorize). Each is the
// same IEEE operations in the same order as its Go twin, so the results
// are bit for bit the twin's (NaN payloads aside):
//
//	scaleSums  y[i] = float32(float32(raw[i]−sum)/s)·rowScale[i]: BitLinear's
//	           outputs from the exact code sums (a division per element:
//	           bitnet.cpp divides, and a reciprocal would round differently)
//	normScale  dst[i] = float32(x[i]·scale)·w[i]: RMSNorm's last step
//	reluSqMul  h[i] = (r·r)·u[i], r = g[i] with a set sign bit made +0:
//	           the ReLU² gate
//	addF32     x[i] += y[i]: the residual adds
//
// Versions (genElementwise): four vectors per step, then one, then one
// element at a time in the low lane of an xmm register; avx2 with ymm,
// avx512vnni with zmm.

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// ewStep is how one step of an element-wise kernel moves data: the whole
// vector, or the low lane only (the tail).
type ewStep struct {
	vec   func(reg.VecVirtual) reg.Register // a kernel-wide register in this step's width
	alloc func() reg.Register               // a new register of this step's width
	load  func(Mem) reg.Register            // lanes elements into a new register
	store func(reg.Register, Mem)
	andn  func(a, b, dst reg.Register) // dst = ^a & b
}

// genElementwise emits name with signature sig over the float32 or int32
// slice parameters named in slices (the first one's length is the number
// of elements): setup loads the kernel's broadcast arguments, and body
// emits one step on the elements at at(k), k indexing slices.
func genElementwise(name string, isa vecISA, sig, doc string, slices []string, setup func(), body func(s ewStep, at func(int) Mem)) {
	TEXT(name, NOSPLIT, sig)
	Pragma("noescape")
	Doc(fmt.Sprintf("%s %s: %d elements per step, then %d, then one at a time.", name, doc, 4*isa.width, isa.width))
	setup()
	bases := make([]reg.GPVirtual, len(slices))
	for k, nm := range slices {
		bases[k] = load(Param(nm).Base())
	}
	n := load(Param(slices[0]).Len())
	andn := func(a, b, dst reg.Register) { VPANDN(b, a, dst) }
	if isa.width == 16 {
		andn = func(a, b, dst reg.Register) { VPANDND(b, a, dst) }
	}
	full := ewStep{vec: func(v reg.VecVirtual) reg.Register { return v },
		alloc: func() reg.Register { return isa.alloc() },
		load: func(m Mem) reg.Register {
			v := isa.alloc()
			VMOVUPS(m, v)
			return v
		},
		store: func(v reg.Register, m Mem) { VMOVUPS(v, m) },
		andn:  andn}
	one := ewStep{vec: func(v reg.VecVirtual) reg.Register { return v.AsX() },
		alloc: func() reg.Register { return XMM() },
		load: func(m Mem) reg.Register {
			v := XMM()
			VMOVSS(m, v)
			return v
		},
		store: func(v reg.Register, m Mem) { VMOVSS(v, m) },
		andn:  andn}
	i := GP64()
	step := func(s ewStep, disp int) {
		body(s, func(k int) Mem { return Mem{Base: bases[k], Index: i, Scale: 4, Disp: disp} })
	}
	bytes := 4 * isa.width
	blockLoop(i, roundDown(n, 4*isa.width), 4*isa.width, func() {
		for d := range 4 {
			step(full, d*bytes)
		}
	})
	loop, done := label("ewvec"), label("ewvecdone")
	Label(loop)
	e := GP64()
	LEAQ(Mem{Base: i, Disp: isa.width}, e)
	CMPQ(e, n)
	JA(LabelRef(done))
	step(full, 0)
	ADDQ(U8(isa.width), i)
	JMP(LabelRef(loop))
	Label(done)
	tail, end := label("ewone"), label("ewonedone")
	CMPQ(i, n)
	JAE(LabelRef(end))
	Label(tail)
	step(one, 0)
	INCQ(i)
	CMPQ(i, n)
	JB(LabelRef(tail))
	Label(end)
	VZEROUPPER()
	RET()
}

// broadcastInt32Param broadcasts an int32 argument to every lane.
func broadcastInt32Param(name string, alloc func() reg.VecVirtual) reg.VecVirtual {
	g, x, v := GP32(), XMM(), alloc()
	Load(Param(name), g)
	VMOVD(g, x)
	VPBROADCASTD(x, v)
	return v
}

const scaleSumsSig = "func(y []float32, raw []int32, sum int32, s float32, rowScale []float32)"

func genScaleSums(name string, isa vecISA) {
	var sum, s reg.VecVirtual
	genElementwise(name, isa, scaleSumsSig, "is scaleSums", []string{"y", "raw", "rowScale"}, func() {
		sum, s = broadcastInt32Param("sum", isa.alloc), broadcastParam("s", isa.alloc)
	}, func(st ewStep, at func(int) Mem) {
		v := st.load(at(1))
		VPSUBD(st.vec(sum), v, v)
		VCVTDQ2PS(v, v)
		VDIVPS(st.vec(s), v, v)
		VMULPS(st.load(at(2)), v, v)
		st.store(v, at(0))
	})
}

const normScaleSig = "func(dst, x []float32, scale float32, w []float32)"

func genNormScale(name string, isa vecISA) {
	var sc reg.VecVirtual
	genElementwise(name, isa, normScaleSig, "is normScale", []string{"dst", "x", "w"}, func() {
		sc = broadcastParam("scale", isa.alloc)
	}, func(st ewStep, at func(int) Mem) {
		v := st.load(at(1))
		VMULPS(st.vec(sc), v, v)
		VMULPS(st.load(at(2)), v, v)
		st.store(v, at(0))
	})
}

const reluSqMulSig = "func(h, g, u []float32)"

func genReluSqMul(name string, isa vecISA) {
	genElementwise(name, isa, reluSqMulSig, "is reluSqMul", []string{"h", "g", "u"}, func() {}, func(st ewStep, at func(int) Mem) {
		g := st.load(at(1))
		m := st.alloc()
		VPSRAD(U8(31), g, m)
		st.andn(m, g, g) // +0 where the sign was set
		VMULPS(g, g, g)
		VMULPS(st.load(at(2)), g, g)
		st.store(g, at(0))
	})
}

const reluSqSumsSig = "func(h []float32, g, u []int32, sum int32, s float32, gScale, uScale []float32)"

// genReluSqSums emits reluSqSums: the ReLU² gate straight from the gate
// and up projections' code sums, h[i] = (r·r)·v, r = y(g[i], gScale[i])
// with a set sign bit made +0, v = y(u[i], uScale[i]), y(c, w) =
// float32(float32(c−sum)/s)·w: scaleSums then reluSqMul, the same
// operations in the same order, without the projections' outputs going
// to memory and back.
func genReluSqSums(name string, isa vecISA) {
	var sum, s reg.VecVirtual
	genElementwise(name, isa, reluSqSumsSig, "is reluSqSums", []string{"h", "g", "u", "gScale", "uScale"}, func() {
		sum, s = broadcastInt32Param("sum", isa.alloc), broadcastParam("s", isa.alloc)
	}, func(st ewStep, at func(int) Mem) {
		y := func(c, w int) reg.Register {
			v := st.load(at(c))
			VPSUBD(st.vec(sum), v, v)
			VCVTDQ2PS(v, v)
			VDIVPS(st.vec(s), v, v)
			VMULPS(st.load(at(w)), v, v)
			return v
		}
		g, u := y(1, 3), y(2, 4)
		m := st.alloc()
		VPSRAD(U8(31), g, m)
		st.andn(m, g, g) // +0 where the sign was set
		VMULPS(g, g, g)
		VMULPS(u, g, g)
		st.store(g, at(0))
	})
}

const addF32Sig = "func(x, y []float32)"

func genAddF32(name string, isa vecISA) {
	genElementwise(name, isa, addF32Sig, "is addF32", []string{"x", "y"}, func() {}, func(st ewStep, at func(int) Mem) {
		v := st.load(at(0))
		VADDPS(st.load(at(1)), v, v)
		st.store(v, at(0))
	})
}

// float64Kernel begins a kernel over float64 lanes and returns how many
// a register holds (8 in a zmm with evex, else 4 in a ymm) and the
// allocators of that register and of the one holding as many float32.
func float64Kernel(name, sig string, evex bool) (lanes int, wide, narrow func() reg.VecVirtual) {
	TEXT(name, NOSPLIT, sig)
	Pragma("noescape")
	if evex {
		return 8, ZMM, YMM
	}
	return 4, YMM, XMM
}

const scaleI8Sig = "func(out []float32, raw []int32, rowScale []float32, s float64)"

// genScaleI8 emits scaleI8: out[i] = float32(float64(rowScale[i])·s·float64(raw[i])),
// the products in that order in float64 (the q8 head's logits from its
// int32 sums), 2·lanes elements per step (lanes: float64 lanes of a zmm, or
// of a ymm with evex false), then one at a time.
func genScaleI8(name string, evex bool) {
	lanes, wide, narrow := float64Kernel(name, scaleI8Sig, evex)
	Doc(fmt.Sprintf("%s is scaleI8: out[i] = float32(float64(rowScale[i])·s·float64(raw[i])), %d elements per step, then one at a time.", name, 2*lanes))
	out := load(Param("out").Base())
	raw := load(Param("raw").Base())
	sc := load(Param("rowScale").Base())
	n := load(Param("out").Len())
	sx, sv := XMM(), wide()
	Load(Param("s"), sx)
	VBROADCASTSD(sx, sv)
	// step converts the elements at i+k… (one when one): f32 and f64 make
	// the float32 and float64 registers of their width, s holds s.
	step := func(i reg.GPVirtual, k int, f32 func() reg.VecVirtual, f64 func() reg.VecVirtual, s reg.Register, one bool) {
		a, b, y := f64(), f64(), f32()
		at := func(base reg.GPVirtual) Mem { return Mem{Base: base, Index: i, Scale: 4, Disp: 4 * k} }
		if one {
			t, u := XMM(), XMM()
			VMOVSS(at(sc), t)
			VMOVSS(at(raw), u)
			VCVTPS2PD(t, a)
			VCVTDQ2PD(u, b)
		} else {
			VCVTPS2PD(at(sc), a)
			VCVTDQ2PD(at(raw), b)
		}
		VMULPD(s, a, a)
		VMULPD(b, a, a)
		switch {
		case one:
			VCVTPD2PSX(a, y)
		case evex:
			VCVTPD2PS(a, y)
		default:
			VCVTPD2PSY(a, y)
		}
		if one {
			VMOVSS(y, at(out))
		} else {
			VMOVUPS(y, at(out))
		}
	}
	i := GP64()
	blockLoop(i, roundDown(n, 2*lanes), 2*lanes, func() {
		step(i, 0, narrow, wide, sv, false)
		step(i, lanes, narrow, wide, sv, false)
	})
	loop, done := label("scalei8"), label("scalei8done")
	Label(loop)
	CMPQ(i, n)
	JAE(LabelRef(done))
	step(i, 0, XMM, XMM, sv.AsX(), true)
	INCQ(i)
	JMP(LabelRef(loop))
	Label(done)
	VZEROUPPER()
	RET()
}

const ropeNeoxSig = "func(x []float32, cs []float64)"

// genRopeNeox emits ropeNeox over the first h &^ 7 NEOX pairs (i, i+h),
// h = len(x)/2: a = x[i], c = x[i+h] widened to float64, x[i] =
// float32(a·cos − c·sin), x[i+h] = float32(a·sin + c·cos) with cos =
// cs[i], sin = cs[h+i], each product rounded on its own (no FMA), as the
// Go twin rounds them; eight pairs a step (one zmm of float64, or two
// ymm). The Go wrapper turns the pairs left over.
func genRopeNeox(name string, evex bool) {
	lanes, wide, narrow := float64Kernel(name, ropeNeoxSig, evex)
	Doc(fmt.Sprintf("%s is ropeNeox over the first len(x)/2 &^ 7 pairs, %d pairs a register of float64.", name, lanes))
	x := load(Param("x").Base())
	cs := load(Param("cs").Base())
	h := load(Param("x").Len())
	SHRQ(U8(1), h)
	n := GP64()
	MOVQ(h, n)
	ANDQ(I32(-8), n)
	hx, hc := GP64(), GP64() // bytes from a pair's first value to its second: 4h, and from its cos to its sin: 8h
	MOVQ(h, hx)
	SHLQ(U8(2), hx)
	MOVQ(h, hc)
	SHLQ(U8(3), hc)
	xHi, csHi := GP64(), GP64()
	LEAQ(Mem{Base: x, Index: hx, Scale: 1}, xHi)
	LEAQ(Mem{Base: cs, Index: hc, Scale: 1}, csHi)
	i := GP64()
	blockLoop(i, n, 8, func() {
		for k := 0; k < 8; k += lanes {
			a, c, cos, sin := wide(), wide(), wide(), wide()
			VCVTPS2PD(Mem{Base: x, Index: i, Scale: 4, Disp: 4 * k}, a)
			VCVTPS2PD(Mem{Base: xHi, Index: i, Scale: 4, Disp: 4 * k}, c)
			VMOVUPD(Mem{Base: cs, Index: i, Scale: 8, Disp: 8 * k}, cos)
			VMOVUPD(Mem{Base: csHi, Index: i, Scale: 8, Disp: 8 * k}, sin)
			p, q, lo, hi := wide(), wide(), wide(), wide()
			VMULPD(cos, a, p)
			VMULPD(sin, c, q)
			VSUBPD(q, p, lo) // a·cos − c·sin
			VMULPD(sin, a, p)
			VMULPD(cos, c, q)
			VADDPD(q, p, hi) // a·sin + c·cos
			l, u := narrow(), narrow()
			if evex {
				VCVTPD2PS(lo, l)
				VCVTPD2PS(hi, u)
			} else {
				VCVTPD2PSY(lo, l)
				VCVTPD2PSY(hi, u)
			}
			VMOVUPS(l, Mem{Base: x, Index: i, Scale: 4, Disp: 4 * k})
			VMOVUPS(u, Mem{Base: xHi, Index: i, Scale: 4, Disp: 4 * k})
		}
	})
	VZEROUPPER()
	RET()
}
