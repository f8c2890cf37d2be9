package nn

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

var (
	nan32    = float32(math.NaN())
	posInf32 = float32(math.Inf(1))
	negInf32 = float32(math.Inf(-1))
)

func newTestSampler(t testing.TB, c SamplerConfig) *Sampler {
	t.Helper()
	s, err := NewSampler(c)
	if err != nil {
		t.Fatalf("NewSampler(%+v): %v", c, err)
	}
	return s
}

// keptIDs returns the ids that survive penalties, top-k, top-p and min-p,
// best first: the set the draw walks (temperature does not change it).
func keptIDs(s *Sampler, logits []float32, history []int32) ([]int32, error) {
	if len(logits) == 0 {
		return nil, ErrNoLogits
	}
	s.penalize(logits, history)
	c, binned, err := s.truncate(logits)
	if err != nil {
		return nil, err
	}
	if binned {
		// The kept set is every bin below cutBin and the best cutLen of
		// bin cutBin: a best-first prefix of that length.
		n := s.cutLen
		for b := range min(s.cutBin, nBins) {
			n += int(s.n[b])
		}
		c = s.selectTop(logits, len(logits))[:n]
	}
	ids := make([]int32, len(c))
	for i, e := range c {
		ids[i] = e.id
	}
	return ids, nil
}

// penalizedLogits returns a copy of logits with the penalties applied.
func penalizedLogits(s *Sampler, logits []float32, history []int32) []float32 {
	s.penalize(logits, history)
	out := slices.Clone(logits)
	for j, id := range s.touched {
		out[id] = s.pen[j]
	}
	return out
}

// logProbs returns ln p: logits whose softmax is p.
func logProbs(p ...float64) []float32 {
	out := make([]float32, len(p))
	for i, x := range p {
		out[i] = float32(math.Log(x))
	}
	return out
}

// refOrder returns every id with a finite logit, best first (logit
// descending, id ascending): the reference order, by a full sort.
func refOrder(logits []float32) []int32 {
	var ids []int32
	for i, x := range logits {
		if !math.IsNaN(float64(x)) && !math.IsInf(float64(x), 0) {
			ids = append(ids, int32(i))
		}
	}
	slices.SortFunc(ids, func(a, b int32) int {
		switch {
		case logits[a] > logits[b]:
			return -1
		case logits[a] < logits[b]:
			return 1
		}
		return int(a - b)
	})
	return ids
}

// refProbs returns softmax(x/t) over ids, indexed by id (0 elsewhere).
func refProbs(logits []float32, ids []int32, t float64) []float64 {
	p := make([]float64, len(logits))
	mx := math.Inf(-1)
	for _, id := range ids {
		mx = max(mx, float64(logits[id]))
	}
	z := 0.0
	for _, id := range ids {
		p[id] = math.Exp((float64(logits[id]) - mx) / t)
		z += p[id]
	}
	for _, id := range ids {
		p[id] /= z
	}
	return p
}

// drawCounts samples n tokens and counts them by id.
func drawCounts(t *testing.T, s *Sampler, logits []float32, history []int32, n int) []int {
	t.Helper()
	counts := make([]int, len(logits))
	for range n {
		id, err := s.Sample(logits, history)
		if err != nil {
			t.Fatalf("Sample: %v", err)
		}
		counts[id]++
	}
	return counts
}

// checkFreq asserts that ids with probability 0 were never drawn and that
// every other count lies within 4 standard deviations of its binomial mean
// n·p (σ = √(n·p·(1−p))). A correct sampler misses that band with
// probability ≈ 6·10⁻⁵ per id, so with the ≤ 10 ids of these tests a false
// failure is below 10⁻³ for any seed, and the fixed seeds make it
// reproducible; a wrong distribution (say, not renormalized after a
// truncation) is off by far more than 4σ at n = 20000.
func checkFreq(t *testing.T, counts []int, n int, p []float64) {
	t.Helper()
	for id, c := range counts {
		if p[id] == 0 {
			if c != 0 {
				t.Errorf("id %d has probability 0 but was drawn %d times", id, c)
			}
			continue
		}
		mean := float64(n) * p[id]
		sd := math.Sqrt(mean * (1 - p[id]))
		if math.Abs(float64(c)-mean) > 4*sd {
			t.Errorf("id %d drawn %d times in %d, want %.1f ± %.1f (4σ)", id, c, n, mean, 4*sd)
		}
	}
}

func TestSamplerGreedy(t *testing.T) {
	cases := []struct {
		name    string
		logits  []float32
		history []int32
		rep     float32
		want    int32
		err     error
	}{
		{name: "argmax", logits: []float32{1, 3, 2}, want: 1},
		{name: "tie lowest id", logits: []float32{1, 3, 3, 2}, want: 1},
		{name: "negative", logits: []float32{-5, -1, -3}, want: 1},
		{name: "NaN ignored", logits: []float32{nan32, 1, nan32, 0}, want: 1},
		{name: "NaN and -Inf ignored", logits: []float32{nan32, negInf32, -7}, want: 2},
		{name: "+Inf wins", logits: []float32{0, 5, posInf32, 9}, want: 2},
		{name: "+Inf tie lowest id", logits: []float32{0, posInf32, 5, posInf32}, want: 1},
		{name: "penalty makes a tie, untouched lower id", logits: []float32{1, 2}, history: []int32{1}, rep: 2, want: 0},
		{name: "penalty makes a tie, touched lower id", logits: []float32{2, 1}, history: []int32{0}, rep: 2, want: 0},
		{name: "penalty moves the argmax", logits: []float32{2, 1.5}, history: []int32{0}, rep: 2, want: 1},
		{name: "empty", logits: []float32{}, want: -1, err: ErrNoLogits},
		{name: "all NaN", logits: []float32{nan32, nan32}, want: -1, err: ErrNoCandidate},
		{name: "all -Inf", logits: []float32{negInf32, negInf32}, want: -1, err: ErrNoCandidate},
		{name: "NaN and -Inf", logits: []float32{negInf32, nan32}, want: -1, err: ErrNoCandidate},
	}
	for _, tc := range cases {
		for _, temp := range []float32{0, -1} {
			s := newTestSampler(t, SamplerConfig{Temperature: temp, RepeatPenalty: tc.rep, TopK: 40, TopP: 0.5})
			got, err := s.Sample(tc.logits, tc.history)
			if !errors.Is(err, tc.err) || got != tc.want {
				t.Errorf("%s (T=%v): Sample = %d, %v; want %d, %v", tc.name, temp, got, err, tc.want, tc.err)
			}
		}
	}
}

// TestSamplerEdgeLogits checks the greedy cases' rules on every sampling path
// (top-k heap, top-p growth, min-p collection, untruncated lazy draw).
func TestSamplerEdgeLogits(t *testing.T) {
	paths := []SamplerConfig{
		{Temperature: 1},
		{Temperature: 1, TopK: 2},
		{Temperature: 1, TopP: 0.9},
		{Temperature: 1, MinP: 0.01},
		{Temperature: 1, TopK: 2, TopP: 0.9, MinP: 0.01},
	}
	for _, cfg := range paths {
		for _, tc := range []struct {
			logits []float32
			err    error
		}{
			{[]float32{}, ErrNoLogits},
			{[]float32{nan32, nan32, nan32}, ErrNoCandidate},
			{[]float32{negInf32, negInf32, negInf32}, ErrNoCandidate},
			{[]float32{negInf32, nan32, negInf32}, ErrNoCandidate},
		} {
			s := newTestSampler(t, cfg)
			if id, err := s.Sample(tc.logits, nil); !errors.Is(err, tc.err) || id != -1 {
				t.Errorf("%+v on %v: Sample = %d, %v; want -1, %v", cfg, tc.logits, id, err, tc.err)
			}
		}

		// NaN and −Inf are never drawn, even with a flat rest.
		logits := []float32{nan32, 0, negInf32, 0.1, nan32, 0.2}
		s := newTestSampler(t, cfg)
		counts := drawCounts(t, s, logits, nil, 3000)
		if counts[0]+counts[2]+counts[4] != 0 {
			t.Errorf("%+v: drew NaN/-Inf ids: counts %v", cfg, counts)
		}

		// One +Inf always wins; two share the mass equally.
		s = newTestSampler(t, cfg)
		counts = drawCounts(t, s, []float32{0, 100, posInf32, 3, nan32}, nil, 1000)
		if counts[2] != 1000 {
			t.Errorf("%+v: single +Inf drawn %d of 1000 times", cfg, counts[2])
		}
		if cfg.TopP > 0 {
			continue // top-p 0.9 of two equal tokens keeps only the first
		}
		s = newTestSampler(t, cfg)
		counts = drawCounts(t, s, []float32{0, posInf32, 3, posInf32}, nil, 4000)
		checkFreq(t, counts, 4000, []float64{0, 0.5, 0, 0.5})
	}
}

func TestSamplerTopKOneIsGreedy(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	logits := make([]float32, 1000)
	for i := range logits {
		logits[i] = float32(r.NormFloat64())
	}
	logits[321], logits[700] = 9, 9 // a tie: 321 wins
	history := []int32{5, 6, 7}
	want, err := newTestSampler(t, SamplerConfig{RepeatPenalty: 1.3}).Sample(logits, history)
	if err != nil || want != 321 {
		t.Fatalf("greedy = %d, %v; want 321", want, err)
	}
	for _, temp := range []float32{0.01, 1, 10, 1e6} {
		s := newTestSampler(t, SamplerConfig{Temperature: temp, TopK: 1, RepeatPenalty: 1.3, Seed: 3})
		for range 200 {
			if got, err := s.Sample(logits, history); err != nil || got != want {
				t.Fatalf("top-k 1 at T=%v: Sample = %d, %v; want %d", temp, got, err, want)
			}
		}
	}
}

func TestSamplerTopKFrequencies(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	logits := make([]float32, 50)
	for i := range logits {
		logits[i] = float32(r.NormFloat64())
	}
	order := refOrder(logits)
	const n = 20000
	for _, k := range []int{2, 5, 10} {
		s := newTestSampler(t, SamplerConfig{Temperature: 1, TopK: k, Seed: uint64(k)})
		counts := drawCounts(t, s, logits, nil, n)
		checkFreq(t, counts, n, refProbs(logits, order[:k], 1))
	}
}

func TestSamplerKeptSets(t *testing.T) {
	// p = .05 .5 .1 .2 .15 at ids 0..4; best first: 1 3 4 2 0, cumulative
	// mass .5 .7 .85 .95 1.
	logits := logProbs(0.05, 0.5, 0.1, 0.2, 0.15)
	cases := []struct {
		name string
		c    SamplerConfig
		want []int32
	}{
		{"nothing", SamplerConfig{}, []int32{1, 3, 4, 2, 0}},
		{"top-k 2", SamplerConfig{TopK: 2}, []int32{1, 3}},
		{"top-k = V is off", SamplerConfig{TopK: 5}, []int32{1, 3, 4, 2, 0}},
		{"top-k > V is off", SamplerConfig{TopK: 100}, []int32{1, 3, 4, 2, 0}},
		{"top-p .3", SamplerConfig{TopP: 0.3}, []int32{1}},
		{"top-p .69: .7 ≥ .69", SamplerConfig{TopP: 0.69}, []int32{1, 3}},
		{"top-p .72: .7 < .72", SamplerConfig{TopP: 0.72}, []int32{1, 3, 4}},
		{"top-p .96", SamplerConfig{TopP: 0.96}, []int32{1, 3, 4, 2, 0}},
		{"top-p 1 is off", SamplerConfig{TopP: 1}, []int32{1, 3, 4, 2, 0}},
		// After top-k 4 the mass is renormalized over .95: .526 .737 ≥ .72.
		{"top-k 4 then top-p .72", SamplerConfig{TopK: 4, TopP: 0.72}, []int32{1, 3}},
		// min-p m keeps p ≥ m·0.5.
		{"min-p .25: ≥ .125", SamplerConfig{MinP: 0.25}, []int32{1, 3, 4}},
		{"min-p .35: ≥ .175", SamplerConfig{MinP: 0.35}, []int32{1, 3}},
		{"min-p .45: ≥ .225", SamplerConfig{MinP: 0.45}, []int32{1}},
		{"min-p 1", SamplerConfig{MinP: 1}, []int32{1}},
		{"top-p .99, min-p .25", SamplerConfig{TopP: 0.99, MinP: 0.25}, []int32{1, 3, 4}},
		{"top-p .6, min-p .05", SamplerConfig{TopP: 0.6, MinP: 0.05}, []int32{1, 3}},
		{"top-k 3, min-p .01", SamplerConfig{TopK: 3, MinP: 0.01}, []int32{1, 3, 4}},
		{"top-k 4, top-p .8, min-p .25", SamplerConfig{TopK: 4, TopP: 0.8, MinP: 0.25}, []int32{1, 3, 4}},
		// Repeat penalty 4 on id 1: ln .5 < 0, so ×4 = −2.77, below ln .1.
		{"penalty then top-k 2", SamplerConfig{TopK: 2, RepeatPenalty: 4}, []int32{3, 4}},
	}
	for _, tc := range cases {
		s := newTestSampler(t, tc.c)
		var history []int32
		if tc.c.RepeatPenalty != 0 {
			history = []int32{1}
		}
		got, err := keptIDs(s, logits, history)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%s: kept %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
}

// TestSamplerKeptTies: equal logits rank by lower id on every path, including
// a penalized id that ties with unpenalized ones (offered to the heap last).
func TestSamplerKeptTies(t *testing.T) {
	cases := []struct {
		name    string
		logits  []float32
		history []int32
		c       SamplerConfig
		want    []int32
	}{
		{"untruncated", []float32{1, 2, 2, 2, 0}, nil, SamplerConfig{}, []int32{1, 2, 3, 0, 4}},
		{"top-k 2", []float32{1, 2, 2, 2, 0}, nil, SamplerConfig{TopK: 2}, []int32{1, 2}},
		{"min-p", []float32{1, 2, 2, 2, 0}, nil, SamplerConfig{MinP: 0.5}, []int32{1, 2, 3}},
		{"top-p", []float32{2, 2, 2, 2, 2}, nil, SamplerConfig{TopP: 0.5}, []int32{0, 1, 2}},
		// id 1: 3/1.5 = 2 ties ids 2 and 3.
		{"penalized tie, top-k 2", []float32{1, 3, 2, 2}, []int32{1}, SamplerConfig{TopK: 2, RepeatPenalty: 1.5}, []int32{1, 2}},
		{"penalized tie, min-p", []float32{1, 3, 2, 2}, []int32{1}, SamplerConfig{MinP: 0.9, RepeatPenalty: 1.5}, []int32{1, 2, 3}},
		{"+Inf ties, top-k 2", []float32{posInf32, 0, posInf32, posInf32}, nil, SamplerConfig{TopK: 2}, []int32{0, 2}},
		{"+Inf ties, penalized", []float32{0, posInf32, posInf32}, []int32{2}, SamplerConfig{RepeatPenalty: 2}, []int32{1, 2}},
	}
	for _, tc := range cases {
		s := newTestSampler(t, tc.c)
		got, err := keptIDs(s, tc.logits, tc.history)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%s: kept %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
}

// TestSamplerKeptSetsLarge checks the top-k-off paths (mass histogram, min-p
// threshold) and large top-k against a full sort, on a flat vocabulary where
// top-p cuts deep into the histogram, with a tail in its last bin.
func TestSamplerKeptSetsLarge(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	logits := make([]float32, 5000)
	for i := range logits {
		logits[i] = float32(r.NormFloat64() * 0.5)
	}
	logits[17], logits[4000] = nan32, negInf32
	logits[30], logits[31] = -300, -1e30 // the histogram's last bin
	history := []int32{1, 2, 3, 2, 9999, -4}
	for _, c := range []SamplerConfig{
		{},
		{Temperature: 50},
		{TopP: 0.05},
		{TopP: 0.5},
		{TopP: 0.97},
		{MinP: 0.3},
		{MinP: 0.3, TopP: 0.2},
		{MinP: 0.3, TopP: 0.99},
		{TopK: 3000, TopP: 0.6},
		{TopK: 50, MinP: 0.5},
	} {
		c.RepeatPenalty, c.FrequencyPenalty = 1.5, 0.25
		s := newTestSampler(t, c)
		want := refKept(penalizedLogits(s, logits, history), c)
		n := len(want)
		got, err := keptIDs(s, logits, history)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("%+v: kept %d ids, %v; want %d (first %v, got first %v)", c, len(got), err, n, want[:min(n, 5)], got[:min(len(got), 5)])
		}
		if c.TopP == 0.97 && (n < 1000 || s.cutBin < 10) {
			t.Errorf("top-p .97 keeps %d up to bin %d: the test no longer cuts deep in the histogram", n, s.cutBin)
		}
	}
}

func TestSamplerTopPMinPFrequencies(t *testing.T) {
	logits := logProbs(0.05, 0.5, 0.1, 0.2, 0.15)
	const n = 20000
	cases := []struct {
		c    SamplerConfig
		want []float64
	}{
		{SamplerConfig{Temperature: 1, TopP: 0.8}, []float64{0, .5 / .85, 0, .2 / .85, .15 / .85}},
		{SamplerConfig{Temperature: 1, MinP: 0.35}, []float64{0, .5 / .7, 0, .2 / .7, 0}},
		{SamplerConfig{Temperature: 1, TopK: 4, TopP: 0.8, MinP: 0.25}, []float64{0, .5 / .85, 0, .2 / .85, .15 / .85}},
		{SamplerConfig{Temperature: 1}, []float64{.05, .5, .1, .2, .15}},
	}
	for i, tc := range cases {
		tc.c.Seed = uint64(100 + i)
		s := newTestSampler(t, tc.c)
		checkFreq(t, drawCounts(t, s, logits, nil, n), n, tc.want)
	}
}

func TestSamplerPenalties(t *testing.T) {
	// Counts in history: id0 ×2, id1 ×1, id2 ×1; id3, id4 untouched.
	logits := []float32{2, -2, 0, 3, 1}
	history := []int32{0, 1, 2, 0}
	cases := []struct {
		name string
		c    SamplerConfig
		want []float32
	}{
		{"off", SamplerConfig{}, []float32{2, -2, 0, 3, 1}},
		{"repeat 1 is off", SamplerConfig{RepeatPenalty: 1}, []float32{2, -2, 0, 3, 1}},
		// x > 0: x/2; x ≤ 0: x·2 (0 stays 0); once per token, not per use.
		{"repeat 2", SamplerConfig{RepeatPenalty: 2}, []float32{1, -4, 0, 3, 1}},
		{"repeat 0.5 boosts", SamplerConfig{RepeatPenalty: 0.5}, []float32{4, -1, 0, 3, 1}},
		{"frequency .5", SamplerConfig{FrequencyPenalty: 0.5}, []float32{1, -2.5, -0.5, 3, 1}},
		{"presence .25", SamplerConfig{PresencePenalty: 0.25}, []float32{1.75, -2.25, -0.25, 3, 1}},
		{"negative presence", SamplerConfig{PresencePenalty: -1}, []float32{3, -1, 1, 3, 1}},
		// repeat first, then x − (count·.5 + .25).
		{"all three", SamplerConfig{RepeatPenalty: 2, FrequencyPenalty: 0.5, PresencePenalty: 0.25}, []float32{-0.25, -4.75, -0.75, 3, 1}},
	}
	for _, tc := range cases {
		s := newTestSampler(t, tc.c)
		if got := penalizedLogits(s, logits, history); !slices.Equal(got, tc.want) {
			t.Errorf("%s: penalized %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestSamplerPenaltyWindow(t *testing.T) {
	// 100 ids: id1 ×36, then id0 ×63, then id2. Frequency penalty 1 makes
	// each penalized logit −count.
	var history []int32
	for range 36 {
		history = append(history, 1)
	}
	for range 63 {
		history = append(history, 0)
	}
	history = append(history, 2)
	logits := make([]float32, 4)
	cases := []struct {
		lastN int
		want  []float32
	}{
		{0, []float32{-63, 0, -1, 0}},    // default window: the last 64
		{64, []float32{-63, 0, -1, 0}},   // same, spelled out
		{-1, []float32{-63, -36, -1, 0}}, // the whole history
		{3, []float32{-2, 0, -1, 0}},     // 0, 0, 2
		{1, []float32{0, 0, -1, 0}},      // 2
		{65, []float32{-63, -1, -1, 0}},  // reaches one id1
		{1000, []float32{-63, -36, -1, 0}},
	}
	for _, tc := range cases {
		s := newTestSampler(t, SamplerConfig{FrequencyPenalty: 1, RepeatLastN: tc.lastN})
		if got := penalizedLogits(s, logits, history); !slices.Equal(got, tc.want) {
			t.Errorf("RepeatLastN %d: penalized %v, want %v", tc.lastN, got, tc.want)
		}
	}
}

func TestSamplerHistoryOutOfRange(t *testing.T) {
	logits := []float32{1, 2, 3, 4}
	cases := []struct {
		name    string
		lastN   int
		history []int32
		want    []float32
	}{
		{"ignored", 0, []int32{-1, 4, 1 << 20, math.MaxInt32, math.MinInt32, 2}, []float32{1, 2, 1, 4}},
		// Out-of-range ids still occupy their place in the window.
		{"occupy the window", 2, []int32{2, -1, 99}, []float32{1, 2, 3, 4}},
	}
	for _, tc := range cases {
		s := newTestSampler(t, SamplerConfig{RepeatPenalty: 3, RepeatLastN: tc.lastN, Temperature: 1})
		if got := penalizedLogits(s, logits, tc.history); !slices.Equal(got, tc.want) {
			t.Errorf("%s: penalized %v, want %v", tc.name, got, tc.want)
		}
		for range 10 {
			if _, err := s.Sample(logits, tc.history); err != nil {
				t.Errorf("%s: Sample: %v", tc.name, err)
			}
		}
	}
	// A vocabulary that shrinks between calls keeps working.
	s := newTestSampler(t, SamplerConfig{RepeatPenalty: 3})
	if _, err := s.Sample(make([]float32, 1000), []int32{999, 500}); err != nil {
		t.Fatal(err)
	}
	if id, err := s.Sample([]float32{5, 1}, []int32{999, 0}); err != nil || id != 0 {
		t.Errorf("shrunk vocabulary: Sample = %d, %v; want 0", id, err)
	}
}

func TestSamplerTemperature(t *testing.T) {
	logits := []float32{0, 1, 0.999, 0.5}
	// Weight of id 2 relative to id 1 is exp(−0.001/T): 0 in float64 at 1e-6.
	for _, c := range []SamplerConfig{{Temperature: 1e-6}, {Temperature: 1e-6, TopK: 3}, {Temperature: 1e-6, TopP: 0.99}} {
		s := newTestSampler(t, c)
		counts := drawCounts(t, s, logits, nil, 1000)
		if counts[1] != 1000 {
			t.Errorf("%+v: low temperature drew %v, want only id 1", c, counts)
		}
	}

	// Flattening: at T=1 id 3 has p ≈ .64; at T=100 every p is ≈ .25.
	logits = []float32{0, 1, 2, 3}
	const n = 20000
	spread := map[float32]float64{}
	for _, temp := range []float32{1, 100} {
		for _, topK := range []int{0, 3} {
			s := newTestSampler(t, SamplerConfig{Temperature: temp, TopK: topK, Seed: 9})
			order := refOrder(logits)
			if topK > 0 {
				order = order[:topK]
			}
			counts := drawCounts(t, s, logits, nil, n)
			checkFreq(t, counts, n, refProbs(logits, order, float64(temp)))
			if topK == 0 {
				spread[temp] = float64(counts[3]-counts[0]) / n
			}
		}
	}
	if !(spread[1] > 0.5 && spread[100] < 0.05) {
		t.Errorf("frequency spread between the best and the worst token: %v at T=1, %v at T=100", spread[1], spread[100])
	}
}

// refKept returns the kept set, best first, by a full sort of the penalized
// logits pl: the reference for the heap, min-p and histogram paths.
func refKept(pl []float32, c SamplerConfig) []int32 {
	order := refOrder(pl)
	if c.TopK > 0 && c.TopK < len(order) {
		order = order[:c.TopK]
	}
	p := refProbs(pl, order, 1)
	n := len(order)
	if c.TopP > 0 && c.TopP < 1 {
		cum := 0.0
		for i, id := range order {
			cum += p[id]
			if cum >= float64(c.TopP) {
				n = i + 1
				break
			}
		}
	}
	if c.MinP > 0 {
		top := p[order[0]]
		m := 1
		for m < n && p[order[m]] >= float64(c.MinP)*top {
			m++
		}
		n = m
	}
	return order[:n]
}

// TestSamplerDraws checks the draw walks against a reference draw (full sort,
// cumulative probabilities) for fixed u, on every truncation path, with a
// vocabulary spread over many histogram bins and a tail in the last one.
func TestSamplerDraws(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	logits := make([]float32, 3000)
	for i := range logits {
		logits[i] = float32(r.NormFloat64() * 1.5)
	}
	for i := range 50 {
		logits[i*7] = -200 // far below: the last bin
	}
	history := []int32{3, 3, 10, 2999, 5000}
	for _, c := range []SamplerConfig{
		{Temperature: 0.7},
		{Temperature: 1},
		{Temperature: 3},
		{Temperature: 200},
		{Temperature: 0.7, TopP: 0.6},
		{Temperature: 1, TopP: 0.9},
		{Temperature: 4, TopP: 0.3},
		{Temperature: 0.7, TopK: 100},
		{Temperature: 0.7, TopK: 100, TopP: 0.5},
		{Temperature: 0.7, MinP: 0.1},
		{Temperature: 0.7, MinP: 0.1, TopP: 0.5},
	} {
		c.RepeatPenalty, c.PresencePenalty = 1.2, 0.5
		s := newTestSampler(t, c)
		kept := refKept(penalizedLogits(s, logits, history), c)
		p := refProbs(penalizedLogits(s, logits, history), kept, float64(c.Temperature))
		ref := func(u float64) int32 {
			cum := 0.0
			for _, id := range kept {
				if cum += p[id]; cum > u {
					return id
				}
			}
			return kept[len(kept)-1]
		}
		for _, u := range []float64{0, 1e-9, 0.01, 0.2, 0.5, 0.77, 0.9, 0.999, 1 - 1e-9} {
			s.penalize(logits, history)
			cand, binned, err := s.truncate(logits)
			if err != nil {
				t.Fatal(err)
			}
			var got int32
			if binned {
				got = s.drawBinned(logits, u)
			} else {
				got = s.drawFrom(cand, u)
			}
			if want := ref(u); got != want {
				t.Errorf("%+v: draw at u=%v is %d, want %d", c, u, got, want)
			}
		}
	}
}

func TestSamplerDeterminism(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	logits := make([]float32, 64)
	for i := range logits {
		logits[i] = float32(r.NormFloat64() * 0.5)
	}
	cfgs := []SamplerConfig{
		{Temperature: 0.9},
		{Temperature: 0.9, TopK: 40, TopP: 0.95, MinP: 0.01, RepeatPenalty: 1.1},
		{Temperature: 0.9, TopP: 0.9},
	}
	run := func(s *Sampler, n int) []int32 {
		var out []int32
		for range n {
			id, err := s.Sample(logits, out)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, id)
		}
		return out
	}
	for _, c := range cfgs {
		c.Seed = 42
		a := run(newTestSampler(t, c), 200)
		b := run(newTestSampler(t, c), 200)
		if !slices.Equal(a, b) {
			t.Errorf("%+v: two samplers with one seed differ", c)
		}
		s := newTestSampler(t, c)
		first := run(s, 50)
		s.Reseed(42)
		if again := run(s, 50); !slices.Equal(first, again) {
			t.Errorf("%+v: Reseed(42) does not restart the stream", c)
		}
		s.Reseed(43)
		if other := run(s, 200); slices.Equal(a, other) {
			t.Errorf("%+v: seeds 42 and 43 gave the same 200 tokens", c)
		}
		c.Seed = 0
		if zero := run(newTestSampler(t, c), 200); slices.Equal(a, zero) {
			t.Errorf("%+v: seeds 42 and 0 gave the same 200 tokens", c)
		}
	}
}

func TestSamplerDoesNotModifyLogits(t *testing.T) {
	logits := []float32{3, -2, nan32, 0, posInf32, 1, negInf32, 2.5, -0.5, 7}
	history := []int32{0, 1, 2, 3, 4, 5, 6, 7, 0, 9, 9, 42, -1}
	for _, c := range []SamplerConfig{
		{RepeatPenalty: 1.3, FrequencyPenalty: 0.2, PresencePenalty: 0.1},
		{Temperature: 0.8, TopK: 3, RepeatPenalty: 1.3, FrequencyPenalty: 0.2},
		{Temperature: 0.8, TopP: 0.9, RepeatPenalty: 1.3},
		{Temperature: 0.8, MinP: 0.1, RepeatPenalty: 1.3},
		{Temperature: 0.8, RepeatPenalty: 1.3},
	} {
		for _, in := range [][]float32{logits, {3, -2, nan32, 0, 8, 1, negInf32, 2.5, -0.5, 7}} {
			before := slices.Clone(in)
			histBefore := slices.Clone(history)
			s := newTestSampler(t, c)
			for range 20 {
				if _, err := s.Sample(in, history); err != nil {
					t.Fatal(err)
				}
			}
			for i := range in {
				if math.Float32bits(in[i]) != math.Float32bits(before[i]) {
					t.Errorf("%+v: logits[%d] changed from %v to %v", c, i, before[i], in[i])
				}
			}
			if !slices.Equal(history, histBefore) {
				t.Errorf("%+v: history changed", c)
			}
		}
	}
}

// benchLogits returns a vocabulary shaped like an LLM's: N(0, 2²) logits with
// 20 clear favourites 8 to 12 above the mean.
func benchLogits(v int) []float32 {
	r := rand.New(rand.NewPCG(2024, 1))
	logits := make([]float32, v)
	for i := range logits {
		logits[i] = float32(r.NormFloat64() * 2)
	}
	for range 20 {
		logits[r.IntN(v)] = float32(8 + 4*r.Float64())
	}
	return logits
}

func benchHistory(v, n int) []int32 {
	r := rand.New(rand.NewPCG(7, 7))
	h := make([]int32, n)
	for i := range h {
		h[i] = int32(r.IntN(v))
	}
	return h
}

const llama3Vocab = 128256

func TestSamplerNoAllocs(t *testing.T) {
	logits := benchLogits(llama3Vocab)
	history := benchHistory(llama3Vocab, 64)
	for _, c := range []SamplerConfig{
		{Temperature: 0.8, TopK: 40, TopP: 0.9},
		{Temperature: 0.8, TopK: 40, TopP: 0.9, MinP: 0.05, RepeatPenalty: 1.1, FrequencyPenalty: 0.1, PresencePenalty: 0.1},
		{RepeatPenalty: 1.1},
		{Temperature: 0.8, TopP: 0.9, RepeatPenalty: 1.1},
		{Temperature: 0.8, MinP: 0.05},
		{Temperature: 0.8},
	} {
		s := newTestSampler(t, c)
		if _, err := s.Sample(logits, history); err != nil {
			t.Fatal(err)
		}
		var err error
		if allocs := testing.AllocsPerRun(20, func() { _, err = s.Sample(logits, history) }); allocs != 0 || err != nil {
			t.Errorf("%+v: %v allocations per Sample after the first (err %v), want 0", c, allocs, err)
		}
	}
}

func TestNewSamplerErrors(t *testing.T) {
	nan := nan32
	cases := []struct {
		c     SamplerConfig
		field string
		value string
	}{
		{SamplerConfig{Temperature: nan}, "Temperature", "NaN"},
		{SamplerConfig{Temperature: posInf32}, "Temperature", "+Inf"},
		{SamplerConfig{TopP: nan}, "TopP", "NaN"},
		{SamplerConfig{MinP: nan}, "MinP", "NaN"},
		{SamplerConfig{MinP: 1.5}, "MinP", "1.5"},
		{SamplerConfig{RepeatPenalty: -0.5}, "RepeatPenalty", "-0.5"},
		{SamplerConfig{RepeatPenalty: nan}, "RepeatPenalty", "NaN"},
		{SamplerConfig{RepeatPenalty: posInf32}, "RepeatPenalty", "+Inf"},
		{SamplerConfig{RepeatLastN: -2}, "RepeatLastN", "-2"},
		{SamplerConfig{FrequencyPenalty: nan}, "FrequencyPenalty", "NaN"},
		{SamplerConfig{PresencePenalty: negInf32}, "PresencePenalty", "-Inf"},
	}
	for _, tc := range cases {
		s, err := NewSampler(tc.c)
		if err == nil || s != nil {
			t.Errorf("NewSampler(%+v) = %v, %v; want an error", tc.c, s, err)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, tc.field) || !strings.Contains(msg, tc.value) {
			t.Errorf("NewSampler(%+v): %q does not name %s = %s", tc.c, msg, tc.field, tc.value)
		}
	}
	// Out-of-range values that mean "off" or "greedy" are accepted.
	for _, c := range []SamplerConfig{
		{},
		{Temperature: -1},
		{Temperature: negInf32},
		{TopK: -5, TopP: 1.5, MinP: -1},
		{TopP: -0.2, MinP: 1},
		{RepeatPenalty: 0, RepeatLastN: -1},
		{FrequencyPenalty: -2, PresencePenalty: 2},
	} {
		if _, err := NewSampler(c); err != nil {
			t.Errorf("NewSampler(%+v): %v, want no error", c, err)
		}
	}
}

func benchmarkSample(b *testing.B, c SamplerConfig) {
	logits := benchLogits(llama3Vocab)
	history := benchHistory(llama3Vocab, 64)
	s := newTestSampler(b, c)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Sample(logits, history); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSample: llama.cpp-like defaults on a Llama-3-sized vocabulary.
func BenchmarkSample(b *testing.B) {
	benchmarkSample(b, SamplerConfig{Temperature: 0.8, TopK: 40, TopP: 0.95, RepeatPenalty: 1.1, Seed: 1})
}

func BenchmarkSampleGreedy(b *testing.B) {
	benchmarkSample(b, SamplerConfig{RepeatPenalty: 1.1})
}

// The paths without top-k pay a softmax over the whole vocabulary.
func BenchmarkSampleTopPOnly(b *testing.B) {
	benchmarkSample(b, SamplerConfig{Temperature: 0.8, TopP: 0.95, RepeatPenalty: 1.1, Seed: 1})
}

func BenchmarkSampleMinPOnly(b *testing.B) {
	benchmarkSample(b, SamplerConfig{Temperature: 0.8, MinP: 0.05, RepeatPenalty: 1.1, Seed: 1})
}

func BenchmarkSampleUntruncated(b *testing.B) {
	benchmarkSample(b, SamplerConfig{Temperature: 0.8, RepeatPenalty: 1.1, Seed: 1})
}
