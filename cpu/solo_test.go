package cpu

import (
	"slices"
	"testing"

	"github.com/bitvk/bitvk/nn"
	"github.com/bitvk/bitvk/nn/nntest"
)

// A model that reads under soloBytes a token decodes on the calling thread
// alone (no helper runs a job of a decode step) and offers its prompts'
// jobs to every thread; its logits are the bits of a one-thread backend and of a
// two-thread one that splits its decode steps, prompts, decode steps and
// several sequences at once alike.
func TestSoloDecode(t *testing.T) {
	m := nntest.NewModel(t, "tiny", nntest.StoreI2S, 5)
	v := m.Config.Vocab
	open := func(threads int) *Backend {
		b, err := New(m.Config, m.Weights, Options{Threads: threads, Context: 32, Slots: 2})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		return b
	}
	solo, one, split := open(2), open(1), open(2)
	if !solo.soloDecode || solo.DecodeThreads() != 1 || solo.Threads() != 2 || solo.stepBytes() >= soloBytes {
		t.Fatalf("tiny model, 2 threads: solo %v, decode threads %d, %d bytes a step", solo.soloDecode, solo.DecodeThreads(), solo.stepBytes())
	}
	split.soloDecode = false

	run := func(b *Backend) []float32 {
		var out []float32
		prompt := []int32{1, 7, 3, 9, 4, 2}
		logits := make([]float32, len(prompt)*v)
		if err := b.Forward(prompt, 0, logits); err != nil {
			t.Fatal(err)
		}
		out = append(out, logits...)
		// (Whether a helper takes a share of a prompt's job is the
		// scheduler's: a caller that finds its helpers asleep runs their
		// shares itself. That the pass offered them is the flag.)
		if b == solo && b.pool.solo {
			t.Error("a prompt of 6 tokens ran with the pool's solo flag set")
		}
		step := make([]float32, v)
		for i, tok := range []int32{5, 8, 6} {
			// No job published, so none a helper could run. (Counting the
			// helpers' wake-ups instead would count a helper that wakes
			// late for the prompt's last job, which the caller finished.)
			g := b.pool.gen.Load()
			if err := b.Forward([]int32{tok}, len(prompt)+i, step); err != nil {
				t.Fatal(err)
			}
			if b == solo && (b.pool.gen.Load() != g || !b.pool.solo) {
				t.Errorf("decode step %d: %d jobs published to the helpers, solo flag %v", i, b.pool.gen.Load()-g, b.pool.solo)
			}
			out = append(out, step...)
		}
		multi := make([]float32, 2*v)
		if err := b.ForwardMulti([]nn.SeqToken{{Token: 3, Seq: 1, Pos: 0, Logits: true}, {Token: 4, Seq: 0, Pos: len(prompt) + 3, Logits: true}}, multi); err != nil {
			t.Fatal(err)
		}
		return append(out, multi...)
	}
	want := run(one)
	for name, b := range map[string]*Backend{"solo": solo, "split": split} {
		if got := run(b); !slices.Equal(got, want) {
			t.Errorf("%s: logits differ from one thread's", name)
		}
	}
}
