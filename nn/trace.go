package nn

import (
	"fmt"
	"math"
)

// Trace is a Tracer's residual stream: Trace[l][s] holds the hidden state
// after layer l's block s (StageAttention, StageFFN) at every position,
// position-major: [positions][Embd].
type Trace [][2][]float32

// RunTrace evaluates prompt from position 0 on b, which must be a Tracer,
// and returns its trace (gathered across the chunks the backend splits the
// prompt into) and every position's logits, [positions][Vocab].
func RunTrace(b Backend, c *Config, prompt []int32) (Trace, []float32, error) {
	tr, ok := b.(Tracer)
	if !ok {
		return nil, nil, fmt.Errorf("%s cannot report its hidden state", b.Name())
	}
	t := make(Trace, c.Layers)
	logits := make([]float32, len(prompt)*c.Vocab)
	err := tr.ForwardTrace(prompt, 0, logits, func(l int, s Stage, x []float32) {
		t[l][s] = append(t[l][s], x...)
	})
	return t, logits, err
}

// BlockDiff is how far one layer's block of a trace departs from a
// reference's: bitvk check's figure of merit and, per position, what
// bitvk view's heatmap shows.
type BlockDiff struct {
	MaxAbs float64 // largest |Δ| over every position and dimension (a NaN counts as largest)
	At     int     // the position where MaxAbs is
	Rel    float64 // MaxAbs relative to the reference's largest |x| in the block
	// PosRel is, per position, the largest |Δ| there relative to the
	// reference's largest |x| in the whole block (so Rel is its maximum).
	PosRel []float64
}

// CompareTraces compares got against ref, layer by layer and block by
// block; both must come from the same prompt on models of width embd.
func CompareTraces(ref, got Trace, embd int) ([][2]BlockDiff, error) {
	if len(ref) != len(got) {
		return nil, fmt.Errorf("nn: comparing traces of %d and %d layers", len(ref), len(got))
	}
	out := make([][2]BlockDiff, len(ref))
	for l := range ref {
		for s := range 2 {
			a, b := ref[l][s], got[l][s]
			if len(a) != len(b) || embd <= 0 || len(a)%embd != 0 {
				return nil, fmt.Errorf("nn: layer %d, %s block: traces of %d and %d values for width %d", l, Stage(s), len(a), len(b), embd)
			}
			d := BlockDiff{PosRel: make([]float64, len(a)/embd)}
			maxX := 0.0
			for i := range a {
				diff := math.Abs(float64(a[i] - b[i]))
				if diff > d.MaxAbs || math.IsNaN(diff) {
					d.MaxAbs, d.At = diff, i/embd
				}
				if p := i / embd; diff > d.PosRel[p] || math.IsNaN(diff) {
					d.PosRel[p] = diff
				}
				maxX = math.Max(maxX, math.Abs(float64(a[i])))
			}
			scale := math.Max(maxX, 1e-30)
			d.Rel = d.MaxAbs / scale
			for p := range d.PosRel {
				d.PosRel[p] /= scale
			}
			out[l][s] = d
		}
	}
	return out, nil
}
