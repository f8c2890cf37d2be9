package nn

import "math"

// Correlation is the Pearson correlation of a and b: 1 for two constant
// vectors that are equal, 0 when only one is constant.
func Correlation(a, b []float32) float64 {
	var ma, mb float64
	for i := range a {
		ma += float64(a[i])
		mb += float64(b[i])
	}
	ma /= float64(len(a))
	mb /= float64(len(b))
	var sab, saa, sbb float64
	for i := range a {
		da, db := float64(a[i])-ma, float64(b[i])-mb
		sab += da * db
		saa += da * da
		sbb += db * db
	}
	if saa == 0 || sbb == 0 {
		if saa == sbb {
			return 1
		}
		return 0
	}
	return sab / math.Sqrt(saa*sbb)
}

// Top2 returns the index of the largest value and its margin over the second.
func Top2(x []float32) (best int, margin float64) {
	first, second := math.Inf(-1), math.Inf(-1)
	for i, v := range x {
		switch f := float64(v); {
		case f > first:
			second, first, best = first, f, i
		case f > second:
			second = f
		}
	}
	return best, first - second
}

// KLDivergence is KL(softmax(p) ‖ softmax(q)) in nats: how far the
// distribution of logits q is from that of p.
func KLDivergence(p, q []float32) float64 {
	lse := func(x []float32) float64 {
		m := math.Inf(-1)
		for _, v := range x {
			m = math.Max(m, float64(v))
		}
		var s float64
		for _, v := range x {
			s += math.Exp(float64(v) - m)
		}
		return m + math.Log(s)
	}
	lp, lq := lse(p), lse(q)
	var kl float64
	for i := range p {
		a, b := float64(p[i])-lp, float64(q[i])-lq
		kl += math.Exp(a) * (a - b)
	}
	return math.Max(kl, 0)
}
