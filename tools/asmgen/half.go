package main

// f32ToF16: dst[i] = float16 bits of src[i], rounded to nearest even (the
// K/V cache writes). roundF16: dst[i] = float32(float16(src[i])), the
// same rounding and back (attention's queries). vcvtps2ph with immediate 0
// rounds to nearest even like the Go twins (gguf.F32ToF16), subnormal
// halves and overflow to infinity included; a NaN stays a NaN but comes out
// quiet, where the twin keeps a signalling payload as it is.
//
// Versions: AVX-512 16 values per step and a masked tail; AVX2 (F16C) 8
// per step and one at a time after.

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

const (
	f32ToF16Sig = "func(dst []uint16, src []float32)"
	roundF16Sig = "func(dst []float32, src []float32)"
)

// genHalf emits f32ToF16 (back = false) or roundF16 (back = true) for
// AVX-512 (evex) or AVX2.
func genHalf(name string, back, evex bool) {
	sig := f32ToF16Sig
	if back {
		sig = roundF16Sig
	}
	TEXT(name, NOSPLIT, sig)
	Pragma("noescape")
	what := "f32ToF16"
	if back {
		what = "roundF16"
	}
	Doc(name + " is " + what + " with vcvtps2ph (round to nearest even).")
	dst := load(Param("dst").Base())
	src := load(Param("src").Base())
	n := load(Param("src").Len())
	i := GP64()
	width, wide, half := 8, YMM, XMM
	if evex {
		width, wide, half = 16, ZMM, YMM
	}
	out := func(disp int) Mem {
		if back {
			return Mem{Base: dst, Index: i, Scale: 4, Disp: 4 * disp}
		}
		return Mem{Base: dst, Index: i, Scale: 2, Disp: 2 * disp}
	}
	// step converts width values at i (+ disp), masked by k when not nil.
	step := func(disp int, k reg.Register) {
		v, h := wide(), half()
		at := Mem{Base: src, Index: i, Scale: 4, Disp: 4 * disp}
		if k == nil {
			VMOVUPS(at, v)
		} else {
			VMOVUPS_Z(at, k, v)
		}
		VCVTPS2PH(U8(0), v, h)
		switch {
		case back && k == nil:
			VCVTPH2PS(h, v)
			VMOVUPS(v, out(disp))
		case back:
			VCVTPH2PS(h, v)
			VMOVUPS(v, k, out(disp))
		case k == nil && evex:
			VMOVDQU16(h, out(disp))
		case k == nil:
			VMOVDQU(h, out(disp))
		default:
			VMOVDQU16(h, k, out(disp))
		}
	}
	blockLoop(i, roundDown(n, 2*width), 2*width, func() { step(0, nil); step(width, nil) })
	ifRoom(i, n, width, func() { step(0, nil); ADDQ(U8(width), i) })
	if evex {
		tailMask(i, n, func(k reg.Register) { step(0, k) })
	} else {
		loop, done := label("half"), label("halfdone")
		CMPQ(i, n)
		JAE(LabelRef(done))
		Label(loop)
		v, h := XMM(), XMM()
		VMOVSS(Mem{Base: src, Index: i, Scale: 4}, v)
		VCVTPS2PH(U8(0), v, h)
		if back {
			VCVTPH2PS(h, v)
			VMOVSS(v, Mem{Base: dst, Index: i, Scale: 4})
		} else {
			g := GP32()
			VMOVD(h, g)
			MOVW(g.As16(), Mem{Base: dst, Index: i, Scale: 2})
		}
		INCQ(i)
		CMPQ(i, n)
		JB(LabelRef(loop))
		Label(done)
	}
	VZEROUPPER()
	RET()
}
