package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// axpyF16Rows: y[i] += a[p]·f16(v[p·stride+i]) for p < len(a), in order
// of p, for i < len(y): attention's weighted sum over the V cache in one
// call. Each column block of y stays in registers while the rows of v
// stream past it, one fused multiply-add per element and row: the same
// roundings, in the same order, as len(a) calls of axpyF16 of the set.
//
//	axpyF16RowsAVX2     columns in blocks of 32 (4 ymm), then 8, then one
//	                    at a time (scalar F16C + FMA)
//	axpyF16RowsAVX512   columns in blocks of 64 (4 zmm), then 16, then a
//	                    masked block

const axpyF16RowsSig = "func(a []float32, v []uint16, stride int, y []float32)"

// axpyRowsArgs loads axpyF16Rows' arguments: a, its length, v, the stride
// in bytes, y and its length.
func axpyRowsArgs() (a, np, v, stride, y, n reg.GPVirtual) {
	a = load(Param("a").Base())
	np = load(Param("a").Len())
	v = load(Param("v").Base())
	stride = load(Param("stride"))
	SHLQ(U8(1), stride)
	y = load(Param("y").Base())
	n = load(Param("y").Len())
	return
}

// overRows emits, for the column block at element i: vp = &v[i], then for
// p < np { body(weight p's address, vp); vp += stride }.
func overRows(a, np, v, stride, i reg.GPVirtual, body func(w Mem, vp reg.GPVirtual)) {
	vp, p := GP64(), GP64()
	LEAQ(Mem{Base: v, Index: i, Scale: 2}, vp)
	blockLoop(p, np, 1, func() {
		body(Mem{Base: a, Index: p, Scale: 4}, vp)
		ADDQ(stride, vp)
	})
}

func genAxpyF16RowsAVX2() {
	TEXT("axpyF16RowsAVX2", NOSPLIT, axpyF16RowsSig)
	Pragma("noescape")
	Doc("axpyF16RowsAVX2 is axpyF16Rows with F16C and FMA: 32 columns in registers across the rows.")
	a, np, v, stride, y, n := axpyRowsArgs()
	i := GP64()
	block := func(k int) {
		acc := ymms(k / 8)
		for j := range acc {
			VMOVUPS(Mem{Base: y, Index: i, Scale: 4, Disp: 32 * j}, acc[j])
		}
		overRows(a, np, v, stride, i, func(w Mem, vp reg.GPVirtual) {
			wv := YMM()
			VBROADCASTSS(w, wv)
			for j := range acc {
				h := YMM()
				VCVTPH2PS(Mem{Base: vp, Disp: 16 * j}, h)
				VFMADD231PS(h, wv, acc[j])
			}
		})
		for j := range acc {
			VMOVUPS(acc[j], Mem{Base: y, Index: i, Scale: 4, Disp: 32 * j})
		}
	}
	blockLoop(i, roundDown(n, 32), 32, func() { block(32) })
	loop8, done8 := label("cols8"), label("cols8done")
	Label(loop8)
	e := GP64()
	LEAQ(Mem{Base: i, Disp: 8}, e)
	CMPQ(e, n)
	JA(LabelRef(done8))
	block(8)
	ADDQ(U8(8), i)
	JMP(LabelRef(loop8))
	Label(done8)
	loop1, done1 := label("cols1"), label("cols1done")
	Label(loop1)
	CMPQ(i, n)
	JAE(LabelRef(done1))
	acc := XMM()
	VMOVSS(Mem{Base: y, Index: i, Scale: 4}, acc)
	overRows(a, np, v, stride, i, func(w Mem, vp reg.GPVirtual) {
		g, h, wv := GP32(), XMM(), XMM()
		MOVWLZX(Mem{Base: vp}, g)
		VMOVD(g, h)
		VCVTPH2PS(h, h)
		VMOVSS(w, wv)
		VFMADD231SS(h, wv, acc)
	})
	VMOVSS(acc, Mem{Base: y, Index: i, Scale: 4})
	INCQ(i)
	JMP(LabelRef(loop1))
	Label(done1)
	VZEROUPPER()
	RET()
}

func genAxpyF16RowsAVX512() {
	TEXT("axpyF16RowsAVX512", NOSPLIT, axpyF16RowsSig)
	Pragma("noescape")
	Doc("axpyF16RowsAVX512 is axpyF16Rows with AVX-512: 64 columns in registers across the rows, masked tail.")
	a, np, v, stride, y, n := axpyRowsArgs()
	i := GP64()
	block := func(k int) {
		acc := zmms(k / 16)
		for j := range acc {
			VMOVUPS(Mem{Base: y, Index: i, Scale: 4, Disp: 64 * j}, acc[j])
		}
		overRows(a, np, v, stride, i, func(w Mem, vp reg.GPVirtual) {
			wv := ZMM()
			VBROADCASTSS(w, wv)
			for j := range acc {
				h := ZMM()
				VCVTPH2PS(Mem{Base: vp, Disp: 32 * j}, h)
				VFMADD231PS(h, wv, acc[j])
			}
		})
		for j := range acc {
			VMOVUPS(acc[j], Mem{Base: y, Index: i, Scale: 4, Disp: 64 * j})
		}
	}
	blockLoop(i, roundDown(n, 64), 64, func() { block(64) })
	loop16, done16 := label("cols16"), label("cols16done")
	Label(loop16)
	e := GP64()
	LEAQ(Mem{Base: i, Disp: 16}, e)
	CMPQ(e, n)
	JA(LabelRef(done16))
	block(16)
	ADDQ(U8(16), i)
	JMP(LabelRef(loop16))
	Label(done16)
	tailMask(i, n, func(k reg.Register) {
		acc := ZMM()
		VMOVUPS_Z(Mem{Base: y, Index: i, Scale: 4}, k, acc)
		overRows(a, np, v, stride, i, func(w Mem, vp reg.GPVirtual) {
			wv, h16, h := ZMM(), YMM(), ZMM()
			VBROADCASTSS(w, wv)
			VMOVDQU16_Z(Mem{Base: vp}, k, h16)
			VCVTPH2PS(h16, h)
			VFMADD231PS(h, wv, acc)
		})
		VMOVUPS(acc, k, Mem{Base: y, Index: i, Scale: 4})
	})
	VZEROUPPER()
	RET()
}
