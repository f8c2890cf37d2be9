package nn

import (
	"math"
	"math/rand/v2"
	"testing"
)

// expSumExact is Σ math.Exp(x_i − m) summed with Neumaier's compensation:
// the reference ExpSum and the plain loop are both held to.
func expSumExact(x []float32, m float64) float64 {
	var s, c float64
	for _, v := range x {
		if v != v {
			continue
		}
		e := math.Exp(float64(v) - m)
		t := s + e
		if math.Abs(s) >= math.Abs(e) {
			c += (s - t) + e
		} else {
			c += (e - t) + s
		}
		s = t
	}
	return s + c
}

// expSumPlain is ExpSum's plain twin: math.Exp, one sum.
func expSumPlain(x []float32, m float64) float64 {
	var s float64
	for _, v := range x {
		if v == v {
			s += math.Exp(float64(v) - m)
		}
	}
	return s
}

func TestExpNonPos(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	worst := 0.0
	check := func(d float64) {
		got, want := expNonPos(d), math.Exp(d)
		if d <= -708 {
			if got != 0 {
				t.Fatalf("expNonPos(%v) = %v, want 0 below −708", d, got)
			}
			return
		}
		rel := math.Abs(got-want) / want
		worst = max(worst, rel)
		if rel > 1e-15 {
			t.Fatalf("expNonPos(%v) = %v, math.Exp %v: relative error %.3g", d, got, want, rel)
		}
	}
	for _, d := range []float64{0, math.Copysign(0, -1), -1e-300, -math.SmallestNonzeroFloat64, -math.Ln2 / 128, -math.Ln2 / 64, -math.Ln2, -1, -20, -87.3, -707.9, -708, -709, -1e10} {
		check(d)
	}
	for range 200000 {
		check(-r.Float64() * 50)
		check(-r.ExpFloat64() * 100)
	}
	for _, d := range []float64{math.NaN(), math.Inf(-1)} {
		if got := expNonPos(d); got != 0 {
			t.Errorf("expNonPos(%v) = %v, want 0", d, got)
		}
	}
	t.Logf("worst relative error %.3g", worst)
}

func TestExpSum(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 3, 4, 5, 131, 128256} {
		x := make([]float32, n)
		m := math.Inf(-1)
		for i := range x {
			x[i] = float32(r.NormFloat64() * 8)
			if i%97 == 5 {
				x[i] = float32(math.NaN())
			}
			if i%89 == 7 {
				x[i] = float32(math.Inf(-1))
			}
			if x[i] == x[i] {
				m = max(m, float64(x[i]))
			}
		}
		got, want, plain := ExpSum(x, m), expSumExact(x, m), expSumPlain(x, m)
		if n == 0 || math.IsInf(m, -1) {
			if got != 0 {
				t.Errorf("n=%d: ExpSum = %v, want 0", n, got)
			}
			continue
		}
		// A sum of n terms rounds to within about n·2⁻⁵³ of the exact one;
		// ExpSum must stay within that of it, as the plain loop does.
		tol := float64(max(n, 16)) * 0x1p-53
		if rel := math.Abs(got-want) / want; rel > tol {
			t.Errorf("n=%d: ExpSum = %v, exact %v (relative error %.3g, allowed %.3g)", n, got, want, rel, tol)
		}
		if rel := math.Abs(plain-want) / want; rel > tol {
			t.Errorf("n=%d: the plain loop = %v, exact %v (relative error %.3g, allowed %.3g)", n, plain, want, rel, tol)
		}
	}
	if got := ExpSum([]float32{1, 2}, math.NaN()); !math.IsNaN(got) {
		t.Errorf("ExpSum with a NaN maximum = %v, want NaN", got)
	}
	if got := ExpSum([]float32{1, 2}, math.Inf(1)); got != 0 {
		t.Errorf("ExpSum with m = +∞ = %v, want 0", got)
	}
	if got := ExpSum([]float32{1, float32(math.Inf(1))}, math.Inf(1)); !math.IsNaN(got) {
		t.Errorf("ExpSum of +∞ with m = +∞ = %v, want NaN (∞ − ∞)", got)
	}
}

func BenchmarkExpSum(b *testing.B) {
	x := make([]float32, 128256)
	r := rand.New(rand.NewPCG(5, 6))
	for i := range x {
		x[i] = float32(r.NormFloat64() * 4)
	}
	m := 40.0
	for _, c := range []struct {
		name string
		f    func([]float32, float64) float64
	}{{"ExpSum", ExpSum}, {"mathExp", expSumPlain}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(4 * len(x)))
			for b.Loop() {
				sinkF += c.f(x, m)
			}
		})
	}
}

var sinkF float64
