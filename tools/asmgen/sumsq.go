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
// exact sum reached 2^(e+1), so does its rounding). On Gaussian rows of
// 2560 that fails for about one block in twenty (its binade crossings); on
// rows as the ReLU² gate gives, for 38% of blocks (squares between half an
// ulp of the sum and 2^−29 of it). Such a block then takes the rounded
// step (sumSquaresRounded: each square rounded to a multiple of ulp(s) as
// the chain would round it, exact unless a square is a tie there), and
// otherwise (s = 0 or tiny, a tie, a block that takes s into the next
// binade, a NaN or an infinity anywhere) it is added one element at a
// time, as the Go twin adds it. BenchmarkSumSquares' ReLU² row of 6912 on
// the Zen 5 VM: 2.53-2.56 → 1.99 µs (avx512vnni), 2.62 → 2.27 (avx2); its
// Gaussian rows as before (0.46-0.47 µs at 2560).

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

const sumSquaresSig = "func(x []float32) float64"

// sumSquaresBlock is how many elements one step of the kernels adds.
const sumSquaresBlock = 16

var (
	dwords1         Mem // 4 × int32 1: broadcast, the −1 of sumSquares' exponent keys
	f64Abs, f64Half Mem // a float64's magnitude mask, and 0.5
)

func genSumSquaresConsts() {
	dwords1 = table("dwords1", 4, func(int) uint32 { return 1 })
	f64Abs = table("f64abs", 8, func(i int) uint32 { return pick(i == 0, 0xFFFFFFFF, 0x7FFFFFFF) })
	f64Half = table("f64half", 8, func(i int) uint32 { return pick(i == 0, 0, 0x3FE00000) })
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
	vec := YMM
	if evex {
		vec = ZMM
	}
	one := vec()
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
	setup, loop, round, slow, done := label("sumsqsetup"), label("sumsq"), label("sumsqround"), label("sumsqslow"), label("sumsqdone")
	abs, half := vec(), vec()
	VBROADCASTSD(f64Abs, abs)
	VBROADCASTSD(f64Half, half)
	// E, the biased exponent of s, and for the rounded step 1/u and u,
	// set up at the start and after each block added one element at a
	// time: the other steps keep s in its binade, so the blocks depend on
	// one another only through the final add (with E taken from each new
	// s, the rounded step's latency set the pace).
	es, scv, ulx := GP64(), vec(), XMM()
	Label(setup)
	VMOVQ(s, es)
	SHRQ(U8(52), es) // s ≥ 0, or a NaN
	sumSquaresScales(es, vec, scv, ulx)
	Label(loop)
	CMPQ(i, end)
	JAE(LabelRef(done))
	at := func(k int) Mem { return Mem{Base: x, Index: i, Scale: 4, Disp: 4 * k} }
	var kmin, b reg.VecVirtual // the block's smallest key (lane 0), its sum (lane 0)
	var d []reg.VecVirtual     // the block's squares as float64
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
		sum := ZMM()
		VADDPD(hi, lo, sum)
		y := YMM()
		VEXTRACTF64X4(U8(1), sum, y)
		VADDPD(y, sum.AsY(), y)
		b = sumF64x4(y, true)
		d = []reg.VecVirtual{lo, hi}
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
		d = make([]reg.VecVirtual, 4)
		for j, t := range []reg.VecVirtual{t0, t1} {
			h := XMM()
			d[2*j], d[2*j+1] = YMM(), YMM()
			VCVTPS2PD(t.AsX(), d[2*j])
			VEXTRACTF128(U8(1), t, h)
			VCVTPS2PD(h, d[2*j+1])
		}
		s01, s23 := YMM(), YMM()
		VADDPD(d[1], d[0], s01)
		VADDPD(d[3], d[2], s23)
		VADDPD(s23, s01, s01)
		b = sumF64x4(s01, false)
	}
	sn := XMM()
	VADDSD(b, s, sn)
	en, kq := GP64(), GP64()
	VMOVQ(sn, en)
	SHRQ(U8(52), en)
	CMPQ(es, en)
	JNE(LabelRef(round))
	VMOVD(kmin, kq.As32())
	ADDQ(U32(925), kq)
	CMPQ(kq, es)
	JB(LabelRef(round))
	VMOVAPD(sn, s)
	ADDQ(U8(sumSquaresBlock), i)
	JMP(LabelRef(loop))

	// Some square is no multiple of ulp(s), or the block leaves s's binade:
	// the block in one step if no square is a tie at ulp(s) and s + R·u
	// stays in the binade (see sumSquaresRounded).
	Label(round)
	CMPQ(es, U8(53))
	JB(LabelRef(slow))
	CMPQ(es, U32(2046))
	JA(LabelRef(slow))
	sumSquaresRounded(evex, vec, d, es, s, scv, ulx, abs, half, LabelRef(slow))
	ADDQ(U8(sumSquaresBlock), i)
	JMP(LabelRef(loop))
	Label(slow)
	for k := range sumSquaresBlock {
		one1(at(k))
	}
	ADDQ(U8(sumSquaresBlock), i)
	JMP(LabelRef(setup))
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

// sumSquaresScales sets scv (every lane) to 1/u = 2^(1075 − E) and ulx
// (lane 0) to u = 2^(E − 1075), u = ulp(s), given E, the biased exponent
// of s, in es; for E outside 53…2046 (where the rounded step does not run)
// the values are meaningless but harmless.
func sumSquaresScales(es reg.GPVirtual, vec func() reg.VecVirtual, scv, ulx reg.VecVirtual) {
	sc, scx := GP64(), XMM()
	MOVQ(U32(2098), sc) // biased 2098 − E
	SUBQ(es, sc)
	SHLQ(U8(52), sc)
	VMOVQ(sc, scx)
	VBROADCASTSD(scx, scv)
	ul := GP64()
	MOVQ(es, ul) // biased E − 52
	SUBQ(U8(52), ul)
	SHLQ(U8(52), ul)
	VMOVQ(ul, ulx)
}

// sumSquaresRounded emits the rounded step of a sumSquares block: d holds
// the block's 16 squares as float64 (it is overwritten), es the biased
// exponent E of s (53 ≤ E ≤ 2046), scv and ulx what sumSquaresScales
// made of it; it adds the block to s, or jumps to slow and leaves s as it
// was.
//
// With s in [2^e, 2^(e+1)), a multiple of u = ulp(s) = 2^(e−52), and
// q_i = t_i/u (exact: a power of two), the chain adds to s, a multiple of
// u, the square t_i and rounds to the nearest multiple of u while the sum
// stays in s's binade: s + round(q_i)·u, round to nearest, but for a tie
// (q_i's fraction exactly ½), which goes to the even multiple and so
// depends on s. Unless some q_i is a tie, the block adds R·u, R =
// Σ round(q_i) (integers, exact below 2^53), provided s + R·u stays in the
// binade (the partial sums only grow, so then each one did; if the exact
// sum leaves it, so does its rounding). Squares below u/2, which the
// chain drops, round to 0 here: the ReLU² gate's rows, with their spread
// of magnitudes, take this step for most blocks the exact sum refuses
// (BenchmarkSumSquares' relu2 row: 38% of blocks went one element at a
// time).
func sumSquaresRounded(evex bool, vec func() reg.VecVirtual, d []reg.VecVirtual, es reg.GPVirtual, s, scv, ulx, abs, half reg.VecVirtual, slow LabelRef) {
	r := make([]reg.VecVirtual, len(d))
	var ties []Op
	for j, v := range d {
		VMULPD(scv, v, v) // q
		r[j] = vec()
		if evex {
			VRNDSCALEPD(U8(0), v, r[j]) // to nearest, ties to even
		} else {
			VROUNDPD(U8(0), v, r[j])
		}
		VSUBPD(r[j], v, v)
		VANDPD(abs, v, v) // |q − round(q)|
		if evex {
			k := K()
			VCMPPD(U8(0), half, v, k) // = ½: a tie
			ties = append(ties, k)
		} else {
			VCMPPD(U8(0), half, v, v)
			ties = append(ties, v)
		}
	}
	if evex {
		KORTESTB(ties[1], ties[0])
		JNZ(slow)
		VADDPD(r[1], r[0], r[0])
		y := YMM()
		VEXTRACTF64X4(U8(1), r[0], y)
		VADDPD(y, r[0].AsY(), y)
		r[0] = y
	} else {
		t := ties[0].(reg.VecVirtual)
		for _, o := range ties[1:] {
			VORPD(o, t, t)
		}
		VPTEST(t, t)
		JNZ(slow)
		VADDPD(r[1], r[0], r[0])
		VADDPD(r[3], r[2], r[2])
		VADDPD(r[2], r[0], r[0])
	}
	R := sumF64x4(r[0], evex)
	VMULSD(ulx, R, R)
	sn, en := XMM(), GP64()
	VADDSD(R, s, sn)
	VMOVQ(sn, en)
	SHRQ(U8(52), en)
	CMPQ(es, en)
	JNE(slow)
	VMOVAPD(sn, s)
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

const sumSquares8Sig = "func(rows *[8]*float32, n int, sums *[8]float64)"

// genSumSquares8 emits sumSquares8AVX512 (evex) or sumSquares8AVX2:
// sumSquares of eight rows of n elements (n a multiple of 8) at once, each
// row's chain of float64 adds in one float64 lane (of a zmm, or of two
// ymm), in order, so bit for bit whatever the data (no blocks to check). A
// step takes 8 elements of every row: 8 ymm loads, squared in float32,
// transposed (element j of the 8 rows into one ymm), widened to float64
// and added into the lanes, j = 0…7. The chains allow 8 adds in 4 cycles
// (latency 4): 2 elements a cycle, against 1 for the one-row kernels on
// rows where their blocks rarely hold (the ReLU² gate's) and about 1.5 on
// Gaussian rows.
func genSumSquares8(name string, evex bool) {
	TEXT(name, NOSPLIT, sumSquares8Sig)
	Pragma("noescape")
	Doc(name+" is sumSquares of 8 rows of n elements (n a multiple of 8), each",
		"row's float64 chain in one lane, in order (see asmgen's sumsq.go).")
	rp := load(Param("rows"))
	n := load(Param("n"))
	bases := make([]reg.GPVirtual, 8)
	for r := range bases {
		bases[r] = GP64()
		MOVQ(Mem{Base: rp, Disp: 8 * r}, bases[r])
	}
	var acc []reg.VecVirtual // rows 0-7 (evex), or 0-3 and 4-7
	if evex {
		acc = []reg.VecVirtual{ZMM()}
		VPXORQ(acc[0], acc[0], acc[0])
	} else {
		acc = []reg.VecVirtual{YMM(), YMM()}
		for _, a := range acc {
			VXORPD(a, a, a)
		}
	}
	i := GP64()
	blockLoop(i, n, 8, func() {
		y := make([]reg.VecVirtual, 8)
		for r := range y {
			y[r] = YMM()
			VMOVUPS(Mem{Base: bases[r], Index: i, Scale: 4}, y[r])
			VMULPS(y[r], y[r], y[r])
		}
		// Transpose: t pairs rows (2k, 2k+1) by element, u gathers
		// rows 4h…4h+3 by element within each 128-bit lane, c crosses
		// the lanes: c holds element j of rows 0…7.
		t := make([]reg.VecVirtual, 8)
		for k := 0; k < 4; k++ {
			t[2*k], t[2*k+1] = YMM(), YMM()
			VUNPCKLPS(y[2*k+1], y[2*k], t[2*k])   // a0 b0 a1 b1 | a4 b4 a5 b5
			VUNPCKHPS(y[2*k+1], y[2*k], t[2*k+1]) // a2 b2 a3 b3 | a6 b6 a7 b7
		}
		u := make([]reg.VecVirtual, 8)
		for h := 0; h < 2; h++ {
			lo, hi := t[4*h], t[4*h+1]     // rows 4h, 4h+1
			lo2, hi2 := t[4*h+2], t[4*h+3] // rows 4h+2, 4h+3
			for k, p := range [][2]reg.VecVirtual{{lo, lo2}, {hi, hi2}} {
				u[4*h+2*k], u[4*h+2*k+1] = YMM(), YMM()
				VSHUFPS(U8(0x44), p[1], p[0], u[4*h+2*k])   // elements 0 (4) | 2 (6) of the 4 rows
				VSHUFPS(U8(0xEE), p[1], p[0], u[4*h+2*k+1]) // elements 1 (5) | 3 (7)
			}
		}
		// u[4h+m] holds, for rows 4h…4h+3, element m in its low lane and
		// m+4 in its high lane (m < 4); c gathers rows 0…7 of element j,
		// added in order j = 0…7.
		for j := 0; j < 8; j++ {
			c := YMM()
			VPERM2F128(U8(uint8(pick(j < 4, 0x20, 0x31))), u[4+j%4], u[j%4], c)
			if evex {
				z := ZMM()
				VCVTPS2PD(c, z)
				VADDPD(z, acc[0], acc[0])
				continue
			}
			hi, w0, w1 := XMM(), YMM(), YMM()
			VEXTRACTF128(U8(1), c, hi)
			VCVTPS2PD(c.AsX(), w0)
			VCVTPS2PD(hi, w1)
			VADDPD(w0, acc[0], acc[0])
			VADDPD(w1, acc[1], acc[1])
		}
	})
	sp := load(Param("sums"))
	for k, a := range acc {
		VMOVUPD(a, Mem{Base: sp, Disp: 32 * k})
	}
	VZEROUPPER()
	RET()
}
