package nntest

import (
	"math"
	"testing"

	"github.com/bitvk/bitvk/nn"
	"github.com/bitvk/bitvk/nn/ref"
)

// PositionZeroTolerance bounds |backend − oracle| for every logit of a
// token alone at position 0. There attention over one position is exactly
// its value row, so a backend that rounds every step as the oracle does
// (see nn/ref: bitnet.cpp's rounding) differs only in the orders of the
// float sums the formulas leave open (the head's): a few float32 ulps of
// logits of size ~10. One flipped int8 code would compound through the
// layers far past it.
const PositionZeroTolerance = 1e-4

// PositionZero checks the logits of the BOS token (or token 1) alone at
// position 0, teacher-forced with no mixing across positions, against the
// oracle on each named shape (synth.Shapes; "2b" is BitNet b1.58 2B4T's,
// which takes a minute and a few GB to build and run, and is skipped in
// -short mode).
func PositionZero(t *testing.T, newBackend Factory, shapes ...string) {
	for _, shape := range shapes {
		t.Run(shape, func(t *testing.T) {
			if shape == "2b" && testing.Short() {
				t.Skip("the 2B shape in -short mode")
			}
			m := NewModel(t, shape, StoreI2S, 11)
			tok := int32(1)
			if v, err := nn.LoadVocab(m.File); err == nil && v.BOS >= 0 && int(v.BOS) < m.Config.Vocab {
				tok = v.BOS
			}
			r, err := ref.New(m.Config, m.Weights)
			if err != nil {
				t.Fatalf("ref.New: %v", err)
			}
			want, err := r.Forward(tok)
			if err != nil {
				t.Fatalf("ref.Forward: %v", err)
			}
			r = nil // the oracle's unpacked weights are large on the 2B shape
			b, err := newBackend(m.Config, m.Weights, 8)
			if err != nil {
				t.Fatalf("backend: %v", err)
			}
			defer b.Close()
			got := make([]float32, m.Config.Vocab)
			if err := b.Forward([]int32{tok}, 0, got); err != nil {
				t.Fatalf("Forward: %v", err)
			}
			worst, at := 0.0, 0
			for i := range want {
				if d := math.Abs(float64(got[i]) - float64(want[i])); !(d <= worst) {
					worst, at = d, i
				}
			}
			t.Logf("token %d at position 0: largest |backend − oracle| %.3g (logit %d: %v, oracle %v)", tok, worst, at, got[at], want[at])
			if !(worst <= PositionZeroTolerance) {
				t.Errorf("token %d at position 0: logit %d is %v, oracle %v (|Δ| %.3g > %g)", tok, at, got[at], want[at], worst, PositionZeroTolerance)
			}
		})
	}
}
