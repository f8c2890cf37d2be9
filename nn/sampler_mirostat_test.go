package nn

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// refTypical is typical sampling as llama.cpp's sampler computes it, by
// full sorts: over ids (best first), p = softmax at temperature 1, H the
// entropy, tokens ordered by |−ln p − H| (ties: the better token), kept
// until their mass exceeds tp; returned best first.
func refTypical(pl []float32, ids []int32, tp float64) []int32 {
	p := refProbs(pl, ids, 1)
	h := 0.0
	for _, id := range ids {
		if p[id] > 0 {
			h -= p[id] * math.Log(p[id])
		}
	}
	order := slices.Clone(ids)
	slices.SortStableFunc(order, func(a, b int32) int {
		sa, sb := math.Abs(-math.Log(p[a])-h), math.Abs(-math.Log(p[b])-h)
		switch {
		case sa < sb:
			return -1
		case sa > sb:
			return 1
		}
		return 0
	})
	n, cum := len(order), 0.0
	for i, id := range order {
		if cum += p[id]; cum > tp {
			n = i + 1
			break
		}
	}
	kept := order[:n]
	pos := map[int32]int{}
	for i, id := range ids {
		pos[id] = i
	}
	slices.SortFunc(kept, func(a, b int32) int { return pos[a] - pos[b] })
	return kept
}

// typicalLogits: a peaked head and a flat tail, so that the typical set
// differs from every top-p prefix.
func typicalLogits() []float32 {
	return logProbs(0.30, 0.20, 0.12, 0.10, 0.08, 0.06, 0.05, 0.04, 0.03, 0.02)
}

// TestSamplerTypical: the kept set is the reference's (alone, after top-k,
// and followed by top-p and min-p over what it kept), and draws follow the
// renormalized probabilities of that set.
func TestSamplerTypical(t *testing.T) {
	logits := typicalLogits()
	for _, c := range []SamplerConfig{
		{Temperature: 1, TypicalP: 0.5},
		{Temperature: 1, TypicalP: 0.9},
		{Temperature: 1, TypicalP: 0.2},
		{Temperature: 1, TypicalP: 0.7, TopK: 6},
		{Temperature: 1, TypicalP: 0.9, TopP: 0.6},
		{Temperature: 1, TypicalP: 0.9, MinP: 0.3},
	} {
		s := newTestSampler(t, c)
		got, err := keptIDs(s, logits, nil)
		if err != nil {
			t.Fatal(err)
		}
		ids := refOrder(logits)
		if c.TopK > 0 {
			ids = ids[:c.TopK]
		}
		ids = refTypical(logits, ids, float64(c.TypicalP))
		sub := make([]float32, len(logits))
		for i := range sub {
			sub[i] = float32(math.Inf(-1))
		}
		for _, id := range ids {
			sub[id] = logits[id]
		}
		want := refKept(sub, SamplerConfig{TopP: c.TopP, MinP: c.MinP})
		if !slices.Equal(got, want) {
			t.Errorf("%+v: kept %v, want %v", c, got, want)
			continue
		}
		const n = 20000
		checkFreq(t, drawCounts(t, newTestSampler(t, c), logits, nil, n), n, refProbs(logits, want, 1))
	}
	// Typical must leave out the most likely token here: its surprise
	// (ln 1/0.3 ≈ 1.2) is far from the entropy (≈ 2.1).
	if got, _ := keptIDs(newTestSampler(t, SamplerConfig{Temperature: 1, TypicalP: 0.2}), logits, nil); slices.Contains(got, 0) {
		t.Errorf("typical 0.2 kept %v, with the best token", got)
	}
}

// TestSamplerMirostat2: from a fresh sampler (μ = 2τ) a draw comes from the
// tokens with surprise −log₂ p ≤ 2τ, in proportion to their renormalized
// probabilities at the temperature, and μ then moves by −η·(surprise − τ).
func TestSamplerMirostat2(t *testing.T) {
	logits := typicalLogits()
	for _, c := range []SamplerConfig{
		{Temperature: 1, Mirostat: 2, MirostatTau: 2},
		{Temperature: 0.7, Mirostat: 2, MirostatTau: 1.5, MirostatEta: 0.3},
		{Temperature: 1.5, Mirostat: 2, MirostatTau: 0.1},              // the best token alone
		{Temperature: 1, Mirostat: 2, TopK: 1, TypicalP: 0.1, MinP: 1}, // the truncations do not apply
	} {
		tau, eta := float64(c.MirostatTau), float64(c.MirostatEta)
		if tau == 0 {
			tau = defaultMirostatTau
		}
		if eta == 0 {
			eta = defaultMirostatEta
		}
		order := refOrder(logits)
		p := refProbs(logits, order, float64(c.Temperature))
		n := 0
		for n < len(order) && -math.Log2(p[order[n]]) <= 2*tau {
			n++
		}
		kept := order[:max(n, 1)]
		q := refProbs(logits, kept, float64(c.Temperature))
		counts := make([]int, len(logits))
		const draws = 20000
		for seed := range uint64(draws) {
			c.Seed = seed
			s := newTestSampler(t, c)
			y, err := s.Sample(logits, nil)
			if err != nil {
				t.Fatal(err)
			}
			counts[y]++
			if want := 2*tau - eta*(-math.Log2(q[y])-tau); math.Abs(s.mu-want) > 1e-9 {
				t.Fatalf("%+v: after drawing %d, μ = %g, want %g", c, y, s.mu, want)
			}
		}
		checkFreq(t, counts, draws, q)
	}
}

// TestSamplerMirostat1: the draw comes from the k best tokens, k from the
// Zipf exponent of the best 100 (a reference computation of llama.cpp's
// formula), renormalized.
func TestSamplerMirostat1(t *testing.T) {
	// 300 tokens with Zipf-like probabilities: p_i ∝ 1/(i+1)^1.1.
	p := make([]float64, 300)
	for i := range p {
		p[i] = math.Pow(float64(i+1), -1.1)
	}
	logits := logProbs(p...)
	for _, c := range []SamplerConfig{
		{Temperature: 1, Mirostat: 1, MirostatTau: 2.5},
		{Temperature: 1, Mirostat: 1, MirostatTau: 3.5},
		{Temperature: 0.5, Mirostat: 1, MirostatTau: 4},
	} {
		order := refOrder(logits)
		pr := refProbs(logits, order, float64(c.Temperature))
		var sumTB, sumTT float64
		for i := 0; i < mirostatM-1; i++ {
			ti := math.Log(float64(i+2) / float64(i+1))
			bi := math.Log(pr[order[i]] / pr[order[i+1]])
			sumTB += ti * bi
			sumTT += ti * ti
		}
		sHat := sumTB / sumTT
		mu := 2 * float64(c.MirostatTau)
		k := int(math.Pow((sHat-1)*math.Exp2(mu)/(1-math.Pow(float64(len(logits)), 1-sHat)), 1/sHat))
		k = min(max(k, 1), len(logits))
		if k < 2 || k >= len(logits) {
			t.Fatalf("%+v: k = %d does not test a truncation", c, k)
		}
		s := newTestSampler(t, c)
		s.penalize(logits, nil)
		cand, _, err := s.candidatesBestFirst(logits, mirostatM)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.mirostatK(cand, len(logits)); got != k {
			t.Errorf("%+v: k = %d, want %d", c, got, k)
		}
		q := refProbs(logits, order[:k], float64(c.Temperature))
		counts := make([]int, len(logits))
		const draws = 20000
		for seed := range uint64(draws) {
			c.Seed = seed
			y, err := newTestSampler(t, c).Sample(logits, nil)
			if err != nil {
				t.Fatal(err)
			}
			counts[y]++
		}
		for id, n := range counts {
			if n != 0 && !slices.Contains(order[:k], int32(id)) {
				t.Errorf("%+v: drew %d, outside the %d kept", c, id, k)
			}
		}
		// Leave out the tail (each of its tokens has too small a mean to
		// check) and check the rest among the draws that fell there.
		head := 0
		for id := range counts {
			if q[id] < 0.005 {
				counts[id], q[id] = 0, 0
			}
			head += counts[id]
		}
		checkFreq(t, counts, head, scaleTo(q, 1))
	}
}

// scaleTo returns p scaled to sum to total.
func scaleTo(p []float64, total float64) []float64 {
	sum := 0.0
	for _, x := range p {
		sum += x
	}
	out := make([]float64, len(p))
	for i, x := range p {
		out[i] = x / sum * total
	}
	return out
}

// TestSamplerMirostatAdapts: over many steps Mirostat 2.0 holds the mean
// surprise of its draws near τ, which is what it is for.
func TestSamplerMirostatAdapts(t *testing.T) {
	p := make([]float64, 1000)
	for i := range p {
		p[i] = math.Pow(float64(i+1), -1.2)
	}
	logits := logProbs(p...)
	order := refOrder(logits)
	pr := refProbs(logits, order, 1)
	var means []float64
	for _, tau := range []float64{2, 4} {
		s := newTestSampler(t, SamplerConfig{Temperature: 1, Mirostat: 2, MirostatTau: float32(tau), Seed: 7})
		sum, n := 0.0, 0
		for i := range 6000 {
			y, err := s.Sample(logits, nil)
			if err != nil {
				t.Fatal(err)
			}
			if i >= 1000 { // past the start from 2τ
				sum += -math.Log2(pr[y])
				n++
			}
		}
		// Mirostat holds the surprise among the kept tokens at τ; under the
		// full distribution a draw is more surprising by the bits of mass
		// the truncation dropped: between τ and τ + 1.5 here.
		mean := sum / float64(n)
		t.Logf("τ = %g: mean surprise %.2f bits", tau, mean)
		if mean < tau || mean > tau+1.5 {
			t.Errorf("τ = %g: mean surprise %.2f bits", tau, mean)
		}
		means = append(means, mean)
	}
	if means[1]-means[0] < 1 {
		t.Errorf("τ 2 → 4 moved the mean surprise %.2f → %.2f bits only", means[0], means[1])
	}
}

// TestSamplerTypicalMirostatEdges: greedy stays the argmax; NaN, −Inf and
// +Inf logits are handled as elsewhere; a device is told to send the
// logits; bad settings are refused by name.
func TestSamplerTypicalMirostatEdges(t *testing.T) {
	inf, ninf := float32(math.Inf(1)), float32(math.Inf(-1))
	for _, c := range []SamplerConfig{
		{TypicalP: 0.5, Mirostat: 2},
		{Temperature: 1, TypicalP: 0.5},
		{Temperature: 1, Mirostat: 1},
		{Temperature: 1, Mirostat: 2},
	} {
		s := newTestSampler(t, c)
		if c.Temperature == 0 {
			if y, err := s.Sample(typicalLogits(), nil); err != nil || y != 0 {
				t.Errorf("%+v greedy: %d, %v", c, y, err)
			}
			if p := s.Plan(10); p.Rule != TopKCandidates || p.K != 1 {
				t.Errorf("%+v greedy: plan %+v", c, p)
			}
			continue
		}
		if p := s.Plan(10); p.Rule != NeedLogits {
			t.Errorf("%+v: plan %+v, want NeedLogits", c, p)
		}
		if _, err := s.SampleCandidates(10, []int32{1}, []float32{1}); err == nil {
			t.Errorf("%+v: SampleCandidates accepted a candidate set", c)
		}
		for range 50 {
			y, err := s.Sample([]float32{nan32, 1, ninf, 3, 2}, nil)
			if err != nil || y == 0 || y == 2 {
				t.Fatalf("%+v with NaN and −Inf: %d, %v", c, y, err)
			}
			y, err = s.Sample([]float32{1, inf, 3, inf, nan32}, nil)
			if err != nil || (y != 1 && y != 3) {
				t.Fatalf("%+v with +Inf: %d, %v", c, y, err)
			}
		}
		if _, err := s.Sample([]float32{nan32, ninf}, nil); err != ErrNoCandidate {
			t.Errorf("%+v, no candidate: %v", c, err)
		}
		if !math.IsInf(s.mu, 0) && s.mu != s.mu {
			t.Errorf("%+v: μ = %g", c, s.mu)
		}
	}
	for _, tc := range []struct {
		c     SamplerConfig
		field string
	}{
		{SamplerConfig{TypicalP: nan32}, "TypicalP"},
		{SamplerConfig{Mirostat: 3}, "Mirostat"},
		{SamplerConfig{Mirostat: -1}, "Mirostat"},
		{SamplerConfig{Mirostat: 2, MirostatTau: -1}, "MirostatTau"},
		{SamplerConfig{Mirostat: 2, MirostatTau: posInf32}, "MirostatTau"},
		{SamplerConfig{Mirostat: 2, MirostatEta: nan32}, "MirostatEta"},
	} {
		if _, err := NewSampler(tc.c); err == nil || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("NewSampler(%+v): %v", tc.c, err)
		}
	}
}

// TestSamplerXTC: XTC drops every token at or above the threshold but the
// least likely of them, as often as its probability says (a mixture of the
// two distributions), after top-k, top-p and min-p; above a threshold of
// 0.5 it never acts and consumes no draw.
func TestSamplerXTC(t *testing.T) {
	logits := typicalLogits() // 0.30, 0.20, 0.12, 0.10, …
	order := refOrder(logits)
	full := refProbs(logits, order, 1)
	cut := refProbs(logits, order[2:], 1) // 0.30 and 0.20 dropped, 0.12 kept
	s := newTestSampler(t, SamplerConfig{Temperature: 1, XTCProbability: 1, XTCThreshold: 0.11})
	if got, err := keptIDs(s, logits, nil); err != nil || !slices.Equal(got, order[2:]) {
		t.Errorf("XTC 1, 0.11: kept %v, %v; want %v", got, err, order[2:])
	}
	// After top-k 5 the softmax renormalizes: 0.375, 0.25, 0.15, 0.125, 0.1.
	s = newTestSampler(t, SamplerConfig{Temperature: 1, TopK: 5, XTCProbability: 1, XTCThreshold: 0.12})
	if got, _ := keptIDs(s, logits, nil); !slices.Equal(got, order[3:5]) {
		t.Errorf("top-k 5, XTC 1, 0.12: kept %v, want %v", got, order[3:5])
	}
	mix := make([]float64, len(logits))
	for i := range mix {
		mix[i] = 0.7*full[i] + 0.3*cut[i]
	}
	const n = 20000
	counts := drawCounts(t, newTestSampler(t, SamplerConfig{Temperature: 1, XTCProbability: 0.3, XTCThreshold: 0.11, Seed: 4}), logits, nil, n)
	checkFreq(t, counts, n, mix)
	// A threshold above 0.5 leaves sampling (and its stream) as it was.
	a := newTestSampler(t, SamplerConfig{Temperature: 1, Seed: 8})
	b := newTestSampler(t, SamplerConfig{Temperature: 1, Seed: 8, XTCProbability: 1, XTCThreshold: 0.6})
	for range 200 {
		ya, _ := a.Sample(logits, nil)
		yb, _ := b.Sample(logits, nil)
		if ya != yb {
			t.Fatalf("XTC threshold 0.6 changed a draw: %d against %d", yb, ya)
		}
	}
	if p := newTestSampler(t, SamplerConfig{Temperature: 1, TopK: 40, XTCProbability: 0.5}).Plan(100); p.Rule != NeedLogits {
		t.Errorf("XTC: plan %+v, want NeedLogits", p)
	}
	for _, c := range []SamplerConfig{{XTCProbability: 1.5}, {XTCProbability: nan32}, {XTCThreshold: -0.1}, {XTCThreshold: 2}} {
		if _, err := NewSampler(c); err == nil || !strings.Contains(err.Error(), "XTC") {
			t.Errorf("NewSampler(%+v): %v", c, err)
		}
	}
}

// refDRY returns the DRY penalty of every token for history, by the
// definition: for each earlier position i, the longest run of tokens
// ending at i that equals the end of the window (never reaching back past
// the window's last breaker) is a repeat that w[i+1] would extend.
func refDRY(history []int32, vocab int, c SamplerConfig) []float32 {
	pen := make([]float32, vocab)
	base, allowed := float64(c.DRYBase), c.DRYAllowedLength
	if base == 0 {
		base = 1.75
	}
	if allowed == 0 {
		allowed = 2
	}
	w := history
	if c.DRYLastN > 0 && len(w) > c.DRYLastN {
		w = w[len(w)-c.DRYLastN:]
	}
	n := len(w)
	brk := func(t int32) bool { return slices.Contains(c.DRYBreakers, t) }
	limit := n
	for i := range n {
		if brk(w[n-1-i]) {
			limit = i
			break
		}
	}
	longest := make([]int, vocab)
	for i := 0; i+1 < n; i++ {
		m := 0
		for m <= i && w[i-m] == w[n-1-m] {
			m++
		}
		m = min(m, limit)
		if t := w[i+1]; m >= allowed && n > allowed && !brk(t) {
			longest[t] = max(longest[t], m)
		}
	}
	for t, m := range longest {
		if m > 0 {
			e := min(float64(m-allowed), math.Floor(math.Log(math.MaxFloat32)/math.Log(base)))
			pen[t] = float32(float64(c.DRYMultiplier) * math.Pow(base, e))
		}
	}
	return pen
}

// TestSamplerDRY: DRY's penalties equal the definition's on llama.cpp's
// example and on random histories (with breakers, windows and the repeat
// penalty beside it), greedy decoding steps off a repeat, and a device is
// told to send the logits.
func TestSamplerDRY(t *testing.T) {
	const a, b, c, y = 0, 1, 2, 3
	hist := []int32{a, b, c, c, b, c, y, a, b, c}
	cfg := SamplerConfig{Temperature: 1, DRYMultiplier: 0.8}
	logits := make([]float32, 5)
	got := penalizedLogits(newTestSampler(t, cfg), logits, hist)
	// Next c would extend "a b c" (3 long): 0.8·1.75¹; next y "b c" (2):
	// 0.8·1.75⁰; next b only "c" (1), below the allowed 2.
	want := []float32{0, 0, -float32(0.8 * 1.75), -0.8, 0}
	if !slices.Equal(got, want) {
		t.Errorf("llama.cpp's example: %v, want %v", got, want)
	}
	// A breaker is never penalized: y now is not.
	cfg.DRYBreakers = []int32{y}
	if got := penalizedLogits(newTestSampler(t, cfg), logits, hist); !slices.Equal(got, []float32{0, 0, -float32(0.8 * 1.75), 0, 0}) {
		t.Errorf("with y a breaker: %v", got)
	}
	// And a repeat reaches back no further than the last breaker: after
	// "x a b c x a b", c would extend "x a b" (3), but with x (4) a
	// breaker only "a b" (2).
	const x = 4
	hist = []int32{x, a, b, c, x, a, b}
	cfg.DRYBreakers = nil
	if got := penalizedLogits(newTestSampler(t, cfg), logits, hist); !slices.Equal(got, []float32{0, 0, -float32(0.8 * 1.75), 0, 0}) {
		t.Errorf("x a b c x a b: %v", got)
	}
	cfg.DRYBreakers = []int32{x}
	if got := penalizedLogits(newTestSampler(t, cfg), logits, hist); !slices.Equal(got, []float32{0, 0, -0.8, 0, 0}) {
		t.Errorf("x a b c x a b, x a breaker: %v", got)
	}

	rng := rand.New(rand.NewPCG(21, 22))
	for trial := range 3000 {
		vocab := 2 + rng.IntN(5)
		h := make([]int32, rng.IntN(60))
		for i := range h {
			h[i] = int32(rng.IntN(vocab))
		}
		cfg := SamplerConfig{
			Temperature:      1,
			DRYMultiplier:    float32(0.1 + rng.Float64()),
			DRYBase:          []float32{0, 1, 1.5, 3}[rng.IntN(4)],
			DRYAllowedLength: rng.IntN(4),
			DRYLastN:         []int{0, -1, 5, 17}[rng.IntN(4)],
		}
		if rng.IntN(2) == 0 {
			cfg.DRYBreakers = []int32{int32(rng.IntN(vocab))}
		}
		raw := make([]float32, vocab)
		for i := range raw {
			raw[i] = float32(rng.NormFloat64())
		}
		want := raw
		if trial%3 == 0 { // beside the repeat penalty
			cfg.RepeatPenalty, cfg.RepeatLastN = 1.3, 8
			want = penalizedLogits(newTestSampler(t, SamplerConfig{Temperature: 1, RepeatPenalty: 1.3, RepeatLastN: 8}), raw, h)
		}
		want = slices.Clone(want)
		for i, p := range refDRY(h, vocab, cfg) {
			want[i] -= p
		}
		if got := penalizedLogits(newTestSampler(t, cfg), raw, h); !slices.Equal(got, want) {
			t.Fatalf("trial %d, %+v, history %v: %v, want %v", trial, cfg, h, got, want)
		}
	}

	// Greedy steps off the repeat: after "a b c … a b", c (the argmax)
	// would repeat "a b c"; with DRY strong enough, y wins.
	l := []float32{0, 0, 2, 1.5, 0}
	h := []int32{a, b, c, y, y, a, b}
	plain := newTestSampler(t, SamplerConfig{})
	dry := newTestSampler(t, SamplerConfig{DRYMultiplier: 1})
	if g, _ := plain.Sample(l, h); g != c {
		t.Fatalf("greedy without DRY: %d", g)
	}
	if g, _ := dry.Sample(l, h); g != y {
		t.Errorf("greedy with DRY: %d, want %d", g, y)
	}
	if dry.Greedy() {
		t.Error("a DRY sampler at temperature 0 says it is a plain argmax")
	}
	if p := dry.Plan(5); p.Rule != NeedLogits {
		t.Errorf("DRY: plan %+v, want NeedLogits", p)
	}
	for _, c := range []SamplerConfig{{DRYMultiplier: nan32}, {DRYBase: 0.5}, {DRYAllowedLength: -1}, {DRYLastN: -2}} {
		if _, err := NewSampler(c); err == nil || !strings.Contains(err.Error(), "DRY") {
			t.Errorf("NewSampler(%+v): %v", c, err)
		}
	}
}

// TestSamplerLogitBias: the bias is added before the penalties, −Inf bans
// a token, draws follow the biased softmax, ids outside the vocabulary are
// ignored, and a device is told to send the logits.
func TestSamplerLogitBias(t *testing.T) {
	logits := []float32{1, 3, 2, 0.5}
	ninf := float32(math.Inf(-1))
	s := newTestSampler(t, SamplerConfig{LogitBias: map[int32]float32{1: ninf, 3: 2, 99: 5, -4: 1}})
	if y, err := s.Sample(logits, nil); err != nil || y != 3 {
		t.Errorf("greedy with token 1 banned and 3 raised by 2: %d, %v", y, err)
	}
	if s.Greedy() {
		t.Error("a biased sampler says it is a plain argmax")
	}
	if p := s.Plan(4); p.Rule != NeedLogits {
		t.Errorf("logit bias: plan %+v", p)
	}
	// Bias, then repeat penalty (llama.cpp's order): token 0 is 1 + 1 = 2,
	// then 2/2 = 1 (the penalty first would give 0.5 + 1).
	s = newTestSampler(t, SamplerConfig{Temperature: 1, RepeatPenalty: 2, LogitBias: map[int32]float32{0: 1, 2: -1}})
	if got, want := penalizedLogits(s, logits, []int32{0}), []float32{1, 3, 1, 0.5}; !slices.Equal(got, want) {
		t.Errorf("bias and penalty: %v, want %v", got, want)
	}
	const n = 20000
	counts := drawCounts(t, newTestSampler(t, SamplerConfig{Temperature: 1, Seed: 3, LogitBias: map[int32]float32{0: 1, 2: -1}}), logits, nil, n)
	bl := []float32{2, 3, 1, 0.5}
	checkFreq(t, counts, n, refProbs(bl, refOrder(bl), 1))
	for _, b := range []float32{nan32, posInf32} {
		if _, err := NewSampler(SamplerConfig{LogitBias: map[int32]float32{7: b}}); err == nil || !strings.Contains(err.Error(), "LogitBias[7]") {
			t.Errorf("bias %v: %v", b, err)
		}
	}
	// Every token banned: no candidate.
	all := map[int32]float32{0: ninf, 1: ninf, 2: ninf, 3: ninf}
	if _, err := newTestSampler(t, SamplerConfig{Temperature: 1, LogitBias: all}).Sample(logits, nil); err != ErrNoCandidate {
		t.Errorf("every token banned: %v", err)
	}
}
