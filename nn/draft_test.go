package nn

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// cacheBackend is a backend whose logits after a position depend on every
// token the cache holds up to it, as a transformer's do: a stale or
// misplaced cache entry changes them. Its distributions are peaked on a
// few tokens, so sampled decoding repeats itself often enough for drafts
// to be kept.
type cacheBackend struct {
	vocab int
	cache []int32 // the token at each cache position, -1 when never written
	calls [][2]int
	step  time.Duration // > 0: a pass of T tokens sleeps step·(1 + (T−1)/2), a memory-bound cost
}

func newCacheBackend(vocab, ctx int) *cacheBackend {
	b := &cacheBackend{vocab: vocab, cache: make([]int32, ctx)}
	for i := range b.cache {
		b.cache[i] = -1
	}
	return b
}

func (b *cacheBackend) Name() string { return "cache" }
func (b *cacheBackend) Context() int { return len(b.cache) }
func (b *cacheBackend) Close() error { return nil }
func (b *cacheBackend) Forward(tokens []int32, pos int, logits []float32) error {
	b.calls = append(b.calls, [2]int{pos, len(tokens)})
	if b.step > 0 {
		time.Sleep(b.step + b.step*time.Duration(len(tokens)-1)/2)
	}
	copy(b.cache[pos:], tokens)
	first := 0
	if len(logits) == b.vocab {
		first = len(tokens) - 1
	}
	for i := first; i < len(tokens) && len(logits) > 0; i++ {
		b.logitsAt(pos+i, logits[(i-first)*b.vocab:(i-first+1)*b.vocab])
	}
	return nil
}

// logitsAt fills l with the logits after cache position p.
func (b *cacheBackend) logitsAt(p int, l []float32) {
	var h uint64 = 14695981039346656037
	for _, t := range b.cache[max(p-3, 0) : p+1] { // the last four tokens, like a short window
		h = (h ^ uint64(t+2)) * 1099511628211
	}
	h ^= uint64(b.cache[0]+7) * 0x9e3779b97f4a7c15 // and the first: a cache rolled back wrongly shows
	for i := range l {
		h ^= h >> 29
		h *= 0xbf58476d1ce4e5b9
		l[i] = float32(h>>40) / float32(1<<24) * 2 // in [0, 2)
	}
	l[(b.cache[p]+1)%int32(b.vocab)] += 4 // the likely next token
	l[(b.cache[p]+3)%int32(b.vocab)] += 3
}

// script drafts whatever its function says.
type script func(seq []int32, max int) []int32

func (f script) Draft(dst, seq []int32, max int) []int32 { return append(dst, f(seq, max)...) }

type genResult struct {
	toks   []int32
	st     Stats
	seq    []int32   // the engine's sequence after the generation
	next   []float32 // logits after one more evaluated token: the cache state shows in them
	passes [][2]int
}

func generate(t *testing.T, vocab, ctx int, prompt []int32, o GenerateOptions, sc SamplerConfig) genResult {
	return generateTimed(t, vocab, ctx, prompt, o, sc, 0)
}

func generateTimed(t *testing.T, vocab, ctx int, prompt []int32, o GenerateOptions, sc SamplerConfig, step time.Duration) genResult {
	t.Helper()
	b := newCacheBackend(vocab, ctx)
	b.step = step
	e, err := NewEngine(&Config{Vocab: vocab, Context: ctx}, b)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSampler(sc)
	if err != nil {
		t.Fatal(err)
	}
	var r genResult
	r.st, err = e.Generate(context.Background(), prompt, o, s, func(id int32) error {
		r.toks = append(r.toks, id)
		return nil
	})
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	r.seq = slices.Clone(e.Tokens())
	r.passes = b.calls
	if e.Pos() < e.Context() {
		l, err := e.Eval([]int32{1})
		if err != nil {
			t.Fatal(err)
		}
		r.next = slices.Clone(l)
	}
	return r
}

// Drafting of every kind gives the tokens, the sequence and the cache of
// plain decoding, greedy and sampled (the same seed draws the same tokens).
func TestDraftLossless(t *testing.T) {
	const vocab, ctx = 12, 40
	prompt := []int32{1, 2, 3}
	// truth holds the plain continuation after a prompt, for drafters that
	// know it (a full hit) or half of it.
	type drafter struct {
		name  string
		draft func(truth []int32) script
	}
	truthAfter := func(truth []int32, seq []int32) []int32 {
		n := len(seq) - len(prompt)
		if n < len(truth) {
			return truth[n:]
		}
		return nil
	}
	drafters := []drafter{
		{"full hit", func(truth []int32) script {
			return func(seq []int32, max int) []int32 {
				return truthAfter(truth, seq)[:min(max, len(truthAfter(truth, seq)))]
			}
		}},
		{"partial hit", func(truth []int32) script {
			return func(seq []int32, max int) []int32 {
				d := slices.Clone(truthAfter(truth, seq)[:min(max, len(truthAfter(truth, seq)))])
				if len(d) > 2 {
					d[2] = (d[2] + 5) % vocab // wrong from the third on
				}
				return d
			}
		}},
		{"miss", func([]int32) script {
			return func(seq []int32, max int) []int32 {
				return []int32{(seq[len(seq)-1] + 7) % vocab, 0, 0}[:min(max, 3)]
			}
		}},
		{"runs past everything", func(truth []int32) script {
			return func(seq []int32, max int) []int32 { // ignores max: the engine cuts it
				return append(slices.Clone(truthAfter(truth, seq)), 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0, 1, 2, 3, 4, 5)
			}
		}},
	}
	configs := []SamplerConfig{
		{},
		{Temperature: 0.9, Seed: 1},
		{Temperature: 1.2, TopK: 5, RepeatPenalty: 1.3, Seed: 2},
		{Temperature: 0.7, TopP: 0.9, MinP: 0.05, FrequencyPenalty: 0.4, Seed: 3},
	}
	limits := []GenerateOptions{
		{MaxTokens: 20},
		{MaxTokens: 1},
		{MaxTokens: 2},
		{}, // until the context is full
		{MaxTokens: 30, IsEOG: func(id int32) bool { return id == 9 }}, // an end token, perhaps inside a draft
	}
	for ci, sc := range configs {
		for li, lim := range limits {
			plain := generate(t, vocab, ctx, prompt, lim, sc)
			truth := plain.toks
			for _, d := range drafters {
				for _, dmax := range []int{1, 3, 8} {
					t.Run(fmt.Sprintf("sampler%d/limit%d/%s/max%d", ci, li, d.name, dmax), func(t *testing.T) {
						o := lim
						o.Draft, o.DraftMax, o.DraftEvery = d.draft(truth), dmax, true
						got := generate(t, vocab, ctx, prompt, o, sc)
						if !slices.Equal(got.toks, plain.toks) {
							t.Fatalf("tokens %v, plain decoding %v", got.toks, plain.toks)
						}
						if got.st.Stop != plain.st.Stop || got.st.GenTokens != plain.st.GenTokens {
							t.Errorf("stop %q after %d, plain %q after %d", got.st.Stop, got.st.GenTokens, plain.st.Stop, plain.st.GenTokens)
						}
						if !slices.Equal(got.seq, plain.seq) {
							t.Errorf("sequence %v, plain %v", got.seq, plain.seq)
						}
						if !slices.Equal(got.next, plain.next) {
							t.Errorf("logits after one more token differ from plain decoding's: the cache was not rolled back")
						}
						ds := got.st.Draft
						if ds.Accepted > ds.Drafted || ds.Passes > ds.Steps {
							t.Errorf("inconsistent draft stats %+v", ds)
						}
						var lengths, sum int
						for n, c := range ds.Lengths {
							lengths += c
							sum += n * c
						}
						if lengths != ds.Passes || sum != ds.Accepted {
							t.Errorf("length histogram %v: %d passes, %d kept; stats say %d and %d", ds.Lengths, lengths, sum, ds.Passes, ds.Accepted)
						}
						if len(got.passes) != 1+ds.Steps { // the prompt, then every step
							t.Errorf("%d backend calls, stats count %d steps", len(got.passes), ds.Steps)
						}
						if ds.Steps > plain.st.Draft.Steps || ds.Steps+got.st.PassesSaved() != plain.st.Draft.Steps {
							t.Errorf("%d passes (%d saved), plain decoding %d", ds.Steps, got.st.PassesSaved(), plain.st.Draft.Steps)
						}
						for _, p := range got.passes {
							if p[0]+p[1] > ctx || p[1] > dmax+1 && p[0] >= len(prompt) {
								t.Errorf("pass at %d of %d tokens: beyond the context or draft max", p[0], p[1])
							}
						}
						if d.name == "full hit" && lim.MaxTokens == 20 && ds.Accepted == 0 {
							t.Errorf("a drafter that knows the answer had nothing kept: %+v", ds)
						}
					})
				}
			}
		}
	}
}

// A drafter that is always wrong costs few verification passes: the policy
// backs off and only probes now and then.
func TestDraftBackoff(t *testing.T) {
	const vocab, ctx = 12, 400
	wrong := script(func(seq []int32, max int) []int32 {
		return []int32{(seq[len(seq)-1] + 7) % vocab, 5, 5, 5}[:min(max, 4)]
	})
	// Passes cost a step plus half a step per extra token (r = 0.5): a
	// drafter never right is then verified only to probe, once every 100
	// declined drafts.
	r := generateTimed(t, vocab, ctx, []int32{1}, GenerateOptions{MaxTokens: 300, Draft: wrong}, SamplerConfig{}, time.Millisecond)
	ds := r.st.Draft
	if ds.Accepted != 0 {
		t.Fatalf("a wrong drafter had %d tokens kept", ds.Accepted)
	}
	if limit := 12 + r.st.GenTokens/50; ds.Passes > limit {
		t.Errorf("%d verification passes for %d tokens of a drafter always wrong, want at most %d", ds.Passes, r.st.GenTokens, limit)
	}
	if ds.Declined == 0 {
		t.Error("no draft was declined")
	}

	p := NewDraftPolicy(8, false, NewDraftCost())
	p.TimedPlain(time.Millisecond)
	for range 10 {
		p.TimedPass(8, 8, false, 1200*time.Microsecond)
	}
	if k := p.Choose(8); k != 8 {
		t.Errorf("after ten passes keeping all 8 tokens at 1.2× a plain step, the policy verifies %d of 8", k)
	}
	if k := p.Choose(3); k != 3 {
		t.Errorf("the policy verifies %d of a 3-token draft", k)
	}
	for range 100 {
		p.TimedPass(2, 0, true, 1500*time.Microsecond)
	}
	if k := p.Choose(8); k != 0 {
		t.Errorf("after a hundred passes keeping nothing the policy still verifies %d tokens", k)
	}
}

// Picker backends verify drafts through Forward and decode plainly through
// ForwardArgmax: the same tokens.
func TestDraftPicker(t *testing.T) {
	b := &fakePicker{fakeBackend: fakeBackend{vocab: 10, ctx: 64}}
	e, err := NewEngine(&Config{Vocab: 10, Context: 64}, b)
	if err != nil {
		t.Fatal(err)
	}
	greedy, _ := NewSampler(SamplerConfig{})
	right := script(func(seq []int32, max int) []int32 {
		var d []int32
		for i := int32(1); i <= int32(max); i++ {
			d = append(d, (seq[len(seq)-1]+i)%10)
		}
		return d
	})
	var got []int32
	st, err := e.Generate(context.Background(), []int32{1}, GenerateOptions{MaxTokens: 30, Draft: right}, greedy, func(id int32) error {
		got = append(got, id)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range got {
		if id != int32(2+i)%10 {
			t.Fatalf("tokens %v", got)
		}
	}
	if st.Draft.Accepted < 20 || st.Draft.Steps > 6 {
		t.Errorf("a perfect drafter: %+v", st.Draft)
	}
}

// Sampled decoding with drafting draws from the distribution of plain
// decoding: a chi-square test on the third generated token over many
// seeds, disjoint between the two.
func TestDraftDistribution(t *testing.T) {
	const vocab, ctx, runs = 12, 16, 3000
	sometimes := script(func(seq []int32, max int) []int32 { // right often, wrong often
		last := seq[len(seq)-1]
		return []int32{(last + 1) % vocab, (last + 2) % vocab, (last + 3) % vocab}[:min(max, 3)]
	})
	count := func(draft Drafter, seed0 uint64) []float64 {
		c := make([]float64, vocab)
		for i := range runs {
			o := GenerateOptions{MaxTokens: 3, Draft: draft}
			r := generate(t, vocab, ctx, []int32{4, 2}, o, SamplerConfig{Temperature: 1, Seed: seed0 + uint64(i)})
			c[r.toks[2]]++
		}
		return c
	}
	plain, drafted := count(nil, 0), count(sometimes, 1<<32)
	var chi2 float64
	df := -1
	for i := range plain {
		if n := plain[i] + drafted[i]; n > 0 {
			d := plain[i] - drafted[i]
			chi2 += d * d / n
			df++
		}
	}
	// The 99.9th percentile of chi-square with df ≤ 11 degrees of freedom
	// is below 31.3.
	if chi2 > 31.3 {
		t.Errorf("chi-square %.1f with %d degrees of freedom: drafting changed the distribution\nplain   %v\ndrafted %v", chi2, df, plain, drafted)
	}
	// And the same seed draws the same tokens.
	for seed := range uint64(50) {
		o := GenerateOptions{MaxTokens: 10}
		a := generate(t, vocab, ctx, []int32{4, 2}, o, SamplerConfig{Temperature: 1, Seed: seed})
		o.Draft = sometimes
		b := generate(t, vocab, ctx, []int32{4, 2}, o, SamplerConfig{Temperature: 1, Seed: seed})
		if !slices.Equal(a.toks, b.toks) {
			t.Fatalf("seed %d: %v with drafting, %v without", seed, b.toks, a.toks)
		}
	}
}

// The threshold rule keeps likely drafted tokens without drawing: lossy,
// and it says so by changing the output.
func TestDraftThreshold(t *testing.T) {
	const vocab, ctx = 12, 64
	always3 := script(func(seq []int32, max int) []int32 { return []int32{3, 3, 3}[:min(max, 3)] })
	o := GenerateOptions{MaxTokens: 12, Draft: always3, DraftThreshold: 1e-9}
	r := generate(t, vocab, ctx, []int32{1}, o, SamplerConfig{})
	if r.st.Draft.Accepted == 0 || !slices.Contains(r.toks, 3) {
		t.Errorf("a threshold of 1e-9 kept nothing: %v %+v", r.toks, r.st.Draft)
	}
	plain := generate(t, vocab, ctx, []int32{1}, GenerateOptions{MaxTokens: 12}, SamplerConfig{})
	if slices.Equal(r.toks, plain.toks) {
		t.Errorf("a threshold of 1e-9 gave plain decoding's tokens %v", r.toks)
	}
	o.DraftThreshold = 1 // no token is that sure: only what the sampler draws is kept
	if r = generate(t, vocab, ctx, []int32{1}, o, SamplerConfig{}); !slices.Equal(r.toks, plain.toks) {
		t.Errorf("a threshold of 1 gave %v, plain decoding %v", r.toks, plain.toks)
	}
}

func TestDraftErrors(t *testing.T) {
	e, _ := newFakeEngine(t, 10, 32, 32)
	greedy, _ := NewSampler(SamplerConfig{})
	ok := script(func([]int32, int) []int32 { return []int32{1} })
	bad := script(func([]int32, int) []int32 { return []int32{1, 10} })
	for _, tc := range []struct {
		o    GenerateOptions
		want string
	}{
		{GenerateOptions{Draft: ok, DraftMax: -1}, "draft max -1"},
		{GenerateOptions{Draft: ok, DraftMax: MaxDraft + 1}, "draft max 17"},
		{GenerateOptions{Draft: ok, DraftThreshold: 1.5}, "draft threshold 1.5"},
		{GenerateOptions{Draft: ok, DraftThreshold: float32(math.NaN())}, "draft threshold NaN"},
		{GenerateOptions{Draft: bad, MaxTokens: 8}, "drafter proposed token 10"},
	} {
		e.Reset()
		_, err := e.Generate(context.Background(), []int32{0}, tc.o, greedy, func(int32) error { return nil })
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one naming %q", tc.o, err, tc.want)
		}
	}
}
