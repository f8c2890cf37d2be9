package main

// sumSquares: Σ float64(float32(x[i]·x[i])) added in order, i = 0, 1, …
// (rmsNorm's sum, as ggml sums it), bit for bit: a chain of float64 adds,
// one per element, each waiting on the one before (2.5 cycles an element
// on the Zen 5 VM). The kernels take 16 elements at a time and add them
// in one step where no add of the chain would round:
//
// s is the chain's sum before the block, of exponent e (s in [2^e,
// 2^(e+1))), and B the block's squares summed in any order. If every
// square is a multiple of ulp(s) = 2^(e−52) and s + B < 2^(e+1), every
// partial sum of the chain within the block (and of any other order) is a
// multiple of 2^(e−52) below 2^(e+1): it has at most 53 significant bits,
// so no add rounds, B is exact, and s + B is what the chain gives. The
// kernels check both: a square t = float32(x·x) of biased exponent E32 is
// a multiple of 2^(E32−150) (2^−149 below the normals), so it suffices
// that (bits(t) − 1) >> 23, which is E32 or E32 − 1 for t > 0 (and 511
// for t = 0, or a NaN with its sign set), be ≥ E64(s) − 925, E64 the
// biased exponent of s; and that s + B, rounded, keep s's exponent (if the
// exact sum reached 2^(e+1), so does its rounding). Otherwise (s = 0, a
// block that takes s into the next binade, a square too small for ulp(s),
// a NaN or an infinity anywhere) the block is added one element at a time,
// as the Go twin adds it. On Gaussian rows of 2560 the fallback takes
// about one block in twenty (its binade crossings); on rows as the ReLU² gate
// gives, 38% of blocks (squares between half an ulp of the sum and 2^−29
// of it).

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

const sumSquaresSig = "func(x []float32) float64"

// sumSquaresBlock is how many elements one step of the kernels adds.
const sumSquaresBlock = 16

var dwords1 Mem // 4 × int32 1: broadcast, the −1 of sumSquares' exponent keys

func genSumSquaresConsts() {
	dwords1 = table("dwords1", 4, func(int) uint32 { return 1 })
}

// genSumSquares emits sumSquares with AVX-512 (evex) or AVX2.
func genSumSquares(name string, evex bool) {
	TEXT(name, NOSPLIT, sumSquaresSig)
	Pragma("noescape")
	Doc(name+" is sumSquares: Σ float64(float32(x·x)) in order, bit for bit, 16 elements",
		"in one step where no add of the chain would round (see asmgen's sumsq.go).")
	x := load(Param("x").Base())
	n := load(Param("x").Len())
	s, zero := XMM(), GP64()
	XORQ(zero, zero)
	VMOVQ(zero, s)
	one := YMM()
	if evex {
		one = ZMM()
	}
	VPBROADCASTD(dwords1, one)
	// one adds x[i] into s as the Go twin does.
	one1 := func(at Mem) {
		f, d := XMM(), XMM()
		VMOVSS(at, f)
		VMULSS(f, f, f)
		VCVTSS2SD(f, f, d)
		VADDSD(d, s, s)
	}
	i := GP64()
	XORQ(i, i)
	end := roundDown(n, sumSquaresBlock)
	loop, slow, done := label("sumsq"), label("sumsqslow"), label("sumsqdone")
	Label(loop)
	CMPQ(i, end)
	JAE(LabelRef(done))
	at := func(k int) Mem { return Mem{Base: x, Index: i, Scale: 4, Disp: 4 * k} }
	var kmin, b reg.VecVirtual // the block's smallest key (lane 0), its sum (lane 0)
	if evex {
		t := ZMM()
		VMOVUPS(at(0), t)
		VMULPS(t, t, t)
		k := ZMM()
		VPSUBD(one, t, k)
		VPSRLD(U8(23), k, k)
		kmin = minU32EVEX.sum1(minU32EVEX.fold256(k))
		lo, hi, th := ZMM(), ZMM(), YMM()
		VCVTPS2PD(t.AsY(), lo)
		VEXTRACTF64X4(U8(1), t, th)
		VCVTPS2PD(th, hi)
		VADDPD(hi, lo, lo)
		y := YMM()
		VEXTRACTF64X4(U8(1), lo, y)
		VADDPD(y, lo.AsY(), y)
		b = sumF64x4(y, true)
	} else {
		t0, t1 := YMM(), YMM()
		VMOVUPS(at(0), t0)
		VMOVUPS(at(8), t1)
		VMULPS(t0, t0, t0)
		VMULPS(t1, t1, t1)
		k0, k1 := YMM(), YMM()
		VPSUBD(one, t0, k0)
		VPSUBD(one, t1, k1)
		VPSRLD(U8(23), k0, k0)
		VPSRLD(U8(23), k1, k1)
		VPMINUD(k1, k0, k0)
		kmin = minU32VEX.sum1(k0)
		d := make([]reg.VecVirtual, 4)
		for j, t := range []reg.VecVirtual{t0, t1} {
			h := XMM()
			d[2*j], d[2*j+1] = YMM(), YMM()
			VCVTPS2PD(t.AsX(), d[2*j])
			VEXTRACTF128(U8(1), t, h)
			VCVTPS2PD(h, d[2*j+1])
		}
		VADDPD(d[1], d[0], d[0])
		VADDPD(d[3], d[2], d[2])
		VADDPD(d[2], d[0], d[0])
		b = sumF64x4(d[0], false)
	}
	sn := XMM()
	VADDSD(b, s, sn)
	es, en, kq := GP64(), GP64(), GP64()
	VMOVQ(s, es)
	VMOVQ(sn, en)
	SHRQ(U8(52), es)
	SHRQ(U8(52), en)
	CMPQ(es, en)
	JNE(LabelRef(slow))
	VMOVD(kmin, kq.As32())
	ADDQ(U32(925), kq)
	CMPQ(kq, es)
	JB(LabelRef(slow))
	VMOVAPD(sn, s)
	ADDQ(U8(sumSquaresBlock), i)
	JMP(LabelRef(loop))
	Label(slow)
	for k := range sumSquaresBlock {
		one1(at(k))
	}
	ADDQ(U8(sumSquaresBlock), i)
	JMP(LabelRef(loop))
	Label(done)
	tail, end2 := label("sumsqtail"), label("sumsqend")
	Label(tail)
	CMPQ(i, n)
	JAE(LabelRef(end2))
	one1(at(0))
	INCQ(i)
	JMP(LabelRef(tail))
	Label(end2)
	Store(s, ReturnIndex(0))
	VZEROUPPER()
	RET()
}

// The minima of unsigned int32 lanes, for fold256 and sum1.
var (
	minU32VEX  = lanes{add: VPMINUD, extract128: variadic(VEXTRACTI128)}
	minU32EVEX = lanes{add: VPMINUD, extract128: VEXTRACTI32X4, extract256: VEXTRACTI64X4}
)

// sumF64x4 returns an xmm whose lane 0 is the sum of y's four float64
// lanes (in a tree: the kernels use it only where every order is exact),
// with EVEX-encodable instructions when evex.
func sumF64x4(y reg.VecVirtual, evex bool) reg.VecVirtual {
	m, t := XMM(), XMM()
	if evex {
		VEXTRACTF32X4(U8(1), y, m)
	} else {
		VEXTRACTF128(U8(1), y, m)
	}
	VADDPD(m, y.AsX(), m)
	VUNPCKHPD(m, m, t)
	VADDSD(t, m, m)
	return m
}
