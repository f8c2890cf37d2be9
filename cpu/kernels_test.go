package cpu

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/cpu"

	"github.com/bitvk/bitvk/nn"
)

// Kernel tests, in the order of trust: the Go twins against naive loops
// written from the formulas in kernels.go (code(row, i), nn.F16ToF32), then
// every kernel set of this machine against the twins, for every length
// from 0 up. Integer kernels must match bit for bit; float kernels within
// relF16·Σ|w_i·x_i| (dotF16Rows) and ulpsAxpy float32 roundings (axpyF16),
// since their summation order is their own.
//
// Every slice handed to a kernel sits at an odd offset in a larger backing
// array whose elements outside the slice (after its end, and between rows
// when the stride exceeds the row) hold "poison": values that change the
// result if a kernel reads them, and that must be unchanged afterwards if
// they lie in an output.

const (
	// relF16 bounds |kernel − twin| / Σ|w_i·x_i| for dotF16Rows. Both sums
	// round ~n times at 2⁻²⁴; for random data the error grows like √n, and
	// the largest ratio seen over these tests is 2.5e-7 (logged), while
	// dropping one of 2560 terms moves the sum by ~4e-4 of Σ|w_i·x_i|.
	relF16 = 1e-5
	// ulpsAxpy: the twin rounds a·h then y + a·h, FMA rounds once, so
	// |kernel − twin| ≤ 2⁻²³·(|a·h| + |y| + |y'|); twice that allowed.
	ulpsAxpy = 0x1p-22
)

func newRand() *rand.Rand { return rand.New(rand.NewPCG(1, 2)) }

// poisoned returns a slice of length n at offset off in a backing array
// with extra elements after it; every element outside s is fill, and s
// has capacity up to the end of the backing array.
func poisoned[T any](n, off, extra int, fill T) (s, all []T) {
	all = make([]T, off+n+extra)
	for i := range all {
		all[i] = fill
	}
	return all[off : off+n], all
}

// aligned returns a copy of s that starts on a 64-byte boundary, as the
// backend's buffers do (allocations of whole pages; the 2B shape's weight
// rows are whole lines apart): for benchmarks, whose data from poisoned
// starts 0-63 bytes into a line, so that every 32- or 64-byte load of it
// would straddle two lines (a prompt's products on the Intel Xeon VM,
// misaligned against aligned: avx512vnni 224-261 GMAC/s against 268-294,
// avxvnni's 1 × 8 tiles 63-97 against 106-133).
func aligned[T any](s []T) []T {
	var zero T
	size := int(unsafe.Sizeof(zero))
	buf := make([]T, len(s)+64/size)
	skip := 0
	for uintptr(unsafe.Pointer(unsafe.SliceData(buf[skip:])))%64 != 0 {
		skip++
	}
	a := buf[skip : skip+len(s)]
	copy(a, s)
	return a
}

// randomTernaryRows fills rows rows of n weights, stride bytes apart, with
// random codes 0..2; the bytes between rows and after the last are 0xFF
// (code 3, which the layout never holds).
func randomTernaryRows(rng *rand.Rand, rows, n, stride int) []byte {
	size := 0
	if rows > 0 {
		size = (rows-1)*stride + n/4
	}
	w, _ := poisoned(size, rng.IntN(64), 64, byte(0xFF))
	for r := 0; r < rows; r++ {
		for j := 0; j < n/4; j++ {
			w[r*stride+j] = byte(rng.IntN(3)<<6 | rng.IntN(3)<<4 | rng.IntN(3)<<2 | rng.IntN(3))
		}
	}
	return w
}

// randomI8 returns n random activations in [lo, hi] with both ends
// present, followed by poison.
func randomI8(rng *rand.Rand, n, lo, hi int, poison int8) []int8 {
	x, _ := poisoned(n, rng.IntN(64), 128, poison)
	for i := range x {
		x[i] = int8(lo + rng.IntN(hi-lo+1))
	}
	if n > 1 {
		x[rng.IntN(n)], x[rng.IntN(n)] = int8(lo), int8(hi)
	}
	return x
}

func naiveTernary(row []byte, x []int8) int32 {
	var s int32
	for i := range x {
		s += code(row, i) * int32(x[i])
	}
	return s
}

func TestGenericTwins(t *testing.T) {
	rng := newRand()
	t.Run("ternaryRows", func(t *testing.T) {
		for _, n := range []int{0, 128, 256, 1280} {
			for rows := 0; rows < 6; rows++ {
				stride := n/4 + rng.IntN(40)
				w, x := randomTernaryRows(rng, rows, n, stride), randomI8(rng, n, -128, 127, 0)
				out := make([]int32, rows)
				ternaryRowsGeneric(w, stride, x, out)
				for r := range out {
					if want := naiveTernary(w[r*stride:], x); out[r] != want {
						t.Fatalf("n %d row %d: %d, naive %d", n, r, out[r], want)
					}
				}
			}
		}
	})
	t.Run("ternaryMatMul", func(t *testing.T) {
		n, rows, tokens, stride, xs, os := 256, 5, 3, 70, 260, 7
		w, x := randomTernaryRows(rng, rows, n, stride), randomI8(rng, (tokens-1)*xs+n, -128, 127, 0)
		out := make([]int32, (tokens-1)*os+rows)
		ternaryMatMulGeneric(w, stride, rows, x, xs, n, tokens, out, os)
		for tk := 0; tk < tokens; tk++ {
			for r := 0; r < rows; r++ {
				if got, want := out[tk*os+r], naiveTernary(w[r*stride:], x[tk*xs:tk*xs+n]); got != want {
					t.Fatalf("token %d row %d: %d, naive %d", tk, r, got, want)
				}
			}
		}
	})
	t.Run("dotF16Rows", func(t *testing.T) {
		for _, n := range []int{0, 1, 7, 100, 2560} {
			w, x := randomF16(rng, 3*n+5), randomF32(rng, n)
			out := make([]float32, 3)
			dotF16RowsGeneric(w, n+2, x, out)
			for r := range out {
				var s, abs float64
				for i := range x {
					p := float64(nn.F16ToF32(w[r*(n+2)+i])) * float64(x[i])
					s, abs = s+p, abs+math.Abs(p)
				}
				// A sequential float32 sum is within n·2⁻²⁴·Σ|p| of the exact one.
				if d := math.Abs(float64(out[r]) - s); d > float64(n)*0x1p-24*abs {
					t.Fatalf("n %d row %d: %g, naive %g", n, r, out[r], s)
				}
			}
		}
	})
	t.Run("axpyF16", func(t *testing.T) {
		v, y := randomF16(rng, 300), randomF32(rng, 300)
		y0 := slices.Clone(y)
		axpyF16Generic(-0.75, v, y)
		for i := range y {
			want := float64(y0[i]) - 0.75*float64(nn.F16ToF32(v[i]))
			if d := math.Abs(float64(y[i]) - want); d > 0x1p-23*(math.Abs(want)+math.Abs(float64(y0[i]))+1) {
				t.Fatalf("i %d: %g, naive %g", i, y[i], want)
			}
		}
	})
	t.Run("dotI8Rows", func(t *testing.T) {
		n := 300
		w, x := randomI8(rng, 3*n, -128, 127, 0), randomI8(rng, n, -127, 127, 0)
		out := make([]int32, 3)
		dotI8RowsGeneric(w, n, x, out)
		for r := range out {
			var s int64
			for i := range x {
				s += int64(w[r*n+i]) * int64(x[i])
			}
			if int64(out[r]) != s {
				t.Fatalf("row %d: %d, naive %d", r, out[r], s)
			}
		}
	})
	t.Run("sumBytes", func(t *testing.T) {
		b := make([]byte, 64*37)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		var want uint64
		for i := 0; i < len(b); i += 8 {
			want += binary.LittleEndian.Uint64(b[i:])
		}
		if got := sumBytesGeneric(b); got != want {
			t.Fatalf("%#x, naive %#x", got, want)
		}
	})
}

// forEachSet runs f as a subtest for every kernel set but the twins.
func forEachSet(t *testing.T, f func(t *testing.T, k kernels)) {
	for _, k := range kernelSets() {
		if k.name == generic.name {
			continue
		}
		t.Run(k.name, func(t *testing.T) { f(t, k) })
	}
}

// testRows are the row counts tried: every remainder of a row group, and
// a few groups.
var testRows = []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 33}

const sentinelI32 = int32(-0x5A5A5A5B)

func TestTernaryRows(t *testing.T) {
	forEachSet(t, func(t *testing.T, k kernels) {
		rng := newRand()
		var ns []int
		for n := 0; n <= 4096; n += 128 {
			ns = append(ns, n)
		}
		ns = append(ns, 6912)
		for _, n := range ns {
			for _, rows := range testRows {
				stride := n/4 + []int{0, 1, 31, 32, 77}[rng.IntN(5)]
				w := randomTernaryRows(rng, rows, n, stride)
				x := randomI8(rng, n, -128, 127, 127)
				out, all := poisoned(rows, 1+rng.IntN(7), 16, sentinelI32)
				want := make([]int32, rows)
				ternaryRowsGeneric(w, stride, x, want)
				k.ternaryRows(w, stride, x, out)
				if !slices.Equal(out, want) {
					t.Fatalf("n %d rows %d stride %d:\n got %v\nwant %v", n, rows, stride, out, want)
				}
				checkPoison(t, all, out, sentinelI32)
			}
		}
	})
}

// TestTernaryExtremes: the largest sums the contract allows, n = 2²¹
// weights of code 2 against x = −128 (Σ = −2²⁹) and x = 127, which fill
// the VNNI kernels' scaled int32 lanes to exactly −2³¹.
func TestTernaryExtremes(t *testing.T) {
	n := 1 << 21
	w := make([]byte, 5*n/4)
	for i := range w {
		w[i] = 0xAA // codes 2, 2, 2, 2
	}
	for _, xv := range []int8{-128, 127} {
		x := make([]int8, n)
		for i := range x {
			x[i] = xv
		}
		forEachSet(t, func(t *testing.T, k kernels) {
			for _, rows := range []int{1, 5} {
				out := make([]int32, rows)
				k.ternaryRows(w, n/4, x, out)
				for r, got := range out {
					if want := int32(2 * int(xv) * n); got != want {
						t.Fatalf("ternaryRows x=%d row %d: %d, want %d", xv, r, got, want)
					}
				}
				for _, tokens := range []int{2, 3, 4, 5, 8, 12} { // 3-12: avxvnni's tiles (all outputs at out[0:rows], wider than its spans)
					k.ternaryMatMul(w, n/4, rows, x, 0, n, tokens, out, 0)
					if want := int32(2 * int(xv) * n); out[0] != want {
						t.Fatalf("ternaryMatMul x=%d, %d tokens: %d, want %d", xv, tokens, out[0], want)
					}
				}
			}
		})
	}
}

func TestTernaryMatMul(t *testing.T) {
	type shape struct{ n, rows, tokens int }
	var shapes []shape
	tokensList := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 33}
	for _, n := range []int{0, 128, 256, 384} {
		for _, rows := range testRows {
			for _, tokens := range tokensList {
				shapes = append(shapes, shape{n, rows, tokens})
			}
		}
	}
	for _, rows := range []int{4, 5, 13} {
		for _, tokens := range []int{5, 7, 33} {
			shapes = append(shapes, shape{2560, rows, tokens}, shape{6912, rows, tokens})
		}
	}
	forEachSet(t, func(t *testing.T, k kernels) {
		rng := newRand()
		for _, s := range shapes {
			expectTernaryMatMul(t, k.ternaryMatMul, rng, s.n, s.rows, s.tokens)
		}
	})
}

// expectTernaryMatMul runs f on random rows, activations and strides of the
// given shape (the gaps between tokens and around the outputs poisoned)
// and fails unless it writes exactly what the twin writes.
func expectTernaryMatMul(t *testing.T, f func(w []byte, stride, rows int, x []int8, xStride, n, tokens int, out []int32, outStride int), rng *rand.Rand, n, rows, tokens int) {
	t.Helper()
	stride := n/4 + rng.IntN(40)
	xs := n + rng.IntN(40)
	os := rows + rng.IntN(4)
	w := randomTernaryRows(rng, rows, n, stride)
	var x []int8
	var out, want, all []int32
	if tokens > 0 {
		x = randomI8(rng, (tokens-1)*xs+n, -128, 127, 127)
		for tk := 0; tk < tokens-1; tk++ { // poison the gaps between tokens
			for i := n; i < xs; i++ {
				x[tk*xs+i] = 127
			}
		}
		out, all = poisoned((tokens-1)*os+rows, 1+rng.IntN(7), 16, sentinelI32)
		want = slices.Clone(out)
	}
	ternaryMatMulGeneric(w, stride, rows, x, xs, n, tokens, want, os)
	f(w, stride, rows, x, xs, n, tokens, out, os)
	for i := range out {
		if out[i] != want[i] {
			t.Fatalf("n %d rows %d tokens %d strides %d %d %d: first difference at %d (token %d, row %d): %d, want %d",
				n, rows, tokens, stride, xs, os, i, i/os, i%os, out[i], want[i])
		}
	}
	checkPoison(t, all, out, sentinelI32)
}

func randomF16(rng *rand.Rand, n int) []uint16 {
	w, _ := poisoned(n, rng.IntN(32), 64, uint16(0x7BFF)) // poison 65504
	for i := range w {
		w[i] = nn.F32ToF16(float32(rng.NormFloat64()))
	}
	return w
}

func randomF32(rng *rand.Rand, n int) []float32 {
	x, _ := poisoned(n, rng.IntN(16), 64, float32(1e6))
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	return x
}

// floatLengths: every length 0..300, and the model width.
func floatLengths() []int {
	var ns []int
	for n := 0; n <= 300; n++ {
		ns = append(ns, n)
	}
	return append(ns, 2560)
}

// rowsLen is the elements rows rows of n, stride apart, span (0 for none).
func rowsLen(rows, stride, n int) int {
	if rows == 0 {
		return 0
	}
	return (rows-1)*stride + n
}

func TestDotF16Rows(t *testing.T) {
	forEachSet(t, func(t *testing.T, k kernels) {
		rng := newRand()
		var worst float64
		for _, n := range floatLengths() {
			for _, rows := range testRows {
				stride := n + rng.IntN(4)
				w := randomF16(rng, rowsLen(rows, stride, n))
				for r := 0; r+1 < rows; r++ { // poison the gaps between rows
					for i := n; i < stride; i++ {
						w[r*stride+i] = 0x7BFF
					}
				}
				x := randomF32(rng, n)
				out, all := poisoned(rows, 1+rng.IntN(7), 16, float32(math.NaN()))
				want := make([]float32, rows)
				dotF16RowsGeneric(w, stride, x, want)
				k.dotF16Rows(w, stride, x, out)
				for r := range out {
					var abs float64
					for i := range x {
						abs += math.Abs(float64(f16Table[w[r*stride+i]]) * float64(x[i]))
					}
					d := math.Abs(float64(out[r]) - float64(want[r]))
					if !(d <= relF16*abs) {
						t.Fatalf("n %d rows %d row %d: %g, twin %g (Σ|wx| %g)", n, rows, r, out[r], want[r], abs)
					}
					if abs > 0 {
						worst = max(worst, d/abs)
					}
				}
				checkPoisonFunc(t, all, out, func(v float32) bool { return v != v })
			}
		}
		t.Logf("largest |kernel − twin| / Σ|wx|: %.2g", worst)
	})
}

// TestKScores: every set's kScores against the twin (within float32
// rounding: the assembly fuses each multiply-add), and bit for bit against
// itself with one query at a time and with fewer positions (a score's
// chain does not depend on the call), over whole and partial blocks of 16
// positions, query counts beyond the kernels' four, strided outputs whose
// gaps stay untouched.
func TestKScores(t *testing.T) {
	forEachSet(t, func(t *testing.T, k kernels) {
		rng := newRand()
		var worst float64
		for _, hd := range []int{1, 2, 64, 80, 128} {
			for _, n := range []int{1, 15, 16, 17, 33, 100, 128, 129, 300} {
				for _, nq := range []int{1, 2, 3, 4, 5, 8} {
					kt := randomF16(rng, (n+kBlock-1)/kBlock*kBlock*hd)
					q := randomF32(rng, nq*hd)
					stride := n + rng.IntN(5)
					out, all := poisoned((nq-1)*stride+n, 1+rng.IntN(7), 16, float32(math.NaN()))
					want := make([]float32, nq*n)
					kScoresGeneric(kt, hd, n, q, nq, want, n)
					k.kScores(kt, hd, n, q, nq, out, stride)
					for j := 0; j < nq; j++ {
						for p := 0; p < n; p++ {
							var abs float64
							for d := 0; d < hd; d++ {
								abs += math.Abs(float64(q[j*hd+d]) * float64(f16Table[kt[p/kBlock*kBlock*hd+d*kBlock+p%kBlock]]))
							}
							got, w := out[j*stride+p], want[j*n+p]
							if d := math.Abs(float64(got) - float64(w)); !(d <= relF16*abs) {
								t.Fatalf("head size %d, %d positions, %d queries: query %d position %d: %g, twin %g (Σ|qk| %g)", hd, n, nq, j, p, got, w, abs)
							} else if abs > 0 {
								worst = max(worst, d/abs)
							}
						}
						for p := n; p < stride && j+1 < nq; p++ { // the gap to the next query's row
							if v := out[j*stride+p]; v == v {
								t.Fatalf("head size %d, %d positions, %d queries: the gap after query %d was written (%g at %d)", hd, n, nq, j, v, p)
							}
						}
						one := make([]float32, n)
						k.kScores(kt, hd, n, q[j*hd:(j+1)*hd], 1, one, n)
						m := 1 + rng.IntN(n)
						fewer := make([]float32, m)
						k.kScores(kt, hd, m, q[j*hd:(j+1)*hd], 1, fewer, m)
						for p := 0; p < n; p++ {
							if math.Float32bits(one[p]) != math.Float32bits(out[j*stride+p]) || p < m && math.Float32bits(fewer[p]) != math.Float32bits(one[p]) {
								t.Fatalf("head size %d, %d positions, %d queries: query %d position %d: %g in the call, %g alone, %v over %d positions (not bit-identical)", hd, n, nq, j, p, out[j*stride+p], one[p], fewer[min(p, m-1)], m)
							}
						}
					}
					checkPoisonFunc(t, all, out, func(v float32) bool { return v != v })
				}
			}
		}
		t.Logf("largest |kernel − twin| / Σ|qk|: %.2g", worst)
	})
}

func TestAxpyF16(t *testing.T) {
	forEachSet(t, func(t *testing.T, k kernels) {
		rng := newRand()
		for _, n := range floatLengths() {
			a := float32(rng.NormFloat64())
			v := randomF16(rng, n)
			y, all := poisoned(n, rng.IntN(16), 40, float32(math.NaN()))
			for i := range y {
				y[i] = float32(rng.NormFloat64())
			}
			y0, want := slices.Clone(y), slices.Clone(y)
			axpyF16Generic(a, v, want)
			k.axpyF16(a, v, y)
			for i := range y {
				ah := math.Abs(float64(a) * float64(f16Table[v[i]]))
				tol := ulpsAxpy * (ah + math.Abs(float64(y0[i])) + math.Abs(float64(want[i])))
				if d := math.Abs(float64(y[i]) - float64(want[i])); !(d <= tol) {
					t.Fatalf("n %d i %d: %g, twin %g", n, i, y[i], want[i])
				}
			}
			checkPoisonFunc(t, all, y, func(v float32) bool { return v != v })
		}
	})
}

// sameBits fails the test unless got and want hold the same float32 bits.
func sameBits(t *testing.T, what string, got, want []float32) {
	t.Helper()
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s: element %d is %g, want %g", what, i, got[i], want[i])
		}
	}
}

// randomVRows returns rows rows of n random float16 values, stride apart
// (n to n+4), the gaps between rows holding 65504, which no kernel may add.
func randomVRows(rng *rand.Rand, rows, n int) (v []uint16, stride int) {
	stride = n + rng.IntN(5)
	size := 0
	if rows > 0 {
		size = (rows-1)*stride + n
	}
	v = randomF16(rng, size)
	for r := 0; r+1 < rows; r++ {
		for i := n; i < stride; i++ {
			v[r*stride+i] = 0x7BFF
		}
	}
	return v, stride
}

// TestAxpyF16Rows: every set's axpyF16Rows is bit for bit its axpyF16 per
// row, for every length 0…300 and the head width, and up to 9 rows.
func TestAxpyF16Rows(t *testing.T) {
	for _, k := range kernelSets() {
		t.Run(k.name, func(t *testing.T) {
			rng := newRand()
			for _, n := range append(floatLengths(), 128) {
				for _, rows := range []int{0, 1, 2, 3, 9} {
					v, stride := randomVRows(rng, rows, n)
					a := randomF32(rng, rows)
					y, all := poisoned(n, rng.IntN(16), 40, float32(math.NaN()))
					for i := range y {
						y[i] = float32(rng.NormFloat64())
					}
					want := slices.Clone(y)
					for p := range a {
						k.axpyF16(a[p], v[p*stride:p*stride+n], want)
					}
					k.axpyF16Rows(a, v, stride, y)
					sameBits(t, fmt.Sprintf("n %d rows %d, against per row", n, rows), y, want)
					checkPoisonFunc(t, all, y, func(v float32) bool { return v != v })
				}
			}
		})
	}
}

func TestDotI8Rows(t *testing.T) {
	forEachSet(t, func(t *testing.T, k kernels) {
		rng := newRand()
		for _, n := range floatLengths() {
			for _, rows := range testRows {
				stride := n + rng.IntN(40)
				size := 0
				if rows > 0 {
					size = (rows-1)*stride + n
				}
				w := randomI8(rng, size, -128, 127, 127)
				for r := 0; r+1 < rows; r++ {
					for i := n; i < stride; i++ {
						w[r*stride+i] = 127
					}
				}
				x := randomI8(rng, n, -127, 127, 127)
				checkDotI8(t, k, w, stride, x, rows, rng)
			}
		}
		// The largest products: w = −128 against x = ±127, and 127 against ±127.
		for _, n := range []int{31, 64, 2560} {
			for _, wv := range []int8{-128, 127} {
				for _, xv := range []int8{-127, 127} {
					w, x := make([]int8, 5*n), make([]int8, n)
					for i := range w {
						w[i] = wv
					}
					for i := range x {
						x[i] = xv
					}
					checkDotI8(t, k, w, n, x, 5, rng)
				}
			}
		}
	})
}

func checkDotI8(t *testing.T, k kernels, w []int8, stride int, x []int8, rows int, rng *rand.Rand) {
	t.Helper()
	out, all := poisoned(rows, 1+rng.IntN(7), 16, sentinelI32)
	want := make([]int32, rows)
	dotI8RowsGeneric(w, stride, x, want)
	k.dotI8Rows(w, stride, x, out)
	if !slices.Equal(out, want) {
		t.Fatalf("n %d rows %d stride %d:\n got %v\nwant %v", len(x), rows, stride, out, want)
	}
	checkPoison(t, all, out, sentinelI32)
}

// matMulShape is a shape the few-token head kernels are tried on.
type matMulShape struct{ n, rows, tokens int }

func headMatMulShapes() []matMulShape {
	var shapes []matMulShape
	for _, n := range []int{0, 1, 15, 16, 17, 31, 32, 33, 48, 63, 64, 65, 100, 128, 144, 191, 200, 256, 300} {
		for _, rows := range testRows {
			for _, tokens := range []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 17} {
				shapes = append(shapes, matMulShape{n, rows, tokens})
			}
		}
	}
	for _, rows := range []int{4, 7, 130} {
		for _, tokens := range []int{1, 3, 9, 16} {
			shapes = append(shapes, matMulShape{2560, rows, tokens})
		}
	}
	return shapes
}

// TestDotF16MatMul: every set's few-token head gives each token exactly
// (bit for bit) what the set's dotF16Rows gives that token alone, the
// batch invariance speculative decoding relies on; the twin is the twin's
// dotF16Rows per token, so the float tolerance of TestDotF16Rows carries
// over.
func TestDotF16MatMul(t *testing.T) {
	for _, k := range kernelSets() {
		t.Run(k.name, func(t *testing.T) {
			rng := newRand()
			for _, s := range headMatMulShapes() {
				stride := s.n + rng.IntN(4)
				xs := s.n + rng.IntN(5)
				os := s.rows + rng.IntN(3)
				size := 0
				if s.rows > 0 {
					size = (s.rows-1)*stride + s.n
				}
				w := randomF16(rng, size)
				for r := 0; r+1 < s.rows; r++ { // poison the gaps between rows
					for i := s.n; i < stride; i++ {
						w[r*stride+i] = 0x7BFF
					}
				}
				var x []float32
				var out, all []float32
				if s.tokens > 0 {
					x = randomF32(rng, (s.tokens-1)*xs+s.n)
					for tk := 0; tk+1 < s.tokens; tk++ {
						for i := s.n; i < xs; i++ {
							x[tk*xs+i] = 1e6
						}
					}
					out, all = poisoned((s.tokens-1)*os+s.rows, 1+rng.IntN(7), 16, float32(math.NaN()))
				}
				k.dotF16MatMul(w, stride, s.rows, x, xs, s.n, s.tokens, out, os)
				want := make([]float32, s.rows)
				for tk := 0; tk < s.tokens; tk++ {
					k.dotF16Rows(w, stride, x[tk*xs:tk*xs+s.n], want)
					for r, v := range want {
						if g := out[tk*os+r]; math.Float32bits(g) != math.Float32bits(v) {
							t.Fatalf("n %d rows %d tokens %d: token %d row %d: %g, alone %g", s.n, s.rows, s.tokens, tk, r, g, v)
						}
					}
				}
				if s.tokens > 0 {
					for tk := 0; tk+1 < s.tokens; tk++ { // the gaps between output rows are untouched
						for i := s.rows; i < os; i++ {
							if v := out[tk*os+i]; v == v {
								t.Fatalf("n %d rows %d tokens %d: wrote out[%d] between tokens", s.n, s.rows, s.tokens, tk*os+i)
							}
						}
					}
					checkPoisonFunc(t, all, out, func(v float32) bool { return v != v })
				}
			}
		})
	}
}

// TestDotI8MatMul: every set's few-token int8 head against the twin (exact
// integers), the twin against dotI8Rows per token.
func TestDotI8MatMul(t *testing.T) {
	for _, k := range kernelSets() {
		t.Run(k.name, func(t *testing.T) {
			rng := newRand()
			shapes := headMatMulShapes()
			for _, n := range []int{64, 2560} { // the largest products
				shapes = append(shapes, matMulShape{n, 5, 7}, matMulShape{n, 8, 5})
			}
			for si, s := range shapes {
				stride := s.n + rng.IntN(40)
				xs := s.n + rng.IntN(40)
				os := s.rows + rng.IntN(3)
				size := 0
				if s.rows > 0 {
					size = (s.rows-1)*stride + s.n
				}
				extreme := si >= len(shapes)-4
				w := randomI8(rng, size, -128, 127, 127)
				for r := 0; r+1 < s.rows; r++ {
					for i := s.n; i < stride; i++ {
						w[r*stride+i] = 127
					}
				}
				var x []int8
				var out, all, want []int32
				if s.tokens > 0 {
					x = randomI8(rng, (s.tokens-1)*xs+s.n, -127, 127, 127)
					for tk := 0; tk+1 < s.tokens; tk++ {
						for i := s.n; i < xs; i++ {
							x[tk*xs+i] = 127
						}
					}
					out, all = poisoned((s.tokens-1)*os+s.rows, 1+rng.IntN(7), 16, sentinelI32)
					want = slices.Clone(out)
				}
				if extreme {
					for i := range w {
						w[i] = []int8{-128, 127}[si%2]
					}
					for i := range x {
						x[i] = []int8{-127, 127}[si/2%2]
					}
				}
				dotI8MatMulGeneric(w, stride, s.rows, x, xs, s.n, s.tokens, want, os)
				k.dotI8MatMul(w, stride, s.rows, x, xs, s.n, s.tokens, out, os)
				if !slices.Equal(out, want) {
					t.Fatalf("n %d rows %d tokens %d:\n got %v\nwant %v", s.n, s.rows, s.tokens, out, want)
				}
				alone := make([]int32, s.rows)
				for tk := 0; tk < s.tokens; tk++ {
					k.dotI8Rows(w, stride, x[tk*xs:tk*xs+s.n], alone)
					if !slices.Equal(alone, out[tk*os:tk*os+s.rows]) {
						t.Fatalf("n %d rows %d tokens %d: token %d differs from dotI8Rows alone", s.n, s.rows, s.tokens, tk)
					}
				}
				if s.tokens > 0 {
					checkPoison(t, all, out, sentinelI32)
				}
			}
		})
	}
}

// TestDotBlockRows: every set against the twin within relF16 of
// Σ|scale·w·x| (the group sums are exact; the float32 order is each set's
// own), for both group sizes, every row remainder, and the extreme codes.
func TestDotBlockRows(t *testing.T) {
	forEachSet(t, func(t *testing.T, k kernels) {
		rng := newRand()
		for _, group := range []int{16, 32} {
			for _, n := range []int{0, 64, 128, 256, 2560} {
				for _, rows := range testRows {
					for _, extreme := range []bool{false, true} {
						G := n / group
						w, x, scales, bias := randomBlockHead(rng, group, n, rows, 1, extreme)
						out, all := poisoned(rows, 1+rng.IntN(7), 16, float32(math.NaN()))
						want := make([]float32, rows)
						dotBlockRowsGeneric(w, scales, group, x, bias, want)
						k.dotBlockRows(w, scales, group, x, bias, out)
						expectNearTwin(t, fmt.Sprintf("group %d n %d rows %d", group, n, rows), n, out, want, func(r, i int) float64 {
							return float64(scales[r*G+i/group]) * float64(w[r*n+i]) * float64(x[i])
						})
						checkPoisonFunc(t, all, out, func(v float32) bool { return v != v })
					}
				}
			}
		}
	})
}

// TestDotNibbleRows: the nibble twin gives the block twin's bits for the
// same codes and scales (its layout unpacked), and every set's kernel
// agrees with the twin within float32 rounding, for every row remainder,
// random and extreme codes, and leaves the gaps around out untouched.
func TestDotNibbleRows(t *testing.T) {
	forEachSet(t, func(t *testing.T, k kernels) {
		rng := newRand()
		for _, n := range []int{0, 128, 256, 2560} {
			for _, rows := range testRows {
				for _, extreme := range []bool{false, true} {
					G := n / 32
					codes, x, scales, w, h := randomNibbleHead(rng, n, rows, extreme)
					bias := make([]int32, n/4)
					nibbleBias(x, bias)
					want, block := make([]float32, rows), make([]float32, rows)
					dotNibbleRowsGeneric(w, h, x, bias, want)
					dotBlockRowsGeneric(codes, scales, 32, x, nil, block)
					out, all := poisoned(rows, 1+rng.IntN(7), 16, float32(math.NaN()))
					k.dotNibbleRows(w, h, x, bias, out)
					sameBits(t, fmt.Sprintf("n %d rows %d: the nibble twin against the block twin", n, rows), want, block)
					expectNearTwin(t, fmt.Sprintf("n %d rows %d", n, rows), n, out, want, func(r, i int) float64 {
						return float64(scales[r*G+i/32]) * float64(codes[r*n+i]) * float64(x[i])
					})
					checkPoisonFunc(t, all, out, func(v float32) bool { return v != v })
				}
			}
		}
	})
}

// expectNearTwin checks a head kernel's out against the twin's want within
// relF16 of Σ_{i<n} |term(r, i)| for each row r, term(r, i) the row's
// product scale·code·x of value i (the group sums are exact; the float32
// order is each set's own).
func expectNearTwin(t *testing.T, what string, n int, out, want []float32, term func(r, i int) float64) {
	t.Helper()
	for r := range out {
		var abs float64
		for i := 0; i < n; i++ {
			abs += math.Abs(term(r, i))
		}
		if d := math.Abs(float64(out[r]) - float64(want[r])); !(d <= relF16*abs) {
			t.Fatalf("%s row %d: %g, twin %g (Σ|swx| %g)", what, r, out[r], want[r], abs)
		}
	}
}

// TestDotNibbleMatMul: every set's few-token Q4_0 head gives each token
// exactly (bit for bit) what the set's dotNibbleRows gives that token alone
// (the batch invariance speculative decoding and served streams rely on),
// for every row remainder, token counts on both sides of a tile's, the
// extreme codes; the gaps between the output rows stay untouched.
func TestDotNibbleMatMul(t *testing.T) {
	forEachSet(t, func(t *testing.T, k kernels) {
		rng := newRand()
		for _, n := range []int{0, 128, 256, 2560} {
			for _, rows := range append(testRows, 130) {
				for _, tokens := range []int{0, 1, 2, 3, 4, 5, 6, 7, 9, 12, 13} {
					if n == 2560 && rows > 9 && tokens%2 == 0 {
						continue // the long rows on a few shapes only: the test stays quick
					}
					expectNibbleMatMul(t, k.dotNibbleMatMul, k.dotNibbleRows, rng, n, rows, tokens, (rows+tokens)%3 == 0)
				}
			}
		}
		for _, tokens := range []int{3, 8} { // more rows than an L2 panel (nibblePanels)
			expectNibbleMatMul(t, k.dotNibbleMatMul, k.dotNibbleRows, rng, 2560, 370, tokens, false)
		}
	})
}

// expectNibbleMatMul runs mm on random codes (or, when extreme, the
// extreme ones) and checks it against rowsFn per token.
func expectNibbleMatMul(t *testing.T, mm func(w []byte, scales []uint16, rows int, x []int8, xBias []int32, n, tokens int, out []float32, outStride int), rowsFn func(w []byte, scales []uint16, x []int8, xBias []int32, out []float32), rng *rand.Rand, n, rows, tokens int, extreme bool) {
	t.Helper()
	_, _, _, w, h := randomNibbleHead(rng, n, rows, extreme)
	x := make([]int8, tokens*n)
	bias := make([]int32, tokens*n/4)
	for tk := 0; tk < tokens; tk++ {
		_, xt, _, _, _ := randomNibbleHead(rng, n, 0, extreme && tk%2 == 0)
		copy(x[tk*n:], xt)
		nibbleBias(x[tk*n:(tk+1)*n], bias[tk*n/4:(tk+1)*n/4])
	}
	expectAlone(t, rng, n, rows, tokens, func(out []float32, os int) {
		mm(w, h, rows, x, bias, n, tokens, out, os)
	}, func(tk int, want []float32) {
		rowsFn(w, h, x[tk*n:(tk+1)*n], bias[tk*n/4:(tk+1)*n/4], want)
	})
}

// randomNibbleHead returns rows × n Q4_0 codes in [−8, 7] with float16
// group scales (as the block twin takes them, and packed: nibbleRow's rows
// and the scales' bits) and n activations: random, or (extreme) the
// extreme codes and activations.
func randomNibbleHead(rng *rand.Rand, n, rows int, extreme bool) (codes, x []int8, scales []float32, w []byte, h []uint16) {
	codes = randomI8(rng, rows*n, -8, 7, 7)
	x = randomI8(rng, n, -127, 127, 127)
	if extreme {
		for i := range codes {
			codes[i] = []int8{-8, 7}[i%2]
		}
		for i := range x {
			x[i] = []int8{-127, 127}[i/3%2]
		}
	}
	scales, h = make([]float32, rows*(n/32)), make([]uint16, rows*(n/32))
	for i := range scales {
		h[i] = nn.F32ToF16(float32(rng.NormFloat64()))
		scales[i] = nn.F16ToF32(h[i])
	}
	w = make([]byte, rows*n/2)
	for r := 0; r < rows; r++ {
		nibbleRow(w[r*n/2:(r+1)*n/2], codes[r*n:(r+1)*n])
	}
	return codes, x, scales, w, h
}

// TestDotSixRows: the six-bit twin gives the block twin's bits for the
// same Q6_K values (as codes and group scales d·sc), and every set's
// kernel agrees with the twin within float32 rounding, for every row
// remainder, random and extreme codes and scales, and leaves the gaps
// around out untouched.
func TestDotSixRows(t *testing.T) {
	forEachSet(t, func(t *testing.T, k kernels) {
		rng := newRand()
		for _, n := range []int{0, 256, 512, 2560} {
			for _, rows := range testRows {
				for _, extreme := range []bool{false, true} {
					sh := randomSixHead(rng, n, rows, extreme)
					want, block := make([]float32, rows), make([]float32, rows)
					dotSixRowsGeneric(sh.w, sh.scales, sh.xs, sh.bias, want)
					dotBlockRowsGeneric(sh.codes, sh.groupScales, 16, sh.x, nil, block)
					out, all := poisoned(rows, 1+rng.IntN(7), 16, float32(math.NaN()))
					k.dotSixRows(sh.w, sh.scales, sh.xs, sh.bias, out)
					sameBits(t, fmt.Sprintf("n %d rows %d: the six twin against the block twin", n, rows), want, block)
					expectNearTwin(t, fmt.Sprintf("n %d rows %d", n, rows), n, out, want, func(r, i int) float64 {
						return float64(sh.groupScales[r*n/16+i/16]) * float64(sh.codes[r*n+i]) * float64(sh.x[i])
					})
					checkPoisonFunc(t, all, out, func(v float32) bool { return v != v })
				}
			}
		}
	})
}

// TestDotSixMatMul: every set's few-token Q6_K head gives each token
// exactly (bit for bit) what the set's dotSixRows gives that token alone,
// for every row remainder and a few token counts; the gaps between the
// output rows stay untouched.
func TestDotSixMatMul(t *testing.T) {
	forEachSet(t, func(t *testing.T, k kernels) {
		rng := newRand()
		for _, n := range []int{0, 256, 2560} {
			for _, rows := range append(testRows, 130) {
				for _, tokens := range []int{0, 1, 2, 3, 5, 9} {
					expectSixMatMul(t, k.dotSixMatMul, k.dotSixRows, rng, n, rows, tokens, (rows+tokens)%3 == 0)
				}
			}
		}
	})
}

// expectSixMatMul runs mm on a random Q6_K head (or, when extreme, the
// extreme one) and checks it against rowsFn per token.
func expectSixMatMul(t *testing.T, mm func(w []byte, scales []byte, rows int, xs []int8, xBias []int32, n, tokens int, out []float32, outStride int), rowsFn func(w []byte, scales []byte, xs []int8, xBias []int32, out []float32), rng *rand.Rand, n, rows, tokens int, extreme bool) {
	t.Helper()
	sh := randomSixHead(rng, n, rows, extreme)
	xs, bias := make([]int8, tokens*n), make([]int32, tokens*n/16)
	for tk := 0; tk < tokens; tk++ {
		tok := randomSixHead(rng, n, 0, extreme && tk%2 == 0)
		copy(xs[tk*n:], tok.xs)
		copy(bias[tk*n/16:], tok.bias)
	}
	expectAlone(t, rng, n, rows, tokens, func(out []float32, os int) {
		mm(sh.w, sh.scales, rows, xs, bias, n, tokens, out, os)
	}, func(tk int, want []float32) {
		rowsFn(sh.w, sh.scales, xs[tk*n:(tk+1)*n], bias[tk*n/16:(tk+1)*n/16], want)
	})
}

// expectAlone runs a few-token head kernel (run, into out with a random
// stride) and checks that each token's rows are, bit for bit, what the
// one-token kernel gives it (alone), and that nothing between or around
// the output rows was written.
func expectAlone(t *testing.T, rng *rand.Rand, n, rows, tokens int, run func(out []float32, outStride int), alone func(tk int, want []float32)) {
	t.Helper()
	os := rows + rng.IntN(3)
	var out, all []float32
	if tokens > 0 {
		out, all = poisoned((tokens-1)*os+rows, 1+rng.IntN(7), 16, float32(math.NaN()))
	}
	run(out, os)
	want := make([]float32, rows)
	for tk := 0; tk < tokens; tk++ {
		alone(tk, want)
		for r, v := range want {
			if g := out[tk*os+r]; math.Float32bits(g) != math.Float32bits(v) {
				t.Fatalf("n %d rows %d tokens %d: token %d row %d: %g, alone %g", n, rows, tokens, tk, r, g, v)
			}
		}
		if tk+1 < tokens {
			for i := rows; i < os; i++ {
				if v := out[tk*os+i]; v == v {
					t.Fatalf("n %d rows %d tokens %d: wrote out[%d] between tokens", n, rows, tokens, tk*os+i)
				}
			}
		}
	}
	if tokens > 0 {
		checkPoisonFunc(t, all, out, func(v float32) bool { return v != v })
	}
}

// sixHead is a random Q6_K head slice as the tests take it: its values as
// codes (q − 32) with group scales d·sc (the block twin's form), packed in
// dotSixRows' layout (w, scales), and activations x with their
// sixActivations xs and bias.
type sixHead struct {
	codes, x, xs []int8
	groupScales  []float32
	w, scales    []byte
	bias         []int32
}

// randomSixHead returns rows × n Q6_K values and n activations: random,
// or (extreme) the extreme codes, group scales and activations.
func randomSixHead(rng *rand.Rand, n, rows int, extreme bool) sixHead {
	var sh sixHead
	sh.codes = randomI8(rng, rows*n, -32, 31, 31)
	sc := randomI8(rng, rows*n/16, -128, 127, 127)
	sh.x = randomI8(rng, n, -127, 127, 127)
	if extreme {
		for i := range sh.codes {
			sh.codes[i] = []int8{-32, 31}[i%2]
		}
		for i := range sc {
			sc[i] = []int8{-128, 127}[i/3%2]
		}
		for i := range sh.x {
			sh.x[i] = []int8{-127, 127}[i/5%2]
		}
	}
	d := make([]float32, rows*n/sixBlock)
	for i := range d {
		d[i] = nn.F16ToF32(nn.F32ToF16(float32(rng.NormFloat64() / 64)))
	}
	sh.groupScales = make([]float32, rows*n/16)
	for g := range sh.groupScales {
		sh.groupScales[g] = d[g/16] * float32(sc[g])
	}
	sh.w, sh.scales = make([]byte, rows*3*n/4), make([]byte, rows*3*n/32)
	for r := 0; r < rows; r++ {
		sixRow(sh.w[r*3*n/4:(r+1)*3*n/4], sh.scales[r*3*n/32:(r+1)*3*n/32], sh.codes[r*n:(r+1)*n], sc[r*n/16:(r+1)*n/16], d[r*n/sixBlock:(r+1)*n/sixBlock])
	}
	sh.xs, sh.bias = make([]int8, n), make([]int32, n/16)
	sixActivations(sh.x, sh.xs, sh.bias)
	return sh
}

// TestDotBlockMatMul: every set's few-token block head gives each token
// exactly (bit for bit) what the set's dotBlockRows gives that token alone
// (the batch invariance speculative decoding relies on), for both group
// sizes, every row remainder, token counts on both sides of a tile's, the
// extreme codes; the gaps between the output rows stay untouched. (The
// generic set's dotBlockRows is the twin of TestDotBlockRows.)
func TestDotBlockMatMul(t *testing.T) {
	for _, k := range kernelSets() {
		t.Run(k.name, func(t *testing.T) {
			rng := newRand()
			for _, group := range []int{16, 32} {
				for _, n := range []int{0, 64, 128, 320, 2560} {
					for _, rows := range append(testRows, 130) {
						for _, tokens := range []int{0, 1, 2, 3, 4, 5, 6, 7, 9, 12, 13} {
							if n == 2560 && rows > 9 && tokens%2 == 0 {
								continue // the long rows on a few shapes only: the test stays quick
							}
							expectBlockMatMul(t, k, rng, group, n, rows, tokens, (rows+tokens)%3 == 0)
						}
					}
				}
			}
		})
	}
}

// randomBlockHead returns a block-type head's rows × n codes and their
// group scales, and tokens × n activations with their blockBias: random,
// or (extreme) the extreme codes and activations.
func randomBlockHead(rng *rand.Rand, group, n, rows, tokens int, extreme bool) (w, x []int8, scales []float32, bias []int32) {
	w = randomI8(rng, rows*n, -128, 127, 127)
	x = randomI8(rng, tokens*n, -127, 127, 127)
	if extreme {
		for i := range w {
			w[i] = []int8{-128, 127}[i%2]
		}
		for i := range x {
			x[i] = []int8{-127, 127}[i/3%2]
		}
	}
	scales = make([]float32, rows*(n/group))
	for i := range scales {
		scales[i] = float32(rng.NormFloat64())
	}
	bias = make([]int32, tokens*n/4)
	for tk := 0; tk < tokens; tk++ {
		blockBias(x[tk*n:(tk+1)*n], bias[tk*n/4:(tk+1)*n/4])
	}
	return w, x, scales, bias
}

// expectBlockMatMul runs k.dotBlockMatMul on random codes (or, when
// extreme, the extreme ones) and checks it against k.dotBlockRows per
// token.
func expectBlockMatMul(t *testing.T, k kernels, rng *rand.Rand, group, n, rows, tokens int, extreme bool) {
	t.Helper()
	w, x, scales, bias := randomBlockHead(rng, group, n, rows, tokens, extreme)
	os := rows + rng.IntN(3)
	var out, all []float32
	if tokens > 0 {
		out, all = poisoned((tokens-1)*os+rows, 1+rng.IntN(7), 16, float32(math.NaN()))
	}
	k.dotBlockMatMul(w, scales, group, rows, x, bias, n, tokens, out, os)
	want := make([]float32, rows)
	for tk := 0; tk < tokens; tk++ {
		k.dotBlockRows(w, scales, group, x[tk*n:(tk+1)*n], bias[tk*n/4:(tk+1)*n/4], want)
		for r, v := range want {
			if g := out[tk*os+r]; math.Float32bits(g) != math.Float32bits(v) {
				t.Fatalf("group %d n %d rows %d tokens %d: token %d row %d: %g, alone %g", group, n, rows, tokens, tk, r, g, v)
			}
		}
		if tk+1 < tokens {
			for i := rows; i < os; i++ {
				if v := out[tk*os+i]; v == v {
					t.Fatalf("group %d n %d rows %d tokens %d: wrote out[%d] between tokens", group, n, rows, tokens, tk*os+i)
				}
			}
		}
	}
	if tokens > 0 {
		checkPoisonFunc(t, all, out, func(v float32) bool { return v != v })
	}
}

func TestSumBytes(t *testing.T) {
	forEachSet(t, func(t *testing.T, k kernels) {
		rng := newRand()
		var ns []int
		for n := 0; n <= 64*40; n += 64 {
			ns = append(ns, n)
		}
		ns = append(ns, 4096+64*7, 1<<20)
		for _, n := range ns {
			for _, ff := range []bool{false, true} {
				b, _ := poisoned(n, rng.IntN(64), 64, byte(0xFF))
				for i := range b {
					if b[i] = 0xFF; !ff {
						b[i] = byte(rng.Uint32())
					}
				}
				if got, want := k.sumBytes(b), sumBytesGeneric(b); got != want {
					t.Fatalf("n %d: %#x, twin %#x", n, got, want)
				}
			}
		}
	})
}

// TestBoundsChecked: a call whose slices are too short panics in every set,
// as the twins' bounds checks do, instead of reading past the slice.
func TestBoundsChecked(t *testing.T) {
	for _, k := range kernelSets() {
		calls := map[string]func(){
			"ternaryRows": func() { k.ternaryRows(make([]byte, 2*32-1), 32, make([]int8, 128), make([]int32, 2)) },
			"ternaryMatMul": func() {
				k.ternaryMatMul(make([]byte, 64), 32, 2, make([]int8, 128), 128, 128, 2, make([]int32, 3), 2)
			},
			"dotF16Rows": func() { k.dotF16Rows(make([]uint16, 9), 5, make([]float32, 5), make([]float32, 2)) },
			"kScores": func() {
				k.kScores(make([]uint16, 2*kBlock*4-1), 4, 17, make([]float32, 8), 2, make([]float32, 34), 17)
			},
			"axpyF16": func() { k.axpyF16(1, make([]uint16, 4), make([]float32, 5)) },
			"axpyF16Rows": func() {
				k.axpyF16Rows(make([]float32, 2), make([]uint16, 9), 5, make([]float32, 5))
			},
			"dotI8Rows": func() { k.dotI8Rows(make([]int8, 9), 5, make([]int8, 5), make([]int32, 2)) },
			"dotBlockRows": func() {
				k.dotBlockRows(make([]int8, 127), make([]float32, 8), 32, make([]int8, 64), make([]int32, 16), make([]float32, 2))
			},
			"dotNibbleRows": func() {
				k.dotNibbleRows(make([]byte, 127), make([]uint16, 8), make([]int8, 128), make([]int32, 32), make([]float32, 2))
			},
			"dotNibbleMatMul": func() {
				k.dotNibbleMatMul(make([]byte, 127), make([]uint16, 8), 2, make([]int8, 128), make([]int32, 32), 128, 1, make([]float32, 2), 2)
			},
			"dotSixRows": func() {
				k.dotSixRows(make([]byte, 383), make([]byte, 48), make([]int8, 256), make([]int32, 16), make([]float32, 2))
			},
			"dotSixMatMul": func() {
				k.dotSixMatMul(make([]byte, 384), make([]byte, 48), 2, make([]int8, 256), make([]int32, 15), 256, 1, make([]float32, 2), 2)
			},
			"dotBlockMatMul": func() {
				k.dotBlockMatMul(make([]int8, 127), make([]float32, 8), 32, 2, make([]int8, 64), make([]int32, 16), 64, 1, make([]float32, 2), 2)
			},
			"dotF16MatMul": func() {
				k.dotF16MatMul(make([]uint16, 10), 5, 2, make([]float32, 10), 5, 5, 2, make([]float32, 3), 2)
			},
			"dotI8MatMul": func() {
				k.dotI8MatMul(make([]int8, 10), 5, 2, make([]int8, 9), 5, 5, 2, make([]int32, 4), 2)
			},
		}
		for name, call := range calls {
			if !panics(call) {
				t.Errorf("%s %s: a too-short slice did not panic", k.name, name)
			}
		}
	}
}

func panics(f func()) (p bool) {
	defer func() { p = recover() != nil }()
	f()
	return false
}

// TestAsmPresent fails if an amd64 build without purego on a CPU with the
// features lost its assembly kernel sets, so they cannot vanish silently.
func TestAsmPresent(t *testing.T) {
	names := KernelNames()
	if names[len(names)-1] != generic.name || Kernels() != names[0] {
		t.Fatalf("kernel sets %v, active %q: the twins must come last, the first must be active", names, Kernels())
	}
	if runtime.GOARCH != "amd64" || puregoBuild() {
		t.Skipf("no assembly in this build (GOARCH %s)", runtime.GOARCH)
	}
	want := []string{goKernels.name, generic.name}
	if hasAVX2 && cpu.X86.HasF16C {
		want = append([]string{"avx2"}, want...)
	}
	if hasAVX2 && cpu.X86.HasAVXVNNI {
		want = append([]string{"avxvnni"}, want...)
	}
	if hasAVX2 && hasAVX512VNNI {
		want = append([]string{"avx512vnni"}, want...)
	}
	if hasAVX2 && hasAVX512VNNI && cpu.X86.HasAMXTile && cpu.X86.HasAMXInt8 && amxKernelSupport() {
		want = append([]string{"amx"}, want...)
	}
	if !slices.Equal(names, want) {
		t.Fatalf("kernel sets %v, want %v for this CPU", names, want)
	}
}

// TestAVX2SetHasNoAVX512 reads the generated assembly and the avxvnni
// set's: the avx2 functions (their Two versions too) and avxvnni's must
// run on CPUs without AVX-512, so they may name no register above 15,
// no zmm or mask register and no EVEX-only instruction (avo allocates
// registers itself, and nothing else would notice until such a CPU
// faulted).
func TestAVX2SetHasNoAVX512(t *testing.T) {
	src, err := os.ReadFile("kernels_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	evex := regexp.MustCompile(`\b([XY](1[6-9]|2[0-9]|3[01])|Z[0-9]+|K[0-7]|VPDPBUSD|VPXOR[DQ]|VPAND[DQ]|VMOVDQU(8|16|32|64)|V[A-Z]+(32|64)X[48]|KMOV[BWDQ])\b`)
	fn, checked := "", 0
	avx2 := func(text string) bool {
		return strings.Contains(text, "AVX2(SB)") || strings.Contains(text, "AVX2Two(SB)")
	}
	for i, line := range strings.Split(string(src), "\n") {
		if strings.HasPrefix(line, "TEXT ") {
			fn = line
			if avx2(fn) {
				checked++
			}
			continue
		}
		if avx2(fn) {
			if m := evex.FindString(line); m != "" {
				t.Errorf("kernels_amd64.s:%d: %s uses %s: %s", i+1, fn, m, strings.TrimSpace(line))
			}
		}
	}
	if checked != 40 {
		t.Errorf("found %d AVX2 functions in kernels_amd64.s, want 40", checked)
	}
	// The avxvnni set's own kernels (written by hand, their vpdpbusd as
	// VEX bytes): the same rule for all of it.
	src, err = os.ReadFile("avxvnni_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	texts := 0
	for i, line := range strings.Split(string(src), "\n") {
		if code, _, _ := strings.Cut(line, "//"); strings.TrimSpace(code) != "" {
			if strings.HasPrefix(code, "TEXT ") {
				texts++
			}
			if m := evex.FindString(code); m != "" {
				t.Errorf("avxvnni_amd64.s:%d uses %s: %s", i+1, m, strings.TrimSpace(line))
			}
		}
	}
	if texts != 7 {
		t.Errorf("found %d functions in avxvnni_amd64.s, want 7", texts)
	}
}

// puregoBuild reports whether the test binary was built with -tags purego.
func puregoBuild() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-tags" && slices.Contains(strings.Split(s.Value, ","), "purego") {
			return true
		}
	}
	return false
}

// checkPoison fails if an element of all outside s is not fill.
func checkPoison[T comparable](t *testing.T, all, s []T, fill T) {
	t.Helper()
	checkPoisonFunc(t, all, s, func(v T) bool { return v == fill })
}

func checkPoisonFunc[T any](t *testing.T, all, s []T, isFill func(T) bool) {
	t.Helper()
	if len(s) == 0 {
		for i, v := range all {
			if !isFill(v) {
				t.Fatalf("element %d of an empty output's backing array written: %v", i, v)
			}
		}
		return
	}
	off := cap(all) - cap(s)
	for i, v := range all {
		if (i < off || i >= off+len(s)) && !isFill(v) {
			t.Fatalf("element %d outside the output [%d, %d) written: %v", i, off, off+len(s), fmt.Sprint(v))
		}
	}
}

// TestExpSub: every set's expSub is within 3 float32 ulps of its twin
// (values ≥ the smallest normal float32; below it, within 1.2e-38), for
// every length 0…300 and long rows, writes nothing past x, and sums the
// values it wrote to 1e-12 of their float64 sum.
func TestExpSub(t *testing.T) {
	forEachSet(t, func(t *testing.T, k kernels) {
		rng := newRand()
		worst := 0.0
		for _, n := range append(floatLengths(), 4096) {
			x, all := poisoned(n, rng.IntN(16), 40, float32(math.NaN()))
			m := float32(0)
			for i := range x {
				switch rng.IntN(8) {
				case 0:
					x[i] = float32(-200 * rng.Float64()) // down to e^−200: under float32's range
				case 1:
					x[i] = float32(-rng.Float64()) * 1e-6 // near 0
				default:
					x[i] = float32(-30 * rng.Float64())
				}
				x[i] += 5
				m = max(m, x[i])
			}
			want := slices.Clone(x)
			wantSum := expSubGeneric(want, m)
			sum := k.expSub(x, m)
			var got float64
			for i, v := range x {
				got += float64(v)
				w := float64(want[i])
				d := math.Abs(float64(v) - w)
				if !(d <= 3*0x1p-23*w || (w < 0x1p-126 && d <= 1.2e-38)) {
					t.Fatalf("n %d i %d: %g, twin %g (%.2f ulps)", n, i, v, w, d/(0x1p-23*w))
				}
				if w >= 0x1p-126 {
					worst = max(worst, d/(0x1p-23*w))
				}
			}
			if !(math.Abs(sum-got) <= 1e-12*got) || !(math.Abs(sum-wantSum) <= 3*0x1p-23*wantSum+1e-37) {
				t.Fatalf("n %d: sum %g, of the values %g, twin %g", n, sum, got, wantSum)
			}
			checkPoisonFunc(t, all, x, func(v float32) bool { return v != v })
		}
		t.Logf("largest difference from the twin: %.2f ulps", worst)
	})
}

// TestScaleMax: every set's scaleMax equals its twin bit for bit (the
// products and the maximum), for every length 0…300 and long rows, and
// writes nothing past x.
func TestScaleMax(t *testing.T) {
	forEachSet(t, func(t *testing.T, k kernels) {
		rng := newRand()
		for _, n := range append(floatLengths(), 4096) {
			x, all := poisoned(n, rng.IntN(16), 40, float32(math.NaN()))
			for i := range x {
				x[i] = float32(rng.NormFloat64() * 50)
			}
			s := float32(rng.Float64() + 0.01)
			want := slices.Clone(x)
			wantMax := scaleMaxGeneric(want, s)
			if got := k.scaleMax(x, s); got != wantMax {
				t.Fatalf("n %d: max %g, twin %g", n, got, wantMax)
			}
			for i := range x {
				if x[i] != want[i] {
					t.Fatalf("n %d i %d: %g, twin %g", n, i, x[i], want[i])
				}
			}
			checkPoisonFunc(t, all, x, func(v float32) bool { return v != v })
		}
	})
}

// TestAxpyF16Rows4: every set's axpyF16Rows4 gives each of its four
// outputs bit for bit what the set's axpyF16Rows gives it, for every
// length 0…300 and the head width, up to 9 rows, and writes nothing
// between or past the outputs.
func TestAxpyF16Rows4(t *testing.T) {
	for _, k := range kernelSets() {
		t.Run(k.name, func(t *testing.T) {
			rng := newRand()
			for _, n := range append(floatLengths(), 128) {
				for _, rows := range []int{0, 1, 2, 3, 9, 130} {
					v, stride := randomVRows(rng, rows, n)
					aStride := rows + rng.IntN(3)
					a := randomF32(rng, 3*aStride+rows)
					yStride := n + rng.IntN(4)
					y, all := poisoned(3*yStride+n, rng.IntN(16), 40, float32(math.NaN()))
					for j := 0; j < 4; j++ {
						for i := 0; i < n; i++ {
							y[j*yStride+i] = float32(rng.NormFloat64())
						}
					}
					want := slices.Clone(y)
					for j := 0; j < 4; j++ {
						k.axpyF16Rows(a[j*aStride:j*aStride+rows], v, stride, want[j*yStride:j*yStride+n])
					}
					k.axpyF16Rows4(a, aStride, rows, v, stride, y, yStride, n)
					sameBits(t, fmt.Sprintf("n %d rows %d, against one by one", n, rows), y, want)
					checkPoisonFunc(t, all, y, func(v float32) bool { return v != v })
				}
			}
		})
	}
}

// TestQuantizeI8: every set's quantizeI8 equals its twin (codes and sum)
// for every length 0…300 and the model widths, with ties (x·s = k + ½),
// values past ±127.5 and ±128.5 (clamped), and writes nothing past q.
func TestQuantizeI8(t *testing.T) {
	forEachSet(t, func(t *testing.T, k kernels) {
		rng := newRand()
		for _, n := range append(floatLengths(), 6912) {
			x := make([]float32, n)
			s := float32(1)
			if rng.IntN(2) == 0 {
				s = float32(127 / (rng.Float64()*10 + 0.1))
			}
			for i := range x {
				switch rng.IntN(6) {
				case 0:
					x[i] = (float32(rng.IntN(300)-150) + 0.5) / s // ties and beyond the range
				case 1:
					x[i] = float32(rng.IntN(1<<20)-(1<<19)) / s // far beyond it
				default:
					x[i] = float32(rng.NormFloat64()*60) / s
				}
			}
			q, all := poisoned(n, rng.IntN(16), 40, int8(0x5A))
			want := make([]int8, n)
			wantSum := quantizeI8Generic(x, s, want)
			if sum := k.quantizeI8(x, s, q); sum != wantSum {
				t.Fatalf("n %d: sum %d, twin %d", n, sum, wantSum)
			}
			for i := range q {
				if q[i] != want[i] {
					t.Fatalf("n %d i %d: %g·%g → %d, twin %d", n, i, x[i], s, q[i], want[i])
				}
			}
			checkPoisonFunc(t, all, q, func(v int8) bool { return v == 0x5A })
		}
	})
}

// TestHalfConversions: every set's f32ToF16 and roundF16 equal their twins
// for every length 0…300 and the K/V width, on values across float16's
// range: ties, subnormal halves, overflow to infinity, ±0, ±Inf (a NaN
// must stay a NaN); neither writes past dst.
func TestHalfConversions(t *testing.T) {
	forEachSet(t, func(t *testing.T, k kernels) {
		rng := newRand()
		special := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()),
			65504, 65519.99, 65520, -65520, 1e-8, -3e-8, 5.96e-8, 2.98e-8, 6.1e-5, 1 + 1.0/2048, 1 + 3.0/2048}
		for _, n := range append(floatLengths(), 640) {
			src := make([]float32, n)
			for i := range src {
				switch rng.IntN(5) {
				case 0:
					src[i] = special[rng.IntN(len(special))]
				case 1:
					src[i] = float32(rng.NormFloat64() * 1e-5) // subnormal halves
				case 2: // halfway between two halves
					h := uint16(rng.IntN(0x7c00))
					src[i] = (nn.F16ToF32(h) + nn.F16ToF32(h+1)) / 2
				default:
					src[i] = float32(rng.NormFloat64() * math.Pow(2, float64(rng.IntN(30)-15)))
				}
			}
			h, hAll := poisoned(n, rng.IntN(16), 40, uint16(0x5A5A))
			want := make([]uint16, n)
			f32ToF16Generic(want, src)
			k.f32ToF16(h, src)
			r, rAll := poisoned(n, rng.IntN(16), 40, float32(-7))
			wantR := make([]float32, n)
			roundF16Generic(wantR, src)
			k.roundF16(r, src)
			for i, v := range src {
				if v != v {
					if h[i]&0x7c00 != 0x7c00 || h[i]&0x3ff == 0 || r[i] == r[i] {
						t.Fatalf("n %d i %d: NaN → %#04x, %g", n, i, h[i], r[i])
					}
					continue
				}
				if h[i] != want[i] || math.Float32bits(r[i]) != math.Float32bits(wantR[i]) {
					t.Fatalf("n %d i %d: %g → %#04x and %g, twins %#04x and %g", n, i, v, h[i], r[i], want[i], wantR[i])
				}
			}
			checkPoisonFunc(t, hAll, h, func(v uint16) bool { return v == 0x5A5A })
			checkPoisonFunc(t, rAll, r, func(v float32) bool { return v == -7 })
		}
	})
}

// TestMaxAbs: every set's maxAbs equals its twin's bits for every length
// 0…300 and the model widths, with ±0, ±Inf, NaN and subnormals about.
// TestSumSquares: every set's sumSquares gives the twin's bits (the float64
// chain added in order) on rows drawn to make the chain round: Gaussian
// rows (most blocks add exactly, some cross a binade or hold a square too
// small for the sum's ulp), values over many magnitudes, rows whose sum
// stays in one binade with a tiny square now and then, ties of the
// float64 adds, and zeros, subnormals, infinities and NaNs.
func TestSumSquares(t *testing.T) {
	forEachSet(t, func(t *testing.T, k kernels) {
		rng := newRand()
		special := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)),
			float32(math.NaN()), 1e-40, -1e-40, 1e-23, 3e19, math.MaxFloat32, math.SmallestNonzeroFloat32}
		draws := []func(i int) float32{
			func(int) float32 { return float32(rng.NormFloat64()) },
			func(int) float32 { return float32(rng.NormFloat64() * math.Pow(2, float64(rng.IntN(160)-80))) },
			func(i int) float32 { // a big first value, then squares near ulp(sum)
				if i == 0 {
					return 1 << 20
				}
				return float32(math.Pow(2, float64(rng.IntN(24)-14)) * (1 + float64(rng.IntN(8))/8))
			},
			func(int) float32 { // squares of exactly 24 and a few significant bits: ties
				return float32(float64(1<<12+rng.IntN(1<<12)) * math.Pow(2, float64(rng.IntN(12)-6)))
			},
			func(i int) float32 { return float32(1+i%7) * 1e-3 },
		}
		for _, n := range append(floatLengths(), 2560, 6912) {
			x := make([]float32, n)
			for d, draw := range draws {
				for rep := 0; rep < 3; rep++ {
					for i := range x {
						x[i] = draw(i)
						if rep == 2 && rng.IntN(n/2+2) == 0 {
							x[i] = special[rng.IntN(len(special))]
						}
					}
					got, want := k.sumSquares(x), sumSquaresGeneric(x)
					if math.Float64bits(got) != math.Float64bits(want) && !(math.IsNaN(got) && math.IsNaN(want)) {
						t.Fatalf("n %d draw %d rep %d: %v (%#x), twin %v (%#x)", n, d, rep, got, math.Float64bits(got), want, math.Float64bits(want))
					}
				}
			}
		}
	})
}

func TestMaxAbs(t *testing.T) {
	forEachSet(t, func(t *testing.T, k kernels) {
		rng := newRand()
		special := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 1e-40, -1e-40}
		for _, n := range append(floatLengths(), 2560, 6912) {
			x := make([]float32, n)
			for i := range x {
				x[i] = float32(rng.NormFloat64() * math.Pow(10, float64(rng.IntN(8)-4)))
				if rng.IntN(n/3+2) == 0 {
					x[i] = special[rng.IntN(len(special))]
				}
			}
			if got, want := k.maxAbs(x), maxAbsGeneric(x); math.Float32bits(got) != math.Float32bits(want) {
				t.Fatalf("n %d: %g, twin %g", n, got, want)
			}
		}
	})
}

// TestRopeNeox: each set's ropeNeox against the twin, bit for bit, over
// head sizes with and without pairs left over after the assembly's
// eights, values of every magnitude and sign, angles at random.
func TestRopeNeox(t *testing.T) {
	forEachSet(t, func(t *testing.T, k kernels) {
		rng := newRand()
		for _, n := range []int{0, 1, 2, 6, 14, 16, 17, 18, 30, 32, 34, 46, 64, 96, 128, 130, 256} {
			for range 20 {
				x := make([]float32, n)
				for i := range x {
					x[i] = float32(rng.NormFloat64() * math.Pow(2, float64(rng.IntN(40)-20)))
				}
				cs := make([]float64, n+rng.IntN(3))
				for i := 0; i < n/2; i++ {
					cs[i], cs[n/2+i] = math.Cos(rng.Float64()*1e4), math.Sin(rng.Float64()*1e4)
				}
				want := slices.Clone(x)
				ropeNeoxGeneric(want, cs)
				k.ropeNeox(x, cs)
				for i := range x {
					if math.Float32bits(x[i]) != math.Float32bits(want[i]) {
						t.Fatalf("n %d: x[%d] = %v, want %v", n, i, x[i], want[i])
					}
				}
			}
		}
		if !panics(func() { k.ropeNeox(make([]float32, 16), make([]float64, 15)) }) {
			t.Errorf("%s: 16 values turned by 15 cosines and sines did not panic", k.name)
		}
	})
	// The twin is the formula, each product rounded on its own.
	x, cs := []float32{3, 5}, []float64{0.6, 0.8}
	ropeNeoxGeneric(x, cs)
	if want := []float32{float32(3*0.6 - 5*0.8), float32(3*0.8 + 5*0.6)}; !slices.Equal(x, want) {
		t.Errorf("ropeNeoxGeneric(3, 5 by cos 0.6, sin 0.8) = %v, want %v", x, want)
	}
}

// TestElementwise: every set's scaleSums, scaleI8, normScale,
// normScaleMax, reluSqMul, reluSqSums and addF32 equal their twins bit for bit, for every length
// 0…300 and the 2B shape's widths, at odd offsets, with values that round
// (int32 sums past 2²⁴, divisions, signed zeros, negative gates), and
// write nothing past their outputs; reluSqSums' twin is scaleSums then
// reluSqMul.
func TestElementwise(t *testing.T) {
	nan := float32(math.NaN())
	isNaN := func(v float32) bool { return v != v }
	forEachSet(t, func(t *testing.T, k kernels) {
		rng := newRand()
		floats := func(n int, scale float64) []float32 {
			v := make([]float32, n)
			for i := range v {
				v[i] = float32(rng.NormFloat64() * scale)
				if rng.IntN(17) == 0 {
					v[i] = float32(math.Copysign(0, rng.NormFloat64()))
				}
			}
			return v
		}
		for _, n := range append(floatLengths(), 6912, 13824) {
			off := rng.IntN(16)
			raw := make([]int32, n)
			for i := range raw {
				raw[i] = int32(rng.Uint32()) >> rng.IntN(24)
			}
			sum := int32(rng.Uint32()) >> 12
			s := float32(rng.Float64()*1e4 + 0.5)
			rowScale := floats(n, 1)
			y, all := poisoned(n, off, 40, nan)
			want := make([]float32, n)
			scaleSumsGeneric(want, raw, sum, s, rowScale)
			k.scaleSums(y, raw, sum, s, rowScale)
			sameBits(t, fmt.Sprintf("scaleSums n %d", n), y, want)
			checkPoisonFunc(t, all, y, isNaN)

			q := rng.Float64() * 1e-3 // as a head's max|x|/127
			o, all := poisoned(n, off, 40, nan)
			scaleI8Generic(want, raw, rowScale, q)
			k.scaleI8(o, raw, rowScale, q)
			sameBits(t, fmt.Sprintf("scaleI8 n %d", n), o, want)
			checkPoisonFunc(t, all, o, isNaN)

			x, w := floats(n, 30), floats(n, 2)
			scale := float32(rng.Float64() + 0.001)
			dst, all := poisoned(n, off, 40, nan)
			normScaleGeneric(want, x, scale, w)
			k.normScale(dst, x, scale, w)
			sameBits(t, fmt.Sprintf("normScale n %d", n), dst, want)
			checkPoisonFunc(t, all, dst, isNaN)
			dst, all = poisoned(n, off, 40, nan)
			if m, wm := k.normScaleMax(dst, x, scale, w), maxAbsGeneric(want); math.Float32bits(m) != math.Float32bits(wm) {
				t.Errorf("normScaleMax n %d: max %g, want %g", n, m, wm)
			}
			sameBits(t, fmt.Sprintf("normScaleMax n %d", n), dst, want)
			checkPoisonFunc(t, all, dst, isNaN)

			g, u := floats(n, 10), floats(n, 10)
			h, all := poisoned(n, off, 40, nan)
			reluSqMulGeneric(want, g, u)
			k.reluSqMul(h, g, u)
			sameBits(t, fmt.Sprintf("reluSqMul n %d", n), h, want)
			checkPoisonFunc(t, all, h, isNaN)

			ups := make([]int32, n) // the gate's sums are raw's
			for i := range ups {
				ups[i] = int32(rng.Uint32()) >> rng.IntN(32)
			}
			upScale := floats(n, 1)
			h, all = poisoned(n, off, 40, nan)
			reluSqSumsGeneric(want, raw, ups, sum, s, rowScale, upScale)
			k.reluSqSums(h, raw, ups, sum, s, rowScale, upScale)
			sameBits(t, fmt.Sprintf("reluSqSums n %d", n), h, want)
			checkPoisonFunc(t, all, h, isNaN)
			gv, uv := make([]float32, n), make([]float32, n)
			scaleSumsGeneric(gv, raw, sum, s, rowScale)
			scaleSumsGeneric(uv, ups, sum, s, upScale)
			reluSqMulGeneric(gv, gv, uv)
			sameBits(t, fmt.Sprintf("reluSqSumsGeneric n %d", n), want, gv)

			a, all := poisoned(n, off, 40, nan)
			copy(a, x)
			copy(want, x)
			addF32Generic(want, w)
			k.addF32(a, w)
			sameBits(t, fmt.Sprintf("addF32 n %d", n), a, want)
			checkPoisonFunc(t, all, a, isNaN)
		}
	})
}

// TestAttendRun: attention over a run of R tokens at consecutive positions
// gives each token's query heads bit for bit what attendGroup gives them
// one token at a time, for every kernel set, runs of 1-4 and 16 tokens, 1,
// 2 and 4 heads a K/V head (items of 8 queries and more through the wide
// kernels where the set has them), positions in and across the K cache's
// blocks of 16, and writes nothing past each token's heads in the output.
func TestAttendRun(t *testing.T) {
	for _, k := range kernelSets() {
		t.Run(k.name, func(t *testing.T) {
			rng := newRand()
			for _, hd := range []int{64, 128} {
				for _, sub := range []int{1, 2, 4} {
					for _, R := range []int{1, 2, 3, 4, 16} {
						for _, n0 := range []int{1, 2, 15, 16, 17, 40, 129, 300} {
							n := n0 + R - 1 // the positions the last token sees
							nk := (n + kBlock - 1) / kBlock * kBlock
							kt := randomF16(rng, nk*hd)
							vc := randomF16(rng, n*hd)
							qStride, oStride := sub*hd+rng.IntN(5), sub*hd+3
							q := randomF32(rng, (R-1)*qStride+sub*hd)
							want := make([]float32, (R-1)*oStride+sub*hd)
							got, all := poisoned(len(want), rng.IntN(16), 40, float32(math.NaN()))
							scratch := make([]float32, max(sub*R, 4)*n)
							q16 := make([]float32, max(sub*R, 4)*hd)
							ob := make([]float32, max(sub*R, 4)*hd)
							for r := 0; r < R; r++ {
								attendGroup(k, q[r*qStride:r*qStride+sub*hd], hd, kt, vc, n0+r, q16, scratch, want[r*oStride:r*oStride+sub*hd])
							}
							qT := make([]float32, max(sub*R, 4)*hd)
							attendRun(k, q, qStride, R, sub, hd, kt, vc, n0, q16, scratch, ob, got, oStride, qT)
							for r := 0; r < R; r++ {
								sameBits(t, fmt.Sprintf("hd %d, %d heads, token %d of %d at position %d", hd, sub, r, R, n0+r-1),
									got[r*oStride:r*oStride+sub*hd], want[r*oStride:r*oStride+sub*hd])
							}
							for r := 0; r+1 < R; r++ { // nothing between the tokens' heads
								for i := r*oStride + sub*hd; i < (r+1)*oStride; i++ {
									if got[i] == got[i] {
										t.Fatalf("hd %d, %d heads, %d tokens: wrote %v at %d, between tokens", hd, sub, R, got[i], i)
									}
								}
							}
							checkPoisonFunc(t, all, got, func(v float32) bool { return v != v })
						}
					}
				}
			}
		})
	}
}
