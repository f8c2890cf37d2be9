package cpu

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/bitvk/bitvk/nn"
	"github.com/bitvk/bitvk/nn/nntest"
	"github.com/bitvk/bitvk/nn/synth"
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

// BenchmarkVerifyPass times what verifying k drafted tokens costs on the
// 2B shape: one pass of k+1 tokens at position 64 with the logits of every
// token, for k = 0…8, on one and on two threads. Each iteration times the
// nine passes in turn (nn.VerifyCost), so a machine's changing load falls
// on all of them alike; the metrics are the best times and each one's
// ratio to the 1-token pass (k = 0) (speculative decoding's target: ≤ 1.5
// at k = 8). Building the model takes a while (a 1.2 GB file made in
// memory).
//
//	go test -run '^$' -bench VerifyPass -benchtime 10x ./cpu
func BenchmarkVerifyPass(b *testing.B) {
	const maxK = 8
	m := nntest.NewModel(b, "2b", nntest.StoreI2S, 1)
	v := m.Config.Vocab
	for _, threads := range []int{1, 2} {
		be, err := New(m.Config, m.Weights, Options{Threads: threads, Context: 128})
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
		b.Run(fmt.Sprintf("threads%d", threads), func(b *testing.B) {
			var best []time.Duration
			for b.Loop() {
				times, err := nn.VerifyCost(be, v, 64, maxK, 1)
				if err != nil {
					b.Fatal(err)
				}
				if best == nil {
					best = times
				}
				for k, d := range times {
					best[k] = min(best[k], d)
				}
			}
			for k, d := range best {
				b.ReportMetric(d.Seconds()*1e3, fmt.Sprintf("ms/k%d", k))
			}
			for k, d := range best[1:] {
				b.ReportMetric(d.Seconds()/best[0].Seconds(), fmt.Sprintf("ratio/k%d", k+1))
			}
		})
		be.Close()
	}
}

// BenchmarkMultiStep: a decode step of n sequences at once (one token each,
// every token's logits, as `bitvk serve --parallel` runs it) against a
// step of one, on the 2B shape, 64 positions cached in each slot; best of
// the rounds, each round timing n = 1…4 in turn.
func BenchmarkMultiStep(b *testing.B) {
	const slots, pos = 4, 64
	m := nntest.NewModel(b, "2b", nntest.StoreI2S, 1)
	v := m.Config.Vocab
	for _, threads := range []int{1, 2} {
		be, err := New(m.Config, m.Weights, Options{Threads: threads, Context: 128, Slots: slots})
		if err != nil {
			b.Fatal(err)
		}
		var prompt []nn.SeqToken
		for s := range slots {
			for p := range pos {
				prompt = append(prompt, nn.SeqToken{Token: int32((p*7919 + s) % v), Seq: s, Pos: p})
			}
		}
		if err := be.ForwardMulti(prompt, nil); err != nil {
			b.Fatal(err)
		}
		logits := make([]float32, slots*v)
		b.Run(fmt.Sprintf("threads%d", threads), func(b *testing.B) {
			best := make([]time.Duration, slots+1)
			for b.Loop() {
				for n := 1; n <= slots; n++ {
					step := make([]nn.SeqToken, n)
					for s := range step {
						step[s] = nn.SeqToken{Token: int32(s*31 + 7), Seq: s, Pos: pos, Logits: true}
					}
					start := time.Now()
					if err := be.ForwardMulti(step, logits[:n*v]); err != nil {
						b.Fatal(err)
					}
					if d := time.Since(start); best[n] == 0 || d < best[n] {
						best[n] = d
					}
				}
			}
			for n := 1; n <= slots; n++ {
				b.ReportMetric(best[n].Seconds()*1e3, fmt.Sprintf("ms/%dseq", n))
			}
			for n := 2; n <= slots; n++ {
				b.ReportMetric(best[n].Seconds()/best[1].Seconds(), fmt.Sprintf("ratio/%dseq", n))
			}
		})
		be.Close()
	}
}

// BenchmarkDecodeProbed: decode steps of the 2B shape, each followed by one
// pass of the read probe (bitvk bench's: 512 MiB, the same threads), as
// `probed` times the kernels: on a VM whose bandwidth moves from second to
// second, a ratio of the two measured in turn is steadier than either
// figure, and than a decode measured against a probe taken beside it.
// GB/s counts the bytes a step reads (ternary matrices and head); of-probe
// is the mean decode rate over the mean probe rate. The model is written to
// a file and opened as the command line opens one (gguf.Open).
//
//	go test -run '^$' -bench DecodeProbed -benchtime 60x ./cpu
func BenchmarkDecodeProbed(b *testing.B) {
	sb, err := synth.Build(synth.Options{Shape: synth.Shapes["2b"], Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "2b.gguf")
	if err := sb.WriteFile(path); err != nil {
		b.Fatal(err)
	}
	for _, threads := range []int{1, 2} {
		for _, head := range []nn.HeadType{nn.HeadF16, nn.HeadQ8} {
			b.Run(fmt.Sprintf("threads%d/%s", threads, head), func(b *testing.B) {
				m := nntest.OpenModel(b, path)
				c := m.Config
				be, err := New(c, m.Weights, Options{Threads: threads, Context: 512, Head: head})
				if err != nil {
					b.Fatal(err)
				}
				defer be.Close()
				probe, err := NewBandwidthProbe(threads, 512<<20)
				if err != nil {
					b.Fatal(err)
				}
				defer probe.Close()
				logits := make([]float32, c.Vocab)
				if err := be.Forward([]int32{1}, 0, logits); err != nil {
					b.Fatal(err)
				}
				var decode, read time.Duration
				i := 0
				for b.Loop() {
					start := time.Now()
					if err := be.Forward([]int32{int32(i%1000 + 2)}, 1+i%500, logits); err != nil {
						b.Fatal(err)
					}
					decode += time.Since(start)
					read += probeOutside(b, probe)
					i++
				}
				step := float64(be.stepBytes()) * float64(i)
				b.ReportMetric(step/decode.Seconds()/1e9, "GB/s")
				b.ReportMetric(float64(len(probe.buf))*float64(i)/read.Seconds()/1e9, "probe-GB/s")
				b.ReportMetric(step/decode.Seconds()/(float64(len(probe.buf))*float64(i)/read.Seconds()), "of-probe")
			})
		}
	}
}

// probeOutside reads the probe's buffer once with b's timer stopped and
// returns how long that took.
func probeOutside(b *testing.B, probe *BandwidthProbe) time.Duration {
	b.StopTimer()
	defer b.StartTimer()
	start := time.Now()
	if _, err := probe.Measure(1); err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}
