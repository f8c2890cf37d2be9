package train

import (
	"math/rand/v2"
	"runtime"
	"testing"
)

// BenchmarkTrainStep times one forward + backward + AdamW step of a
// demo-like shape (2 of its layers) on every core and reports training
// tokens/s and GFLOP/s (FlopsPerStep / time).
func BenchmarkTrainStep(b *testing.B) {
	s := Shape{Vocab: 4096, Layers: 2, Embd: 384, FFN: 1024, Heads: 6, KVHeads: 2, Context: 256, RopeBase: 500000, Eps: 1e-5}
	r := rand.New(rand.NewPCG(1, 1))
	d := &Data{Tokens: randomTokens(r, 20000, s.Vocab), Starts: []int{0, 5000, 10000}, BOS: 1}
	h := DefaultHyper()
	tr, err := New(Options{Shape: s, Hyper: h, Batch: 4, Seed: 1, Threads: runtime.NumCPU()}, d, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	if _, _, err := tr.TrainStep(); err != nil { // allocate the activations
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, _, err := tr.TrainStep(); err != nil {
			b.Fatal(err)
		}
	}
	sec := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(float64(tr.Opt.Batch*s.Context)/sec, "tok/s")
	b.ReportMetric(tr.FlopsPerStep()/sec/1e9, "GFLOP/s")
}
