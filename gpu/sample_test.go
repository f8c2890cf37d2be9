package gpu

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/bitvk/bitvk/nn"
	"github.com/bitvk/bitvk/nn/nntest"
)

// sampleKernel runs the sample kernel alone on logits for the step of s
// with history, as ForwardSample does after the head: the plan, the
// kernel, and the host's finish (with its fallbacks).
type sampleKernel struct {
	a      opsAdapter
	logits []byte
}

func newSampleKernel(t testing.TB, logits []float32, split bool) *sampleKernel {
	a := newOps(t, false)
	b := a.b
	b.sampleSplit = split
	b.c = &nn.Config{Vocab: len(logits)}
	b.logits = a.buf(f32Bytes(logits))
	if _, err := b.sampleBuffers(); err != nil {
		t.Fatal(err)
	}
	return &sampleKernel{a: a, logits: f32Bytes(logits)}
}

// step returns the device's token, or ok = false when the plan needs the
// logits; tamper may edit the kernel's result before the host reads it.
func (k *sampleKernel) step(s *nn.Sampler, history []int32, tamper func(res []uint32)) (id int32, ok bool, err error) {
	b := k.a.b
	if !b.planSample(s, history) {
		return -1, false, nil
	}
	if err := b.dev.Upload(b.logits, 0, k.logits); err != nil { // the kernel penalizes in place
		return -1, false, err
	}
	k.a.run(func(rc *recorder) { rc.sample() })
	if tamper != nil {
		tamper(u32View(b.smp.resHost.Mapped(), resWords))
	}
	id, err = b.finishSample(s, history)
	return id, true, err
}

func sampleVocab(r *rand.Rand, n int, coarse bool) []float32 {
	logits := make([]float32, n)
	for i := range logits {
		x := r.NormFloat64() * 2
		if coarse {
			x = math.Round(x*2) / 2 // many ties
		}
		logits[i] = float32(x)
	}
	for range 20 {
		logits[r.IntN(n)] = float32(8 + 4*r.Float64())
	}
	logits[r.IntN(n)] = float32(math.NaN())
	logits[r.IntN(n)] = float32(math.Inf(-1))
	logits[r.IntN(n)] = float32(math.Copysign(0, -1))
	return logits
}

// The device-sampled token equals nn.Sampler's on the same logits, seed,
// configuration and history, step after step, for every candidate rule:
// top-k alone and with top-p and min-p, min-p alone, temperatures,
// penalties, greedy with penalties, ties, NaN and ±Inf, and the overflow
// fallback of a loose min-p.
func TestSampleMatchesSampler(t *testing.T) {
	forSplits(t, testSampleMatchesSampler)
}

// forSplits runs test with the sample kernel in chunks (two dispatches,
// as GPUs run it) and in one workgroup (as CPU devices run it).
func forSplits(t *testing.T, test func(t *testing.T, split bool)) {
	for _, split := range []bool{true, false} {
		t.Run(map[bool]string{true: "chunks", false: "one workgroup"}[split], func(t *testing.T) { test(t, split) })
	}
}

func testSampleMatchesSampler(t *testing.T, split bool) {
	r := rand.New(rand.NewPCG(31, 32))
	spread := sampleVocab(r, 5000, false)
	coarse := sampleVocab(r, 5000, true)
	inf := slices.Clone(spread)
	inf[10], inf[4000], inf[4001] = float32(math.Inf(1)), float32(math.Inf(1)), float32(math.Inf(1))
	flat := make([]float32, 5000) // three values: ties decide every top-k
	for i := range flat {
		flat[i] = float32(r.IntN(3)) / 2
	}
	flat[77] = float32(math.Copysign(0, -1))
	// Tokens at the float32 neighbours of 1000 + ln(min_p) for the min-p
	// configurations below: the threshold's rounding is what decides.
	edge := make([]float32, 5000)
	for i := range edge {
		edge[i] = -50
	}
	edge[0] = 1000
	for j, p := range []float32{0.05, 0.2} {
		x := float32(1000 + math.Log(float64(p)))
		for d := range 9 {
			y := x
			for range d {
				y = math.Nextafter32(y, 0)
			}
			for range 8 - d {
				y = math.Nextafter32(y, 2000)
			}
			edge[1+20*j+d] = y
		}
	}
	configs := []nn.SamplerConfig{
		{Temperature: 0.8, TopK: 40},
		{Temperature: 1.3, TopK: 40, TopP: 0.9},
		{Temperature: 0.7, TopK: 40, TopP: 0.95, MinP: 0.05, RepeatPenalty: 1.1},
		{Temperature: 1, MinP: 0.05},
		{Temperature: 2, MinP: 0.2, RepeatPenalty: 1.3, FrequencyPenalty: 0.1, PresencePenalty: 0.2},
		{Temperature: 0.9, TopK: 1000, RepeatPenalty: 0.8, RepeatLastN: -1},
		{Temperature: 5, TopK: 7, FrequencyPenalty: 0.5},
		{RepeatPenalty: 1.5, TopK: 3}, // greedy with penalties: the device's top-1
		{Temperature: 1, MinP: 1e-20}, // every token qualifies: the overflow fallback
	}
	steps := 0
	for li, logits := range [][]float32{spread, coarse, inf, flat, edge} {
		k := newSampleKernel(t, logits, split)
		for ci, c := range configs {
			for seed := range uint64(10) {
				c.Seed = seed + uint64(100*ci+1000*li)
				host, err := nn.NewSampler(c)
				if err != nil {
					t.Fatal(err)
				}
				dev, _ := nn.NewSampler(c)
				history := []int32{1, 2, 3, 2, int32(r.IntN(5000))}
				for step := range 3 {
					want, werr := host.Sample(logits, history)
					before := k.a.b.smp.fallbacks
					got, ok, gerr := k.step(dev, history, nil)
					if !ok {
						t.Fatalf("%+v: the plan needs the logits", c)
					}
					if got != want || (gerr == nil) != (werr == nil) {
						t.Fatalf("vocabulary %d, %+v, step %d: device %d, %v; host %d, %v", li, c, step, got, gerr, want, werr)
					}
					steps++
					// Only min-p sets can overflow; a min-p of 1e-20 does
					// below a finite maximum on the spread vocabulary.
					fell := k.a.b.smp.fallbacks != before
					if fell && (c.MinP == 0 || c.TopK > 0) || !fell && c.MinP == 1e-20 && li == 0 {
						t.Errorf("vocabulary %d, %+v: fell back to the host: %v", li, c, fell)
					}
					history = append(history, want)
				}
			}
		}
	}
	if steps != 5*len(configs)*10*3 {
		t.Errorf("%d steps compared", steps)
	}
}

// A penalized value that differs from nn.Sampler.Penalize's (as on a device
// whose division is not correctly rounded) sends the step to the host's
// sampler on the downloaded logits, with the window's raw values restored.
func TestSamplePenaltyMismatch(t *testing.T) {
	forSplits(t, testSamplePenaltyMismatch)
}

func testSamplePenaltyMismatch(t *testing.T, split bool) {
	r := rand.New(rand.NewPCG(5, 6))
	logits := sampleVocab(r, 3000, false)
	k := newSampleKernel(t, logits, split)
	history := []int32{7, 8, 9, 7}
	for _, c := range []nn.SamplerConfig{
		{Temperature: 1, TopK: 20, RepeatPenalty: 1.3},
		{Temperature: 1, MinP: 0.01, RepeatPenalty: 1.3},
	} {
		for seed := range uint64(20) {
			c.Seed = seed
			host, _ := nn.NewSampler(c)
			dev, _ := nn.NewSampler(c)
			want, _ := host.Sample(logits, history)
			before := k.a.b.smp.fallbacks
			got, _, err := k.step(dev, history, func(res []uint32) { res[resPen] ^= 1 })
			if err != nil || got != want {
				t.Fatalf("%+v: tampered step %d, %v; host %d", c, got, err, want)
			}
			if k.a.b.smp.fallbacks != before+1 {
				t.Fatalf("%+v: a wrong penalized value did not fall back", c)
			}
		}
	}
}

// The kernel on a vocabulary of the 2B model's size.
func TestSampleLargeVocab(t *testing.T) {
	forSplits(t, testSampleLargeVocab)
}

func testSampleLargeVocab(t *testing.T, split bool) {
	r := rand.New(rand.NewPCG(7, 8))
	logits := sampleVocab(r, 128256, false)
	k := newSampleKernel(t, logits, split)
	for _, c := range []nn.SamplerConfig{
		{Temperature: 0.8, TopK: 40, TopP: 0.95, RepeatPenalty: 1.1, Seed: 1},
		{Temperature: 0.8, MinP: 0.05, Seed: 2},
	} {
		host, _ := nn.NewSampler(c)
		dev, _ := nn.NewSampler(c)
		history := []int32{5, 6, 7}
		for range 3 {
			want, _ := host.Sample(logits, history)
			if got, _, err := k.step(dev, history, nil); err != nil || got != want {
				t.Fatalf("%+v: device %d, %v; host %d", c, got, err, want)
			}
			history = append(history, want)
		}
	}
	if k.a.b.smp.fallbacks != 0 {
		t.Errorf("%d steps fell back to the host", k.a.b.smp.fallbacks)
	}
	s, _ := nn.NewSampler(nn.SamplerConfig{Temperature: 1, TopK: sampleCap + 1})
	if _, ok, _ := k.step(s, nil, nil); ok {
		t.Errorf("top-k %d beyond the device's %d ran on the device", sampleCap+1, sampleCap)
	}
}

// With every logit NaN or −Inf the device finds no candidate, and the step
// fails as Sample does.
func TestSampleNoCandidate(t *testing.T) {
	forSplits(t, testSampleNoCandidate)
}

func testSampleNoCandidate(t *testing.T, split bool) {
	logits := make([]float32, 3000)
	for i := range logits {
		logits[i] = [...]float32{float32(math.NaN()), float32(math.Inf(-1))}[i%2]
	}
	k := newSampleKernel(t, logits, split)
	for _, c := range []nn.SamplerConfig{{Temperature: 1, TopK: 5}, {Temperature: 1, MinP: 0.1}, {RepeatPenalty: 2}} {
		s, _ := nn.NewSampler(c)
		id, ok, err := k.step(s, []int32{1, 2}, nil)
		if !ok || id != -1 || !errors.Is(err, nn.ErrNoCandidate) {
			t.Errorf("%+v: %d, %v (on the device: %v), want nn.ErrNoCandidate", c, id, err, ok)
		}
	}
}

// logitsOnly hides ForwardSample and ForwardArgmax: an Engine over it
// samples the backend's logits on the host.
type logitsOnly struct{ nn.Backend }

// A seeded generation on the Vulkan backend, sampled on the device, gives
// the stream that the same seed gives when the host samples the backend's
// logits; the configurations without a bounded candidate set sample the
// logits on the host and agree too.
func TestGenerateSampledOnDevice(t *testing.T) {
	m := nntest.NewModel(t, "tiny", nntest.StoreI2S, 3)
	b := open(t, m.Config, m.Weights, Options{Context: 64, Batch: 3}) // the prompt takes two submits
	for _, c := range []nn.SamplerConfig{
		{Temperature: 0.8, TopK: 40, TopP: 0.95, MinP: 0.05, RepeatPenalty: 1.1, Seed: 1},
		{Temperature: 1.5, TopK: 10, Seed: 2},
		{Temperature: 1, MinP: 0.02, FrequencyPenalty: 0.3, Seed: 3},
		{RepeatPenalty: 1.3, Seed: 4},           // greedy with penalties
		{Temperature: 0.9, TopP: 0.9, Seed: 5},  // the logits path
		{Temperature: 0.9, Seed: 6},             // the logits path
		{Temperature: 0.9, TopK: 5000, Seed: 7}, // top-k ≥ vocabulary: the logits path
		{Temperature: 0.9, TopK: 3000, Seed: 8}, // beyond sampleCap (if the vocabulary allows)
		{Temperature: 2, TopK: 40, RepeatLastN: -1, RepeatPenalty: 2, Seed: 9},
	} {
		gen := func(be nn.Backend) []int32 {
			e, err := nn.NewEngine(m.Config, be)
			if err != nil {
				t.Fatal(err)
			}
			s, err := nn.NewSampler(c)
			if err != nil {
				t.Fatal(err)
			}
			var got []int32
			if _, err := e.Generate(context.Background(), []int32{1, 17, 200, 3}, nn.GenerateOptions{MaxTokens: 24}, s, func(id int32) error {
				got = append(got, id)
				return nil
			}); err != nil {
				t.Fatalf("%+v: Generate: %v", c, err)
			}
			return got
		}
		want := gen(logitsOnly{b})
		before := 0
		if b.smp != nil {
			before = b.smp.fallbacks
		}
		got := gen(b)
		if !slices.Equal(got, want) {
			t.Errorf("%+v: sampled on the device %v, on the host %v", c, got, want)
		}
		host := b.smp.fallbacks - before
		s, _ := nn.NewSampler(c)
		p := s.Plan(m.Config.Vocab)
		bounded := p.Rule != nn.NeedLogits && p.K <= sampleCap
		if bounded && host != 0 || !bounded && host != len(got) {
			t.Errorf("%+v: %d of %d steps sampled on the host", c, host, len(got))
		}
	}
}

// BenchmarkSampleKernel: the sample kernel (with the plan's upload and the
// result's download) on a vocabulary of the 2B model's size, top-k 40 and
// min-p 0.05, in chunks (as GPUs run it) and in one workgroup.
func BenchmarkSampleKernel(b *testing.B) {
	r := rand.New(rand.NewPCG(9, 10))
	logits := sampleVocab(r, 128256, false)
	for _, split := range []bool{true, false} {
		for _, c := range []nn.SamplerConfig{{Temperature: 0.8, TopK: 40}, {Temperature: 0.8, MinP: 0.05}} {
			name := fmt.Sprintf("%s/topk%d-minp%g", map[bool]string{true: "chunks", false: "one"}[split], c.TopK, c.MinP)
			b.Run(name, func(b *testing.B) {
				k := newSampleKernel(b, logits, split)
				s, _ := nn.NewSampler(c)
				if !k.a.b.planSample(s, nil) {
					b.Fatal("the plan needs the logits")
				}
				for b.Loop() {
					k.a.run(func(rc *recorder) { rc.sample() })
				}
			})
		}
	}
}
