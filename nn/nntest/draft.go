package nntest

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/bitvk/bitvk/nn"
)

// replay drafts the continuation of a generation it was shown, spoiling
// every spoil-th drafted token (0: none), so that a verification pass keeps
// all of a draft, part of it, or none.
type replay struct {
	mu     sync.Mutex
	want   []int32 // the whole sequence of plain decoding
	spoil  int
	vocab  int
	drafts int
}

func (r *replay) Draft(dst, seq []int32, max int) []int32 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(seq) >= len(r.want) || !slices.Equal(r.want[:len(seq)], seq) {
		return dst
	}
	for _, t := range r.want[len(seq):min(len(seq)+max, len(r.want))] {
		if r.drafts++; r.spoil > 0 && r.drafts%r.spoil == 0 {
			t = (t + 1) % int32(r.vocab)
		}
		dst = append(dst, t)
	}
	return dst
}

// Drafting checks speculative decoding on a backend: drafts verified in
// its batched pass give the tokens of plain decoding, greedy and sampled,
// with drafts kept whole, in part and not at all. exact backends (a token
// in a batch gets bit for bit the logits it gets alone) must also leave
// the cache exactly as plain decoding does; the others must keep the
// greedy stream, their logits within the suite's tolerance.
func Drafting(t *testing.T, newBackend Factory, exact bool) {
	m := NewModel(t, "tiny", StoreI2S, 11)
	b, err := newBackend(m.Config, m.Weights, 64)
	if err != nil {
		t.Fatalf("backend: %v", err)
	}
	defer b.Close()
	e, err := nn.NewEngine(m.Config, b)
	if err != nil {
		t.Fatal(err)
	}
	prompt := []int32{1, 17, 200}
	run := func(sc nn.SamplerConfig, d nn.Drafter) ([]int32, nn.Stats, []float32) {
		t.Helper()
		s, err := nn.NewSampler(sc)
		if err != nil {
			t.Fatal(err)
		}
		e.Reset()
		var toks []int32
		st, err := e.Generate(context.Background(), prompt, nn.GenerateOptions{MaxTokens: 40, Draft: d, DraftEvery: true}, s, func(id int32) error {
			toks = append(toks, id)
			return nil
		})
		if err != nil {
			t.Fatalf("Generate: %v", err)
		}
		l, err := e.Eval([]int32{5}) // the cache as the generation left it shows in these
		if err != nil {
			t.Fatal(err)
		}
		return toks, st, slices.Clone(l)
	}
	configs := []nn.SamplerConfig{{}}
	if exact {
		configs = append(configs, nn.SamplerConfig{Temperature: 0.8, TopK: 20, Seed: 5})
	}
	for _, sc := range configs {
		plain, _, plainNext := run(sc, nil)
		want := append(slices.Clone(prompt), plain...)
		for _, spoil := range []int{0, 3, 1} {
			r := &replay{want: want, spoil: spoil, vocab: m.Config.Vocab}
			got, st, next := run(sc, r)
			if !slices.Equal(got, plain) {
				t.Fatalf("temperature %v, every %d-th draft spoiled: tokens %v, plain decoding %v", sc.Temperature, spoil, got, plain)
			}
			if st.Draft.Passes == 0 || spoil != 1 && st.Draft.Accepted == 0 || spoil == 1 && st.Draft.Accepted != 0 {
				t.Errorf("temperature %v, every %d-th draft spoiled: %+v", sc.Temperature, spoil, st.Draft)
			}
			switch {
			case exact && !slices.Equal(next, plainNext):
				t.Errorf("temperature %v, every %d-th draft spoiled: the logits after the generation differ from plain decoding's", sc.Temperature, spoil)
			case !exact:
				if c := Correlation(plainNext, next); !(c >= MinCorrelation) {
					t.Errorf("every %d-th draft spoiled: logits after the generation correlate %.6f with plain decoding's", spoil, c)
				}
			}
		}
	}
}
