package train

import (
	"math"
	"math/rand/v2"
	"testing"
)

func tinyShape() Shape {
	return Shape{Vocab: 40, Layers: 2, Embd: 128, FFN: 256, Heads: 4, KVHeads: 2, Context: 8, RopeBase: 10000, Eps: 1e-5}
}

func tinyModel(t *testing.T, float bool, seed uint64) *Model {
	t.Helper()
	l, err := NewLayout(tinyShape())
	if err != nil {
		t.Fatal(err)
	}
	m := NewModel(l, float, 2)
	l.Init(m.Params, seed)
	return m
}

func randomTokens(r *rand.Rand, n, vocab int) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(r.IntN(vocab))
	}
	return out
}

// TestGradientMatchesFiniteDifferences checks the whole backward pass of
// the float model (every operation's backward: embedding, RMSNorm, the
// matrix products, RoPE, attention, the gate, the residual adds, the tied
// head and cross-entropy) against central differences of the loss, for a
// sample of the parameters of every tensor, the largest gradient among
// them. The model computes in float32 (its float64 sums are the norms'
// and the loss's), so the step is 3e-3 on weights scaled up to a standard
// deviation of 0.1, and the tolerance 2% of the tensor's largest gradient.
// The quantizers' backward is the identity by construction (the STE);
// their forward is checked against inference in TestQuantizersMatchInference.
func TestGradientMatchesFiniteDifferences(t *testing.T) {
	m := tinyModel(t, true, 1)
	r := rand.New(rand.NewPCG(7, 7))
	for i := range m.Params {
		if m.Layout.Tensors[tensorOf(m.Layout, i)].Kind != KindNorm {
			m.Params[i] *= 5
		} else {
			m.Params[i] = 1 + 0.3*float32(r.NormFloat64())
		}
	}
	b, T := 2, 8
	tok := randomTokens(r, b*T, 40)
	tgt := randomTokens(r, b*T, 40)
	tgt[3] = -1 // unscored
	if _, err := m.Forward(tok, tgt, b, T); err != nil {
		t.Fatal(err)
	}
	if err := m.Backward(); err != nil {
		t.Fatal(err)
	}
	grads := append([]float32(nil), m.Grads...)
	loss := func() float64 {
		l, err := m.Forward(tok, tgt, b, T)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	const h = 3e-3
	for ti, tt := range m.Layout.Tensors {
		view := m.Layout.View(m.Params, ti)
		g := m.Layout.View(grads, ti)
		var gmax float64
		for _, v := range g {
			gmax = max(gmax, math.Abs(float64(v)))
		}
		if gmax == 0 {
			t.Errorf("%s: gradient is all zero", tt.Name)
			continue
		}
		for k := 0; k < 6; k++ {
			j := r.IntN(len(view))
			if k == 0 { // the largest gradient, where errors show most
				for jj, v := range g {
					if math.Abs(float64(v)) == gmax {
						j = jj
					}
				}
			}
			old := view[j]
			view[j] = old + h
			up := loss()
			view[j] = old - h
			down := loss()
			view[j] = old
			fd := (up - down) / (2 * h)
			if d := math.Abs(fd - float64(g[j])); d > 0.02*gmax {
				t.Errorf("%s[%d]: backward %.6g, finite difference %.6g (largest gradient %.3g)", tt.Name, j, g[j], fd, gmax)
			}
		}
	}
}

func tensorOf(l *Layout, i int) int {
	for ti, t := range l.Tensors {
		if i >= t.Offset && i < t.Offset+t.Size() {
			return ti
		}
	}
	return -1
}
