package cpu

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

// Sgemm benchmarks at the trainer's shapes, one thread, for every kernel
// set: a weight W of out×in features (widths 256-1536 and FFN matrices
// with 4096) and a batch of 2048 tokens, in the three products a linear
// layer runs:
//
//	NT  forward  y = x·Wᵀ     m = tokens, n = out, k = in
//	NN  backward dx = dy·W    m = tokens, n = in,  k = out
//	TN  weights  dW += dyᵀ·x  m = out,    n = in,  k = tokens
//
// GFLOP/s counts 2·m·n·k per call; %peak divides it by the set's FMAPeak
// probe (BenchmarkFMAPeak), measured once per set. The generic set runs
// only the shapes up to 1024×1024 (it takes seconds per call beyond).
//
//	go test -run '^$' -bench 'Sgemm|FMAPeak' -benchtime 3x ./cpu

var sgemmBenchWeights = [][2]int{ // {out, in}
	{256, 256}, {384, 384}, {512, 512}, {1024, 1024}, {1536, 1536},
	{4096, 1024}, {1024, 4096}, {4096, 1536}, {1536, 4096},
}

const sgemmBenchTokens = 2048

// setPeaks caches each set's FMA peak: kernel set name → GFLOP/s.
var setPeaks sync.Map

// setPeak returns the FMA peak of set k, measured on first use.
func setPeak(k kernels) float64 {
	if g, ok := setPeaks.Load(k.name); ok {
		return g.(float64)
	}
	g := fmaPeak(&k.sgemm, 200*time.Millisecond)
	setPeaks.Store(k.name, g)
	return g
}

// benchShape returns a layout's m, n, k for a weight of out×in features.
func (l sgemmLayout) benchShape(out, in int) (m, n, k int) {
	switch l.name {
	case "NT":
		return sgemmBenchTokens, out, in
	case "NN":
		return sgemmBenchTokens, in, out
	}
	return out, in, sgemmBenchTokens
}

func BenchmarkSgemm(b *testing.B) {
	for _, k := range kernelSets() {
		for _, l := range sgemmLayouts {
			for _, w := range sgemmBenchWeights {
				if k.name == generic.name && w[0]*w[1] > 1024*1024 {
					continue
				}
				m, n, kk := l.benchShape(w[0], w[1])
				b.Run(fmt.Sprintf("%s/%s/m%d_n%d_k%d", k.name, l.name, m, n, kk), func(b *testing.B) {
					ar, ac, br, bc := l.storedShape(m, n, kk)
					a, bm, c := make([]float32, ar*ac), make([]float32, br*bc), make([]float32, m*n)
					for i := range a {
						a[i] = float32(i%13) - 6
					}
					for i := range bm {
						bm[i] = float32(i%7) - 3
					}
					peak := setPeak(k)
					calls := 0
					for b.Loop() {
						sgemm(&k.sgemm, l.aRows, l.bRows, m, n, kk, a, ac, bm, bc, c, n)
						calls++
					}
					gflops := 2 * float64(m) * float64(n) * float64(kk) * float64(calls) / b.Elapsed().Seconds() / 1e9
					b.ReportMetric(gflops, "GFLOP/s")
					b.ReportMetric(100*gflops/peak, "%peak")
				})
			}
		}
	}
}

// BenchmarkFMAPeak: each set's register-only FMA probe, the ceiling of
// BenchmarkSgemm's GFLOP/s.
func BenchmarkFMAPeak(b *testing.B) {
	for _, k := range kernelSets() {
		b.Run(k.name, func(b *testing.B) {
			var g float64
			for b.Loop() {
				g = max(g, fmaPeak(&k.sgemm, 50*time.Millisecond))
			}
			b.ReportMetric(g, "GFLOP/s")
		})
	}
}

// BenchmarkSgemmTile: each set's micro-kernel alone, its panels (kc = the
// set's block) and tile staying in L1: the ceiling the driver's packing and
// cache traffic take from.
func BenchmarkSgemmTile(b *testing.B) {
	for _, k := range kernelSets() {
		s := k.sgemm
		b.Run(fmt.Sprintf("%s/%dx%dx%d", k.name, s.mr, s.nr, s.kc), func(b *testing.B) {
			a, bm, c := make([]float32, s.kc*s.mr), make([]float32, s.kc*s.nr), make([]float32, s.mr*s.nr)
			peak := setPeak(k)
			calls := 0
			for b.Loop() {
				s.tile(s.kc, a, bm, c, s.nr)
				calls++
			}
			gflops := 2 * float64(s.mr*s.nr*s.kc) * float64(calls) / b.Elapsed().Seconds() / 1e9
			b.ReportMetric(gflops, "GFLOP/s")
			b.ReportMetric(100*gflops/peak, "%peak")
		})
	}
}
