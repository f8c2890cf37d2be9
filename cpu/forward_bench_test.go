package cpu

import (
	"fmt"
	"testing"

	"github.com/bitvk/bitvk/nn"
	"github.com/bitvk/bitvk/nn/nntest"
)

// BenchmarkForward times a decode step (one token at position 64) and a
// 64-token prefill on the small synthetic shape, per kernel set.
func BenchmarkForward(b *testing.B) {
	m := nntest.NewModel(b, "small", nntest.StoreI2S, 1)
	for _, k := range kernelSets() {
		saved := active
		active = k
		be, err := New(m.Config, m.Weights, Options{Context: 256})
		active = saved
		if err != nil {
			b.Fatal(err)
		}
		toks := make([]int32, 64)
		for i := range toks {
			toks[i] = int32(i * 37 % m.Config.Vocab)
		}
		logits := make([]float32, m.Config.Vocab)
		if err := be.Forward(toks, 0, nil); err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("%s/decode", k.name), func(b *testing.B) {
			for b.Loop() {
				if err := be.Forward(toks[:1], 64, logits); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tok/s")
		})
		b.Run(fmt.Sprintf("%s/prefill64", k.name), func(b *testing.B) {
			for b.Loop() {
				if err := be.Forward(toks, 0, logits); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(64*b.N)/b.Elapsed().Seconds(), "tok/s")
		})
		be.Close()
	}
}

var _ nn.Backend = (*Backend)(nil)
