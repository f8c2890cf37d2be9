package main

// The output head over a few tokens at once (speculative decoding verifies
// 1 + k tokens in one pass, each needing its logits): each weight row is
// read from memory once for all the tokens instead of once per token.
//
// dotF16MatMul: out[t·outStride + r] = Σ_{i<n} f16(w[r·stride + i])·x[t·xStride + i]
// for r < rows, t < tokens, each (r, t) summed in exactly the order
// dotF16Rows of the same set sums row r against token t, so that a token's
// logits are bit-identical whether it is evaluated alone or in a batch.
// dotI8MatMul: the same for int8 rows and int8 tokens, exact in int32 (any
// order).
//
// Versions:
//
//	dotF16MatMulAVX512  1…9 tokens in one tile of R rows (4 up to 6 tokens,
//	                    3 for 7-9: R·T accumulators, R widened rows and an
//	                    activation vector in 32 zmm), one accumulator per
//	                    (row, token) fed each 16-element chunk in order as
//	                    dotF16RowsAVX512 feeds a row's, then the same
//	                    fold256 and sum4's lane order (sum1's for the rows
//	                    past a multiple of 4). Each row is read once, by a
//	                    tile that does all its multiply-adds, so the stream
//	                    from DRAM overlaps the arithmetic (a tile per 3
//	                    tokens over L2-resident blocks of 64 rows read
//	                    memory in its first tile and computed without it
//	                    in the others). Per 16 elements at 9 tokens: 3
//	                    vcvtph2ps, 9 loads of x, 27 FMA.
//	dotI8MatMulVNNI     tiles of 4 rows × 5 tokens: u = w XOR 0x80 = w+128
//	                    once per row and 64 bytes, then vpdpbusd(u, x_t)
//	                    into 20 accumulators; the caller passes
//	                    bias[t] = 128·Σx_t, subtracted at the store.
//	                    Leftover rows: tiles of 1 row × 8 tokens.
//
//	dotF16MatMulAVX2    tiles of 2 adjacent rows × 1-3 tokens or 1 row × 4-5
//	                    (the row kernel's two accumulators per (row, token)
//	                    in 16 ymm), each row's 8 elements widened once for
//	                    every token, summed in dotF16RowsAVX2's order (see
//	                    genDotF16MatMulAVX2).
//
// The avx2 set's int8 head runs its one-token row kernel over blocks of 64
// rows, every token per block (cpu/kernels_amd64.go): the block's rows come
// from L2 after the first token.
//
// Both prefetch each row 16 KiB ahead, as the row kernels do.
// dotF16MatMulAVX512HW, for Zen 5 (cpu.hwPrefetcher), runs 1-6 tokens with
// near prefetches instead (nearPrefetch), its tiles of 4 rows a quarter of
// the call's rows apart as dotF16RowsAVX512HW takes them (headNearTokens).

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

const (
	dotF16MatMulSig = "func(w []uint16, stride, rows int, x []float32, xStride, n, tokens int, out []float32, outStride int)"
	dotI8MatMulSig  = "func(w []int8, stride, rows int, x []int8, xStride, n, tokens int, out []int32, outStride int, bias []int32)"
)

// Tile shape of dotI8MatMulVNNI.
const headI8Tokens = 5

// headNearTokens: the most tokens for which dotF16MatMulAVX512HW takes
// spread tiles of 4 rows with near prefetches; from 7 tokens on (tiles of
// 3 rows) it is dotF16MatMulAVX512's code. A 32768-row slice of the 2B
// head (168 MB) from DRAM on the Zen 5 VM, alternated in one process
// (2026-11-27, later), ms, against the HW version before (spread tiles without
// prefetches for 1-2 tokens, dotF16MatMulAVX512's adjacent ones with
// prefetches into L2 from 3): one thread, 3 tokens 6.3-8.1 against
// 8.1-8.7, 4 tokens 7.0-7.1 against 7.2-9.1, 6 tokens 8.1-8.5 against
// 8.2-9.6; two threads, 1 token 2.5-2.7 against 2.7-3.1, 3 tokens 3.2-3.4
// against 4.2-4.4, 4 tokens 3.5-3.8 against 3.8-4.8. The same spread tiles
// without any prefetches were 10-30% slower than the old code from 3
// tokens; 7 and 9 tokens with near prefetches no faster. Before that
// (2026-11-27): prefetching 32-128 KiB ahead instead of 16, or the tokens
// in tiles of 2 over blocks of 64 rows, within the noise (±10%).
const headNearTokens = 6

func genDotF16MatMulAVX512() {
	TEXT(kernelName("dotF16MatMulAVX512"), NOSPLIT, dotF16MatMulSig)
	Pragma("noescape")
	kernelDoc("dotF16MatMulAVX512",
		fmt.Sprintf("dotF16MatMulAVX512 is dotF16MatMul with AVX-512 for 1…%d tokens: every token in one tile", headF16MaxTokens),
		"of f16TileRows(tokens) rows, each sum in dotF16RowsAVX512's order.")
	if hwPrefetchOnly {
		Doc(fmt.Sprintf("For 1…%d tokens its tiles of 4 rows take them a quarter of the call's rows", headNearTokens),
			fmt.Sprintf("apart, as dotF16RowsAVX512HW does, prefetching each row's lines %d bytes ahead into L1", nearAhead),
			fmt.Sprintf("(PREFETCHNTA); from %d tokens on it is dotF16MatMulAVX512.", headNearTokens+1))
	}
	tokens := load(Param("tokens"))
	end := label("f16mmend")
	for T := 1; T <= headF16MaxTokens; T++ {
		next := label("f16mmtokens")
		CMPQ(tokens, U8(T))
		JNE(LabelRef(next))
		fewTokenPrefetches(T <= headNearTokens, func() { f16MatMulRows(T) })
		JMP(LabelRef(end))
		Label(next)
	}
	Label(end)
	VZEROUPPER()
	RET()
}

// headF16MaxTokens is the most tokens dotF16MatMulAVX512 takes in one
// call (cpu's tiledF16 splits more).
const headF16MaxTokens = 9

// f16TileRows is the rows of a tile of T tokens: its R·T accumulators, R
// widened rows and one activation vector fit the 32 zmm registers.
func f16TileRows(T int) int { return min(4, 31/(T+1)) }

// f16MatMulRows emits the row loop of dotF16MatMulAVX512 for T tokens:
// the first rows &^ 3 rows (summed in sum4's lane order, as dotF16Rows
// sums the rows of its groups of 4) in tiles of f16TileRows(T) and one
// smaller tile, then the last rows % 4 (in sum1's order, as dotF16Rows sums
// its single rows) one at a time.
func f16MatMulRows(T int) {
	R := f16TileRows(T)
	w := load(Param("w").Base())
	out := load(Param("out").Base())
	advance := func(r int) {
		stride := load(Param("stride"))
		SHLQ(U8(1), stride)
		for range r {
			ADDQ(stride, w)
		}
		ADDQ(U32(4*r), out)
	}
	if nearPrefetch && R == 4 { // the HW version's spread tiles
		f16SpreadTiles(T, w, out)
	} else {
		quads := load(Param("rows"))
		ANDQ(I32(-4), quads)
		loop, done := label("f16tiles"), label("f16tilesdone")
		Label(loop)
		CMPQ(quads, U8(R))
		JB(LabelRef(done))
		f16Tile(R, T, w, out, true, nil)
		advance(R)
		SUBQ(U8(R), quads)
		JMP(LabelRef(loop))
		Label(done)
		for r := R - 1; r >= 1; r-- {
			skip := label("f16rest")
			CMPQ(quads, U8(r))
			JNE(LabelRef(skip))
			f16Tile(r, T, w, out, true, nil)
			advance(r)
			Label(skip)
		}
	}
	rest := load(Param("rows"))
	ANDQ(U8(3), rest)
	one, oneDone := label("f16single"), label("f16singledone")
	JZ(LabelRef(oneDone))
	Label(one)
	f16Tile(1, T, w, out, false, nil)
	advance(1)
	DECQ(rest)
	JNZ(LabelRef(one))
	Label(oneDone)
}

// f16Tile emits one tile: R rows from w against T tokens, out[t·outStride
// + r] = the sum of row r and token t, one accumulator per (row, token)
// fed 16 elements at a time in order, as dotF16RowsAVX512 feeds a row's;
// quad chooses the final lane order: sum4's (rows in dotF16Rows' groups of
// 4: each row's lanes are added alone, so the other three inputs can be
// anything) or sum1's (its single rows). Its rows are adjacent: tiles a
// quarter of the rows apart (four DRAM streams, as dotF16Rows takes them)
// ran 10-15% slower from DRAM at 2-4 tokens on the Zen 5 VM with these
// prefetches; with near prefetches (the HW version, f16SpreadTiles) they
// are the faster ones there. sp, when not nil, says where the rows of a spread
// tile of 4 lie.
func f16Tile(R, T int, w, out reg.GPVirtual, quad bool, sp *f16Spread) {
	Commentf("tile %d rows × %d tokens", R, T)
	var gap reg.GPVirtual
	if sp != nil {
		gap = sp.qs
	} else {
		gap = load(Param("stride"))
		SHLQ(U8(1), gap)
	}
	xs := load(Param("xStride"))
	SHLQ(U8(2), xs)
	rem := load(Param("n"))
	rws := newStrided(w, gap, R)
	toks := newStrided(load(Param("x").Base()), xs, T)
	acc := zmms(R * T) // [r·T + t]
	// step multiplies the 16 elements at element offset e (masked by k
	// when k is not nil) into acc.
	step := func(e int, k reg.Register, pf bool) {
		h := make([]reg.VecVirtual, R)
		for r := range h {
			h[r] = ZMM()
			if pf {
				prefetch(rws.at(r, 2*e))
			}
			if k == nil {
				VCVTPH2PS(rws.at(r, 2*e), h[r])
			} else {
				h16 := YMM()
				VMOVDQU16_Z(rws.at(r, 2*e), k, h16)
				VCVTPH2PS(h16, h[r])
			}
		}
		for t := 0; t < T; t++ {
			xv := ZMM()
			if k == nil {
				VMOVUPS(toks.at(t, 4*e), xv)
			} else {
				VMOVUPS_Z(toks.at(t, 4*e), k, xv)
			}
			for r := 0; r < R; r++ {
				VFMADD231PS(xv, h[r], acc[r*T+t])
			}
		}
	}
	// One prefetch per 64 bytes of each row: for these tiles of adjacent
	// rows one per 128 or 256 bytes (which dotF16RowsAVX512's spread rows
	// prefer) read DRAM 10-35% slower on the Zen 4 VM.
	whileRem(rem, 32, "f16steps", func() {
		step(0, nil, true)
		step(16, nil, false)
		rws.advance(64)
		toks.advance(128)
	})

	skip := label("f16step16")
	CMPQ(rem, U8(16))
	JB(LabelRef(skip))
	step(0, nil, false)
	rws.advance(32)
	toks.advance(64)
	SUBQ(U8(16), rem)
	Label(skip)

	remMask(rem, func(k reg.Register) { step(0, k, false) })

	os := load(Param("outStride"))
	SHLQ(U8(2), os)
	o := GP64()
	MOVQ(out, o)
	for t := 0; t < T; t++ {
		ys := make([]reg.VecVirtual, R)
		for r := range ys {
			ys[r] = f32EVEX.fold256(acc[r*T+t])
		}
		switch {
		case !quad:
			VMOVSS(f32EVEX.sum1(ys[0]), Mem{Base: o})
		case sp != nil:
			storeLanes(f32EVEX.sum4(ys), func(k int) Mem { return quarterAt(o, sp.oq, k) })
		case R == 4:
			VMOVUPS(f32EVEX.sum4(ys), Mem{Base: o})
		default:
			for len(ys) < 4 {
				ys = append(ys, ys[0])
			}
			s := f32EVEX.sum4(ys)
			storeFirstLanes(s, func(r int) Mem { return Mem{Base: o, Disp: 4 * r} }, R)
		}
		if t < T-1 {
			ADDQ(os, o)
		}
	}
}

// f16Spread locates the rows of a spread tile: rows i, Q+i, 2Q+i, 3Q+i
// (Q = rows/4) are qs bytes apart, their outputs oq bytes apart.
type f16Spread struct{ qs, oq reg.GPVirtual }

// f16SpreadTiles emits the tiles of the first 4·(rows/4) rows in the
// HW version: with Q = rows/4, tile i < Q takes rows i, Q+i, 2Q+i and
// 3Q+i (four DRAM streams, as dotF16RowsAVX512HW's groups), so each row
// is summed in the group order of the one-token kernel, whose groups are
// the same rows. On return w and out point at row 4Q and its output.
// See headNearTokens for the measurements.
func f16SpreadTiles(T int, w, out reg.GPVirtual) {
	q := load(Param("rows"))
	SHRQ(U8(2), q)
	done := label("f16spreaddone")
	JZ(LabelRef(done))
	sp := &f16Spread{qs: GP64(), oq: GP64()}
	MOVQ(q, sp.qs)
	stride := load(Param("stride"))
	SHLQ(U8(1), stride)
	IMULQ(stride, sp.qs) // bytes between the quarters' rows
	MOVQ(q, sp.oq)
	SHLQ(U8(2), sp.oq) // bytes between their outputs
	loop := label("f16spread")
	Label(loop)
	f16Tile(4, T, w, out, true, sp)
	stride = load(Param("stride"))
	LEAQ(Mem{Base: w, Index: stride, Scale: 2}, w)
	ADDQ(U8(4), out)
	DECQ(q)
	JNZ(LabelRef(loop))
	pastQuarters(w, sp.qs, out, sp.oq)
	Label(done)
}

func genDotI8MatMulVNNI() {
	TEXT(kernelName("dotI8MatMulVNNI"), NOSPLIT, dotI8MatMulSig)
	Pragma("noescape")
	kernelDoc("dotI8MatMulVNNI",
		fmt.Sprintf("dotI8MatMulVNNI is dotI8MatMul with AVX-512 VNNI: tiles of 4 rows × %d tokens,", headI8Tokens),
		"vpdpbusd(w+128, x) − bias[t], bias[t] = 128·Σx_t given by the caller.")
	tokensFor := func(R int) int {
		if R == 1 {
			return 8
		}
		return headI8Tokens
	}
	nearDoc("dotI8MatMulVNNI", headI8NearTokens)
	spread := 0
	if hwPrefetchOnly {
		spread = headI8NearTokens
	}
	fewTokenDrivers([]int{4, 1}, tokensFor, spread, i8Tile)
}

// headI8NearTokens: the most tokens dotI8MatMulVNNIHW takes in spread
// tiles with near prefetches (a verification pass of 8 drafted tokens). A
// 65536-row slice of an int8 head (168 MB) from DRAM on the Zen 5 VM,
// against dotI8MatMulVNNI (adjacent tiles, prefetches into L2),
// alternated in one process (2026-11-27, later), medians: one thread, 2
// tokens 5.3 ms against 7.2, 4 tokens 5.8-6.2 against 7.1-7.4, 5 tokens
// 6.4 against 8.5, 8 tokens 7.0 against 8.0, 9 tokens 7.4 against 7.6;
// two threads, 2 tokens 2.9 against 3.7, 4 tokens 3.2-3.3 against
// 3.8-3.9, 5 tokens 3.5 against 4.6, 9 tokens 3.7 against 3.9.
const headI8NearTokens = 9

// i8Tile emits one R×T tile of dotI8MatMulVNNI.
func i8Tile(R, T int, w, x, out, left reg.GPVirtual, g tileRows) {
	Commentf("tile %d rows × %d tokens", R, T)
	stride := load(Param("stride"))
	xs := load(Param("xStride"))
	rem := load(Param("n"))
	rws := newStrided(w, g.gap(stride), R)
	toks := newStrided(x, xs, T)
	flip := ZMM()
	VPBROADCASTD(bytes80, flip)
	acc := zmms(R * T) // [r·T + t]
	step := func(k reg.Register, pf bool) {
		u := make([]reg.VecVirtual, R)
		for r := range u {
			u[r] = ZMM()
			if pf {
				prefetch(rws.at(r, 0))
			}
			if k == nil {
				VPXORD(rws.at(r, 0), flip, u[r])
			} else {
				VMOVDQU8_Z(rws.at(r, 0), k, u[r])
				VPXORD(flip, u[r], u[r])
			}
		}
		for t := 0; t < T; t++ {
			xv := ZMM()
			if k == nil {
				VMOVDQU64(toks.at(t, 0), xv)
			} else {
				VMOVDQU8_Z(toks.at(t, 0), k, xv) // x = 0 past the end
			}
			for r := 0; r < R; r++ {
				vpdpbusd(xv, u[r], acc[r*T+t])
			}
		}
	}
	whileRem(rem, 64, "i8steps", func() {
		step(nil, true)
		rws.advance(64)
		toks.advance(64)
	})

	remMask(rem, func(k reg.Register) { step(k, false) })

	// bias of the tile's first token t0 = tokens − left.
	t0 := load(Param("tokens"))
	SUBQ(left, t0)
	bias := load(Param("bias").Base())
	LEAQ(Mem{Base: bias, Index: t0, Scale: 4}, bias)

	os := load(Param("outStride"))
	SHLQ(U8(2), os)
	o := GP64()
	MOVQ(out, o)
	for t := 0; t < T; t++ {
		ys := make([]reg.VecVirtual, R)
		for r := range ys {
			ys[r] = int32EVEX.fold256(acc[r*T+t])
		}
		b := XMM()
		VPBROADCASTD(Mem{Base: bias, Disp: 4 * t}, b)
		if R == 4 {
			s := int32EVEX.sum4(ys)
			VPSUBD(b, s, s)
			storeLanes(s, func(k int) Mem { return g.outAt(o, k) })
		} else {
			s := int32EVEX.sum1(ys[0])
			VPSUBD(b, s, s)
			VMOVD(s, Mem{Base: o})
		}
		if t < T-1 {
			ADDQ(os, o)
		}
	}
}

// headF16AVX2Tokens is the most tokens dotF16MatMulAVX2 takes in one call
// (cpu's tiledF16 splits more, in even tiles over L2-resident blocks).
const headF16AVX2Tokens = 5

// f16AVX2TileRows is the rows of a dotF16MatMulAVX2 tile of T tokens: the
// row kernel's two accumulators per (row, token), the widened rows and an
// activation vector fit the 16 ymm (2 rows up to 3 tokens: 12 + 2 + 1),
// and the rows of a tile share each activation load, which from 3 tokens
// on (30 KiB of activations at the 2B shape's 2560) come from L2 more
// than from L1.
func f16AVX2TileRows(T int) int {
	if T <= 3 {
		return 2
	}
	return 1
}

// genDotF16MatMulAVX2 writes dotF16MatMulAVX2: tiles of 1-2 adjacent rows
// × 1…5 tokens, each 8 elements of a row widened once for all the tokens,
// each (row, token) summed as dotF16RowsAVX2 sums the row (its two
// accumulators fed in the same order, then sum4's lane order for the rows
// it takes in groups of 4, sum1's for the others, then its scalar tail), so
// a token's logits are those it gets alone. Each row is prefetched 16 KiB
// ahead once per 64 bytes.
func genDotF16MatMulAVX2() {
	TEXT(kernelName("dotF16MatMulAVX2"), NOSPLIT, dotF16MatMulSig)
	Pragma("noescape")
	kernelDoc("dotF16MatMulAVX2",
		fmt.Sprintf("dotF16MatMulAVX2 is dotF16MatMul with F16C and FMA for 1…%d tokens: tiles of 1-2 rows × every token,", headF16AVX2Tokens),
		"each sum in dotF16RowsAVX2's order.")
	tokens := load(Param("tokens"))
	end := label("f16x2end")
	for T := 1; T <= headF16AVX2Tokens; T++ {
		next := label("f16x2tokens")
		CMPQ(tokens, U8(T))
		JNE(LabelRef(next))
		f16AVX2Rows(T)
		JMP(LabelRef(end))
		Label(next)
	}
	Label(end)
	VZEROUPPER()
	RET()
}

// f16AVX2Rows emits the row loop of dotF16MatMulAVX2 for T tokens: the
// first rows &^ 3 rows (which dotF16RowsAVX2 sums in groups of 4) in tiles
// of f16AVX2TileRows(T), then the last rows % 4 (which it sums alone) one
// at a time.
func f16AVX2Rows(T int) {
	w := load(Param("w").Base())
	out := load(Param("out").Base())
	for _, quad := range []bool{true, false} {
		R := 1
		cnt := load(Param("rows"))
		if quad {
			R = f16AVX2TileRows(T)
			ANDQ(I32(-4), cnt)
			if R == 2 {
				SHRQ(U8(1), cnt)
			}
		} else {
			ANDQ(U8(3), cnt)
		}
		loop, done := label("f16x2rows"), label("f16x2rowsdone")
		JZ(LabelRef(done))
		Label(loop)
		f16AVX2Tile(R, T, w, out, quad)
		stride := load(Param("stride"))
		SHLQ(U8(1), stride)
		nextRows(w, stride, out, R)
		DECQ(cnt)
		JNZ(LabelRef(loop))
		Label(done)
	}
}

// f16AVX2Tile emits one tile of dotF16MatMulAVX2: the R rows at w against
// T tokens, out[t·outStride + r] = the sum of row r and token t.
func f16AVX2Tile(R, T int, w, out reg.GPVirtual, quad bool) {
	Commentf("avx2 tile %d rows × %d tokens", R, T)
	xs := load(Param("xStride"))
	SHLQ(U8(2), xs)
	rem := load(Param("n"))
	stride := load(Param("stride"))
	SHLQ(U8(1), stride)
	rws := newStrided(w, stride, R)
	toks := newStrided(load(Param("x").Base()), xs, T)
	acc0, acc1 := ymms(R*T), ymms(R*T) // [r·T + t]
	// sub multiplies the 8 elements at element offset e into a.
	sub := func(e int, a []reg.VecVirtual) {
		h := make([]reg.VecVirtual, R)
		for r := range h {
			h[r] = YMM()
			VCVTPH2PS(rws.at(r, 2*e), h[r])
		}
		for t := 0; t < T; t++ {
			if R == 1 {
				VFMADD231PS(toks.at(t, 4*e), h[0], a[t])
				continue
			}
			xv := YMM()
			VMOVUPS(toks.at(t, 4*e), xv)
			for r := 0; r < R; r++ {
				VFMADD231PS(xv, h[r], a[r*T+t])
			}
		}
	}
	whileRem(rem, 32, "f16x2steps", func() {
		for r := 0; r < R; r++ {
			prefetch(rws.at(r, 0))
		}
		sub(0, acc0)
		sub(8, acc1)
		sub(16, acc0)
		sub(24, acc1)
		rws.advance(64)
		toks.advance(128)
	})
	for _, k := range []int{16, 8} {
		skip := label("f16x2part")
		CMPQ(rem, U8(k))
		JB(LabelRef(skip))
		sub(0, acc0)
		if k == 16 {
			sub(8, acc1)
		}
		rws.advance(2 * k)
		toks.advance(4 * k)
		SUBQ(U8(k), rem)
		Label(skip)
	}
	s := make([]reg.VecVirtual, R*T)
	for i := range s {
		VADDPS(acc1[i], acc0[i], acc0[i])
		if quad {
			s[i] = f32VEX.sum4([]reg.VecVirtual{acc0[i], acc0[i], acc0[i], acc0[i]})
		} else {
			s[i] = f32VEX.sum1(acc0[i])
		}
	}
	// The scalar tail (< 8 elements), one FMA per element as the row
	// kernel's (packed for its groups of 4: the same per lane).
	loop, done := label("f16x2tail"), label("f16x2taildone")
	TESTQ(rem, rem)
	JZ(LabelRef(done))
	Label(loop)
	for r := 0; r < R; r++ {
		g, h := GP32(), XMM()
		MOVWLZX(rws.at(r, 0), g)
		VMOVD(g, h)
		VCVTPH2PS(h, h)
		for t := 0; t < T; t++ {
			VFMADD231SS(toks.at(t, 0), h, s[r*T+t])
		}
	}
	rws.advance(2)
	toks.advance(4)
	DECQ(rem)
	JNZ(LabelRef(loop))
	Label(done)
	os := load(Param("outStride"))
	SHLQ(U8(2), os)
	o := GP64()
	MOVQ(out, o)
	for t := 0; t < T; t++ {
		for r := 0; r < R; r++ {
			VMOVSS(s[r*T+t], Mem{Base: o, Disp: 4 * r})
		}
		if t < T-1 {
			ADDQ(os, o)
		}
	}
}
