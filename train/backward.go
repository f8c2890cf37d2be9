package train

import "fmt"

// Backward computes the gradient of the last Forward's mean loss into
// Grads (overwriting it). With the straight-through estimator the
// quantizers pass gradients unchanged: the gradient of a ternary weight's
// quantized copy is its latent weight's, and so is the F16 embedding's.
func (m *Model) Backward() error {
	a := m.act
	if a == nil || m.targets == nil {
		return fmt.Errorf("train: Backward needs a Forward with targets first")
	}
	s := m.Layout.Shape
	w := &m.w
	qp, gp := m.Layout.Views(m.quant), m.Layout.Views(m.Grads)
	clear(m.Grads)
	b, t := a.b, a.t
	n, c, f, kv, v := b*t, s.Embd, s.FFN, s.KVDim(), s.Vocab
	dims := attnDims{b: b, t: t, heads: s.Heads, kvHeads: s.KVHeads, d: s.HeadDim(), qWidth: c, kvWidth: kv}

	// loss = (1/scored)·Σ CE → dlogits = (p − onehot)/scored, in place.
	scale := float32(1 / float64(m.scored))
	m.rowsParallel(n, func(lo, hi int) {
		crossEntropyBackward(a.logits[lo*v:hi*v], m.targets[lo:hi], v, scale)
	})
	// logits = xf·Eᵀ: dxf = dlogits·E, dE += dlogitsᵀ·xf.
	dxf := a.tmpC
	clear(dxf)
	matmulNN(w, dxf, a.logits, qp.Embd, n, c, v)
	matmulTN(w, gp.Embd, a.logits, a.xf, v, c, n)
	dx := a.dx
	clear(dx)
	rmsnormBackward(dx, gp.OutNorm, dxf, a.xfin, qp.OutNorm, a.rstdF, c)

	for li := len(a.layers) - 1; li >= 0; li-- {
		la, lq, lg := &a.layers[li], &qp.Layers[li], &gp.Layers[li]
		// x_out = xmid + hq·Wdownᵀ; dx is ∂/∂x_out, and also ∂/∂xmid's
		// residual share.
		dhq := a.tmpF
		clear(dhq)
		matmulNN(w, dhq, dx, lq.Down, n, f, c)
		matmulTN(w, lg.Down, dx, la.hq, c, f, n)
		clear(a.dh)
		rmsnormBackward(a.dh, lg.FFNSubNorm, dhq, la.h, lq.FFNSubNorm, la.rstd4, f)
		clear(a.dg)
		clear(a.du)
		reluSqGateBackward(a.dg, a.du, a.dh, la.g, la.u)
		dfq := a.tmpC
		clear(dfq)
		matmulNN(w, dfq, a.dg, lq.Gate, n, c, f)
		matmulNN(w, dfq, a.du, lq.Up, n, c, f)
		matmulTN(w, lg.Gate, a.dg, la.fq, f, c, n)
		matmulTN(w, lg.Up, a.du, la.fq, f, c, n)
		rmsnormBackward(dx, lg.FFNNorm, dfq, la.xmid, lq.FFNNorm, la.rstd3, c)

		// xmid = xin + sq·Woᵀ.
		dsq := a.tmpC
		clear(dsq)
		matmulNN(w, dsq, dx, lq.O, n, c, c)
		matmulTN(w, lg.O, dx, la.sq, c, c, n)
		clear(a.do)
		rmsnormBackward(a.do, lg.AttnSubNorm, dsq, la.o, lq.AttnSubNorm, la.rstd2, c)
		clear(a.dq)
		clear(a.dk)
		clear(a.dv)
		attentionBackward(w, a.dq, a.dk, a.dv, a.do, la.p, la.q, la.k, la.v, dims)
		ropeBackward(a.dq, c, t, m.rope)
		ropeBackward(a.dk, kv, t, m.rope)
		daq := a.tmpC
		clear(daq)
		matmulNN(w, daq, a.dq, lq.Q, n, c, c)
		matmulNN(w, daq, a.dk, lq.K, n, c, kv)
		matmulNN(w, daq, a.dv, lq.V, n, c, kv)
		matmulTN(w, lg.Q, a.dq, la.aq, c, c, n)
		matmulTN(w, lg.K, a.dk, la.aq, kv, c, n)
		matmulTN(w, lg.V, a.dv, la.aq, kv, c, n)
		rmsnormBackward(dx, lg.AttnNorm, daq, la.xin, lq.AttnNorm, la.rstd1, c)
	}
	embedBackward(gp.Embd, dx, m.tokens, c)
	return nil
}
