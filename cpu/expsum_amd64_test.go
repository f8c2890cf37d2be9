//go:build !purego

package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/bitvk/bitvk/nn"
)

// goExpSum is nn.ExpSum's Go loop (the vector kernel set aside).
func goExpSum(x []float32, m float64) float64 {
	nn.SetExpSum(nil)
	defer nn.SetExpSum(expSumVector)
	return nn.ExpSum(x, m)
}

// expSumKernels are the kernels this CPU runs, by name.
func expSumKernels() map[string]func(x []float32, m float64) float64 {
	ks := map[string]func(x []float32, m float64) float64{}
	if hasExpSumAVX512 {
		ks["avx512"] = func(x []float32, m float64) float64 { return expSumAVX512(x, m, &expSumTable[0]) }
	}
	if hasAVX2 {
		ks["avx2"] = func(x []float32, m float64) float64 { return expSumAVX2(x, m, &expSumTable[0]) }
	}
	return ks
}

// TestExpSumKernels: for expSumAVX512 and expSumAVX2, each term as nn's
// Go loop computes it (one-element sums, within an ulp), and sums of every
// length to 300 and of a whole vocabulary within n·2⁻⁵³ of math.Exp's,
// over logits with NaNs, −∞ and terms below e^−708 among them.
func TestExpSumKernels(t *testing.T) {
	ks := expSumKernels()
	if len(ks) == 0 {
		t.Skip("no AVX2 on this CPU: nn.ExpSum stays its Go loop")
	}
	for name, f := range ks {
		t.Run(name, func(t *testing.T) { testExpSum(t, f) })
	}
}

func testExpSum(t *testing.T, expSumVector func(x []float32, m float64) float64) {
	rng := rand.New(rand.NewPCG(7, 8))
	// One term at a time, across the exponent range and the table's
	// entries: d from 0 down past −708.
	for i := range 20000 {
		m := rng.NormFloat64() * 8
		var d float64
		switch i % 4 {
		case 0:
			d = -rng.Float64() * 750
		case 1:
			d = -rng.Float64() * 0.01
		default:
			d = -rng.ExpFloat64() * 20
		}
		x := []float32{float32(m + d)}
		if float64(x[0]) > m {
			m = float64(x[0])
		}
		got, want := expSumVector(x, m), goExpSum(x, m)
		if got != want && math.Abs(got-want) > math.Abs(want)*0x1p-52 {
			t.Fatalf("exp(%v − %v): kernel %v (%#x), Go %v (%#x)", x[0], m, got, math.Float64bits(got), want, math.Float64bits(want))
		}
	}
	check := func(x []float32) {
		t.Helper()
		m := math.Inf(-1)
		for _, v := range x {
			if v == v {
				m = max(m, float64(v))
			}
		}
		if math.IsInf(m, -1) { // every term 0: nn.ExpSum answers before the kernel
			m = 0
		}
		var exact float64
		for _, v := range x {
			if d := float64(v) - m; d > -708 {
				exact += math.Exp(d)
			}
		}
		got := expSumVector(x, m)
		tol := float64(max(len(x), 16)) * 0x1p-53 * 2 // the kernel's rounding and math.Exp's plain sum's
		if exact == 0 {
			if got != 0 {
				t.Fatalf("n=%d: %v, want 0", len(x), got)
			}
			return
		}
		if rel := math.Abs(got-exact) / exact; rel > tol {
			t.Fatalf("n=%d: kernel %v, math.Exp's sum %v (relative %.3g, allowed %.3g)", len(x), got, exact, rel, tol)
		}
		if g := goExpSum(x, m); math.Abs(got-g)/exact > tol {
			t.Fatalf("n=%d: kernel %v, Go %v", len(x), got, g)
		}
	}
	for n := 0; n <= 300; n++ {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(rng.NormFloat64() * 4)
			switch rng.IntN(40) {
			case 0:
				x[i] = float32(math.NaN())
			case 1:
				x[i] = float32(math.Inf(-1))
			case 2:
				x[i] = -1e30 // d below −708
			}
		}
		check(x)
	}
	x := make([]float32, 128256)
	for i := range x {
		x[i] = float32(rng.NormFloat64() * 4)
	}
	check(x)
	// The tail: 1…15 elements, with the elements past the slice's end
	// (which a read of them would add) far larger.
	for n := 1; n < 16; n++ {
		buf := make([]float32, 64)
		for i := range buf {
			buf[i] = 30
		}
		for i := range n {
			buf[8+i] = 1
		}
		if got, want := expSumVector(buf[8:8+n], 1), float64(n); got != want {
			t.Fatalf("%d ones before larger elements: %v, want %v", n, got, want)
		}
	}
}

func BenchmarkExpSumVector(b *testing.B) {
	x := make([]float32, 128256)
	r := rand.New(rand.NewPCG(5, 6))
	for i := range x {
		x[i] = float32(r.NormFloat64() * 4)
	}
	ks := expSumKernels()
	ks["go"] = goExpSum
	for _, name := range []string{"avx512", "avx2", "go"} {
		f, ok := ks[name]
		if !ok {
			continue
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(4 * len(x)))
			var s float64
			for b.Loop() {
				s += f(x, 40)
			}
			if !(s > 0) {
				b.Fatal(s)
			}
		})
	}
}
