package train

import (
	"math"
)

// attnDims are the sizes causal GQA attention works with.
type attnDims struct {
	b, t            int // sequences, positions per sequence
	heads, kvHeads  int
	d               int // head dimension
	qWidth, kvWidth int // heads·d, kvHeads·d
}

// attentionForward is causal GQA attention. For sequence b, query head h
// (reading KV head h/(heads/kvHeads)) and position t:
//
//	P[b][h][t][s] = softmax_s≤t(q_t·k_s/√d),  o_t = Σ_s≤t P[t][s]·v_s
//
// q, o: [b·T][qWidth]; k, v: [b·T][kvWidth]; p: [b][heads][T][T] (entries
// s > t are zero). Per (b, h): S = Q·Kᵀ and O = P·V are matrix products
// over the whole T×T square (the masked half is wasted work, but the
// products run at the matrix kernels' speed); the (b, h) pairs are shared
// among the workers.
func attentionForward(w *workers, o, p, q, k, v []float32, a attnDims) {
	group := a.heads / a.kvHeads
	scale := 1 / math.Sqrt(float64(a.d))
	T := a.t
	w.run(a.b*a.heads, func(lo, hi int) {
		for bh := lo; bh < hi; bh++ {
			b, h := bh/a.heads, bh%a.heads
			kh := h / group
			qh := q[b*T*a.qWidth+h*a.d:]
			kk := k[b*T*a.kvWidth+kh*a.d:]
			vv := v[b*T*a.kvWidth+kh*a.d:]
			pm := p[bh*T*T : (bh+1)*T*T]
			clear(pm)
			sgemmNT(T, T, a.d, qh, a.qWidth, kk, a.kvWidth, pm, T)
			for t := 0; t < T; t++ {
				pt := pm[t*T : (t+1)*T]
				m := math.Inf(-1)
				for s := 0; s <= t; s++ {
					m = max(m, float64(pt[s])*scale)
				}
				var sum float64
				for s := 0; s <= t; s++ {
					e := math.Exp(float64(pt[s])*scale - m)
					pt[s] = float32(e)
					sum += e
				}
				inv := float32(1 / sum)
				for s := 0; s <= t; s++ {
					pt[s] *= inv
				}
				clear(pt[t+1:])
			}
			oh := o[b*T*a.qWidth+h*a.d:]
			for t := 0; t < T; t++ {
				clear(oh[t*a.qWidth : t*a.qWidth+a.d])
			}
			sgemmNN(T, a.d, T, pm, T, vv, a.kvWidth, oh, a.qWidth)
		}
	})
}

// attentionBackward, per (b, h), with dP = dO·Vᵀ:
//
//	dV += Pᵀ·dO
//	dS[t][s] = P[t][s]·(dP[t][s] − Σ_s' P[t][s']·dP[t][s'])/√d
//	dQ += dS·K,  dK += dSᵀ·Q
//
// (dS is zero where P is, above the diagonal). The heads of one KV head's
// group write the same dK and dV, so the work is split by (b, KV head):
// each worker owns what it writes.
func attentionBackward(w *workers, dq, dk, dv, do, p, q, k, v []float32, a attnDims) {
	group := a.heads / a.kvHeads
	scale := float32(1 / math.Sqrt(float64(a.d)))
	T := a.t
	w.run(a.b*a.kvHeads, func(lo, hi int) {
		ds := make([]float32, T*T)
		for bk := lo; bk < hi; bk++ {
			b, kh := bk/a.kvHeads, bk%a.kvHeads
			kk, vv := k[b*T*a.kvWidth+kh*a.d:], v[b*T*a.kvWidth+kh*a.d:]
			dkk, dvv := dk[b*T*a.kvWidth+kh*a.d:], dv[b*T*a.kvWidth+kh*a.d:]
			for h := kh * group; h < (kh+1)*group; h++ {
				bh := b*a.heads + h
				pm := p[bh*T*T : (bh+1)*T*T]
				qh, dqh, doh := q[b*T*a.qWidth+h*a.d:], dq[b*T*a.qWidth+h*a.d:], do[b*T*a.qWidth+h*a.d:]
				clear(ds)
				sgemmNT(T, T, a.d, doh, a.qWidth, vv, a.kvWidth, ds, T) // dP
				sgemmTN(T, a.d, T, pm, T, doh, a.qWidth, dvv, a.kvWidth)
				for t := 0; t < T; t++ {
					pt, dt := pm[t*T:(t+1)*T], ds[t*T:(t+1)*T]
					var sum float32
					for s := 0; s <= t; s++ {
						sum += pt[s] * dt[s]
					}
					for s := 0; s <= t; s++ {
						dt[s] = pt[s] * (dt[s] - sum) * scale
					}
					clear(dt[t+1:])
				}
				sgemmNN(T, a.d, T, ds, T, kk, a.kvWidth, dqh, a.qWidth)
				sgemmTN(T, a.d, T, ds, T, qh, a.qWidth, dkk, a.kvWidth)
			}
		}
	})
}
