package cpu

import (
	"fmt"
	"os"
	"runtime/pprof"
	"testing"

	"github.com/bitvk/bitvk/nn/nntest"
)

func BenchmarkZZDecode2B(b *testing.B) {
	m := nntest.NewModel(b, "2b", nntest.StoreI2S, 1)
	v := m.Config.Vocab
	for _, threads := range []int{1, 2} {
		be, err := New(m.Config, m.Weights, Options{Threads: threads, Context: 256})
		if err != nil {
			b.Fatal(err)
		}
		prompt := make([]int32, 64)
		for i := range prompt {
			prompt[i] = int32(i * 7919 % v)
		}
		if err := be.Forward(prompt, 0, nil); err != nil {
			b.Fatal(err)
		}
		logits := make([]float32, v)
		b.Run(fmt.Sprintf("threads%d", threads), func(b *testing.B) {
			f, _ := os.Create(fmt.Sprintf("/tmp/dec%d.prof", threads))
			pprof.StartCPUProfile(f)
			defer func() { pprof.StopCPUProfile(); f.Close() }()
			for i := 0; b.Loop(); i++ {
				if err := be.Forward(prompt[i%64:i%64+1], 64+i%64, logits); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tok/s")
		})
		be.Close()
	}
}
