package gpu

import (
	"strings"
	"testing"

	"github.com/bitvk/bitvk/nn/nntest"
)

// A profile of a decode step and of a prefill chunk names every stage of
// the pass once per layer, adds up, counts what the pass submits, and
// leaves the backend computing what it computed before.
func TestProfileForward(t *testing.T) {
	m := nntest.NewModel(t, "tiny", nntest.StoreI2S, 3)
	b := open(t, m.Config, m.Weights, Options{Context: 32, Batch: 8, Fusion: FuseOn})
	if b.Device().TimestampBits == 0 {
		if _, err := b.ProfileForward(1, 0, 1); err == nil || !strings.Contains(err.Error(), "no timestamps") {
			t.Fatalf("ProfileForward on a device without timestamps: %v", err)
		}
		t.Skipf("%s has no timestamps on its compute queue", b.Device().Name)
	}
	toks := []int32{3, 1, 4, 1, 5}
	before := make([]float32, len(toks)*m.Config.Vocab)
	if err := b.Forward(toks, 0, before); err != nil {
		t.Fatal(err)
	}
	L := m.Config.Layers
	for _, tc := range []struct{ n, pos int }{{1, 0}, {1, 20}, {8, 0}} {
		p, err := b.ProfileForward(tc.n, tc.pos, 3)
		if err != nil {
			t.Fatal(err)
		}
		if p.Tokens != tc.n || p.Pos != tc.pos {
			t.Errorf("profile of %d tokens at %d reports %d at %d", tc.n, tc.pos, p.Tokens, p.Pos)
		}
		if p.Counts.Dispatches+p.Counts.Transfers != len(p.Commands) {
			t.Errorf("%d commands timed, %+v recorded", len(p.Commands), p.Counts)
		}
		var sum float64
		for _, c := range p.Commands {
			sum += c.Nanoseconds
		}
		if p.GPUNanoseconds <= 0 || sum != p.GPUNanoseconds || p.WallNanoseconds <= 0 {
			t.Errorf("GPU time %g ns (commands add to %g), wall %g ns", p.GPUNanoseconds, sum, p.WallNanoseconds)
		}
		calls := map[string]int{}
		var share float64
		for _, k := range p.ByLabel() {
			calls[k.Label] = k.Calls
			share += k.Share
			if k.Bytes <= 0 {
				t.Errorf("%s: %d bytes", k.Label, k.Bytes)
			}
		}
		if share < 0.999 || share > 1.001 {
			t.Errorf("shares add to %g", share)
		}
		stages := []string{"attention (chunks)", "attention (reduce+subnorm+quant)", "attn output", "ffn down"}
		if tc.n == 1 { // a decode step: the input norms, RoPE and the cache write fused (graph.go)
			stages = append(stages, "attn norm+qkv+rope+kv", "ffn norm+gate+up", "ffn act+subnorm+quant")
			// seven dispatches a layer, and the embedding, the output norm,
			// the head and the argmax (two stages on a GPU)
			_, groups := argmaxPlan(m.Config.Vocab, b.onCPU())
			if want := 7*L + 3 + min(groups, 2); p.Counts.Dispatches != want {
				t.Errorf("decode step: %d dispatches, want %d", p.Counts.Dispatches, want)
			}
		} else {
			stages = append(stages, "attn norm+quant", "attn qkv", "rope + kv write", "ffn norm+quant", "ffn gate+up")
		}
		for _, label := range stages {
			if calls[label] != L {
				t.Errorf("%d tokens: %q ran %d times, want once per layer (%d)", tc.n, label, calls[label], L)
			}
		}
		last := "token download"
		if _, groups := argmaxPlan(m.Config.Vocab, b.onCPU()); tc.n == 1 && (calls["argmax partials"] != min(groups-1, 1) || calls["argmax"] != 1) {
			t.Errorf("decode step: argmax stages ran %d and %d times (%d workgroups)", calls["argmax partials"], calls["argmax"], groups)
		}
		if tc.n > 1 {
			last = "logits download"
		}
		if calls[last] != 1 {
			t.Errorf("%d tokens: %q ran %d times", tc.n, last, calls[last])
		}
	}
	if _, err := b.ProfileForward(9, 0, 1); err == nil {
		t.Error("a profile beyond the batch succeeded")
	}
	if _, err := b.ProfileForward(1, 32, 1); err == nil {
		t.Error("a profile beyond the context succeeded")
	}
	// Profiling changes only the cache it overwrote, which Forward refills.
	after := make([]float32, len(before))
	if err := b.Forward(toks, 0, after); err != nil {
		t.Fatal(err)
	}
	for i := range before {
		if before[i] != after[i] {
			t.Fatalf("logit %d is %v after profiling, %v before", i, after[i], before[i])
		}
	}
}

// A verification pass's profile reads every token's logits back: its
// logits download moves n rows where a prompt chunk's moves one.
func TestProfileVerify(t *testing.T) {
	m := nntest.NewModel(t, "tiny", nntest.StoreI2S, 3)
	b := open(t, m.Config, m.Weights, Options{Context: 32, Batch: 8})
	if b.Device().TimestampBits == 0 {
		if _, err := b.ProfileVerify(1, 0, 1); err == nil || !strings.Contains(err.Error(), "no timestamps") {
			t.Fatalf("ProfileVerify on a device without timestamps: %v", err)
		}
		t.Skipf("%s has no timestamps on its compute queue", b.Device().Name)
	}
	row := int64(4 * m.Config.Vocab)
	for _, n := range []int{1, 4} {
		for _, pf := range []struct {
			name string
			f    func(n, pos, runs int) (*Profile, error)
			rows int64
		}{{"ProfileVerify", b.ProfileVerify, int64(n)}, {"ProfileForward", b.ProfileForward, 1}} {
			if pf.name == "ProfileForward" && n == 1 {
				continue // a decode step downloads its argmax
			}
			p, err := pf.f(n, 10, 2)
			if err != nil {
				t.Fatal(err)
			}
			var got int64 = -1
			for _, k := range p.ByLabel() {
				if k.Label == "logits download" {
					got = k.Bytes
				}
			}
			if got != pf.rows*row {
				t.Errorf("%s of %d tokens: the logits download moves %d bytes, want %d", pf.name, n, got, pf.rows*row)
			}
		}
	}
	if _, err := b.ProfileVerify(9, 0, 1); err == nil {
		t.Error("a profile beyond the batch succeeded")
	}
}
