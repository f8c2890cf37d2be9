package cpu

import (
	"math"
	"testing"

	"github.com/bitvk/bitvk/nn"
)

// gate is activate(a, g)·u element by element, bit for bit, for both
// activations, every kernel set, and the awkward values (±0, ±Inf,
// subnormals); a NaN gives a NaN or, for ReLU² of a NaN with the sign bit
// set, 0.
func TestGate(t *testing.T) {
	for _, k := range kernelSets() {
		t.Run(k.name, func(t *testing.T) { testGate(t, k) })
	}
}

func testGate(t *testing.T, k kernels) {
	rng := newRand()
	special := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 1e-40, -1e-40, 3, -3}
	for _, a := range []nn.Activation{nn.ReLUSquared, nn.SiLU} {
		for _, n := range []int{0, 1, 7, 300} {
			g, u, h := make([]float32, n), make([]float32, n), make([]float32, n)
			for i := range g {
				g[i] = float32(rng.NormFloat64() * 4)
				if rng.IntN(4) == 0 {
					g[i] = special[rng.IntN(len(special))]
				}
				u[i] = float32(rng.NormFloat64())
			}
			gate(k, a, h, g, u)
			for i := range h {
				want := activate(a, g[i]) * u[i]
				if g[i] != g[i] {
					if !(h[i] != h[i] || (a == nn.ReLUSquared && h[i] == 0)) {
						t.Fatalf("%v: gate(NaN) = %g", a, h[i])
					}
					continue
				}
				if math.Float32bits(h[i]) != math.Float32bits(want) && !(h[i] != h[i] && want != want) {
					t.Fatalf("%v n %d: gate(%g)·%g = %g, activate gives %g", a, n, g[i], u[i], h[i], want)
				}
			}
		}
	}
}

// Every set's sumSquaresRows gives each of 1-8 rows sumSquaresGeneric's
// bits, rows of Gaussian values of many magnitudes, and rows as the ReLU²
// gate makes them (half zeros, a wide spread).
func TestSumSquaresRows(t *testing.T) {
	forEachSet(t, func(t *testing.T, k kernels) {
		rng := newRand()
		for _, n := range []int{0, 1, 5, 8, 13, 2560, 6912} {
			for count := 1; count <= normGroup; count++ {
				rows := make([][]float32, count)
				for r := range rows {
					rows[r] = make([]float32, n)
					for i := range rows[r] {
						rows[r][i] = float32(rng.NormFloat64() * math.Pow(10, float64(rng.IntN(12)-6)))
						if r%2 == 1 { // as the ReLU² gate gives
							g := max(float32(rng.NormFloat64()), 0)
							rows[r][i] = g * g * float32(rng.NormFloat64())
						}
					}
				}
				sums := make([]float64, count+1)
				sums[count] = -1 // past the rows: untouched
				k.sumSquaresRows(rows, sums[:count])
				for r := range rows {
					if want := sumSquaresGeneric(rows[r]); math.Float64bits(sums[r]) != math.Float64bits(want) {
						t.Fatalf("n %d, %d rows, row %d: %g, alone %g", n, count, r, sums[r], want)
					}
				}
				if sums[count] != -1 {
					t.Fatalf("n %d, %d rows: wrote past the sums", n, count)
				}
			}
		}
	})
}
