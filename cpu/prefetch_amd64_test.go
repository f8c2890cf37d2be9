//go:build !purego

package cpu

import (
	"fmt"
	"runtime"
	"testing"
	"time"
)

// BenchmarkPrefetchVersions: the versions of each decode row kernel (the
// heads', the ternary products'), of attention's over a long context, and
// of the few-token ones (the ternary products, the float16 and int8 heads
// of four tokens) that differ only in their
// software prefetches (or tiles): one per 256 bytes of a row, "steps"; one
// per 64-byte line into L2, "lines"; each line twice, into L2 16 KiB ahead
// and into L1 2 KiB ahead, "two"; none, "hw" (the same bits,
// TestPrefetchVersions), each over a head's worth of the 2B shape from DRAM, on
// one thread and on every CPU, each iteration running every version once
// and the read probe after each, so that all see the same moments of a
// VM's bandwidth. It reports each version's rate over the probe's
// (VERSION-of-probe, the sums of the times over the iterations) and names
// the one this CPU's sets take (forPrefetcher) in the sub-benchmark: run it
// on a new kind of CPU to see whether that choice holds there.
//
//	go test -run '^$' -bench PrefetchVersions -benchtime 10x ./cpu
func BenchmarkPrefetchVersions(b *testing.B) {
	if !hasAVX2 || !hasAVX512VNNI {
		b.Skip("no AVX-512 VNNI on this CPU: the versions cannot run")
	}
	const rows, n = 128256, 2560 // the 2B shape's head: 657 MB in float16
	type version struct {
		name string
		op   func(p *pool)
	}
	type kernel struct {
		name     string
		bytes    int
		versions []version
		takes    string // the version this CPU's avx512vnni set takes
	}
	var kernels []kernel

	w16, xf, outF := f16Head(rows, n)
	f16 := func(f func(w []uint16, stride int, x []float32, out []float32)) func(p *pool) {
		return func(p *pool) {
			p.runChunks(rows, 64, func(_, lo, hi int) { f(w16[lo*n:], n, xf, outF[lo:hi]) })
		}
	}
	kernels = append(kernels, kernel{"dotF16Rows", 2 * len(w16), []version{
		{"steps", f16(dotF16RowsAVX512)}, {"hw", f16(dotF16RowsAVX512HW)},
		{"two", f16(dotF16RowsAVX512Two)}}, forPrefetcher("steps", "two", "hw")})

	w8, x8, bias := blockHead(rows, n)
	outI := make([]int32, rows)
	i8 := func(f func(w []int8, stride int, x []int8, out []int32)) func(p *pool) {
		return func(p *pool) {
			p.runChunks(rows, 64, func(_, lo, hi int) { f(w8[lo*n:], n, x8, outI[lo:hi]) })
		}
	}
	kernels = append(kernels, kernel{"dotI8Rows", len(w8), []version{
		{"steps", i8(dotI8RowsVNNI)}, {"hw", i8(dotI8RowsVNNIHW)},
		{"two", i8(dotI8RowsVNNITwo)}}, forPrefetcher("steps", "two", "hw")})

	for _, group := range []int{16, 32} {
		scales := blockScales(rows, n, group)
		g := n / group
		blocks := func(f func(w []int8, scales []float32, group int, x []int8, xBias []int32, out []float32)) func(p *pool) {
			return func(p *pool) {
				p.runChunks(rows, 64, func(_, lo, hi int) {
					f(w8[lo*n:hi*n], scales[lo*g:hi*g], group, x8, bias, outF[lo:hi])
				})
			}
		}
		kernels = append(kernels, kernel{fmt.Sprintf("dotBlockRows/group%d", group), len(w8) + 4*len(scales), []version{
			{"steps", blocks(dotBlockRowsVNNI)}, {"hw", blocks(dotBlockRowsVNNIHW)},
			{"two", blocks(dotBlockRowsVNNITwo)}}, forPrefetcher("steps", "two", "hw")})
	}

	// Q4_0 in its 4.5 bits: twice the rows, 370 MB.
	wn, sn, xn, bn := nibbleHead(2*rows, n)
	outN := make([]float32, 2*rows)
	nibbles := func(f func(w []byte, scales []uint16, x []int8, xBias []int32, out []float32)) func(p *pool) {
		return func(p *pool) {
			p.runChunks(2*rows, 64, func(_, lo, hi int) {
				f(wn[lo*n/2:hi*n/2], sn[lo*n/32:hi*n/32], xn, bn, outN[lo:hi])
			})
		}
	}
	kernels = append(kernels, kernel{"dotNibbleRows", len(wn) + 2*len(sn), []version{
		{"steps", nibbles(dotNibbleRowsVNNI)}, {"hw", nibbles(dotNibbleRowsVNNIHW)},
		{"two", nibbles(dotNibbleRowsVNNITwo)}}, forPrefetcher("steps", "two", "hw")})

	// Q6_K in its 6.75 bits (its plain version prefetches every line).
	ws, ss, xs, bs := benchSixHead(rows, n)
	six := func(f func(w, scales []byte, x []int8, xBias []int32, out []float32)) func(p *pool) {
		return func(p *pool) {
			p.runChunks(rows, 64, func(_, lo, hi int) {
				f(ws[lo*3*n/4:hi*3*n/4], ss[lo*3*n/32:hi*3*n/32], xs, bs, outF[lo:hi])
			})
		}
	}
	kernels = append(kernels, kernel{"dotSixRows", len(ws) + len(ss), []version{
		{"lines", six(dotSixRowsVNNI)}, {"hw", six(dotSixRowsVNNIHW)}, {"two", six(dotSixRowsVNNITwo)}}, forPrefetcher("lines", "two", "hw")})

	// The ternary products of four tokens (four served streams' step) in
	// halves per thread, as a pass takes them; rows as many as the head's
	// (82 MB). Their versions differ in the tiles of 4-5 tokens: adjacent
	// rows with prefetches into L2 ("steps"), rows a quarter of the call's
	// apart ("lines", Intel's), the same with near prefetches ("hw").
	const tokens = 4
	stride := n / 4
	wt := new(weightArena).bytes(rows * stride)
	for i := range wt {
		wt[i] = byte(i*7) & 0xAA
	}
	xt := make([]int8, tokens*n)
	for i := range xt {
		xt[i] = int8(i%251 - 125)
	}
	outT := make([]int32, tokens*rows)
	products := func(f ternaryMatMulFunc) func(p *pool) {
		return func(p *pool) {
			p.run(rows, 16, func(_, lo, hi int) { f(wt[lo*stride:], stride, hi-lo, xt, n, n, tokens, outT[lo:], rows) })
		}
	}
	// A decode step's ternary products: the same rows, one token (the
	// plain version prefetches every line).
	outR := make([]int32, rows)
	ternaryRowsOf := func(f func(w []byte, stride int, x []int8, out []int32)) func(p *pool) {
		return func(p *pool) {
			p.run(rows, 16, func(_, lo, hi int) { f(wt[lo*stride:hi*stride], stride, xt[:n], outR[lo:hi]) })
		}
	}
	kernels = append(kernels, kernel{"ternaryRows", len(wt), []version{
		{"lines", ternaryRowsOf(ternaryRowsVNNI)}, {"hw", ternaryRowsOf(ternaryRowsVNNIHW)}, {"two", ternaryRowsOf(ternaryRowsVNNITwo)}}, forPrefetcher("lines", "two", "hw")})
	kernels = append(kernels, kernel{fmt.Sprintf("ternaryMatMul/%dtokens", tokens), len(wt), []version{
		{"steps", products(ternaryMatMulVNNI)}, {"lines", products(ternaryMatMulVNNILines)}, {"hw", products(ternaryMatMulVNNIHW)}}, forPrefetcher("steps", "lines", "hw")})
	xf4 := make([]float32, tokens*n)
	for i := range xf4 {
		xf4[i] = float32(i%7) - 3
	}
	outF4 := make([]float32, tokens*rows)
	f16few := func(f func(w []uint16, stride, rows int, x []float32, xStride, n, tokens int, out []float32, outStride int)) func(p *pool) {
		return func(p *pool) {
			p.runChunks(rows, 64, func(_, lo, hi int) { f(w16[lo*n:], n, hi-lo, xf4, n, n, tokens, outF4[lo:], rows) })
		}
	}
	kernels = append(kernels, kernel{"dotF16MatMul/4tokens", 2 * len(w16), []version{
		{"steps", f16few(dotF16MatMulAVX512)}, {"hw", f16few(dotF16MatMulAVX512HW)}, {"two", f16few(dotF16MatMulAVX512Two)}}, forPrefetcher("steps", "two", "hw")})
	x84 := make([]int8, tokens*n)
	for i := range x84 {
		x84[i] = int8(i%251 - 125)
	}
	outI4 := make([]int32, tokens*rows)
	bias4 := make([]int32, tokens)
	i8few := func(f func(w []int8, stride, rows int, x []int8, xStride, n, tokens int, out []int32, outStride int, bias []int32)) func(p *pool) {
		return func(p *pool) {
			p.runChunks(rows, 64, func(_, lo, hi int) { f(w8[lo*n:], n, hi-lo, x84, n, n, tokens, outI4[lo:], rows, bias4) })
		}
	}
	kernels = append(kernels, kernel{"dotI8MatMul/4tokens", len(w8), []version{
		{"steps", i8few(dotI8MatMulVNNI)}, {"hw", i8few(dotI8MatMulVNNIHW)}, {"two", i8few(dotI8MatMulVNNITwo)}}, forPrefetcher("steps", "two", "hw")})
	// A decode step's attention at 4,001 positions of the 2B shape (as
	// BenchmarkRowsThreads), its keys' and values' kernels in their
	// versions.
	attName, attBytes, attend := longAttention(runtime.NumCPU())
	attention := func(scores func(kt []uint16, hd, n int, q []float32, nq int, out []float32, outStride int),
		values func(a []float32, aStride, np int, v []uint16, stride int, y []float32, yStride, n int)) func(p *pool) {
		k := avx512VNNIKernels
		k.kScores, k.axpyF16Rows4 = kScoresWhole(scores), checkAxpyF16Rows4(values)
		return func(p *pool) { attend(k, p) }
	}
	kernels = append(kernels, kernel{attName, attBytes, []version{
		{"lines", attention(kScoresAVX512, axpyF16Rows4AVX512)}, {"two", attention(kScoresAVX512Two, axpyF16Rows4AVX512Two)}},
		forPrefetcher("lines", "two", "lines")})

	threads := []int{1}
	if c := runtime.NumCPU(); c > 1 {
		threads = append(threads, c)
	}
	for _, kn := range kernels {
		for _, t := range threads {
			b.Run(fmt.Sprintf("%s/threads%d/takes-%s", kn.name, t, kn.takes), func(b *testing.B) {
				p := newPool(t)
				defer p.close()
				probe, err := NewBandwidthProbe(t, 512<<20)
				if err != nil {
					b.Fatal(err)
				}
				defer probe.Close()
				kernel := make([]time.Duration, len(kn.versions))
				var read time.Duration
				for b.Loop() {
					for j, v := range kn.versions {
						start := time.Now()
						v.op(p)
						kernel[j] += time.Since(start)
						read += probeOutside(b, probe)
					}
				}
				// The probe ran once after every call of every version.
				iters := float64(b.N)
				probeRate := float64(len(probe.buf)) * iters * float64(len(kn.versions)) / read.Seconds()
				for j, v := range kn.versions {
					rate := float64(kn.bytes) * iters / kernel[j].Seconds()
					b.ReportMetric(rate/probeRate, v.name+"-of-probe")
				}
				b.ReportMetric(probeRate/1e9, "probe-GB/s")
			})
		}
	}
}

// BenchmarkTernaryMatMulGFNI: a prefill's products (128 tokens through
// l1Blocks, the 2B shape's matrices) in their chunks by ternaryMatMulVNNI
// and by ternaryMatMulVNNIGFNI (the same bits), alternated in each
// iteration, on one thread and on every CPU (rows in halves, as a pass
// takes them); each version's best call as VERSION-GMAC/s. The name says
// which the avx512vnni set takes here (withGFNI): run it on a new kind
// of CPU to see whether that choice holds there.
//
//	go test -run '^$' -bench TernaryMatMulGFNI -benchtime 10x ./cpu
func BenchmarkTernaryMatMulGFNI(b *testing.B) {
	if !hasAVX2 || !hasAVX512VNNI || !hasGFNI {
		b.Skip("no AVX-512 VNNI and GFNI on this CPU: the versions cannot run")
	}
	versions := []struct {
		name string
		f    ternaryMatMulFunc
	}{
		{"plain", l1Blocks(ternaryMatMulVNNI, ternaryMatMulVNNI, l1Activations, l2Panel)},
		{"gfni", l1Blocks(ternaryMatMulVNNI, ternaryMatMulVNNIGFNI, l1Activations, l2Panel)},
	}
	threads := []int{1}
	if c := runtime.NumCPU(); c > 1 {
		threads = append(threads, c)
	}
	chosen := withGFNI("plain", "gfni")
	for _, t := range threads {
		for _, s := range []struct{ rows, n, tokens int }{{3840, 2560, 128}, {13824, 2560, 128}, {2560, 6912, 128}} {
			b.Run(fmt.Sprintf("threads%d/%dx%dx%d/takes-%s", t, s.rows, s.n, s.tokens, chosen), func(b *testing.B) {
				p := newPool(t)
				defer p.close()
				rng := newRand()
				w := aligned(randomTernaryRows(rng, s.rows, s.n, s.n/4))
				x := aligned(randomI8(rng, s.tokens*s.n, -128, 127, 127))
				out := make([]int32, s.tokens*s.rows)
				best := make([]time.Duration, len(versions))
				for b.Loop() {
					for j, v := range versions {
						start := time.Now()
						p.run(s.rows, 16, func(_, lo, hi int) {
							v.f(w[lo*s.n/4:], s.n/4, hi-lo, x, s.n, s.n, s.tokens, out[lo:], s.rows)
						})
						if d := time.Since(start); best[j] == 0 || d < best[j] {
							best[j] = d
						}
					}
				}
				macs := float64(s.rows) * float64(s.n) * float64(s.tokens)
				for j, v := range versions {
					b.ReportMetric(macs/best[j].Seconds()/1e9, v.name+"-GMAC/s")
				}
			})
		}
	}
}
