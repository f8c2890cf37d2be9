package cpu

import (
	"testing"

	"github.com/bitvk/bitvk/nn"
	"github.com/bitvk/bitvk/nn/nntest"
)

// withKernels runs fn once per kernel set this machine has (assembly sets
// and the generic twin), the set switched on for the duration.
func withKernels(t *testing.T, fn func(t *testing.T)) {
	for _, k := range kernelSets() {
		t.Run(k.name, func(t *testing.T) {
			saved := active
			active = k
			defer func() { active = saved }()
			fn(t)
		})
	}
}

func TestConformanceForward(t *testing.T) {
	withKernels(t, func(t *testing.T) {
		for _, threads := range []int{1, 3} {
			nntest.Forward(t, func(c *nn.Config, w *nn.Weights, ctx int) (nn.Backend, error) {
				// A batch smaller than the suite's chunks makes Forward split.
				return New(c, w, Options{Threads: threads, Context: ctx, Batch: 7})
			})
		}
	})
}

// TestConformanceBatchInvariance: every token of a batch gets exactly the
// logits it gets alone (speculative decoding's verification relies on it),
// with either head, on one thread and on several.
func TestConformanceBatchInvariance(t *testing.T) {
	withKernels(t, func(t *testing.T) {
		for _, threads := range []int{1, 3} {
			for _, head := range []nn.HeadType{nn.HeadStored, nn.HeadQ8, nn.HeadQ6_K, nn.HeadQ4_0} {
				t.Run(string(head), func(t *testing.T) {
					nntest.BatchInvariance(t, func(c *nn.Config, w *nn.Weights, ctx int) (nn.Backend, error) {
						return New(c, w, Options{Threads: threads, Context: ctx, Batch: 7, Head: head})
					})
				})
			}
		}
	})
}

// TestConformancePositionZero: the logits of a token alone at position 0
// agree with the oracle to nntest.PositionZeroTolerance, the 2B shape
// included (skipped with -short): every step rounds as the oracle does.
func TestConformancePositionZero(t *testing.T) {
	withKernels(t, func(t *testing.T) {
		shapes := []string{"tiny", "small"}
		if active.name == kernelSets()[0].name {
			shapes = append(shapes, "2b") // once, with the fastest kernels
		}
		nntest.PositionZero(t, func(c *nn.Config, w *nn.Weights, ctx int) (nn.Backend, error) {
			return New(c, w, Options{Context: ctx})
		}, shapes...)
	})
}

func TestConformanceOps(t *testing.T) {
	withKernels(t, func(t *testing.T) {
		p := newPool(3)
		defer p.close()
		nntest.RunOps(t, opsAdapter{k: active, p: p})
	})
}

// opsAdapter exposes the backend's building blocks to nntest.RunOps.
type opsAdapter struct {
	k kernels
	p *pool
}

func (a opsAdapter) Quantize(x []float32) ([]int8, float32) {
	q := make([]int8, len(x))
	var s [1]float32
	var sum [1]int32
	quantizeRows(a.k, x, 1, len(x), q, s[:], sum[:])
	return q, s[0]
}

func (a opsAdapter) matrix(w nn.Tensor) (*ternaryMatrix, error) {
	return newTernaryMatrix(a.p, nil, &nn.Weights{}, w)
}

func (a opsAdapter) TernarySums(w nn.Tensor, q []int8, T int) ([]int32, error) {
	m, err := a.matrix(w)
	if err != nil {
		return nil, err
	}
	// Unit scales and s = 1 make y the exact sum (as a float32, exact below 2²⁴).
	for r := range m.rowScale {
		m.rowScale[r] = 1
	}
	for i := range m.groupScale {
		m.groupScale[i] = 1
	}
	scale := make([]float32, T)
	sum := make([]int32, T)
	for t := 0; t < T; t++ {
		scale[t] = 1
		for _, v := range q[t*w.In : (t+1)*w.In] {
			sum[t] += int32(v)
		}
	}
	y := make([]float32, T*m.rows)
	m.apply(a.k, a.p, q, scale, sum, T, make([]int32, T*m.rows), y)
	out := make([]int32, len(y))
	for i, v := range y {
		out[i] = int32(v)
	}
	return out, nil
}

func (a opsAdapter) BitLinear(w nn.Tensor, x []float32, T int) ([]float32, error) {
	m, err := a.matrix(w)
	if err != nil {
		return nil, err
	}
	q := make([]int8, len(x))
	scale := make([]float32, T)
	sum := make([]int32, T)
	quantizeRows(a.k, x, T, w.In, q, scale, sum)
	y := make([]float32, T*m.rows)
	m.apply(a.k, a.p, q, scale, sum, T, make([]int32, T*m.rows), y)
	return y, nil
}

func (a opsAdapter) RMSNorm(x, w []float32, eps float32) []float32 {
	out := make([]float32, len(x))
	rmsNorm(a.k, out, x, w, eps)
	return out
}

func (a opsAdapter) RoPE(x []float32, pos, dim int, base float32, interleaved bool) {
	b := &Backend{c: &nn.Config{RopeDim: dim, RopeBase: base}}
	b.invFreq = ropeFrequencies(dim, base)
	cs := make([]float64, dim)
	b.ropeTable(pos, cs)
	rope(a.k, x[:dim], cs, interleaved)
}

func (a opsAdapter) Attention(q []float32, k, v [][]float32, heads, kvHeads, hd int) []float32 {
	n := len(k)
	nk := (n + kBlock - 1) / kBlock * kBlock // whole blocks of keys
	kc := make([]uint16, kvHeads*nk*hd)      // [kv head][block][hd][16], as the cache holds them
	vc := make([]uint16, kvHeads*n*hd)       // [kv head][position][hd]
	for p := range k {
		for g := 0; g < kvHeads; g++ {
			for i := 0; i < hd; i++ {
				kc[g*nk*hd+p/kBlock*kBlock*hd+i*kBlock+p%kBlock] = nn.F32ToF16(k[p][g*hd+i])
				vc[(g*n+p)*hd+i] = nn.F32ToF16(v[p][g*hd+i])
			}
		}
	}
	out := make([]float32, heads*hd)
	group := heads / kvHeads
	scores := make([]float32, group*n)
	q16 := make([]float32, group*hd)
	for g := 0; g < kvHeads; g++ { // each K/V head's queries at once
		h := g * group
		attendGroup(a.k, q[h*hd:(h+group)*hd], hd, kc[g*nk*hd:], vc[g*n*hd:], n, q16, scores, out[h*hd:(h+group)*hd])
	}
	return out
}

func (a opsAdapter) Logits(w nn.Tensor, x []float32) ([]float32, error) {
	h, err := newHead(a.p, nil, &nn.Weights{Output: w}, nn.HeadStored, a.k.sixHead)
	if err != nil {
		return nil, err
	}
	out := make([]float32, w.Out)
	sc := h.newScratch()
	h.logits(a.k, a.p, &sc, x, 1, out)
	return out, nil
}

// The CPU backend gives a token in a batch the logits it gives it alone,
// so drafting leaves exactly plain decoding's tokens and cache.
func TestConformanceDrafting(t *testing.T) {
	withKernels(t, func(t *testing.T) {
		nntest.Drafting(t, func(c *nn.Config, w *nn.Weights, ctx int) (nn.Backend, error) {
			return New(c, w, Options{Threads: 2, Context: ctx, Batch: 4})
		}, true)
	})
}

func TestConformanceMultiSeq(t *testing.T) {
	withKernels(t, func(t *testing.T) {
		for _, threads := range []int{1, 3} {
			nntest.MultiSeq(t, func(c *nn.Config, w *nn.Weights, ctx, slots int) (nn.MultiBackend, error) {
				// A batch smaller than some passes makes ForwardMulti split.
				return New(c, w, Options{Threads: threads, Context: ctx, Batch: 7, Slots: slots})
			}, true)
		}
	})
}
