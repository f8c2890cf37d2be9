package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// Sgemm tests, in the order of trust: the Go twin (the driver around the
// 4×4 Go tile) against a float64 loop written from the formulas in
// sgemm.go, then every kernel set against the twin, for every m and n from
// 0 to two tiles and a bit past the set's tile, k across the unrolling and
// the kc blocks, and large odd shapes that cross every block.
//
// Tolerance: a float32 sum of k rounded products and c accumulates at most
// (k+2)·2⁻²⁴·S of error, S = |c₀| + Σ_p |a·b|, in any order (γ_{k+1} plus
// the rounding of each product; FMA only removes roundings). So the twin
// must be within tolTwin = (k+2)·2⁻²⁴·S of the float64 sum and a kernel
// within 2·tolTwin of the twin. The largest ratio seen is logged: 0.5-0.8,
// reached at small k, where one rounding is a large share of the bound; a
// product dropped or counted twice moves an element by ~S/k, far outside.
//
// Every matrix sits in a backing array whose elements outside it (the gaps
// when the stride exceeds the width, and after the end) are NaN: a kernel
// that reads one turns a result into NaN, one that writes one is caught by
// the poison check.

// sgemmLayout is one of the three products, as the driver sees it.
type sgemmLayout struct {
	name         string
	aRows, bRows bool
}

var sgemmLayouts = []sgemmLayout{{"NT", true, true}, {"NN", true, false}, {"TN", false, false}}

// storedShape returns the rows and columns a layout stores A or B in.
func (l sgemmLayout) storedShape(m, n, k int) (ar, ac, br, bc int) {
	ar, ac, br, bc = m, k, k, n
	if !l.aRows {
		ar, ac = k, m
	}
	if l.bRows {
		br, bc = n, k
	}
	return
}

// at returns A(i, p) and B(p, j) in the layout.
func (l sgemmLayout) aAt(a []float32, lda, i, p int) float32 {
	if l.aRows {
		return a[i*lda+p]
	}
	return a[p*lda+i]
}

func (l sgemmLayout) bAt(b []float32, ldb, p, j int) float32 {
	if l.bRows {
		return b[j*ldb+p]
	}
	return b[p*ldb+j]
}

// sgemmCase is one product with its operands in poisoned backing arrays.
type sgemmCase struct {
	l             sgemmLayout
	m, n, k       int
	a, b, c, cAll []float32
	lda, ldb, ldc int
}

// poisonedMatrix returns rows×cols random values in [-1, 1) with stride
// ld ≥ cols at a random offset in a NaN-filled backing array.
func poisonedMatrix(rng *rand.Rand, rows, cols, ld int) (s, all []float32) {
	size := 0
	if rows > 0 && cols > 0 {
		size = (rows-1)*ld + cols
	}
	s, all = poisoned(size, rng.IntN(8), 8+rng.IntN(8), float32(math.NaN()))
	for r := 0; r < rows; r++ {
		for j := 0; j < cols; j++ {
			s[r*ld+j] = 2*rng.Float32() - 1
		}
	}
	return s, all
}

func newSgemmCase(rng *rand.Rand, l sgemmLayout, m, n, k int) *sgemmCase {
	ar, ac, br, bc := l.storedShape(m, n, k)
	t := &sgemmCase{l: l, m: m, n: n, k: k}
	t.lda, t.ldb, t.ldc = ac+rng.IntN(3), bc+rng.IntN(3), n+rng.IntN(3)
	t.a, _ = poisonedMatrix(rng, ar, ac, t.lda)
	t.b, _ = poisonedMatrix(rng, br, bc, t.ldb)
	t.c, t.cAll = poisonedMatrix(rng, m, n, t.ldc)
	return t
}

// run adds the product to a copy of c with kernel set s and returns it
// (in a copy of the poisoned backing array).
func (t *sgemmCase) run(s *sgemmKernels) (c, all []float32) {
	all = slices.Clone(t.cAll)
	off := cap(t.cAll) - cap(t.c)
	c = all[off : off+len(t.c)]
	sgemm(s, t.l.aRows, t.l.bRows, t.m, t.n, t.k, t.a, t.lda, t.b, t.ldb, c, t.ldc)
	return c, all
}

// exact returns the float64 value of element (i, j) after the product and
// its S = |c₀| + Σ_p |a·b|.
func (t *sgemmCase) exact(i, j int) (v, s float64) {
	c0 := float64(t.c[i*t.ldc+j])
	v, s = c0, math.Abs(c0)
	for p := 0; p < t.k; p++ {
		ab := float64(t.l.aAt(t.a, t.lda, i, p)) * float64(t.l.bAt(t.b, t.ldb, p, j))
		v, s = v+ab, s+math.Abs(ab)
	}
	return v, s
}

func (t *sgemmCase) String() string {
	return fmt.Sprintf("%s m %d n %d k %d (lda %d ldb %d ldc %d)", t.l.name, t.m, t.n, t.k, t.lda, t.ldb, t.ldc)
}

// tolTwin is the bound on the twin's error: (k+2)·2⁻²⁴·S.
func tolTwin(k int, s float64) float64 { return float64(k+2) * 0x1p-24 * s }

// check compares got with want element by element within scale·tolTwin,
// checks the poison around got, and returns the largest |got − want| / tolTwin.
func (t *sgemmCase) check(tb *testing.T, got, all []float32, want func(i, j int) float64, scale float64) float64 {
	tb.Helper()
	worst := 0.0
	for i := 0; i < t.m; i++ {
		for j := 0; j < t.n; j++ {
			_, s := t.exact(i, j)
			tol := tolTwin(t.k, s)
			w := want(i, j)
			d := math.Abs(float64(got[i*t.ldc+j]) - w)
			if !(d <= scale*tol) {
				tb.Fatalf("%v: c[%d][%d] = %g, want %g (tolerance %.3g)", t, i, j, got[i*t.ldc+j], w, scale*tol)
			}
			if tol > 0 {
				worst = max(worst, d/tol)
			}
		}
	}
	for r := 0; r+1 < t.m && t.n > 0; r++ { // the gaps between C's rows keep their poison
		for j := t.n; j < t.ldc; j++ {
			if v := got[r*t.ldc+j]; v == v {
				tb.Fatalf("%v: c[%d][%d], in the gap after row %d, written: %g", t, r, j, r, v)
			}
		}
	}
	checkPoisonFunc(tb, all, got, func(v float32) bool { return v != v })
	return worst
}

func TestSgemmGenericNaive(t *testing.T) {
	rng := newRand()
	type shape struct{ m, n, k int }
	var shapes []shape
	for m := 0; m <= 9; m++ {
		for n := 0; n <= 9; n++ {
			for _, k := range []int{0, 1, 2, 3, 5, 8, 13} {
				shapes = append(shapes, shape{m, n, k})
			}
		}
	}
	// Past every block of the twin: mc 128, kc 256, nc 2048.
	shapes = append(shapes, shape{131, 37, 300}, shape{5, 2053, 259}, shape{129, 7, 513})
	for _, l := range sgemmLayouts {
		worst := 0.0
		for _, s := range shapes {
			tc := newSgemmCase(rng, l, s.m, s.n, s.k)
			got, all := tc.run(&sgemmGeneric)
			worst = max(worst, tc.check(t, got, all, func(i, j int) float64 { v, _ := tc.exact(i, j); return v }, 1))
		}
		t.Logf("%s: largest |twin − float64| / ((k+2)·2⁻²⁴·S): %.2g", l.name, worst)
	}
}

// sgemmTestShapes are the shapes every kernel set is tried on: each m and n
// from 0 to two tiles and a bit, k across the unrolling (4) and odd sizes,
// then shapes past every block (kc, mc, nc).
func sgemmTestShapes(s *sgemmKernels) [][3]int {
	var shapes [][3]int
	for m := 0; m <= 2*s.mr+2; m++ {
		for n := 0; n <= 2*s.nr+2; n++ {
			for _, k := range []int{0, 1, 3, 4, 7, 9} {
				shapes = append(shapes, [3]int{m, n, k})
			}
		}
	}
	for _, k := range []int{16, 17, s.kc - 1, s.kc, s.kc + 1, 2*s.kc + 3} {
		shapes = append(shapes, [3]int{s.mr + 1, s.nr + 3, k}, [3]int{2 * s.mr, 2 * s.nr, k})
	}
	return append(shapes,
		[3]int{s.mc + s.mr + 5, 3*s.nr + 7, s.kc + 45},
		[3]int{s.mr + 3, s.nc + s.nr + 1, 2*s.kc + 1},
		[3]int{2*s.mc + 1, 77, 2*s.kc + 88},
	)
}

func TestSgemm(t *testing.T) {
	forEachSet(t, func(t *testing.T, k kernels) {
		for _, l := range sgemmLayouts {
			rng := newRand()
			worst := 0.0
			for _, s := range sgemmTestShapes(&k.sgemm) {
				tc := newSgemmCase(rng, l, s[0], s[1], s[2])
				want, _ := tc.run(&sgemmGeneric)
				got, all := tc.run(&k.sgemm)
				worst = max(worst, tc.check(t, got, all, func(i, j int) float64 { return float64(want[i*tc.ldc+j]) }, 2))
			}
			t.Logf("%s: largest |kernel − twin| / ((k+2)·2⁻²⁴·S): %.2g", l.name, worst)
		}
	})
}

// TestSgemmTile: each set's micro-kernel alone against a plain loop, for
// kc from 0 across the unrolling, with ldc > nr and poison around c.
func TestSgemmTile(t *testing.T) {
	for _, k := range kernelSets() {
		s := k.sgemm
		rng := newRand()
		for _, kc := range []int{0, 1, 2, 3, 4, 5, 8, 9, 255, 256} {
			ldc := s.nr + 5
			a, _ := poisonedMatrix(rng, kc, s.mr, s.mr)
			b, _ := poisonedMatrix(rng, kc, s.nr, s.nr)
			c, all := poisonedMatrix(rng, s.mr, s.nr, ldc)
			want := slices.Clone(c)
			s.tile(kc, a, b, c, ldc)
			for r := 0; r < s.mr; r++ {
				for j := 0; j < s.nr; j++ {
					v, sum := float64(want[r*ldc+j]), math.Abs(float64(want[r*ldc+j]))
					for p := 0; p < kc; p++ {
						ab := float64(a[p*s.mr+r]) * float64(b[p*s.nr+j])
						v, sum = v+ab, sum+math.Abs(ab)
					}
					if d := math.Abs(float64(c[r*ldc+j]) - v); !(d <= tolTwin(kc, sum)) {
						t.Fatalf("%s kc %d: c[%d][%d] = %g, want %g", k.name, kc, r, j, c[r*ldc+j], v)
					}
				}
				for j := s.nr; j < ldc && r+1 < s.mr; j++ {
					if v := c[r*ldc+j]; v == v {
						t.Fatalf("%s kc %d: gap after row %d written", k.name, kc, r)
					}
				}
			}
			checkPoisonFunc(t, all, c, func(v float32) bool { return v != v })
		}
	}
}

// TestSgemmExported: the exported functions run the active set and mean
// what their comments say (one small product each, against float64).
func TestSgemmExported(t *testing.T) {
	rng := newRand()
	fns := map[string]func(m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int){
		"NT": SgemmNT, "NN": SgemmNN, "TN": SgemmTN,
	}
	for _, l := range sgemmLayouts {
		tc := newSgemmCase(rng, l, 37, 45, 70)
		got := slices.Clone(tc.cAll)
		c := got[cap(tc.cAll)-cap(tc.c):][:len(tc.c)]
		fns[l.name](tc.m, tc.n, tc.k, tc.a, tc.lda, tc.b, tc.ldb, c, tc.ldc)
		tc.check(t, c, got, func(i, j int) float64 { v, _ := tc.exact(i, j); return v }, 2)
	}
}

// TestSgemmConcurrent: callers on disjoint row ranges of one C, at once,
// get what one caller gets (each call has its own scratch).
func TestSgemmConcurrent(t *testing.T) {
	rng := newRand()
	m, n, k := 96, 70, 300
	a, b := randomF32(rng, m*k), randomF32(rng, n*k)
	want, got := make([]float32, m*n), make([]float32, m*n)
	SgemmNT(m, n, k, a, k, b, k, want, n)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Go(func() {
			r0, r1 := g*m/8, (g+1)*m/8
			SgemmNT(r1-r0, n, k, a[r0*k:], k, b, k, got[r0*n:], n)
		})
	}
	wg.Wait()
	if !slices.Equal(got, want) {
		t.Fatal("concurrent row blocks differ from one call")
	}
}

func TestSgemmNoAlloc(t *testing.T) {
	rng := newRand()
	m, n, k := 64, 96, 300
	a, b, c := randomF32(rng, m*k), randomF32(rng, n*k), make([]float32, m*n)
	SgemmNT(m, n, k, a, k, b, k, c, n) // warm the scratch pool
	if allocs := testing.AllocsPerRun(20, func() { SgemmNT(m, n, k, a, k, b, k, c, n) }); allocs != 0 {
		t.Fatalf("SgemmNT allocates %v times per call", allocs)
	}
}

// TestSgemmBoundsChecked: a dimension < 0, a stride below the width or a
// slice too short panics before anything is read or written.
func TestSgemmBoundsChecked(t *testing.T) {
	f := make([]float32, 100)
	calls := map[string]func(){
		"negative m":  func() { SgemmNT(-1, 2, 2, f, 2, f, 2, f, 2) },
		"short a NT":  func() { SgemmNT(4, 2, 25, f[:99], 25, f, 25, f, 2) },
		"short b NT":  func() { SgemmNT(2, 4, 25, f, 25, f[:99], 25, f, 4) },
		"short c NN":  func() { SgemmNN(10, 10, 2, f, 2, f, 10, f[:99], 10) },
		"short b NN":  func() { SgemmNN(2, 10, 10, f, 10, f[:99], 10, f, 10) },
		"short a TN":  func() { SgemmTN(10, 2, 10, f[:99], 10, f, 2, f, 2) },
		"lda < k NT":  func() { SgemmNT(2, 2, 5, f, 4, f, 5, f, 2) },
		"ldc < n NN":  func() { SgemmNN(2, 5, 2, f, 2, f, 5, f, 4) },
		"lda < m TN":  func() { SgemmTN(5, 2, 2, f, 4, f, 2, f, 2) },
		"negative ld": func() { SgemmTN(5, 2, 2, f, -5, f, 2, f, 2) },
	}
	for name, call := range calls {
		if !panics(call) {
			t.Errorf("%s: did not panic", name)
		}
	}
	// Empty products touch nothing, whatever the slices.
	SgemmNT(0, 5, 5, nil, 5, f, 5, nil, 5)
	SgemmNN(5, 0, 5, f, 5, nil, 0, nil, 0)
	SgemmTN(3, 3, 0, nil, 3, nil, 3, f, 3)
	for _, k := range kernelSets() {
		s := k.sgemm
		if !panics(func() {
			s.tile(4, make([]float32, 4*s.mr-1), make([]float32, 4*s.nr), make([]float32, s.mr*s.nr), s.nr)
		}) {
			t.Errorf("%s: sgemm tile with a short a did not panic", k.name)
		}
		if !panics(func() {
			s.tile(4, make([]float32, 4*s.mr), make([]float32, 4*s.nr), make([]float32, s.mr*s.nr-1), s.nr)
		}) {
			t.Errorf("%s: sgemm tile with a short c did not panic", k.name)
		}
	}
}

// TestFMAPeak: every set's probe runs and reports a finite positive rate
// (what the rate is, is a benchmark's business).
func TestFMAPeak(t *testing.T) {
	for _, k := range kernelSets() {
		if g := fmaPeak(&k.sgemm, time.Millisecond); !(g > 0 && g < 1e6) {
			t.Errorf("%s: FMA peak %g GFLOP/s", k.name, g)
		}
	}
	if g := FMAPeak(0); !(g > 0) {
		t.Errorf("FMAPeak(0) = %g", g)
	}
}

// TestInt8Peak: likewise for every set's int8 probe.
func TestInt8Peak(t *testing.T) {
	for _, k := range kernelSets() {
		if g := probePeak(k.int8Loop, float64(k.int8MACs), time.Millisecond); !(g > 0 && g < 1e6) {
			t.Errorf("%s: int8 peak %g GMAC/s", k.name, g)
		}
	}
	if g, err := Int8Peak("", 0); err != nil || !(g > 0) {
		t.Errorf("Int8Peak(\"\", 0) = %g, %v", g, err)
	}
	if _, err := Int8Peak("sse9", 0); err == nil || !strings.Contains(err.Error(), `"sse9"`) || !strings.Contains(err.Error(), "generic") {
		t.Errorf("Int8Peak(\"sse9\") error: %v", err)
	}
	// All threads at once: positive, and at most threads × one thread's
	// peak (with slack for a busy machine's one-thread figure), whatever
	// the cores the threads get.
	one, _ := Int8Peak("", 20*time.Millisecond)
	for _, threads := range []int{1, 2, 3} {
		g, err := Int8PeakThreads("", threads, 4*time.Millisecond)
		if err != nil || !(g > 0) || g > 1.5*float64(threads)*one {
			t.Errorf("Int8PeakThreads(\"\", %d) = %g, %v (one thread %g)", threads, g, err, one)
		}
	}
	if _, err := Int8PeakThreads("sse9", 2, 0); err == nil || !strings.Contains(err.Error(), `"sse9"`) {
		t.Errorf("Int8PeakThreads(\"sse9\") error: %v", err)
	}
}
