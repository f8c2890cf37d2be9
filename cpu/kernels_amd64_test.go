//go:build !purego

package cpu

import "testing"

// TestL1Blocks: l1Blocks over the twin, with blocks small enough that the
// tests' shapes split into several panels of rows and chunks of tokens
// (odd last ones included), writes exactly what one call writes; calls
// of fewer than l1MinTokens tokens pass through.
func TestL1Blocks(t *testing.T) {
	rng := newRand()
	for _, b := range []struct{ acts, panel int }{{1, 1}, {600, 100}, {1000, 0}, {l1Activations, l2Panel}} {
		f := l1Blocks(ternaryMatMulGeneric, b.acts, b.panel)
		for _, n := range []int{0, 128, 256, 384} {
			for _, rows := range []int{0, 1, 4, 7, 13, 33} {
				for _, tokens := range []int{0, 1, 15, 16, 17, 23, 33} {
					expectTernaryMatMul(t, f, rng, n, rows, tokens)
				}
			}
		}
	}
}
