package train

import (
	"fmt"
)

// Model is the trainer's view of one model: the latent parameters, their
// gradients, the quantized copy the forward pass uses, and the activations
// of one batch shape.
type Model struct {
	Layout *Layout
	Float  bool // --float: no quantizers (weights and activations stay float32)

	Params []float32 // latent weights, float32
	Grads  []float32 // ∂loss/∂Params of the last Backward
	quant  []float32 // the weights as the forward pass uses them: ternary·γ, F16 embedding
	Scales []float32 // γ of each ternary tensor (by tensor index) after the last Forward

	w    workers
	rope ropeTable
	act  *activations
	// the last Forward's inputs, for Backward
	tokens, targets []int32
	scored          int
}

// NewModel allocates a model of layout l with threads workers; its
// parameters are zero until Init or a checkpoint fills them.
func NewModel(l *Layout, float bool, threads int) *Model {
	s := l.Shape
	return &Model{
		Layout: l, Float: float,
		Params: make([]float32, l.Size), Grads: make([]float32, l.Size), quant: make([]float32, l.Size),
		Scales: make([]float32, len(l.Tensors)),
		w:      workers{n: max(1, threads)},
		rope:   newRopeTable(s.Context, s.HeadDim(), s.RopeBase),
	}
}

// layerActs are what one block's forward pass keeps for its backward pass;
// N = B·T rows.
type layerActs struct {
	xin   []float32 // [N][C] residual stream entering the block
	rstd1 []float32 // [N] attention RMSNorm's 1/rms
	aq    []float32 // [N][C] quantized attention input
	q     []float32 // [N][C] queries after RoPE
	k, v  []float32 // [N][KV] keys after RoPE, values
	p     []float32 // [B][H][T][T] attention probabilities
	o     []float32 // [N][C] attention output
	rstd2 []float32 // [N] attention sub-norm's 1/rms
	sq    []float32 // [N][C] quantized output-projection input
	xmid  []float32 // [N][C] residual stream after attention
	rstd3 []float32 // [N] FFN RMSNorm's 1/rms
	fq    []float32 // [N][C] quantized FFN input
	g, u  []float32 // [N][F] gate and up projections
	h     []float32 // [N][F] relu(g)²·u
	rstd4 []float32 // [N] FFN sub-norm's 1/rms
	hq    []float32 // [N][F] quantized down-projection input
}

// activations is one flat buffer carved into the per-layer values, the
// head's, and the scratch the backward pass reuses.
type activations struct {
	b, t   int
	buf    []float32
	layers []layerActs
	xfin   []float32 // [N][C] residual stream after the last block
	rstdF  []float32 // [N]
	xf     []float32 // [N][C] final RMSNorm output
	logits []float32 // [N][V] logits, then probabilities, then their gradient
	// scratch
	tmpC, tmpC2, dx, dq, do []float32 // [N][C]
	dk, dv                  []float32 // [N][KV]
	tmpF, dg, du, dh        []float32 // [N][F]
}

func newActivations(s Shape, b, t int) *activations {
	n, c, f, kv := b*t, s.Embd, s.FFN, s.KVDim()
	sizes := []int{}
	a := &activations{b: b, t: t}
	var ptrs []*[]float32
	take := func(p *[]float32, size int) {
		ptrs = append(ptrs, p)
		sizes = append(sizes, size)
	}
	a.layers = make([]layerActs, s.Layers)
	for i := range a.layers {
		l := &a.layers[i]
		take(&l.xin, n*c)
		take(&l.rstd1, n)
		take(&l.aq, n*c)
		take(&l.q, n*c)
		take(&l.k, n*kv)
		take(&l.v, n*kv)
		take(&l.p, b*s.Heads*t*t)
		take(&l.o, n*c)
		take(&l.rstd2, n)
		take(&l.sq, n*c)
		take(&l.xmid, n*c)
		take(&l.rstd3, n)
		take(&l.fq, n*c)
		take(&l.g, n*f)
		take(&l.u, n*f)
		take(&l.h, n*f)
		take(&l.rstd4, n)
		take(&l.hq, n*f)
	}
	take(&a.xfin, n*c)
	take(&a.rstdF, n)
	take(&a.xf, n*c)
	take(&a.logits, n*s.Vocab)
	for _, p := range []*[]float32{&a.tmpC, &a.tmpC2, &a.dx, &a.dq, &a.do} {
		take(p, n*c)
	}
	take(&a.dk, n*kv)
	take(&a.dv, n*kv)
	for _, p := range []*[]float32{&a.tmpF, &a.dg, &a.du, &a.dh} {
		take(p, n*f)
	}
	total := 0
	for _, sz := range sizes {
		total += sz
	}
	a.buf = make([]float32, total)
	off := 0
	for i, p := range ptrs {
		*p = a.buf[off : off+sizes[i] : off+sizes[i]]
		off += sizes[i]
	}
	return a
}

// quantizeWeights fills the quantized copy from the latent weights:
// ternary tensors by absmean, the embedding rounded to F16, norms as they
// are.
func (m *Model) quantizeWeights() {
	l := m.Layout
	m.w.run(len(l.Tensors), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			t := l.Tensors[i]
			src, dst := l.View(m.Params, i), l.View(m.quant, i)
			switch {
			case t.Kind == KindTernary:
				m.Scales[i] = ternarize(dst, src, m.Float)
			case t.Kind == KindEmbedding && !m.Float:
				roundF16(dst, src)
			default:
				copy(dst, src)
			}
		}
	})
}

// Forward runs b sequences of t tokens each (tokens [b·t], row-major) and
// returns the mean cross-entropy of targets (same shape; a target below 0
// is not scored). With targets nil it computes the logits only (see
// Logits). t must not exceed the context.
func (m *Model) Forward(tokens, targets []int32, b, t int) (float64, error) {
	s := m.Layout.Shape
	if b <= 0 || t <= 0 || t > s.Context || len(tokens) != b*t || (targets != nil && len(targets) != b*t) {
		return 0, fmt.Errorf("train: forward of %d tokens as %d×%d (context %d, %d targets)", len(tokens), b, t, s.Context, len(targets))
	}
	for i, tok := range tokens {
		if tok < 0 || int(tok) >= s.Vocab {
			return 0, fmt.Errorf("train: token %d at %d is outside the vocabulary of %d", tok, i, s.Vocab)
		}
	}
	if m.act == nil || m.act.b != b || m.act.t != t {
		m.act = nil // let the old buffer go first
		m.act = newActivations(s, b, t)
	}
	m.quantizeWeights()
	a, w := m.act, &m.w
	qp := m.Layout.Views(m.quant)
	n, c, f, kv := b*t, s.Embd, s.FFN, s.KVDim()
	dims := attnDims{b: b, t: t, heads: s.Heads, kvHeads: s.KVHeads, d: s.HeadDim(), qWidth: c, kvWidth: kv}

	embedForward(a.layers[0].xin, qp.Embd, tokens, c)
	for li := range a.layers {
		la, lp := &a.layers[li], &qp.Layers[li]
		m.normQuant(la.aq, la.rstd1, la.xin, lp.AttnNorm, c)
		matmulNT(w, la.q, la.aq, lp.Q, n, c, c)
		matmulNT(w, la.k, la.aq, lp.K, n, kv, c)
		matmulNT(w, la.v, la.aq, lp.V, n, kv, c)
		ropeForward(la.q, c, t, m.rope)
		ropeForward(la.k, kv, t, m.rope)
		attentionForward(w, la.o, la.p, la.q, la.k, la.v, dims)
		m.normQuant(la.sq, la.rstd2, la.o, lp.AttnSubNorm, c)
		matmulNT(w, a.tmpC, la.sq, lp.O, n, c, c)
		residualAdd(la.xmid, la.xin, a.tmpC)

		m.normQuant(la.fq, la.rstd3, la.xmid, lp.FFNNorm, c)
		matmulNT(w, la.g, la.fq, lp.Gate, n, f, c)
		matmulNT(w, la.u, la.fq, lp.Up, n, f, c)
		reluSqGateForward(la.h, la.g, la.u)
		m.normQuant(la.hq, la.rstd4, la.h, lp.FFNSubNorm, f)
		matmulNT(w, a.tmpC, la.hq, lp.Down, n, c, f)
		next := a.xfin
		if li+1 < len(a.layers) {
			next = a.layers[li+1].xin
		}
		residualAdd(next, la.xmid, a.tmpC)
	}
	m.rowsParallel(n, func(lo, hi int) {
		rmsnormForward(a.xf[lo*c:hi*c], a.rstdF[lo:hi], a.xfin[lo*c:hi*c], qp.OutNorm, c, s.Eps)
	})
	matmulNT(w, a.logits, a.xf, qp.Embd, n, s.Vocab, c)
	if targets == nil {
		return 0, nil
	}
	scored := 0
	for _, tg := range targets {
		if tg >= 0 {
			if int(tg) >= s.Vocab {
				return 0, fmt.Errorf("train: target %d is outside the vocabulary of %d", tg, s.Vocab)
			}
			scored++
		}
	}
	if scored == 0 {
		return 0, fmt.Errorf("train: no target to score")
	}
	var loss float64
	parts := make([]float64, n)
	m.rowsParallel(n, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			parts[r] = crossEntropy(a.logits[r*s.Vocab:(r+1)*s.Vocab], targets[r:r+1], s.Vocab)
		}
	})
	for _, p := range parts {
		loss += p
	}
	m.scored = scored
	m.targets = targets
	m.tokens = tokens
	return loss / float64(scored), nil
}

// Logits returns the last Forward's logits, [b·t][vocab]; valid only after
// a Forward with nil targets.
func (m *Model) Logits() []float32 { return m.act.logits }

// normQuant is RMSNorm then BitLinear's activation quantization, row by
// row on the workers: rstd and the quantized rows are kept, the normed
// rows are not (the backward pass needs only x and rstd).
func (m *Model) normQuant(q, rstd, x, w []float32, c int) {
	s := m.Layout.Shape
	m.rowsParallel(len(rstd), func(lo, hi int) {
		rmsnormForward(q[lo*c:hi*c], rstd[lo:hi], x[lo*c:hi*c], w, c, s.Eps)
		quantizeForward(q[lo*c:hi*c], q[lo*c:hi*c], c, m.Float)
	})
}

func (m *Model) rowsParallel(n int, fn func(lo, hi int)) { m.w.run(n, fn) }
