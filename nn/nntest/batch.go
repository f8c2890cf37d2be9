package nntest

import (
	"math"
	"testing"
)

// BatchInvariance checks that a backend gives every token of a batch
// exactly (bit for bit) the logits it gets when the same positions are
// evaluated one token at a time: speculative decoding verifies k drafted
// tokens in one pass of k+1 and is lossless only if that pass's logits are
// those plain decoding would have produced. It runs on the tiny shape in
// every storage and on the small shape, for batches that start at 0 (a
// prompt) and after a prefix (a verification), with logits for every token.
//
// Not every backend promises this (a GPU may sum a batch in another order);
// the CPU backend does, and runs it in its conformance test.
func BatchInvariance(t *testing.T, newBackend Factory) {
	cases := []struct {
		shape string
		st    Storage
	}{
		{"tiny", StoreI2S},
		{"tiny", StoreTQ2},
		{"tiny", StoreTQ1},
		{"tiny", StoreTQ2BlockScale},
		{"small", StoreI2S},
	}
	const n = 20
	for _, tc := range cases {
		t.Run(tc.shape+"/"+string(tc.st), func(t *testing.T) {
			m := NewModel(t, tc.shape, tc.st, 7)
			v := m.Config.Vocab
			toks := sequence(n, v)
			b, err := newBackend(m.Config, m.Weights, 64)
			if err != nil {
				t.Fatalf("backend: %v", err)
			}
			defer b.Close()
			alone := make([]float32, n*v) // logits of each position evaluated alone
			for p := range toks {
				if err := b.Forward(toks[p:p+1], p, alone[p*v:(p+1)*v]); err != nil {
					t.Fatalf("Forward(position %d): %v", p, err)
				}
			}
			// Batches: the whole sequence, then a prefix followed by
			// verification-sized batches of 1 + k tokens.
			for _, split := range [][]int{{n}, {3, 9, 2, 6}, {11, 5, 4}} {
				got := make([]float32, n*v)
				pos := 0
				for _, k := range split {
					if err := b.Forward(toks[pos:pos+k], pos, got[pos*v:(pos+k)*v]); err != nil {
						t.Fatalf("split %v: Forward(%d tokens at %d): %v", split, k, pos, err)
					}
					pos += k
				}
				for p := 0; p < n; p++ {
					if i, ok := firstBitDifference(got[p*v:(p+1)*v], alone[p*v:(p+1)*v]); !ok {
						t.Fatalf("split %v position %d: logit %d is %v in the batch, %v alone (not bit-identical)",
							split, p, i, got[p*v+i], alone[p*v+i])
					}
				}
			}
			// The last token's logits only (len(logits) = vocab) agree too.
			last := make([]float32, v)
			if err := b.Forward(toks[n-5:], n-5, last); err != nil {
				t.Fatal(err)
			}
			if i, ok := firstBitDifference(last, alone[(n-1)*v:]); !ok {
				t.Fatalf("last-token logits: logit %d is %v after a batch, %v alone", i, last[i], alone[(n-1)*v+i])
			}
		})
	}
}

// firstBitDifference returns the first index where a and b differ in their
// bits, and false, or −1 and true when they are identical.
func firstBitDifference(a, b []float32) (int, bool) {
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return i, false
		}
	}
	return -1, true
}
