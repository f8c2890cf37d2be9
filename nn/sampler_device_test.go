package nn

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// deviceSelect plays a device for SampleCandidates: it penalizes a copy of
// logits with PenaltyWindow and Penalize, and selects by a full sort what
// Plan asks for; a min-p set gets extra tokens (NaN and −Inf ones among
// them) as a float32 threshold with a margin would. The candidates come out
// shuffled. ok is false when the plan needs the logits.
func deviceSelect(s *Sampler, logits []float32, history []int32, r *rand.Rand) (ids []int32, vals []float32, ok bool) {
	v := len(logits)
	p := s.Plan(v)
	if p.Rule == NeedLogits {
		return nil, nil, false
	}
	pl := slices.Clone(logits)
	win, counts := s.PenaltyWindow(history, v)
	for j, id := range win {
		pl[id] = s.Penalize(logits[id], counts[j])
	}
	valid := func(x float32) bool { return x > negInf32 } // not NaN, not −Inf
	var order []int32
	for i, x := range pl {
		if valid(x) {
			order = append(order, int32(i))
		}
	}
	slices.SortFunc(order, func(a, b int32) int {
		switch {
		case pl[a] > pl[b]:
			return -1
		case pl[a] < pl[b]:
			return 1
		}
		return int(a - b)
	})
	switch p.Rule {
	case TopKCandidates:
		ids = order[:min(p.K, len(order))]
	case MinPCandidates:
		if len(order) > 0 {
			mx := float64(pl[order[0]])
			for i, x := range pl {
				switch {
				case math.IsInf(mx, 1) && x == posInf32,
					!math.IsInf(mx, 1) && float64(x)-mx >= p.LnMinP-1e-3,
					r.IntN(8) == 0: // junk a threshold with a margin may let in
					ids = append(ids, int32(i))
				}
			}
		}
	}
	ids = slices.Clone(ids)
	r.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	for _, id := range ids {
		vals = append(vals, pl[id])
	}
	return ids, vals, true
}

// samplerLogits returns test vocabularies: spread, coarse (many ties,
// signed zeros), with NaN and ±Inf, and degenerate ones.
func samplerLogits(r *rand.Rand) [][]float32 {
	spread := make([]float32, 300)
	coarse := make([]float32, 300)
	edge := make([]float32, 300)
	for i := range spread {
		spread[i] = float32(r.NormFloat64() * 2)
		coarse[i] = float32(math.Round(r.NormFloat64()*2)) / 4
		edge[i] = float32(r.NormFloat64())
	}
	coarse[3], coarse[9] = float32(math.Copysign(0, -1)), 0
	for i := range 30 {
		edge[r.IntN(len(edge))] = [...]float32{nan32, negInf32}[i%2]
	}
	inf := slices.Clone(edge)
	inf[40], inf[200], inf[201] = posInf32, posInf32, posInf32
	allBad := []float32{nan32, negInf32, nan32, negInf32}
	return [][]float32{spread, coarse, edge, inf, allBad, {1}, {2, 2, 2}}
}

// samplerConfigs covers every rule: top-k alone and with top-p and min-p,
// min-p alone, greedy with penalties, and the NeedLogits ones.
var samplerConfigs = []SamplerConfig{
	{Temperature: 0.8, TopK: 40},
	{Temperature: 1, TopK: 1},
	{Temperature: 1.5, TopK: 5, TopP: 0.9},
	{Temperature: 0.7, TopK: 40, TopP: 0.95, MinP: 0.05},
	{Temperature: 0.5, TopK: 299},
	{Temperature: 1, MinP: 0.05},
	{Temperature: 3, MinP: 0.3},
	{Temperature: 0.2, MinP: 1},
	{Temperature: 1, TopK: 1000, MinP: 0.1},  // top-k ≥ vocabulary is off
	{TopK: 10},                               // greedy with penalties (below)
	{Temperature: 0.8, TopP: 0.9},            // NeedLogits
	{Temperature: 0.8},                       // NeedLogits
	{Temperature: 0.8, MinP: 0.1, TopP: 0.9}, // NeedLogits: top-p needs the whole mass
}

// SampleCandidates over a device's candidate set picks Sample's token, step
// after step (so both consume the same draws), on every rule, with ties,
// signed zeros, NaN, ±Inf and penalties.
func TestSampleCandidatesEqualsSample(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	vocabs := samplerLogits(r)
	penalties := []SamplerConfig{
		{},
		{RepeatPenalty: 1.3, FrequencyPenalty: 0.2, PresencePenalty: 0.1},
		{RepeatPenalty: 0.7, RepeatLastN: 5},
		{FrequencyPenalty: 1e9, RepeatLastN: -1}, // pushes the window to −Inf-ish values
	}
	compared := 0
	for ci, base := range samplerConfigs {
		for pi, pen := range penalties {
			c := base
			c.RepeatPenalty, c.FrequencyPenalty, c.PresencePenalty, c.RepeatLastN = pen.RepeatPenalty, pen.FrequencyPenalty, pen.PresencePenalty, pen.RepeatLastN
			if c.Temperature == 0 && c.RepeatPenalty == 0 {
				c.RepeatPenalty = 1.5 // not Greedy(): the device's top-1
			}
			for li, logits := range vocabs {
				for seed := range uint64(8) {
					c.Seed = seed*1000 + uint64(ci*100+pi*10+li)
					host, dev := newTestSampler(t, c), newTestSampler(t, c)
					history := []int32{int32(r.IntN(len(logits))), 7, -3, 7}
					for step := range 6 {
						want, werr := host.Sample(logits, history)
						ids, vals, ok := deviceSelect(dev, logits, history, r)
						if !ok {
							if dev.Plan(len(logits)).Rule != NeedLogits {
								t.Fatal("deviceSelect refused a bounded plan")
							}
							if _, err := dev.SampleCandidates(len(logits), ids, vals); !errors.Is(err, ErrCandidates) {
								t.Fatalf("%+v: SampleCandidates on a NeedLogits plan: %v", c, err)
							}
							break
						}
						got, gerr := dev.SampleCandidates(len(logits), ids, vals)
						if got != want || !errors.Is(gerr, werr) || (werr == nil) != (gerr == nil) {
							t.Fatalf("%+v, vocabulary %d, step %d: SampleCandidates = %d, %v; Sample = %d, %v", c, li, step, got, gerr, want, werr)
						}
						compared++
						if werr != nil {
							break
						}
						history = append(history, want)
					}
				}
			}
		}
	}
	if compared < 2000 {
		t.Errorf("only %d steps compared", compared)
	}
}

func TestSamplePlan(t *testing.T) {
	for _, tc := range []struct {
		c    SamplerConfig
		want SamplePlan
	}{
		{SamplerConfig{Temperature: 1, TopK: 40, TopP: 0.9, MinP: 0.1}, SamplePlan{Rule: TopKCandidates, K: 40, Repeat: 1}},
		{SamplerConfig{RepeatPenalty: 1.2, FrequencyPenalty: 0.5}, SamplePlan{Rule: TopKCandidates, K: 1, Repeat: 1.2, Frequency: 0.5}},
		{SamplerConfig{Temperature: 1, MinP: 0.5, PresencePenalty: 2}, SamplePlan{Rule: MinPCandidates, LnMinP: math.Log(float64(float32(0.5))), Repeat: 1, Presence: 2}},
		{SamplerConfig{Temperature: 1, TopK: 100}, SamplePlan{Rule: NeedLogits, Repeat: 1}}, // k ≥ vocabulary
		{SamplerConfig{Temperature: 1, TopP: 0.5, MinP: 0.5}, SamplePlan{Rule: NeedLogits, Repeat: 1}},
		{SamplerConfig{Temperature: 1}, SamplePlan{Rule: NeedLogits, Repeat: 1}},
	} {
		if got := newTestSampler(t, tc.c).Plan(100); got != tc.want {
			t.Errorf("%+v: Plan = %+v, want %+v", tc.c, got, tc.want)
		}
	}
}

// PenaltyWindow and Penalize give the values Sample penalizes to.
func TestPenaltyWindow(t *testing.T) {
	logits := []float32{2, -2, 0, 3, 1, nan32, posInf32}
	history := []int32{9, 0, 1, 2, 0, 5, 6, -1, 0}
	for _, c := range []SamplerConfig{
		{RepeatPenalty: 2, FrequencyPenalty: 0.5, PresencePenalty: 0.25},
		{RepeatPenalty: 1.1, RepeatLastN: 4},
		{FrequencyPenalty: 0.1, RepeatLastN: -1},
	} {
		s := newTestSampler(t, c)
		want := penalizedLogits(s, logits, history)
		got := slices.Clone(logits)
		ids, counts := s.PenaltyWindow(history, len(logits))
		for j, id := range ids {
			got[id] = s.Penalize(logits[id], counts[j])
		}
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Errorf("%+v: logit %d penalized to %v, Sample uses %v", c, i, got[i], want[i])
			}
		}
	}
	s := newTestSampler(t, SamplerConfig{})
	if ids, counts := s.PenaltyWindow(history, len(logits)); len(ids)+len(counts) != 0 {
		t.Errorf("penalties off: window %v %v", ids, counts)
	}
}

func TestSampleCandidatesErrors(t *testing.T) {
	s := newTestSampler(t, SamplerConfig{Temperature: 1, TopK: 2})
	for _, tc := range []struct {
		ids  []int32
		vals []float32
	}{
		{[]int32{1, 2}, []float32{1}},
		{[]int32{1, 2, 3}, []float32{1, 2, 3}},
		{[]int32{1, 10}, []float32{1, 2}},
		{[]int32{-1}, []float32{1}},
	} {
		if _, err := s.SampleCandidates(10, tc.ids, tc.vals); !errors.Is(err, ErrCandidates) {
			t.Errorf("SampleCandidates(%v, %v): %v, want ErrCandidates", tc.ids, tc.vals, err)
		}
	}
	if _, err := s.SampleCandidates(10, nil, nil); !errors.Is(err, ErrNoCandidate) {
		t.Errorf("no candidates: %v, want ErrNoCandidate", err)
	}
}

// noisyBackend returns logits with many ties and a clear favourite that
// depend on the last token and its position.
type noisyBackend struct{ fakeBackend }

func (f *noisyBackend) Forward(tokens []int32, pos int, logits []float32) error {
	if len(logits) == 0 {
		return nil
	}
	last := tokens[len(tokens)-1]
	p := pos + len(tokens) - 1
	for i := range logits[:f.vocab] {
		logits[i] = float32(((i*7+int(last)*13+p*5)%11)-5) / 2
	}
	logits[(int(last)*3+1)%f.vocab] = 4
	return nil
}

// samplingFake selects on its "device" with deviceSelect.
type samplingFake struct {
	noisyBackend
	r       *rand.Rand
	samples int
}

func (f *samplingFake) ForwardSample(tokens []int32, pos int, s *Sampler, history []int32) (int32, error) {
	f.samples++
	logits := make([]float32, f.vocab)
	if err := f.Forward(tokens, pos, logits); err != nil {
		return -1, err
	}
	ids, vals, ok := deviceSelect(s, logits, history, f.r)
	if !ok {
		return s.Sample(logits, history)
	}
	return s.SampleCandidates(f.vocab, ids, vals)
}

// A seeded generation on a SamplingPicker gives the token stream of the
// same seed sampled on the host from the same logits.
func TestGenerateSamplingPicker(t *testing.T) {
	const vocab = 50
	for _, c := range append(slices.Clone(samplerConfigs), SamplerConfig{RepeatPenalty: 1.3}) {
		c.Seed, c.RepeatPenalty = 77, max(c.RepeatPenalty, 1.2)
		gen := func(b Backend) []int32 {
			e, err := NewEngine(&Config{Vocab: vocab, Context: 64}, b)
			if err != nil {
				t.Fatal(err)
			}
			s := newTestSampler(t, c)
			var got []int32
			if _, err := e.Generate(context.Background(), []int32{3, 1, 4}, GenerateOptions{MaxTokens: 40}, s, func(id int32) error {
				got = append(got, id)
				return nil
			}); err != nil {
				t.Fatalf("%+v: Generate: %v", c, err)
			}
			if e.Pos() != 3+39 {
				t.Errorf("%+v: position %d after 40 tokens, want 42", c, e.Pos())
			}
			return got
		}
		want := gen(&noisyBackend{fakeBackend{vocab: vocab, ctx: 64}})
		dev := &samplingFake{noisyBackend: noisyBackend{fakeBackend{vocab: vocab, ctx: 64}}, r: rand.New(rand.NewPCG(1, 1))}
		got := gen(dev)
		if !slices.Equal(got, want) {
			t.Errorf("%+v: device-sampled stream %v, host %v", c, got, want)
		}
		if dev.samples != 40 {
			t.Errorf("%+v: %d ForwardSample calls, want 40 (prompt + 39 steps)", c, dev.samples)
		}
	}
}
