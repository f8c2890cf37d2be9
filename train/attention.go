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
// s > t stay zero). The (b, h) pairs are shared among the workers.
func attentionForward(w *workers, o, p, q, k, v []float32, a attnDims) {
	group := a.heads / a.kvHeads
	scale := 1 / math.Sqrt(float64(a.d))
	w.run(a.b*a.heads, func(lo, hi int) {
		for bh := lo; bh < hi; bh++ {
			b, h := bh/a.heads, bh%a.heads
			kh := h / group
			for t := 0; t < a.t; t++ {
				qt := q[(b*a.t+t)*a.qWidth+h*a.d:][:a.d]
				pt := p[(bh*a.t+t)*a.t:][:a.t]
				m := math.Inf(-1)
				for s := 0; s <= t; s++ {
					ks := k[(b*a.t+s)*a.kvWidth+kh*a.d:][:a.d]
					var dot float32
					for i, x := range qt {
						dot += x * ks[i]
					}
					sc := float64(dot) * scale
					pt[s] = float32(sc)
					m = max(m, sc)
				}
				var sum float64
				for s := 0; s <= t; s++ {
					e := math.Exp(float64(pt[s]) - m)
					pt[s] = float32(e)
					sum += e
				}
				inv := float32(1 / sum)
				ot := o[(b*a.t+t)*a.qWidth+h*a.d:][:a.d]
				clear(ot)
				for s := 0; s <= t; s++ {
					pt[s] *= inv
					vs := v[(b*a.t+s)*a.kvWidth+kh*a.d:][:a.d]
					ps := pt[s]
					for i, x := range vs {
						ot[i] += ps * x
					}
				}
			}
		}
	})
}

// attentionBackward, for every (b, h, t) with dP[t][s] = do_t·v_s:
//
//	dv_s += P[t][s]·do_t
//	dS[t][s] = P[t][s]·(dP[t][s] − Σ_s' P[t][s']·dP[t][s'])
//	dq_t += Σ_s dS[t][s]·k_s/√d,  dk_s += dS[t][s]·q_t/√d
//
// The heads of one KV head's group write the same dk and dv rows, so the
// work is split by (b, KV head): each worker owns what it writes.
func attentionBackward(w *workers, dq, dk, dv, do, p, q, k, v []float32, a attnDims) {
	group := a.heads / a.kvHeads
	scale := float32(1 / math.Sqrt(float64(a.d)))
	w.run(a.b*a.kvHeads, func(lo, hi int) {
		dp := make([]float32, a.t)
		for bk := lo; bk < hi; bk++ {
			b, kh := bk/a.kvHeads, bk%a.kvHeads
			for h := kh * group; h < (kh+1)*group; h++ {
				bh := b*a.heads + h
				for t := 0; t < a.t; t++ {
					row := (b*a.t + t)
					dot := do[row*a.qWidth+h*a.d:][:a.d]
					qt := q[row*a.qWidth+h*a.d:][:a.d]
					dqt := dq[row*a.qWidth+h*a.d:][:a.d]
					pt := p[(bh*a.t+t)*a.t:][:a.t]
					var sum float32
					for s := 0; s <= t; s++ {
						srow := (b*a.t + s) * a.kvWidth
						vs := v[srow+kh*a.d:][:a.d]
						dvs := dv[srow+kh*a.d:][:a.d]
						var x float32
						ps := pt[s]
						for i, g := range dot {
							x += g * vs[i]
							dvs[i] += ps * g
						}
						dp[s] = x
						sum += ps * x
					}
					for s := 0; s <= t; s++ {
						ds := pt[s] * (dp[s] - sum) * scale
						srow := (b*a.t + s) * a.kvWidth
						ks := k[srow+kh*a.d:][:a.d]
						dks := dk[srow+kh*a.d:][:a.d]
						for i := range dqt {
							dqt[i] += ds * ks[i]
							dks[i] += ds * qt[i]
						}
					}
				}
			}
		}
	})
}
