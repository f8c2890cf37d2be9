//go:build !purego

package cpu

import "testing"

// TestL1Blocks: l1Blocks over the twin, with blocks small enough that the
// tests' shapes split into several panels of rows and chunks of tokens
// (odd last ones included), writes exactly what one call writes; calls
// of fewer than l1MinTokens tokens pass through to its first kernel, the
// chunks of longer ones go to its second.
func TestL1Blocks(t *testing.T) {
	rng := newRand()
	var direct, chunks int
	counted := func(c *int) ternaryMatMulFunc {
		return func(w []byte, stride, rows int, x []int8, xStride, n, tokens int, out []int32, outStride int) {
			*c++
			ternaryMatMulGeneric(w, stride, rows, x, xStride, n, tokens, out, outStride)
		}
	}
	f := l1Blocks(counted(&direct), counted(&chunks), l1Activations, l2Panel)
	expectTernaryMatMul(t, f, rng, 2560, 8, l1MinTokens-1)
	if direct != 1 || chunks != 0 {
		t.Errorf("%d tokens: %d direct calls and %d chunks, want 1 and 0", l1MinTokens-1, direct, chunks)
	}
	expectTernaryMatMul(t, f, rng, 2560, 8, l1MinTokens)
	if direct != 1 || chunks < 2 {
		t.Errorf("%d tokens: %d more direct calls and %d chunks, want 0 and several", l1MinTokens, direct-1, chunks)
	}
	for _, b := range []struct{ acts, panel int }{{1, 1}, {600, 100}, {1000, 0}, {l1Activations, l2Panel}} {
		f := l1Blocks(ternaryMatMulGeneric, ternaryMatMulGeneric, b.acts, b.panel)
		for _, n := range []int{0, 128, 256, 384} {
			for _, rows := range []int{0, 1, 4, 7, 13, 33} {
				for _, tokens := range []int{0, 1, 15, 16, 17, 23, 33} {
					expectTernaryMatMul(t, f, rng, n, rows, tokens)
				}
			}
		}
	}
}

// TestTernaryMatMulAVXVNNI: the avxvnni set's products
// (ternaryMatMulAVXVNNI) in their blocks, against the twin: tiles of 12
// tokens, of 8, of 4 (rows in threes) and of 3 (rows in fours) as
// avxvnniTiles counts them, rows wider than avxvnniColumns in spans (even
// and uneven), more rows than a panel (avxvnniPanel), the single last
// tokens, and the avx2 tiles for the last rows and for calls of 1-2
// tokens.
func TestTernaryMatMulAVXVNNI(t *testing.T) {
	if !hasAVXVNNI {
		t.Skip("no AVX-VNNI on this CPU: the avxvnni set cannot run")
	}
	rng := newRand()
	for _, n := range []int{0, 128, 2560, 2688, 6912} {
		for _, rows := range []int{1, 2, 3, 4, 5, 7, 17} {
			for _, tokens := range []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 15, 16, 18, 19, 20, 24, 31} {
				expectTernaryMatMul(t, ternaryMatMulAVXVNNI, rng, n, rows, tokens)
			}
		}
	}
	// Panels of 816 rows at 2560 columns, 900 at 6912 in spans of 2304
	// (tiles of 8 or more) and 300 in whole rows (fewer).
	for _, n := range []int{2560, 6912} {
		for _, tokens := range []int{3, 5, 6, 20} {
			span := n
			if tokens >= 8 {
				span = n / ((n + avxvnniColumns - 1) / avxvnniColumns)
			}
			p := avxvnniPanel / (span / 4) / 12 * 12
			expectTernaryMatMul(t, ternaryMatMulAVXVNNI, rng, n, p+5, tokens)
		}
	}
	for tokens := 0; tokens <= 40; tokens++ {
		n12, n8, n4, n3, n1 := avxvnniTiles(tokens)
		if got := 12*n12 + 8*n8 + 4*n4 + 3*n3 + n1; got != tokens || n8 > 1 || n4 > 1 || n1 > 2 || (tokens > 2 && n1 == 2 && n12+n8 == 0) {
			t.Errorf("avxvnniTiles(%d) = %d, %d, %d, %d, %d (%d tokens)", tokens, n12, n8, n4, n3, n1, got)
		}
	}
}
