package nn

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
)

func TestPlanChunks(t *testing.T) {
	for _, tc := range []struct {
		tokens, ctx, max int
		chunks, scored   int
		err              string
	}{
		{tokens: 1024, ctx: 512, max: -1, chunks: 2, scored: 255},
		{tokens: 1535, ctx: 512, max: 0, chunks: 2, scored: 255}, // the tail is dropped
		{tokens: 5000, ctx: 512, max: 3, chunks: 3, scored: 255},
		{tokens: 5000, ctx: 512, max: 100, chunks: 9, scored: 255},
		{tokens: 16, ctx: 8, max: -1, chunks: 2, scored: 3},
		{tokens: 200, ctx: 65, max: -1, chunks: 3, scored: 32}, // odd n_ctx: first 32, scored 32..63
		{tokens: 1023, ctx: 512, max: -1, err: "only 1023 tokens"},
		{tokens: 0, ctx: 64, max: -1, err: "needs at least 128"},
		{tokens: 100, ctx: 7, max: -1, err: "too short"},
	} {
		p, err := PlanChunks(tc.tokens, tc.ctx, tc.max)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("PlanChunks(%d, %d, %d) = %+v, %v; want an error with %q", tc.tokens, tc.ctx, tc.max, p, err, tc.err)
			}
			continue
		}
		if err != nil || p.Chunks != tc.chunks || p.Scored() != tc.scored || p.First()+p.Scored() != tc.ctx-1 {
			t.Errorf("PlanChunks(%d, %d, %d) = %+v (first %d, scored %d), %v", tc.tokens, tc.ctx, tc.max, p, p.First(), p.Scored(), err)
		}
	}
	var few *TooFewTokensError
	if _, err := PlanChunks(10, 8, -1); !errors.As(err, &few) || few.Tokens != 10 {
		t.Errorf("too few tokens: %v", err)
	}
	p := ChunkPlan{Ctx: 4, Chunks: 2}
	toks := []int32{1, 2, 3, 4, 5, 6, 7, 8, 9}
	if c := p.Chunk(toks, 1, 0); !slices.Equal(c, []int32{0, 6, 7, 8}) || toks[4] != 5 {
		t.Errorf("chunk 1 with BOS 0: %v (tokens %v)", c, toks)
	}
	if c := p.Chunk(toks, 0, -1); !slices.Equal(c, []int32{1, 2, 3, 4}) {
		t.Errorf("chunk 0 without BOS: %v", c)
	}
}

// EvalScored runs passes at multiples of batch, cut at the first scored
// position, asks for every logit only in the scored part, and hands each
// scored position its own logits.
func TestEvalScored(t *testing.T) {
	for _, tc := range []struct {
		n, first, batch int
		calls           [][2]int
	}{
		{16, 8, 5, [][2]int{{0, 5}, {5, 3}, {8, 2}, {10, 5}}},
		{16, 8, 64, [][2]int{{0, 8}, {8, 7}}},
		{16, 8, 8, [][2]int{{0, 8}, {8, 7}}},
		{9, 4, 1, [][2]int{{0, 1}, {1, 1}, {2, 1}, {3, 1}, {4, 1}, {5, 1}, {6, 1}, {7, 1}}},
	} {
		fb := &fakeBackend{vocab: 32, ctx: tc.n}
		e, err := NewEngine(&Config{Vocab: 32, Context: tc.n}, fb)
		if err != nil {
			t.Fatal(err)
		}
		e.Eval([]int32{3}) // left over from an earlier chunk: EvalScored starts afresh
		fb.calls = nil
		chunk := make([]int32, tc.n)
		for i := range chunk {
			chunk[i] = int32(i * 7 % 32)
		}
		var seen []int
		err = EvalScored(e, chunk, tc.first, tc.batch, func(j int, logits []float32) error {
			seen = append(seen, j)
			if best, _ := Top2(logits); best != int(chunk[j]+1)%32 {
				t.Errorf("n %d batch %d: position %d got another position's logits", tc.n, tc.batch, j)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		want := make([]int, 0)
		for j := tc.first; j <= tc.n-2; j++ {
			want = append(want, j)
		}
		if !slices.Equal(seen, want) || !slices.Equal(fb.calls, tc.calls) {
			t.Errorf("n %d first %d batch %d: scored %v, passes %v; want %v, %v", tc.n, tc.first, tc.batch, seen, fb.calls, want, tc.calls)
		}
	}
	e, _ := NewEngine(&Config{Vocab: 4, Context: 8}, &fakeBackend{vocab: 4, ctx: 8})
	if err := EvalScored(e, make([]int32, 8), 0, 2, nil); err == nil {
		t.Error("first 0 accepted")
	}
	stop := errors.New("stop")
	if err := EvalScored(e, make([]int32, 8), 4, 2, func(int, []float32) error { return stop }); err != stop {
		t.Errorf("fn's error: %v", err)
	}
}

func TestLogSoftmaxAndNLL(t *testing.T) {
	x := []float32{1, 2, 3, 4}
	lse := math.Log(math.Exp(1) + math.Exp(2) + math.Exp(3) + math.Exp(4))
	if got := LogSumExp(x); math.Abs(got-lse) > 1e-12 {
		t.Errorf("LogSumExp = %v, want %v", got, lse)
	}
	if got := NLL(x, 1); math.Abs(got-(lse-2)) > 1e-12 {
		t.Errorf("NLL = %v", got)
	}
	// Large logits do not overflow; shifting them changes nothing.
	big := []float32{1001, 1002, 1003, 1004}
	if got := NLL(big, 1); math.Abs(got-(lse-2)) > 1e-9 {
		t.Errorf("NLL of shifted logits = %v, want %v", got, lse-2)
	}
	lp := make([]float32, 4)
	LogProbs(lp, x)
	var s float64
	for i, v := range lp {
		s += math.Exp(float64(v))
		if want := float64(x[i]) - lse; math.Abs(float64(v)-want) > 1e-6 {
			t.Errorf("LogProbs[%d] = %v, want %v", i, v, want)
		}
	}
	if math.Abs(s-1) > 1e-6 {
		t.Errorf("probabilities add to %v", s)
	}
	if got := LogSumExp([]float32{float32(math.Inf(-1))}); !math.IsInf(got, -1) {
		t.Errorf("LogSumExp(−∞) = %v", got)
	}
}

func TestNLLStats(t *testing.T) {
	var s NLLStats
	for _, v := range []float64{1, 2, 3} {
		s.Add(v)
	}
	// mean 2, ⟨x²⟩ − ⟨x⟩² = 14/3 − 4 = 2/3, σ = √((2/3)/2)
	ppl, err := s.PPL()
	if want := math.Exp(2); math.Abs(ppl-want) > 1e-12 || math.Abs(err-want*math.Sqrt(1.0/3)) > 1e-12 {
		t.Errorf("PPL = %v ± %v", ppl, err)
	}
	var one NLLStats
	one.Add(0.5)
	if ppl, err := one.PPL(); math.Abs(ppl-math.Exp(0.5)) > 1e-12 || err != 0 {
		t.Errorf("one value: %v ± %v", ppl, err)
	}
	if m, e := MeanAndError(0, 0, 0); m != 0 || e != 0 {
		t.Errorf("no values: %v ± %v", m, e)
	}
}

func TestPercentile(t *testing.T) {
	v := []float64{1, 2, 3, 4}
	for _, tc := range []struct{ f, want float64 }{
		{-1, 1}, {0, 1}, {0.5, 2.5}, {0.9, 3.7}, {1, 4}, {2, 4}, {1.0 / 3, 2},
	} {
		if got := Percentile(v, tc.f); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("Percentile(%v) = %v, want %v", tc.f, got, tc.want)
		}
	}
	if got := Percentile([]float64{1, 2, 3}, 0.5); got != 2 {
		t.Errorf("median of three = %v", got)
	}
	if !math.IsNaN(Percentile(nil, 0.5)) {
		t.Error("percentile of nothing is not NaN")
	}
}

func logprobs(logits ...float32) []float32 {
	lp := make([]float32, len(logits))
	LogProbs(lp, logits)
	return lp
}

func TestKLStats(t *testing.T) {
	// The same distributions: no divergence, the same top token, ratio 1.
	var same KLStats
	rows := [][]float32{logprobs(1, 2, 3, 0), logprobs(0, 0, 5, 1), logprobs(2, 1, 0, 0), logprobs(-1, 3, 3, 0)}
	for i, r := range rows {
		same.Add(r, r, int32(i%4))
	}
	kl, _ := same.MeanKL()
	ratio, _ := same.Ratio()
	top, _ := same.SameTopP()
	diff, _ := same.Diff()
	rms, _ := same.RMSDP()
	if kl != 0 || ratio != 1 || top != 1 || diff != 0 || rms != 0 || same.N() != 4 || math.Abs(same.Correlation()-1) > 1e-12 {
		t.Errorf("identical runs: KL %v, ratio %v, top %v, diff %v, RMS Δp %v, N %d, correlation %v", kl, ratio, top, diff, rms, same.N(), same.Correlation())
	}

	// Two tokens, P = (1/2, 1/2) and Q = softmax(1, 0): the KL of compare.go,
	// the same top token (P ties and picks token 0, as Q does), and the
	// NLLs of token 1.
	var s KLStats
	p, q := logprobs(0, 0), logprobs(1, 0)
	s.Add(p, q, 1)
	want := KLDivergence([]float32{0, 0}, []float32{1, 0})
	if got, _ := s.MeanKL(); math.Abs(got-want) > 1e-6 {
		t.Errorf("KL = %v, want %v", got, want)
	}
	if s.SameTop != 1 {
		t.Errorf("same top %d, want 1 (ties pick the lowest id)", s.SameTop)
	}
	nllQ := math.Log(1 + math.E)
	if lr, _ := s.LogRatio(); math.Abs(lr-(nllQ-math.Ln2)) > 1e-6 {
		t.Errorf("ln ratio = %v, want %v", lr, nllQ-math.Ln2)
	}
	if dp, _ := s.MeanDP(); math.Abs(dp-(1/(1+math.E)-0.5)) > 1e-6 {
		t.Errorf("Δp = %v", dp)
	}
	s.Add(logprobs(0, 3), logprobs(3, 0), 0)
	if tp, e := s.SameTopP(); tp != 0.5 || math.Abs(e-0.5) > 1e-12 {
		t.Errorf("same top p = %v ± %v, want 0.5 ± 0.5", tp, e)
	}
	if kls := s.SortedKL(); len(kls) != 2 || kls[0] > kls[1] || kls[0] != s.KLs[0] {
		t.Errorf("sorted KLs %v of %v", kls, s.KLs)
	}

	// Correlated NLLs: the ratio's uncertainty is smaller than either PPL's.
	var c KLStats
	for i := range 50 {
		x := float32(i%7) - 3
		c.Add(logprobs(x, 0, 1), logprobs(x+0.1, 0, 1), int32(i%3))
	}
	_, eq := MeanAndError(c.Q.Sum, c.Q.Sum2, c.N())
	_, er := c.LogRatio()
	if er >= eq || c.Correlation() < 0.9 {
		t.Errorf("ln ratio uncertainty %v not below the PPL's %v; correlation %v", er, eq, c.Correlation())
	}
}

func TestArgmax(t *testing.T) {
	nan := float32(math.NaN())
	for _, tc := range []struct {
		x    []float32
		want int
	}{
		{[]float32{1, 3, 3, 2}, 1},
		{[]float32{nan, 1, 2}, 2},
		{[]float32{1, nan, 0}, 0},
		{[]float32{5}, 0},
	} {
		if got := argmax(tc.x); got != tc.want {
			t.Errorf("argmax(%v) = %d, want %d", tc.x, got, tc.want)
		}
	}
}
