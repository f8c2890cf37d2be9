//go:build !purego

package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// sameInt32s runs each of versions through run into out (cleared first)
// and fails unless it wrote want; what, with %s for the version's name,
// says which call.
func sameInt32s[F any](t *testing.T, what string, want, out []int32, versions map[string]F, run func(f F, out []int32)) {
	t.Helper()
	for name, f := range versions {
		clear(out)
		run(f, out)
		if !slices.Equal(out, want) {
			t.Fatalf(what+":\n got %v\nwant %v", name, out, want)
		}
	}
}

func TestCPUVendorFamily(t *testing.T) {
	vendor, family := cpuVendorFamily()
	if len(vendor) != 12 || strings.ContainsRune(vendor, 0) {
		t.Fatalf("vendor %q is not 12 printable bytes", vendor)
	}
	if family < 3 {
		t.Fatalf("family %#x: no x86-64 CPU has a family below 3", family)
	}
	t.Logf("%s family %#x", vendor, family)
}

// TestPrefetchVersions: the prefetch versions (HW, Two; Lines) of
// dotF16RowsAVX512, ternaryRowsVNNI, dotI8RowsVNNI, dotBlockRowsVNNI,
// dotNibbleRowsVNNI, dotSixRowsVNNI, kScoresAVX512 and
// axpyF16Rows4AVX512, and of the
// few-token kernels (ternaryMatMulVNNI, dotI8MatMulVNNI, dotF16MatMul,
// dotBlockMatMulVNNI, dotNibbleMatMulVNNI, dotSixMatMulVNNI),
// whichever this machine takes, give the bits of the plain ones on every
// length and row count (TestDotF16Rows, TestTernaryRows, TestDotI8Rows and
// TestDotBlockRows check the ones the avx512vnni set takes against the Go
// twins).
// The avxvnni set's Two versions (ternaryRowsAVXVNNITwo, and the avx2
// kernels it takes: the heads' rows, dotF16RowsAVX2Two, dotI8RowsAVX2Two,
// dotBlockRowsAVX2Two, dotNibbleRowsAVX2Two and dotSixRowsAVX2Two, and
// attention's kScoresAVX2Two and axpyF16Rows4AVX2Two, and the few-token
// float16 head's dotF16MatMulAVX2Two) give the bits of the plain kernels
// on every length, stride and row count.
func TestPrefetchVersionsAVX2(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no AVX2 on this CPU: the versions cannot run")
	}
	rng := newRand()
	if hasAVXVNNI {
		sameTernaryRows(t, rng, "ternaryRowsAVXVNNI", ternaryRowsAVXVNNI, map[string]ternaryRowsFunc{"Two": ternaryRowsAVXVNNITwo})
	}
	sameI8Rows(t, rng, "dotI8RowsAVX2", dotI8RowsAVX2, map[string]i8RowsFunc{"Two": dotI8RowsAVX2Two})
	sameF16Rows(t, rng, "dotF16RowsAVX2", dotF16RowsAVX2, map[string]f16RowsFunc{"Two": dotF16RowsAVX2Two})
	sameBlockRows(t, rng, "dotBlockRowsAVX2", dotBlockRowsAVX2, map[string]blockRowsFunc{"Two": dotBlockRowsAVX2Two})
	sameNibbleRows(t, rng, "dotNibbleRowsAVX2", dotNibbleRowsAVX2, map[string]nibbleRowsFunc{"Two": dotNibbleRowsAVX2Two})
	sameSixRows(t, rng, "dotSixRowsAVX2", dotSixRowsAVX2, map[string]sixRowsFunc{"Two": dotSixRowsAVX2Two})
	sameKScores(t, rng, "kScoresAVX2", kScoresAVX2, map[string]kScoresFunc{"Two": kScoresAVX2Two})
	sameAxpyRows4(t, rng, "axpyF16Rows4AVX2", axpyF16Rows4AVX2, map[string]axpyRows4Func{"Two": axpyF16Rows4AVX2Two}, []int{16, 64, 128, 192})
	sameF16MatMul(t, rng, "dotF16MatMulAVX2", dotF16MatMulAVX2, map[string]f16MatMulFunc{"Two": dotF16MatMulAVX2Two}, 5)
}

func TestPrefetchVersions(t *testing.T) {
	if !hasAVX2 || !hasAVX512VNNI {
		t.Skip("no AVX-512 on this CPU: the versions cannot run")
	}
	rng := newRand()
	sameTernaryRows(t, rng, "ternaryRowsVNNI", ternaryRowsVNNI, map[string]ternaryRowsFunc{"HW": ternaryRowsVNNIHW, "Two": ternaryRowsVNNITwo})
	for _, n := range []int{0, 128, 256, 384, 2560} {
		for _, rows := range append(testRows, 130) {
			for _, tokens := range []int{1, 2, 3, 4, 5, 6, 9} {
				expectTernaryMatMul(t, ternaryMatMulVNNIHW, rng, n, rows, tokens)
				expectTernaryMatMul(t, ternaryMatMulVNNILines, rng, n, rows, tokens)
				if hasGFNI {
					expectTernaryMatMul(t, ternaryMatMulVNNIGFNI, rng, n, rows, tokens)
				}
			}
		}
	}
	sameI8Rows(t, rng, "dotI8RowsVNNI", dotI8RowsVNNI, map[string]i8RowsFunc{"HW": dotI8RowsVNNIHW, "Two": dotI8RowsVNNITwo})
	for _, n := range []int{0, 64, 65, 2560} {
		for _, rows := range append(testRows, 130) {
			for _, tokens := range []int{1, 2, 3, 4, 5, 9} {
				stride, xs, os := n+rng.IntN(4), n+rng.IntN(5), rows+rng.IntN(3)
				w := randomI8(rng, max(rows-1, 0)*stride+n, -128, 127, 0)
				x := randomI8(rng, (tokens-1)*xs+n, -127, 127, 0)
				want, out := make([]int32, (tokens-1)*os+rows), make([]int32, (tokens-1)*os+rows)
				dotI8MatMulGeneric(w, stride, rows, x, xs, n, tokens, want, os)
				sameInt32s(t, fmt.Sprintf("dotI8MatMulVNNI%%s: n %d rows %d tokens %d", n, rows, tokens), want, out,
					map[string]i8Version{"": i8Plain, "HW": i8HW, "Two": i8Two},
					func(v i8Version, out []int32) { biasedI8(v)(w, stride, rows, x, xs, n, tokens, out, os) })
			}
		}
	}
	sameBlockRows(t, rng, "dotBlockRowsVNNI", dotBlockRowsVNNI, map[string]blockRowsFunc{"HW": dotBlockRowsVNNIHW, "Two": dotBlockRowsVNNITwo})
	sameNibbleRows(t, rng, "dotNibbleRowsVNNI", dotNibbleRowsVNNI, map[string]nibbleRowsFunc{"HW": dotNibbleRowsVNNIHW, "Two": dotNibbleRowsVNNITwo})
	sameSixRows(t, rng, "dotSixRowsVNNI", dotSixRowsVNNI, map[string]sixRowsFunc{"HW": dotSixRowsVNNIHW, "Two": dotSixRowsVNNITwo})
	for _, f := range []func(w []byte, scales []uint16, rows int, x []int8, xBias []int32, n, tokens int, out []float32, outStride int){
		dotNibbleMatMulVNNI, dotNibbleMatMulVNNIHW,
	} {
		mm := checkDotNibbleMatMul(f)
		for _, n := range []int{128, 256, 2560} {
			for _, rows := range append(testRows, 130) {
				for _, tokens := range []int{1, 2, 4, 6, 7, 9} {
					expectNibbleMatMul(t, mm, dotNibbleRowsVNNI, rng, n, rows, tokens, false)
				}
			}
		}
	}
	for _, f := range []func(w []byte, scales []byte, rows int, x []int8, xBias []int32, n, tokens int, out []float32, outStride int){
		dotSixMatMulVNNI, dotSixMatMulVNNIHW,
	} {
		mm := checkDotSixMatMul(f)
		for _, n := range []int{256, 2560} {
			for _, rows := range append(testRows, 130) {
				for _, tokens := range []int{1, 2, 4, 5, 6, 11} {
					expectSixMatMul(t, mm, checkDotSixRows(dotSixRowsVNNI), rng, n, rows, tokens, false)
				}
			}
		}
	}
	for _, f := range []func(w []int8, scales []float32, group, rows int, x []int8, xBias []int32, n, tokens int, out []float32, outStride int){
		dotBlockMatMulVNNI, dotBlockMatMulVNNIHW,
	} {
		k := avx512VNNIKernels
		k.dotBlockRows = dotBlockRowsVNNI // the plain row kernel: each version gives its bits
		k.dotBlockMatMul = checkDotBlockMatMul(wholeBlocks(f, blockedBlocks(dotBlockRowsVNNI)))
		for _, group := range []int{16, 32} {
			for _, n := range []int{0, 64, 128, 2560} {
				for _, rows := range append(testRows, 130) {
					for _, tokens := range []int{1, 2, 4, 6, 7, 9} {
						expectBlockMatMul(t, k, rng, group, n, rows, tokens, false)
					}
				}
			}
		}
	}
	sameF16Rows(t, rng, "dotF16RowsAVX512", dotF16RowsAVX512, map[string]f16RowsFunc{"Two": dotF16RowsAVX512Two, "HW": dotF16RowsAVX512HW})
	sameKScores(t, rng, "kScoresAVX512", kScoresAVX512, map[string]kScoresFunc{"Two": kScoresAVX512Two})
	sameAxpyRows4(t, rng, "axpyF16Rows4AVX512", axpyF16Rows4AVX512, map[string]axpyRows4Func{"Two": axpyF16Rows4AVX512Two}, []int{16, 64, 128, 200})
	sameF16MatMul(t, rng, "dotF16MatMulAVX512", dotF16MatMulAVX512, map[string]f16MatMulFunc{"HW": dotF16MatMulAVX512HW, "Two": dotF16MatMulAVX512Two}, 9)
}

// The kernels' types, for the helpers below.
type (
	ternaryRowsFunc = func(w []byte, stride int, x []int8, out []int32)
	i8RowsFunc      = func(w []int8, stride int, x []int8, out []int32)
	f16RowsFunc     = func(w []uint16, stride int, x []float32, out []float32)
	blockRowsFunc   = func(w []int8, scales []float32, group int, x []int8, xBias []int32, out []float32)
	nibbleRowsFunc  = func(w []byte, scales []uint16, x []int8, xBias []int32, out []float32)
	sixRowsFunc     = func(w, scales []byte, x []int8, xBias []int32, out []float32)
	kScoresFunc     = func(kt []uint16, hd, n int, q []float32, nq int, out []float32, outStride int)
	axpyRows4Func   = func(a []float32, aStride, np int, v []uint16, stride int, y []float32, yStride, n int)
	f16MatMulFunc   = func(w []uint16, stride, rows int, x []float32, xStride, n, tokens int, out []float32, outStride int)
)

// sameF16MatMul fails the test unless each of versions gives plain's bits
// (a few-token float16 head of at most maxTokens tokens: tiledF16 splits
// more) on headMatMulShapes with random strides.
func sameF16MatMul(t *testing.T, rng *rand.Rand, plain string, f f16MatMulFunc, versions map[string]f16MatMulFunc, maxTokens int) {
	t.Helper()
	for _, s := range headMatMulShapes() {
		if s.tokens > maxTokens {
			continue
		}
		stride, xs, os := s.n+rng.IntN(4), s.n+rng.IntN(5), s.rows+rng.IntN(3)
		w := randomF16(rng, max(s.rows-1, 0)*stride+s.n)
		x := randomF32(rng, max(s.tokens-1, 0)*xs+s.n)
		size := max(s.tokens-1, 0)*os + s.rows
		want, out := make([]float32, size), make([]float32, size)
		f(w, stride, s.rows, x, xs, s.n, s.tokens, want, os)
		for name, v := range versions {
			clear(out)
			v(w, stride, s.rows, x, xs, s.n, s.tokens, out, os)
			for i := range out {
				if math.Float32bits(out[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%s%s: n %d rows %d tokens %d: out[%d] %g, %s %g", plain, name, s.n, s.rows, s.tokens, i, out[i], plain, want[i])
				}
			}
		}
	}
}

// sameFloat32s fails the test unless out holds want's bits; what, with %s
// for the version's name, says which call.
func sameFloat32s(t *testing.T, what, name string, want, out []float32) {
	t.Helper()
	for i := range want {
		if math.Float32bits(out[i]) != math.Float32bits(want[i]) {
			t.Fatalf(what+": [%d] %g, want %g", name, i, out[i], want[i])
		}
	}
}

// sameTernaryRows checks each of versions against the ternaryRows kernel
// plain (named name) on every length up to 4096, row count and stride.
func sameTernaryRows(t *testing.T, rng *rand.Rand, name string, plain ternaryRowsFunc, versions map[string]ternaryRowsFunc) {
	t.Helper()
	for n := 0; n <= 4096; n += 128 {
		for _, rows := range testRows {
			stride := n/4 + []int{0, 1, 31, 32, 77}[rng.IntN(5)]
			w := randomTernaryRows(rng, rows, n, stride)
			x := randomI8(rng, n, -128, 127, 127)
			want, out := make([]int32, rows), make([]int32, rows)
			plain(w, stride, x, want)
			sameInt32s(t, fmt.Sprintf("%s%%s: n %d rows %d stride %d", name, n, rows, stride), want, out, versions,
				func(f ternaryRowsFunc, out []int32) { f(w, stride, x, out) })
		}
	}
}

// sameI8Rows is sameTernaryRows for a dotI8Rows kernel.
func sameI8Rows(t *testing.T, rng *rand.Rand, name string, plain i8RowsFunc, versions map[string]i8RowsFunc) {
	t.Helper()
	for _, n := range []int{0, 1, 31, 32, 33, 63, 64, 65, 255, 256, 257, 1000, 2560} {
		for _, rows := range testRows {
			stride := n + rng.IntN(4)
			w := randomI8(rng, max(rows-1, 0)*stride+n, -128, 127, 0)
			x := randomI8(rng, n, -127, 127, 0)
			want, out := make([]int32, rows), make([]int32, rows)
			if rows == 0 {
				w = nil
			}
			plain(w, stride, x, want)
			sameInt32s(t, fmt.Sprintf("%s%%s: n %d rows %d stride %d", name, n, rows, stride), want, out, versions,
				func(f i8RowsFunc, out []int32) { f(w, stride, x, out) })
		}
	}
}

// sameF16Rows is sameTernaryRows for a dotF16Rows kernel.
func sameF16Rows(t *testing.T, rng *rand.Rand, name string, plain f16RowsFunc, versions map[string]f16RowsFunc) {
	t.Helper()
	for _, n := range floatLengths() {
		for _, rows := range testRows {
			stride := n + rng.IntN(4)
			w, x := randomF16(rng, rowsLen(rows, stride, n)), randomF32(rng, n)
			want := make([]float32, rows)
			plain(w, stride, x, want)
			for v, f := range versions {
				out := make([]float32, rows)
				f(w, stride, x, out)
				sameFloat32s(t, fmt.Sprintf("%s%%s: n %d rows %d", name, n, rows), v, want, out)
			}
		}
	}
}

// sameBlockRows is sameTernaryRows for a dotBlockRows kernel, groups of 16
// and 32.
func sameBlockRows(t *testing.T, rng *rand.Rand, name string, plain blockRowsFunc, versions map[string]blockRowsFunc) {
	t.Helper()
	for _, group := range []int{16, 32} {
		for _, n := range []int{0, 64, 128, 256, 2560} {
			for _, rows := range testRows {
				w, x := randomI8(rng, rows*n, -128, 127, 127), randomI8(rng, n, -127, 127, 127)
				scales := randomF32(rng, rows*(n/group))
				bias := make([]int32, n/4)
				blockBias(x, bias)
				want, out := make([]float32, rows), make([]float32, rows)
				plain(w, scales, group, x, bias, want)
				for v, f := range versions {
					clear(out)
					f(w, scales, group, x, bias, out)
					sameFloat32s(t, fmt.Sprintf("%s%%s: group %d n %d rows %d", name, group, n, rows), v, want, out)
				}
			}
		}
	}
}

// sameNibbleRows is sameTernaryRows for a dotNibbleRows kernel.
func sameNibbleRows(t *testing.T, rng *rand.Rand, name string, plain nibbleRowsFunc, versions map[string]nibbleRowsFunc) {
	t.Helper()
	for _, n := range []int{128, 256, 2560} {
		for _, rows := range testRows {
			_, x, _, w, scales := randomNibbleHead(rng, n, rows, false)
			bias := make([]int32, n/4)
			nibbleBias(x, bias)
			want, out := make([]float32, rows), make([]float32, rows)
			plain(w, scales, x, bias, want)
			for v, f := range versions {
				clear(out)
				f(w, scales, x, bias, out)
				sameFloat32s(t, fmt.Sprintf("%s%%s: n %d rows %d", name, n, rows), v, want, out)
			}
		}
	}
}

// sameSixRows is sameTernaryRows for a dotSixRows kernel (through its
// bounds check, which pads its reads).
func sameSixRows(t *testing.T, rng *rand.Rand, name string, plain sixRowsFunc, versions map[string]sixRowsFunc) {
	t.Helper()
	for _, n := range []int{256, 512, 2560} {
		for _, rows := range testRows {
			sh := randomSixHead(rng, n, rows, false)
			want, out := make([]float32, rows), make([]float32, rows)
			checkDotSixRows(plain)(sh.w, sh.scales, sh.xs, sh.bias, want)
			for v, f := range versions {
				clear(out)
				checkDotSixRows(f)(sh.w, sh.scales, sh.xs, sh.bias, out)
				sameFloat32s(t, fmt.Sprintf("%s%%s: n %d rows %d", name, n, rows), v, want, out)
			}
		}
	}
}

// sameKScores is sameTernaryRows for a kScores kernel (whole blocks of 16
// positions, 1-4 queries).
func sameKScores(t *testing.T, rng *rand.Rand, name string, plain kScoresFunc, versions map[string]kScoresFunc) {
	t.Helper()
	for _, hd := range []int{64, 128} {
		for _, n := range []int{16, 32, 64, 256, 4000} {
			for nq := 1; nq <= 4; nq++ {
				kt, q := randomF16(rng, n*hd), randomF32(rng, nq*hd)
				want, out := make([]float32, nq*n), make([]float32, nq*n)
				plain(kt, hd, n, q, nq, want, n)
				for v, f := range versions {
					clear(out)
					f(kt, hd, n, q, nq, out, n)
					sameFloat32s(t, fmt.Sprintf("%s%%s: hd %d n %d queries %d", name, hd, n, nq), v, want, out)
				}
			}
		}
	}
}

// sameAxpyRows4 is sameTernaryRows for an axpyF16Rows4 kernel, on the
// lengths ns.
func sameAxpyRows4(t *testing.T, rng *rand.Rand, name string, plain axpyRows4Func, versions map[string]axpyRows4Func, ns []int) {
	t.Helper()
	for _, n := range ns {
		for _, rows := range []int{0, 1, 3, 9, 130} {
			a, v := randomF32(rng, 4*max(rows, 1)), randomF16(rng, max(rows, 1)*n)
			y0 := randomF32(rng, 4*n)
			want := slices.Clone(y0)
			plain(a, max(rows, 1), rows, v, n, want, n, n)
			for vn, f := range versions {
				out := slices.Clone(y0)
				f(a, max(rows, 1), rows, v, n, out, n, n)
				sameFloat32s(t, fmt.Sprintf("%s%%s: n %d rows %d", name, n, rows), vn, want, out)
			}
		}
	}
}
