package nntest

import (
	"context"
	"testing"

	"github.com/bitvk/bitvk/gguf"
	"github.com/bitvk/bitvk/nn"
	"github.com/bitvk/bitvk/nn/ref"
)

// Factory makes the backend under test for a model, with a K/V cache of ctx
// positions.
type Factory func(c *nn.Config, w *nn.Weights, ctx int) (nn.Backend, error)

// Thresholds of the whole-forward comparison (see the package comment).
const (
	MinCorrelation = 0.999
	ArgmaxMargin   = 1.0
)

// sequence is a fixed token sequence for teacher forcing: varied ids,
// repeats included, spread over the vocabulary.
func sequence(n, vocab int) []int32 {
	toks := make([]int32, n)
	for i := range toks {
		toks[i] = int32((i*7919 + i*i*31 + 1) % vocab)
	}
	toks[n/2] = toks[1] // a repeated token
	return toks
}

// oracle returns the reference logits after each token of toks.
func oracle(t *testing.T, m *Model, toks []int32) [][]float32 {
	t.Helper()
	r, err := ref.New(m.Config, m.Weights)
	if err != nil {
		t.Fatalf("ref.New: %v", err)
	}
	var out [][]float32
	for _, tok := range toks {
		l, err := r.Forward(tok)
		if err != nil {
			t.Fatalf("ref.Forward: %v", err)
		}
		out = append(out, l)
	}
	return out
}

// Forward runs the whole-forward conformance suite on the tiny shape in
// every storage and on the small shape in I2_S: teacher-forced logits
// evaluated in one batch, one position at a time and in uneven chunks all
// agree with the oracle; greedy generation follows the oracle's.
func Forward(t *testing.T, newBackend Factory) {
	cases := []struct {
		shape string
		st    Storage
		n     int
		embd  gguf.Type
	}{
		{"tiny", StoreI2S, 24, gguf.TypeF16},
		{"tiny", StoreTQ2, 12, gguf.TypeF16},
		{"tiny", StoreTQ1, 12, gguf.TypeF16},
		{"tiny", StoreTQ2BlockScale, 12, gguf.TypeF16},
		{"small", StoreI2S, 12, gguf.TypeF16},
		// Embeddings (and so the tied head) as Microsoft's converter can
		// store them (--quant-embd), read in their own type.
		{"tiny", StoreI2S, 12, gguf.TypeQ8_0},
		{"tiny", StoreI2S, 12, gguf.TypeQ6_K},
		{"tiny", StoreI2S, 12, gguf.TypeQ4_0},
	}
	for _, tc := range cases {
		m := NewModelEmbd(t, tc.shape, tc.st, tc.embd, 7)
		t.Run(m.Name, func(t *testing.T) {
			toks := sequence(tc.n, m.Config.Vocab)
			want := oracle(t, m, toks)
			b, err := newBackend(m.Config, m.Weights, 64)
			if err != nil {
				t.Fatalf("backend: %v", err)
			}
			defer b.Close()
			for _, split := range [][]int{{tc.n}, ones(tc.n), {5, 1, 3, tc.n - 9}} {
				e, err := nn.NewEngine(m.Config, b)
				if err != nil {
					t.Fatal(err)
				}
				got := evalSplit(t, e, toks, split)
				for p := range toks {
					compareLogits(t, split, p, want[p], got[p])
				}
			}
			greedy(t, m, b, toks[:3])
		})
	}
}

func ones(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = 1
	}
	return s
}

// evalSplit evaluates toks teacher-forced in chunks of the given sizes and
// returns the logits after each token.
func evalSplit(t *testing.T, e *nn.Engine, toks []int32, split []int) [][]float32 {
	t.Helper()
	var out [][]float32
	start := 0
	for _, n := range split {
		err := e.EvalAll(toks[start:start+n], n, func(i int, l []float32) error {
			out = append(out, append([]float32(nil), l...))
			return nil
		})
		if err != nil {
			t.Fatalf("EvalAll(%d…%d): %v", start, start+n, err)
		}
		start += n
	}
	return out
}

func compareLogits(t *testing.T, split []int, pos int, want, got []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("split %v pos %d: %d logits, want %d", split, pos, len(got), len(want))
	}
	if r := Correlation(want, got); !(r >= MinCorrelation) {
		t.Errorf("split %v pos %d: logits correlation %.6f < %v", split, pos, r, MinCorrelation)
	}
	best, margin := Top2(want)
	if g, _ := Top2(got); margin >= ArgmaxMargin && g != best {
		t.Errorf("split %v pos %d: argmax %d, oracle %d (margin %.3f)", split, pos, g, best, margin)
	}
}

// greedy generates from prompt with temperature 0 on the backend and on the
// oracle, and requires the same tokens until the oracle's top-2 margin drops
// below ArgmaxMargin (a near tie that float rounding may break either way).
func greedy(t *testing.T, m *Model, b nn.Backend, prompt []int32) {
	t.Helper()
	const n = 16
	e, err := nn.NewEngine(m.Config, b)
	if err != nil {
		t.Fatal(err)
	}
	s, err := nn.NewSampler(nn.SamplerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	var got []int32
	st, err := e.Generate(context.Background(), prompt, nn.GenerateOptions{MaxTokens: n}, s, func(id int32) error {
		got = append(got, id)
		return nil
	})
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	if st.GenTokens != n || st.Stop != nn.StopLength || st.PromptTokens != len(prompt) {
		t.Errorf("Generate stats %+v, want %d tokens stopped by length", st, n)
	}
	r, err := ref.New(m.Config, m.Weights)
	if err != nil {
		t.Fatal(err)
	}
	var logits []float32
	for _, tok := range prompt {
		if logits, err = r.Forward(tok); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < n; i++ {
		best, margin := Top2(logits)
		if margin < ArgmaxMargin {
			return // a near tie: the streams may part here
		}
		if got[i] != int32(best) {
			t.Fatalf("greedy token %d: %d, oracle %d (margin %.3f); stream %v", i, got[i], best, margin, got)
		}
		if logits, err = r.Forward(got[i]); err != nil {
			t.Fatal(err)
		}
	}
}

// Correlation is the Pearson correlation of a and b (see nn.Correlation).
func Correlation(a, b []float32) float64 { return nn.Correlation(a, b) }

// Top2 returns the index of the largest value and its margin over the
// second (see nn.Top2).
func Top2(x []float32) (best int, margin float64) { return nn.Top2(x) }
