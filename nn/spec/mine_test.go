package spec

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
)

// geometric is a scorer under which each token after the first has
// probability q: longer chains are less likely, as under a model.
func geometric(q float64) ScoreFunc {
	return func(chains [][]int32) ([]float64, error) {
		p := make([]float64, len(chains))
		for i, c := range chains {
			p[i] = math.Pow(q, float64(len(c)-1))
		}
		return p, nil
	}
}

// corpus is n pseudo-random tokens below vocab, with phrase planted every
// `every` tokens (0: never).
func corpus(n, vocab int, phrase []int32, every int) []int32 {
	toks := make([]int32, 0, n)
	x := uint32(12345)
	for len(toks) < n {
		if every > 0 && len(toks)%every == 0 {
			toks = append(toks, phrase...)
			continue
		}
		x = x*1664525 + 1013904223
		toks = append(toks, int32((x>>8)%uint32(vocab)))
	}
	return toks
}

func mustMine(t *testing.T, toks []int32, score ScoreFunc, o MineOptions) *Chains {
	t.Helper()
	c, err := Mine(context.Background(), toks, score, o)
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.MarshalBinary()
	if err != nil {
		t.Fatalf("the mined table cannot be written: %v", err)
	}
	if _, err := ParseChains(b, 0); err != nil {
		t.Fatalf("the mined table does not read back: %v", err)
	}
	return c
}

func TestMineFindsThePlantedPhrase(t *testing.T) {
	phrase := []int32{900, 901, 902, 903, 904, 905, 906, 907}
	toks := corpus(200_000, 800, phrase, 50)
	c := mustMine(t, toks, geometric(0.9), MineOptions{})
	if got := c.Draft(nil, []int32{1, 2, 900}, MaxChain); !equalTokens(got, phrase[1:]) {
		t.Errorf("after the phrase's first token the table drafts %v, want %v", got, phrase[1:])
	}
	if got := c.Draft(nil, []int32{1, 2, 900}, 3); !equalTokens(got, phrase[1:4]) {
		t.Errorf("cut to 3, the table drafts %v", got)
	}
	if !equalTokens(c.Entries[0].Tokens, phrase) {
		t.Errorf("entry 0 is %v, want the phrase %v (the best chain first)", c.Entries[0].Tokens, phrase)
	}
	if want := float32(math.Pow(0.9, 7)); c.Entries[0].Confidence != want {
		t.Errorf("entry 0's confidence is %v, want the scorer's %v", c.Entries[0].Confidence, want)
	}
	// No bucket is wasted: each chain is what the table drafts after one of
	// its keys. (So no chain is a prefix of one chosen before it with the
	// same key: that one would keep every key the prefix has.)
	for i, e := range c.Entries[:c.Filled()] {
		used := false
		for n := 1; n <= MaxKey && n < len(e.Tokens); n++ {
			used = used || equalTokens(c.Draft(nil, e.Tokens[:n], MaxChain), e.Tokens[n:])
		}
		if !used {
			t.Errorf("entry %d %v is never drafted", i, e.Tokens)
		}
	}
	if c.Filled() != Entries {
		t.Errorf("a 200,000-token corpus filled %d entries, want all %d", c.Filled(), Entries)
	}
}

func TestMineTinyCorpus(t *testing.T) {
	toks := []int32{1, 2, 3, 9, 1, 2, 3, 8, 7}
	c := mustMine(t, toks, geometric(0.5), MineOptions{})
	// 1 2 3 is the only chain seen twice (with its parts 1 2 and 2 3): it
	// wins key 1 (and 1 2), and 2 3 keeps key 2.
	want := [][]int32{{1, 2, 3}, {2, 3}}
	if c.Filled() != len(want) {
		t.Fatalf("filled %d entries, want %d: %v", c.Filled(), len(want), c.Entries[:4])
	}
	for i, w := range want {
		if !equalTokens(c.Entries[i].Tokens, w) {
			t.Errorf("entry %d is %v, want %v", i, c.Entries[i].Tokens, w)
		}
	}
	for i := len(want); i < Entries; i++ {
		if e := c.Entries[i]; len(e.Tokens) != 0 || e.Confidence != 0 {
			t.Errorf("entry %d is %v, want empty", i, e)
		}
	}
}

func TestMineErrors(t *testing.T) {
	ctx := context.Background()
	noRepeat := []int32{1, 2, 3, 4, 5, 6}
	acrossDocs := []int32{5, -1, 6, -1, 5, -1, 6}
	for _, c := range []struct {
		name  string
		toks  []int32
		score ScoreFunc
		opts  MineOptions
		want  string
	}{
		{"empty", nil, geometric(0.5), MineOptions{}, "the corpus is empty"},
		{"one token", []int32{7}, geometric(0.5), MineOptions{}, "the corpus is empty"},
		{"only separators", []int32{-1, -1, -1}, geometric(0.5), MineOptions{}, "the corpus is empty"},
		{"no repeats", noRepeat, geometric(0.5), MineOptions{}, "no sequence of 2…8 tokens occurs 2 times in the corpus's 6 tokens"},
		{"repeats only across documents", acrossDocs, geometric(0.5), MineOptions{}, "occurs 2 times in the corpus's 4 tokens"},
		{"MaxLen", noRepeat, geometric(0.5), MineOptions{MaxLen: 9}, "MaxLen 9 is outside 2…8"},
		{"MinCount", noRepeat, geometric(0.5), MineOptions{MinCount: -1}, "MinCount -1"},
		{"Batch", noRepeat, geometric(0.5), MineOptions{Batch: -3}, "must be positive"},
		{"scorer fails", []int32{1, 2, 1, 2}, func([][]int32) ([]float64, error) { return nil, errors.New("out of memory") }, MineOptions{}, "out of memory"},
		{"scorer short", []int32{1, 2, 1, 2}, func([][]int32) ([]float64, error) { return nil, nil }, MineOptions{}, "returned 0 probabilities for 1 chains"},
		{"probability", []int32{1, 2, 1, 2}, func(c [][]int32) ([]float64, error) { return []float64{1.5}, nil }, MineOptions{}, "the probability 1.5, outside [0, 1]"},
		{"NaN", []int32{1, 2, 1, 2}, func(c [][]int32) ([]float64, error) { return []float64{math.NaN()}, nil }, MineOptions{}, "the probability NaN"},
	} {
		got, err := Mine(ctx, c.toks, c.score, c.opts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v; want an error saying %q", c.name, err, c.want)
		}
		if got != nil {
			t.Errorf("%s: a table came back with the error", c.name)
		}
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := Mine(cancelled, corpus(1000, 50, nil, 0), geometric(0.5), MineOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

// Separators split documents: the chains of one never run into the next.
func TestMineSeparators(t *testing.T) {
	toks := []int32{1, 2, 3, -1, 4, 5, 1, 2, 3, -1, 4, 5}
	c := mustMine(t, toks, geometric(0.5), MineOptions{})
	for i, e := range c.Entries {
		if slices.Contains(e.Tokens, -1) || (slices.Contains(e.Tokens, 3) && slices.Contains(e.Tokens, 4)) {
			t.Errorf("entry %d %v spans a separator", i, e.Tokens)
		}
	}
	if got := c.Draft(nil, []int32{4}, 8); !equalTokens(got, []int32{5}) {
		t.Errorf("Draft after 4 = %v, want 5", got)
	}
}

func TestMineIsDeterministic(t *testing.T) {
	toks := corpus(50_000, 300, []int32{290, 291, 292}, 37)
	var progress []MineProgress
	first := mustMine(t, toks, geometric(0.7), MineOptions{Progress: func(p MineProgress) { progress = append(progress, p) }})
	want, _ := first.MarshalBinary()
	for _, batch := range []int{1, 7, 100000} {
		c := mustMine(t, toks, geometric(0.7), MineOptions{Batch: batch})
		if got, _ := c.MarshalBinary(); !bytes.Equal(got, want) {
			t.Errorf("batch %d: mining again gave a different table", batch)
		}
	}
	// Progress: every length counted, then every candidate scored.
	var stages []string
	for i, p := range progress {
		if i > 0 && p.Stage == progress[i-1].Stage && p.Done <= progress[i-1].Done {
			t.Errorf("progress went back: %v after %v", p, progress[i-1])
		}
		if p.Done > p.Total {
			t.Errorf("progress %v beyond its total", p)
		}
		if len(stages) == 0 || stages[len(stages)-1] != p.Stage {
			stages = append(stages, p.Stage)
		}
	}
	if fmt.Sprint(stages) != "[counting scoring]" {
		t.Errorf("progress stages %v, want counting then scoring", stages)
	}
	if last := progress[len(progress)-1]; last.Done != last.Total || last.Total < DefaultCandidates {
		t.Errorf("the last progress is %v, want all of at least %d candidates scored", last, DefaultCandidates)
	}
}

// The scorer gets lexicographically ordered batches of the most frequent
// chains, each occurring at least MinCount times, and their prefixes; the
// miner counts each exactly.
func TestMineScorerSees(t *testing.T) {
	toks := corpus(20_000, 100, []int32{1, 2, 3, 4}, 10)
	toks[5000] = -1 // a document boundary
	var seen [][]int32
	score := func(chains [][]int32) ([]float64, error) {
		if !slices.IsSortedFunc(chains, slices.Compare[[]int32]) {
			t.Error("a batch is not in lexicographic order")
		}
		for _, c := range chains {
			seen = append(seen, slices.Clone(c))
		}
		return geometric(0.5)(chains)
	}
	mustMine(t, toks, score, MineOptions{Candidates: 300, Batch: 64, MinCount: 3})
	counts := bruteCounts(toks, 8)
	top := bruteForce(counts, 3, 300)
	want := map[string]bool{}
	for _, c := range top {
		for j := 2; j <= len(c); j++ {
			want[fmt.Sprint(c[:j])] = true
		}
	}
	if len(seen) != len(want) {
		t.Fatalf("scored %d chains, want the %d of the brute-force top 300 and their prefixes", len(seen), len(want))
	}
	for _, c := range seen {
		if !want[fmt.Sprint(c)] {
			t.Fatalf("scored %v, not among the top 300 or their prefixes", c)
		}
	}

	// addPrefixes counts every candidate and prefix exactly.
	cands, err := countCandidates(context.Background(), toks, MineOptions{MaxLen: 8, MinCount: 3, Candidates: 300})
	if err != nil {
		t.Fatal(err)
	}
	cands = addPrefixes(toks, cands, 8)
	for _, c := range cands {
		if want := counts[fmt.Sprint(c.tokens)]; c.count != want {
			t.Errorf("%v counted %d times, want %d", c.tokens, c.count, want)
		}
		for j := 1; j <= len(c.tokens); j++ {
			if p := cands[c.prefix[j]].tokens; !equalTokens(p, c.tokens[:j]) {
				t.Errorf("%v's prefix %d is %v", c.tokens, j, p)
			}
		}
	}
}

// bruteCounts counts every n-gram of 1…maxLen tokens without a negative id.
func bruteCounts(toks []int32, maxLen int) map[string]int {
	counts := map[string]int{}
	for n := 1; n <= maxLen; n++ {
		for i := 0; i+n <= len(toks); i++ {
			if g := toks[i : i+n]; !slices.ContainsFunc(g, func(t int32) bool { return t < 0 }) {
				counts[fmt.Sprint(g)]++
			}
		}
	}
	return counts
}

// bruteForce returns the top k n-grams of 2 tokens or more by
// count·(n−1), ties to the longer, then the lexicographically smaller.
func bruteForce(counts map[string]int, minCount, k int) [][]int32 {
	var cands []candidate
	for key, n := range counts {
		var g []int32
		for _, f := range strings.Fields(strings.Trim(key, "[]")) {
			var v int32
			fmt.Sscan(f, &v)
			g = append(g, v)
		}
		if n >= minCount && len(g) >= 2 {
			cands = append(cands, candidate{tokens: g, count: n})
		}
	}
	slices.SortFunc(cands, byFrequency)
	var out [][]int32
	for _, c := range cands[:min(k, len(cands))] {
		out = append(out, c.tokens)
	}
	return out
}

// A chain the model finds impossible is never drafted, and the prefix of a
// chosen chain is skipped.
func TestMinePacking(t *testing.T) {
	// 5 6 7 8 occurs 4 times; 1 2 occurs 10 times but the model never
	// writes it.
	var toks []int32
	for i := range 10 {
		toks = append(toks, 1, 2, int32(100+i))
		if i < 4 {
			toks = append(toks, 5, 6, 7, 8, int32(200+i))
		}
	}
	score := func(chains [][]int32) ([]float64, error) {
		p := make([]float64, len(chains))
		for i, c := range chains {
			if c[0] != 1 {
				p[i] = math.Pow(0.9, float64(len(c)-1))
			}
		}
		return p, nil
	}
	c := mustMine(t, toks, score, MineOptions{})
	var got [][]int32
	for _, e := range c.Entries[:c.Filled()] {
		got = append(got, e.Tokens)
	}
	// 5 6 7 8 first; 5 6 and 5 6 7 are its prefixes; 6 7 8 and 7 8 serve
	// keys of their own.
	if want := "[[5 6 7 8] [6 7 8] [7 8]]"; fmt.Sprint(got) != want {
		t.Errorf("table %v, want %s", got, want)
	}
}
