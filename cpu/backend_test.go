package cpu

import (
	"cmp"
	"math"
	"strings"
	"testing"

	"github.com/bitvk/bitvk/nn"
	"github.com/bitvk/bitvk/nn/nntest"
	"github.com/bitvk/bitvk/nn/ref"
)

// TestHeadQ8 checks the int8 head against the oracle's float16 head: the
// same ranking where it is clear, logits correlated ≥ 0.999.
func TestHeadQ8(t *testing.T) {
	m := nntest.NewModel(t, "small", nntest.StoreI2S, 5)
	r, err := ref.New(m.Config, m.Weights)
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(m.Config, m.Weights, Options{Threads: 2, Context: 16, HeadQ8: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	got := make([]float32, m.Config.Vocab)
	for pos, tok := range []int32{1, 200, 3000, 17} {
		want, err := r.Forward(tok)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Forward([]int32{tok}, pos, got); err != nil {
			t.Fatal(err)
		}
		if c := nntest.Correlation(want, got); c < 0.999 {
			t.Errorf("pos %d: q8 head correlation %.5f < 0.999", pos, c)
		}
		best, margin := nntest.Top2(want)
		if g, _ := nntest.Top2(got); margin >= nntest.ArgmaxMargin && g != best {
			t.Errorf("pos %d: q8 head argmax %d, oracle %d (margin %.2f)", pos, g, best, margin)
		}
	}
}

func TestBackendErrors(t *testing.T) {
	m := nntest.NewModel(t, "tiny", nntest.StoreI2S, 5)
	if _, err := New(m.Config, m.Weights, Options{Context: m.Config.Context + 1}); err == nil || !strings.Contains(err.Error(), "maximum") {
		t.Errorf("context beyond the model: %v", err)
	}
	b, err := New(m.Config, m.Weights, Options{Threads: 2, Context: 8})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.Name(), "cpu (") || b.Context() != 8 {
		t.Errorf("Name %q, Context %d", b.Name(), b.Context())
	}
	v := m.Config.Vocab
	for _, tc := range []struct {
		toks   []int32
		pos    int
		logits int
	}{
		{[]int32{1}, 8, v},            // beyond the context
		{[]int32{1, 2}, 7, v},         // runs past it
		{[]int32{1}, -1, v},           // negative position
		{[]int32{int32(v)}, 0, v},     // outside the vocabulary
		{[]int32{-3}, 0, v},           //
		{[]int32{1, 2}, 0, v + 1},     // a logits buffer of no known size
		{[]int32{1, 2}, 0, 3*v - 100}, //
	} {
		if err := b.Forward(tc.toks, tc.pos, make([]float32, tc.logits)); err == nil {
			t.Errorf("Forward(%v, %d, [%d]) accepted", tc.toks, tc.pos, tc.logits)
		}
	}
	if err := b.Forward([]int32{1}, 0, nil); err != nil {
		t.Errorf("Forward without logits: %v", err)
	}
	b.Close()
	if err := b.Forward([]int32{1}, 0, nil); err == nil {
		t.Error("Forward after Close worked")
	}
	if err := b.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestOptionsKernels: Options.Kernels picks a kernel set by name, which
// gives the logits the default set gives (the integer products are exact,
// and the float steps of every set match the twins bit for bit or within
// the conformance tolerance); an unknown name is refused with the list.
func TestOptionsKernels(t *testing.T) {
	m := nntest.NewModel(t, "tiny", nntest.StoreI2S, 5)
	if _, err := New(m.Config, m.Weights, Options{Kernels: "avx9"}); err == nil || !strings.Contains(err.Error(), `"avx9"`) || !strings.Contains(err.Error(), "generic") {
		t.Errorf("unknown kernel set: %v", err)
	}
	toks := []int32{1, 7, 3}
	v := m.Config.Vocab
	var want []float32
	for _, name := range append([]string{""}, KernelNames()...) {
		b, err := New(m.Config, m.Weights, Options{Threads: 1, Context: 8, Kernels: name})
		if err != nil {
			t.Fatal(err)
		}
		if wantName := cmp.Or(name, Kernels()); b.Kernels() != wantName {
			t.Errorf("Kernels %q: backend runs %q", name, b.Kernels())
		}
		logits := make([]float32, len(toks)*v)
		if err := b.Forward(toks, 0, logits); err != nil {
			t.Fatal(err)
		}
		b.Close()
		if want == nil {
			want = logits
			continue
		}
		for i := range logits {
			if d := math.Abs(float64(logits[i] - want[i])); d > 1e-3*(1+math.Abs(float64(want[i]))) {
				t.Fatalf("kernel set %s: logit %d = %g, default set %g", name, i, logits[i], want[i])
			}
		}
	}
}

// TestRejectsCode3 loads an I2_S model holding the code 3, which is no
// ternary value: the CPU backend refuses it, as the oracle does.
func TestRejectsCode3(t *testing.T) {
	m := nntest.NewModel(t, "tiny", nntest.StoreI2S, 5)
	w := *m.Weights
	layers := append([]nn.Layer(nil), w.Layers...)
	q := layers[1].AttnQ
	q.Data = append([]byte(nil), q.Data...)
	q.Data[100] |= 0x0c // bits 3:2 → code 3
	layers[1].AttnQ = q
	w.Layers = layers
	if _, err := New(m.Config, &w, Options{Threads: 1, Context: 8}); err == nil || !strings.Contains(err.Error(), "code 3") {
		t.Errorf("code 3 accepted: %v", err)
	}
}

// TestRoundClampI8 compares the magic-number rounding with the plain
// definition on every float32 step of 1/64 in [−200, 200], every half, and
// values around them.
func TestRoundClampI8(t *testing.T) {
	check := func(x float32) {
		want := int8(max(-128, min(127, math.RoundToEven(float64(x)))))
		if got := roundClampI8(x); got != want {
			t.Fatalf("roundClampI8(%v) = %d, want %d", x, got, want)
		}
	}
	for i := -200 * 64; i <= 200*64; i++ {
		x := float32(i) / 64
		check(x)
		check(math.Nextafter32(x, 1e9))
		check(math.Nextafter32(x, -1e9))
	}
	for _, x := range []float32{1e30, -1e30, float32(math.Inf(1)), float32(math.Inf(-1)), 0.49999997, -0.49999997} {
		check(x)
	}
}

// TestForwardAllocatesNothing: a pass (a decode step, a few tokens with
// every token's logits, several sequences at once, a long prompt's chunk
// past longRunPositions) allocates nothing, with
// every head form, every kernel set and on several threads: the pool's jobs live in the
// backend (a closure per job allocated 110 times a decode step, and the
// garbage collector ran every few hundred tokens of a small model).
func TestForwardAllocatesNothing(t *testing.T) {
	m := nntest.NewModel(t, "tiny", nntest.StoreI2S, 3)
	withKernels(t, func(t *testing.T) {
		forwardAllocs(t, m)
	})
}

func forwardAllocs(t *testing.T, m *nntest.Model) {
	for _, threads := range []int{1, 2} {
		for _, head := range []nn.HeadType{nn.HeadStored, nn.HeadQ8, nn.HeadQ6_K, nn.HeadQ4_0} {
			b, err := New(m.Config, m.Weights, Options{Threads: threads, Context: longRunPositions + 16, Batch: 8, Head: head, Slots: 2})
			if err != nil {
				t.Fatal(err)
			}
			V := m.Config.Vocab
			toks := []int32{1, 2, 3, 4}
			logits := make([]float32, len(toks)*V)
			multi := []nn.SeqToken{{Seq: 0, Pos: 5, Token: 7, Logits: true}, {Seq: 1, Pos: 3, Token: 9, Logits: true}}
			long := []int32{5, 6, 7, 8, 9, 10, 11, 12} // positions longRunPositions+1…: items of many queries
			passes := []struct {
				name string
				run  func() error
			}{
				{"decode", func() error { return b.Forward(toks[:1], 8, logits[:V]) }},
				{"prompt", func() error { return b.Forward(toks, 4, logits[:V]) }},
				{"verify", func() error { return b.Forward(toks, 4, logits) }},
				{"multi", func() error { return b.ForwardMulti(multi, logits[:2*V]) }},
				{"long prompt", func() error { return b.Forward(long, longRunPositions+1, logits[:V]) }},
			}
			for _, p := range passes {
				if err := p.run(); err != nil { // the first pass may set things up
					t.Fatal(err)
				}
				var err error
				if n := testing.AllocsPerRun(20, func() { err = p.run() }); n != 0 || err != nil {
					t.Errorf("%d threads, %s head, %s: %v allocations a pass (err %v)", threads, head, p.name, n, err)
				}
			}
			b.Close()
		}
	}
}
