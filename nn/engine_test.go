package nn

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
)

// fakeBackend returns logits that make token (last+1) % vocab the argmax,
// and records every call.
type fakeBackend struct {
	vocab, ctx int
	calls      [][2]int // (pos, len)
	fail       error
}

func (f *fakeBackend) Name() string { return "fake" }
func (f *fakeBackend) Context() int { return f.ctx }
func (f *fakeBackend) Close() error { return nil }
func (f *fakeBackend) Forward(tokens []int32, pos int, logits []float32) error {
	if f.fail != nil {
		return f.fail
	}
	f.calls = append(f.calls, [2]int{pos, len(tokens)})
	if len(logits) == 0 {
		return nil
	}
	first := 0
	if len(logits) == f.vocab {
		first = len(tokens) - 1
	}
	for i := first; i < len(tokens); i++ {
		l := logits[(i-first)*f.vocab : (i-first+1)*f.vocab]
		clear(l)
		l[(int(tokens[i])+1)%f.vocab] = 10
	}
	return nil
}

func newFakeEngine(t *testing.T, vocab, ctx, maxCtx int) (*Engine, *fakeBackend) {
	t.Helper()
	b := &fakeBackend{vocab: vocab, ctx: ctx}
	e, err := NewEngine(&Config{Vocab: vocab, Context: maxCtx}, b)
	if err != nil {
		t.Fatal(err)
	}
	return e, b
}

func TestEngineEval(t *testing.T) {
	e, b := newFakeEngine(t, 10, 8, 16)
	if _, err := e.Eval(nil); err == nil {
		t.Error("Eval of nothing on an empty sequence gave logits")
	}
	l, err := e.Eval([]int32{1, 2, 3})
	if err != nil || l[4] != 10 {
		t.Fatalf("Eval: %v, logits %v", err, l)
	}
	if l, err = e.Eval([]int32{5}); err != nil || l[6] != 10 || e.Pos() != 4 {
		t.Fatalf("Eval: %v, logits %v, pos %d", err, l, e.Pos())
	}
	if b.calls[1] != [2]int{3, 1} {
		t.Errorf("second call %v, want position 3, one token", b.calls[1])
	}
	for _, bad := range [][]int32{{10}, {-1}, {1, 2, 3, 4, 5}} {
		if _, err := e.Eval(bad); err == nil {
			t.Errorf("Eval(%v) accepted", bad)
		}
	}
	var ce *ContextError
	if _, err := e.Eval([]int32{1, 2, 3, 4, 5}); !errors.As(err, &ce) || !strings.Contains(err.Error(), "raise -c") {
		t.Errorf("overflow error %v, want a ContextError suggesting -c", err)
	}
	if e.Pos() != 4 {
		t.Errorf("a refused Eval changed the sequence: pos %d", e.Pos())
	}
	e.Truncate(2)
	if _, err := e.Eval(nil); err == nil {
		t.Error("logits survived Truncate")
	}
	if _, err := e.Eval([]int32{7}); err != nil || b.calls[len(b.calls)-1] != [2]int{2, 1} {
		t.Errorf("after Truncate(2): %v, call %v", err, b.calls[len(b.calls)-1])
	}
	b.fail = errors.New("device lost")
	if _, err := e.Eval([]int32{1}); err == nil || e.Pos() != 3 {
		t.Errorf("a failing backend: err %v, pos %d (want 3, unchanged)", err, e.Pos())
	}
}

func TestEngineEvalAll(t *testing.T) {
	e, b := newFakeEngine(t, 10, 16, 16)
	toks := []int32{1, 2, 3, 4, 5, 6, 7}
	var seen []int
	err := e.EvalAll(toks, 3, func(i int, l []float32) error {
		if l[(toks[i]+1)%10] != 10 {
			t.Errorf("position %d: logits %v", i, l)
		}
		seen = append(seen, i)
		return nil
	})
	if err != nil || len(seen) != 7 || e.Pos() != 7 {
		t.Fatalf("EvalAll: %v, saw %v, pos %d", err, seen, e.Pos())
	}
	want := [][2]int{{0, 3}, {3, 3}, {6, 1}}
	for i, c := range b.calls {
		if c != want[i] {
			t.Errorf("call %d = %v, want %v", i, c, want[i])
		}
	}
	if l, err := e.Eval(nil); err != nil || l[8] != 10 {
		t.Errorf("logits after EvalAll: %v %v", err, l)
	}
}

func TestEngineGenerate(t *testing.T) {
	greedy, err := NewSampler(SamplerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	run := func(e *Engine, ctx context.Context, o GenerateOptions) ([]int32, Stats, error) {
		var got []int32
		st, err := e.Generate(ctx, []int32{0}, o, greedy, func(id int32) error {
			got = append(got, id)
			return nil
		})
		return got, st, err
	}
	e, _ := newFakeEngine(t, 10, 32, 32)
	got, st, err := run(e, context.Background(), GenerateOptions{MaxTokens: 4})
	if err != nil || st.Stop != StopLength || st.GenTokens != 4 || st.PromptTokens != 1 || len(got) != 4 || got[3] != 4 {
		t.Errorf("length: %v %+v %v", err, st, got)
	}
	e.Reset()
	got, st, _ = run(e, context.Background(), GenerateOptions{IsEOG: func(id int32) bool { return id == 3 }})
	if st.Stop != StopEOG || len(got) != 3 || e.Pos() != 3 {
		t.Errorf("eog: %+v %v pos %d (the end token is emitted, not evaluated)", st, got, e.Pos())
	}
	e, _ = newFakeEngine(t, 10, 5, 32)
	got, st, _ = run(e, context.Background(), GenerateOptions{})
	if st.Stop != StopContext || e.Pos() != 5 || len(got) != 5 {
		t.Errorf("context: %+v %v pos %d", st, got, e.Pos())
	}
	e, _ = newFakeEngine(t, 10, 32, 32)
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	st, err = e.Generate(ctx, []int32{0}, GenerateOptions{}, greedy, func(int32) error {
		if n++; n == 2 {
			cancel()
		}
		return nil
	})
	if err != nil || st.Stop != StopInterrupted || st.GenTokens != 2 {
		t.Errorf("interrupted: %v %+v", err, st)
	}
	e.Reset()
	stop := errors.New("reader gone")
	if _, err := e.Generate(context.Background(), []int32{0}, GenerateOptions{}, greedy, func(int32) error { return stop }); !errors.Is(err, stop) {
		t.Errorf("emit error: %v", err)
	}
	e.Reset()
	if _, err := e.Generate(context.Background(), nil, GenerateOptions{}, greedy, func(int32) error { return nil }); err == nil {
		t.Error("an empty prompt on an empty sequence generated")
	}
	if _, err := NewEngine(&Config{Vocab: 10, Context: 4}, &fakeBackend{vocab: 10, ctx: 8}); err == nil {
		t.Error("a backend context beyond the model's was accepted")
	}
}

// fakePicker is a fakeBackend that also picks greedy tokens itself.
type fakePicker struct {
	fakeBackend
	picks int
}

func (f *fakePicker) ForwardArgmax(tokens []int32, pos int) (int32, error) {
	f.picks++
	if err := f.Forward(tokens, pos, nil); err != nil {
		return -1, err
	}
	return (tokens[len(tokens)-1] + 1) % int32(f.vocab), nil
}

// A greedy generation on a Picker reads back ids, never logits, and draws
// the same tokens as the sampler would; a sampling one reads logits.
func TestGeneratePicker(t *testing.T) {
	b := &fakePicker{fakeBackend: fakeBackend{vocab: 10, ctx: 32}}
	e, err := NewEngine(&Config{Vocab: 10, Context: 32}, b)
	if err != nil {
		t.Fatal(err)
	}
	greedy, _ := NewSampler(SamplerConfig{})
	var got []int32
	st, err := e.Generate(context.Background(), []int32{1, 2}, GenerateOptions{MaxTokens: 4}, greedy, func(id int32) error {
		got = append(got, id)
		return nil
	})
	if err != nil || st.Stop != StopLength {
		t.Fatalf("Generate: %v, stop %q", err, st.Stop)
	}
	if want := []int32{3, 4, 5, 6}; !slices.Equal(got, want) {
		t.Errorf("tokens %v, want %v", got, want)
	}
	if b.picks != 4 || e.Pos() != 5 {
		t.Errorf("%d picks, position %d; want 4 picks (prompt + 3 steps), position 5", b.picks, e.Pos())
	}
	if _, err := e.Eval(nil); err == nil {
		t.Error("Eval(nil) after device-picked steps returned logits it does not have")
	}
	sampled, _ := NewSampler(SamplerConfig{Temperature: 0.5, TopK: 1})
	b.picks = 0
	if _, err := e.Generate(context.Background(), []int32{0}, GenerateOptions{MaxTokens: 2}, sampled, func(int32) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if b.picks != 0 {
		t.Errorf("a sampling generation used ForwardArgmax %d times", b.picks)
	}
}
