package train

import (
	"math"
	"testing"
)

func TestSchedule(t *testing.T) {
	h := DefaultHyper()
	h.Steps, h.Warmup, h.LR = 100, 10, 1e-3
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-12 }
	if lr, _ := h.Schedule(0); !near(lr, 1e-4) {
		t.Errorf("first warmup step: %g", lr)
	}
	if lr, _ := h.Schedule(9); !near(lr, 1e-3) {
		t.Errorf("end of warmup: %g", lr)
	}
	if lr, _ := h.Schedule(10); !near(lr, 1e-3) {
		t.Errorf("start of the cosine: %g", lr)
	}
	if lr, wd := h.Schedule(99); !near(lr, 1e-4) || wd != h.WeightDecay {
		t.Errorf("last step: lr %g wd %g", lr, wd)
	}
	prev := math.Inf(1)
	for s := 10; s < 100; s++ {
		lr, _ := h.Schedule(s)
		if lr > prev {
			t.Fatalf("cosine rises at step %d", s)
		}
		prev = lr
	}
	h.TwoStage = true
	mid := 10 + 90/2
	before, wd1 := h.Schedule(mid - 1)
	after, wd2 := h.Schedule(mid)
	if !near(before, 0.5e-3) || !near(after, 0.5e-3*h.Stage2LRFrac) || wd1 != h.WeightDecay || wd2 != 0 {
		t.Errorf("two stages: lr %g → %g, weight decay %g → %g", before, after, wd1, wd2)
	}
	if lr, _ := h.Schedule(99); !near(lr, 0.5e-3*h.Stage2LRFrac*h.MinLRFrac) {
		t.Errorf("two stages, last step: %g", lr)
	}
}

// TestAdamWStep checks one update against the formula by hand, with the
// gradient clipped.
func TestAdamWStep(t *testing.T) {
	m := tinyModel(t, true, 1)
	o := NewAdamW(len(m.Params))
	h := DefaultHyper()
	h.Warmup, h.Steps, h.LR, h.Clip = 0, 10, 0.1, 1
	for i := range m.Grads {
		m.Grads[i] = 0
	}
	// one gradient of norm 2 on a projection weight and one on a norm
	l := m.Layout
	q := l.layers[0].q
	n := l.layers[0].attnNorm
	pq, pn := l.Tensors[q].Offset, l.Tensors[n].Offset
	m.Grads[pq], m.Grads[pn] = 2*0.6, 2*0.8
	wq, wn := float64(m.Params[pq]), float64(m.Params[pn])
	if norm := o.Step(m, h, 0); math.Abs(norm-2) > 1e-6 {
		t.Fatalf("gradient norm %g, want 2", norm)
	}
	lr, wd := h.Schedule(0)
	// after clipping to 1, m̂ = g, v̂ = g², so the step is lr·(sign(g) + wd·p)
	wantQ := wq - lr*(1/(1+h.AdamEps/0.6)+wd*wq)
	wantN := wn - lr*(1/(1+h.AdamEps/0.8))
	if math.Abs(float64(m.Params[pq])-wantQ) > 1e-6 || math.Abs(float64(m.Params[pn])-wantN) > 1e-6 {
		t.Errorf("updated %v %v, want %v %v", m.Params[pq], m.Params[pn], wantQ, wantN)
	}
}
