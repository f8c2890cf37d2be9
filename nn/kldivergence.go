package nn

import (
	"math"
	"slices"
)

// KLStats compares a run Q with a base run position by position, from
// both runs' log-probabilities at the same scored positions of the same
// tokens: llama-perplexity's --kl-divergence statistics. With P the base
// distribution and Q the run's, at one position
//
//	KL(P‖Q) = Σ_v P(v)·(ln P(v) − ln Q(v))   (nats, every token of the vocabulary)
//	NLL     = −ln Q(next),  NLL_base = −ln P(next)
//	Δp      = Q(next) − P(next)
//	same top: argmax P = argmax Q (the lowest id on ties)
//
// Unlike llama.cpp, which keeps the base as 16-bit log-probabilities and
// skips tokens with ln P ≤ −16, both sides here are float32 log-probabilities
// and every token counts, so two identical runs compare to exactly zero and
// the KL of two close backends is not lost under quantization noise
// (steps of up to 16/65535 nats there add noise of order 1e-5 nats to each
// position's KL).
type KLStats struct {
	Q, Base  NLLStats // the two runs' NLLs
	SumQBase float64  // Σ NLL·NLL_base: the covariance of the two
	KL, KL2  float64  // Σ KL, Σ KL²
	DP       float64  // Σ Δp
	DP2, DP4 float64  // Σ Δp², Σ Δp⁴
	SameTop  int      // positions whose most likely token agrees
	KLs, DPs []float64
}

// Add compares one position: base and q are log-probabilities [vocab] and
// next is the token that follows.
func (s *KLStats) Add(base, q []float32, next int32) {
	// Renormalize in float64: float32 rounding leaves Σ exp(ln P) off 1 by
	// ~1e-7, which would enter the KL at first order; of two normalized
	// distributions the KL is ≥ 0 up to float64 rounding.
	lb, lq := LogSumExp(base), LogSumExp(q)
	var kl float64
	for i, b := range base {
		a := float64(b) - lb
		if p := math.Exp(a); p > 0 { // ln P = −∞ adds nothing
			kl += p * (a - (float64(q[i]) - lq))
		}
	}
	kl = math.Max(kl, 0)
	nll, nllBase := lq-float64(q[next]), lb-float64(base[next])
	s.Q.Add(nll)
	s.Base.Add(nllBase)
	s.SumQBase += nll * nllBase
	s.KL += kl
	s.KL2 += kl * kl
	dp := math.Exp(-nll) - math.Exp(-nllBase)
	s.DP += dp
	s.DP2 += dp * dp
	s.DP4 += dp * dp * dp * dp
	if argmax(base) == argmax(q) {
		s.SameTop++
	}
	s.KLs = append(s.KLs, kl)
	s.DPs = append(s.DPs, dp)
}

// argmax is the index of the largest value, the lowest on ties; NaNs lose.
func argmax(x []float32) int {
	best := 0
	for i, v := range x {
		if v > x[best] || x[best] != x[best] {
			best = i
		}
	}
	return best
}

// N is the number of positions compared.
func (s *KLStats) N() int { return s.Q.N }

// covariance is the covariance of the two mean NLLs (the (N−1) matches
// MeanAndError's, so that Correlation is Pearson's).
func (s *KLStats) covariance() float64 {
	n := float64(s.N())
	if s.N() < 2 {
		return 0
	}
	return (s.SumQBase/n - (s.Q.Sum/n)*(s.Base.Sum/n)) / (n - 1)
}

// LogRatio is ln(PPL(Q)/PPL(base)) = ⟨NLL⟩ − ⟨NLL_base⟩ and its
// uncertainty √(σ_Q² + σ_base² − 2·cov): the two runs score the same
// tokens, so their errors largely cancel.
func (s *KLStats) LogRatio() (val, err float64) {
	mq, eq := MeanAndError(s.Q.Sum, s.Q.Sum2, s.N())
	mb, eb := MeanAndError(s.Base.Sum, s.Base.Sum2, s.N())
	return mq - mb, math.Sqrt(math.Max(eq*eq+eb*eb-2*s.covariance(), 0))
}

// Ratio is PPL(Q)/PPL(base) and its uncertainty.
func (s *KLStats) Ratio() (val, err float64) {
	l, e := s.LogRatio()
	val = math.Exp(l)
	return val, val * e
}

// Diff is PPL(Q) − PPL(base) and its uncertainty.
func (s *KLStats) Diff() (val, err float64) {
	pq, uq := s.Q.PPL()
	pb, ub := s.Base.PPL()
	cov := pq * pb * s.covariance()
	return pq - pb, math.Sqrt(math.Max(uq*uq+ub*ub-2*cov, 0))
}

// Correlation is the correlation of the two runs' NLLs (NaN when either is
// constant).
func (s *KLStats) Correlation() float64 {
	_, eq := MeanAndError(s.Q.Sum, s.Q.Sum2, s.N())
	_, eb := MeanAndError(s.Base.Sum, s.Base.Sum2, s.N())
	if eq == 0 || eb == 0 {
		return math.NaN()
	}
	return s.covariance() / (eq * eb)
}

// MeanKL is the mean KL divergence and its uncertainty.
func (s *KLStats) MeanKL() (mean, err float64) { return MeanAndError(s.KL, s.KL2, s.N()) }

// MeanDP is the mean Δp and its uncertainty.
func (s *KLStats) MeanDP() (mean, err float64) { return MeanAndError(s.DP, s.DP2, s.N()) }

// RMSDP is √⟨Δp²⟩ and its uncertainty, (1/2)·σ(⟨Δp²⟩)/RMS.
func (s *KLStats) RMSDP() (rms, err float64) {
	mse, e := MeanAndError(s.DP2, s.DP4, s.N())
	rms = math.Sqrt(mse)
	if rms > 0 {
		err = 0.5 * e / rms
	}
	return rms, err
}

// SameTopP is the fraction of positions whose most likely token agrees and
// its binomial uncertainty √(p(1−p)/(N−1)).
func (s *KLStats) SameTopP() (p, err float64) {
	if s.N() == 0 {
		return 0, 0
	}
	p = float64(s.SameTop) / float64(s.N())
	if s.N() > 1 {
		err = math.Sqrt(p * (1 - p) / float64(s.N()-1))
	}
	return p, err
}

// SortedKL and SortedDP are the per-position values, sorted (copies), for
// Percentile.
func (s *KLStats) SortedKL() []float64 { return sorted(s.KLs) }
func (s *KLStats) SortedDP() []float64 { return sorted(s.DPs) }

func sorted(x []float64) []float64 {
	y := slices.Clone(x)
	slices.Sort(y)
	return y
}
