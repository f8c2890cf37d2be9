package train

import (
	"fmt"
	"math"
)

// Hyper are the optimizer's and the schedule's settings.
type Hyper struct {
	LR          float64 `json:"lr"`           // peak learning rate
	MinLRFrac   float64 `json:"min_lr_frac"`  // the cosine decays to LR·MinLRFrac
	Warmup      int     `json:"warmup"`       // steps of linear warmup
	Steps       int     `json:"steps"`        // total steps
	WeightDecay float64 `json:"weight_decay"` // decoupled, on projections and the embedding only
	Beta1       float64 `json:"beta1"`
	Beta2       float64 `json:"beta2"`
	AdamEps     float64 `json:"adam_eps"`
	Clip        float64 `json:"clip"` // global gradient-norm clip; 0: none
	// TwoStage is BitNet b1.58's schedule: the first half as above with
	// weight decay; at the midpoint the learning rate drops to
	// Stage2LRFrac of what it was and cosine-decays from there, and weight
	// decay is off.
	TwoStage     bool    `json:"two_stage"`
	Stage2LRFrac float64 `json:"stage2_lr_frac"`
}

// DefaultHyper are the settings of the demo model.
func DefaultHyper() Hyper {
	return Hyper{LR: 3e-3, MinLRFrac: 0.1, Warmup: 100, Steps: 1000, WeightDecay: 0.1,
		Beta1: 0.9, Beta2: 0.95, AdamEps: 1e-8, Clip: 1.0, Stage2LRFrac: 0.5}
}

// Validate rejects settings that cannot train.
func (h Hyper) Validate() error {
	switch {
	case !(h.LR > 0) || math.IsInf(h.LR, 0):
		return fmt.Errorf("learning rate must be positive, got %g", h.LR)
	case h.Steps <= 0:
		return fmt.Errorf("steps must be positive, got %d", h.Steps)
	case h.Warmup < 0:
		return fmt.Errorf("warmup must not be negative, got %d", h.Warmup)
	case h.MinLRFrac < 0 || h.MinLRFrac > 1 || h.Stage2LRFrac <= 0 || h.Stage2LRFrac > 1:
		return fmt.Errorf("learning-rate fractions must be in [0, 1]")
	case h.Beta1 < 0 || h.Beta1 >= 1 || h.Beta2 < 0 || h.Beta2 >= 1 || !(h.AdamEps > 0):
		return fmt.Errorf("AdamW betas must be in [0, 1) and epsilon positive")
	case h.WeightDecay < 0 || h.Clip < 0:
		return fmt.Errorf("weight decay and clip must not be negative")
	}
	return nil
}

// Schedule returns the learning rate and weight decay of step (0-based):
// linear warmup to LR, then cosine decay to LR·MinLRFrac at the last step
// (or BitNet's two stages, see TwoStage).
func (h Hyper) Schedule(step int) (lr, wd float64) {
	if step < h.Warmup {
		return h.LR * float64(step+1) / float64(h.Warmup), h.WeightDecay
	}
	cosine := func(from, to float64, i, n int) float64 {
		if n <= 1 {
			return from
		}
		frac := float64(i) / float64(n-1)
		return to + (from-to)*0.5*(1+math.Cos(math.Pi*frac))
	}
	if !h.TwoStage {
		return cosine(h.LR, h.LR*h.MinLRFrac, step-h.Warmup, h.Steps-h.Warmup), h.WeightDecay
	}
	mid := h.Warmup + (h.Steps-h.Warmup)/2
	if step < mid {
		return cosine(h.LR, h.LR*0.5, step-h.Warmup, mid-h.Warmup), h.WeightDecay
	}
	start := h.LR * 0.5 * h.Stage2LRFrac
	return cosine(start, start*h.MinLRFrac, step-mid, h.Steps-mid), 0
}

// AdamW is the optimizer state: the two moment buffers in the parameter
// layout.
type AdamW struct {
	M, V []float32
}

// NewAdamW allocates zero moments for n parameters.
func NewAdamW(n int) *AdamW { return &AdamW{M: make([]float32, n), V: make([]float32, n)} }

// Step applies one AdamW update (step is 0-based):
//
//	m = β1·m + (1−β1)·g,  v = β2·v + (1−β2)·g²
//	p −= lr·( m/(1−β1ᵗ) / (√(v/(1−β2ᵗ)) + ε) + wd·p )
//
// with weight decay only on decayed tensors. It first scales the gradient
// so its global norm is at most Clip, and returns the norm before
// clipping.
func (o *AdamW) Step(m *Model, h Hyper, step int) float64 {
	l := m.Layout
	var ss float64
	for _, g := range m.Grads {
		ss += float64(g) * float64(g)
	}
	norm := math.Sqrt(ss)
	gscale := float32(1)
	if h.Clip > 0 && norm > h.Clip {
		gscale = float32(h.Clip / norm)
	}
	lr, wd := h.Schedule(step)
	t := float64(step + 1)
	c1 := 1 - math.Pow(h.Beta1, t)
	c2 := 1 - math.Pow(h.Beta2, t)
	b1, b2 := float32(h.Beta1), float32(h.Beta2)
	m.w.run(len(l.Tensors), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			tt := l.Tensors[i]
			decay := float32(0)
			if tt.Kind != KindNorm {
				decay = float32(wd)
			}
			p, g := l.View(m.Params, i), l.View(m.Grads, i)
			mm, vv := l.View(o.M, i), l.View(o.V, i)
			flr := float32(lr)
			ic1, ic2, eps := float32(1/c1), float32(1/c2), float32(h.AdamEps)
			for j := range p {
				gj := g[j] * gscale
				mm[j] = b1*mm[j] + (1-b1)*gj
				vv[j] = b2*vv[j] + (1-b2)*gj*gj
				mh, vh := mm[j]*ic1, vv[j]*ic2
				p[j] -= flr * (mh/(float32(math.Sqrt(float64(vh)))+eps) + decay*p[j])
			}
		}
	})
	return norm
}
