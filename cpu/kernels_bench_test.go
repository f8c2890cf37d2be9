package cpu

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/bitvk/bitvk/nn"
)

// Kernel benchmarks at the shapes of the 2B model, one thread, for every
// kernel set: MB/s counts the weight bytes read (b.SetBytes). "L3" runs
// reuse one matrix, which then lives in the 32 MiB L3; "DRAM" runs cycle
// through copies totalling ≥ 128 MiB, as decode does through the model's
// layers. Weights and the probe's buffer come from a weightArena, in huge
// pages where the system gives them, as the engine's do. Compare with
// BenchmarkSumBytes, the plain read of the same sizes.
//
//	go test -run '^$' -bench . ./cpu

// dramBytes is the total size the DRAM variants cycle through: 4× the L3.
const dramBytes = 128 << 20

// copies returns how many matrices of size bytes a variant cycles through.
func copies(size int, dram bool) int {
	if !dram {
		return 1
	}
	return (dramBytes + size - 1) / size
}

// probeBuf is the plain read the DRAM benchmarks compare with: 256 MiB,
// 8× the L3, made once.
var probeBuf []byte

// probed runs op(i) for i < b.N, each call reading bytes bytes of weights
// from DRAM, and after each call (outside the timer) reads as many bytes of
// probeBuf with the fastest sumBytes, the read probe of bitvk bench.
// It reports the kernel's GB/s, the probe's, and their ratio "of-probe":
// measured interleaved, so that both see the same machine (its load, its
// clock) and the ratio is steadier than either figure.
func probed(b *testing.B, bytes int, op func(i int)) {
	p := newPool(1) // no helpers: the probe runs on the calling thread
	defer p.close()
	probedPool(b, p, bytes, op)
}

// blockHead returns the codes of a rows × n block-type head slice (int8,
// which the int8 head's benchmark reads too), an activation vector and
// its blockBias.
func blockHead(rows, n int) (w, x []int8, bias []int32) {
	w = new(weightArena).i8(rows * n)
	for i := range w {
		w[i] = int8(i*5) >> 2
	}
	x = make([]int8, n)
	for i := range x {
		x[i] = int8(i%255 - 127)
	}
	bias = make([]int32, n/4)
	blockBias(x, bias)
	return w, x, bias
}

// blockScales returns the group scales of blockHead's rows.
func blockScales(rows, n, group int) []float32 {
	scales := make([]float32, rows*n/group)
	for i := range scales {
		scales[i] = float32(i%13) / 7
	}
	return scales
}

// nibbleHead returns a rows × n Q4_0 head slice in dotNibbleRows' form
// (codes and float16 scales, in huge pages as a loaded head's) and an
// activation vector with its nibbleBias.
func nibbleHead(rows, n int) (w []byte, scales []uint16, x []int8, bias []int32) {
	a := new(weightArena)
	w, scales = a.bytes(rows*n/2), a.f16(rows*n/32)
	for i := range w {
		w[i] = byte(i * 37)
	}
	for i := range scales {
		scales[i] = nn.F32ToF16(float32(i%13) / 7)
	}
	x = make([]int8, n)
	for i := range x {
		x[i] = int8(i%255 - 127)
	}
	bias = make([]int32, n/4)
	nibbleBias(x, bias)
	return w, scales, x, bias
}

// benchSixHead returns a rows × n Q6_K head slice in dotSixRows' form
// (codes and scales, in huge pages as a loaded head's) and an activation
// vector's sixActivations.
func benchSixHead(rows, n int) (w, scales []byte, xs []int8, bias []int32) {
	a := new(weightArena)
	w, scales = a.bytes(rows*3*n/4), a.bytes(rows*3*n/32)
	for i := range w {
		w[i] = byte(i * 37)
	}
	for i := range scales {
		scales[i] = byte(i % 13)
	}
	x := make([]int8, n)
	for i := range x {
		x[i] = int8(i%255 - 127)
	}
	xs, bias = make([]int8, n), make([]int32, n/16)
	sixActivations(x, xs, bias)
	return w, scales, xs, bias
}

// f16Head returns a rows × n float16 head slice, an activation vector
// and the outputs.
func f16Head(rows, n int) (w []uint16, x, out []float32) {
	w = new(weightArena).f16(rows * n)
	for i := range w {
		w[i] = uint16(0x3C00 + i%512)
	}
	x = make([]float32, n)
	for i := range x {
		x[i] = float32(i%7) - 3
	}
	return w, x, make([]float32, rows)
}

// ternaryCopies returns the copies of a rows × n ternary matrix a
// benchmark cycles through (copies), an activation vector and the outputs.
func ternaryCopies(rows, n int, dram bool) (ws [][]byte, x []int8, out []int32) {
	size := rows * n / 4
	ws, arena := make([][]byte, copies(size, dram)), new(weightArena)
	for i := range ws {
		ws[i] = arena.bytes(size)
		for j := range ws[i] {
			ws[i][j] = byte(j*7 + i)
		}
	}
	x = make([]int8, n)
	for i := range x {
		x[i] = int8(i)
	}
	return ws, x, make([]int32, rows)
}

func cacheName(dram bool) string {
	if dram {
		return "DRAM"
	}
	return "L3"
}

func BenchmarkTernaryRows(b *testing.B) {
	for _, k := range kernelSets() {
		for _, s := range []struct{ rows, n int }{{6912, 2560}, {2560, 6912}} {
			for _, dram := range []bool{false, true} {
				name := fmt.Sprintf("%s/%dx%d/%s", k.name, s.rows, s.n, cacheName(dram))
				b.Run(name, func(b *testing.B) {
					size := s.rows * s.n / 4
					ws, x, out := ternaryCopies(s.rows, s.n, dram)
					op := func(i int) { k.ternaryRows(ws[i%len(ws)], s.n/4, x, out) }
					if dram {
						probed(b, size, op)
						return
					}
					b.SetBytes(int64(size))
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						op(i)
					}
				})
			}
		}
	}
}

// BenchmarkTernaryMatMul: prefill of 128 tokens through a 2560×2560
// matrix; GMAC/s counts multiply-adds (rows·n·tokens per op), of-int8-peak
// divides it by the set's int8 probe (Int8Peak).
func BenchmarkTernaryMatMul(b *testing.B) {
	const rows, n, tokens = 2560, 2560, 128
	for _, k := range kernelSets() {
		peak := probePeak(k.int8Loop, float64(k.int8MACs), 100*time.Millisecond)
		b.Run(fmt.Sprintf("%s/%dx%dx%d", k.name, rows, n, tokens), func(b *testing.B) {
			w := make([]byte, rows*n/4)
			for i := range w {
				w[i] = byte(i * 7)
			}
			x := make([]int8, tokens*n)
			for i := range x {
				x[i] = int8(i * 3)
			}
			out := make([]int32, tokens*rows)
			b.SetBytes(int64(len(w)))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				k.ternaryMatMul(w, n/4, rows, x, n, n, tokens, out, rows)
			}
			sec := b.Elapsed().Seconds()
			gmacs := float64(rows) * n * tokens * float64(b.N) / sec / 1e9
			b.ReportMetric(gmacs, "GMAC/s")
			b.ReportMetric(gmacs/peak, "of-int8-peak")
			b.ReportMetric(tokens*float64(b.N)/sec, "tok/s")
		})
	}
}

// BenchmarkTernaryMatMulSets: prefill's products at the 2B shape's
// matrices, every kernel set but the twins in the same iteration (random
// codes and activations, as a model's: the AMX tiles run slower on random
// data than on zeros), each set's best call of the run reported as
// SET-GMAC/s. A busy machine slows the sets alike within an iteration, so
// their ratio is steadier than separate benchmarks' figures.
//
//	go test -run '^$' -bench TernaryMatMulSets -benchtime 15x ./cpu
func BenchmarkTernaryMatMulSets(b *testing.B) {
	var sets []kernels
	for _, k := range kernelSets() {
		if k.name != generic.name && k.name != goKernels.name {
			sets = append(sets, k)
		}
	}
	for _, s := range []struct{ rows, n, tokens int }{
		{3840, 2560, 128}, {2560, 2560, 128}, {13824, 2560, 128}, {2560, 6912, 128},
		{6912, 2560, 64}, {6912, 2560, 16},
	} {
		b.Run(fmt.Sprintf("%dx%dx%d", s.rows, s.n, s.tokens), func(b *testing.B) {
			rng := newRand()
			w := aligned(randomTernaryRows(rng, s.rows, s.n, s.n/4))
			x := aligned(randomI8(rng, s.tokens*s.n, -128, 127, 127))
			out := make([]int32, s.tokens*s.rows)
			best := make([]time.Duration, len(sets))
			for i := 0; i < b.N; i++ {
				for j, k := range sets {
					t := time.Now()
					k.ternaryMatMul(w, s.n/4, s.rows, x, s.n, s.n, s.tokens, out, s.rows)
					if d := time.Since(t); best[j] == 0 || d < best[j] {
						best[j] = d
					}
				}
			}
			macs := float64(s.rows) * float64(s.n) * float64(s.tokens)
			for j, k := range sets {
				b.ReportMetric(macs/best[j].Seconds()/1e9, k.name+"-GMAC/s")
			}
		})
	}
}

// BenchmarkDotF16Rows: a 32768-row slice of the float16 output head
// (the whole head is 128256 rows).
func BenchmarkDotF16Rows(b *testing.B) {
	const rows, n = 32768, 2560
	for _, k := range kernelSets() {
		b.Run(fmt.Sprintf("%s/%dx%d", k.name, rows, n), func(b *testing.B) {
			w, x, out := f16Head(rows, n)
			probed(b, 2*len(w), func(int) { k.dotF16Rows(w, n, x, out) })
		})
	}
}

// BenchmarkAxpyF16: one V-cache row of 128 (a head) and a long one;
// MB/s counts the float16 bytes of v.
func BenchmarkAxpyF16(b *testing.B) {
	for _, k := range kernelSets() {
		for _, n := range []int{128, 1 << 20} {
			b.Run(fmt.Sprintf("%s/%d", k.name, n), func(b *testing.B) {
				v, y := make([]uint16, n), make([]float32, n)
				for i := range v {
					v[i] = uint16(0x3C00 + i%512)
				}
				b.SetBytes(int64(2 * n))
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					k.axpyF16(0.5, v, y)
				}
			})
		}
	}
}

// BenchmarkDotI8Rows: a 32768-row slice of the int8 output head.
func BenchmarkDotI8Rows(b *testing.B) {
	const rows, n = 32768, 2560
	for _, k := range kernelSets() {
		b.Run(fmt.Sprintf("%s/%dx%d", k.name, rows, n), func(b *testing.B) {
			w := new(weightArena).i8(rows * n)
			for i := range w {
				w[i] = int8(i * 5)
			}
			x := make([]int8, n)
			for i := range x {
				x[i] = int8(i%255 - 127)
			}
			out := make([]int32, rows)
			probed(b, len(w), func(int) { k.dotI8Rows(w, n, x, out) })
		})
	}
}

// BenchmarkSumBytes: the machine's single-thread read bandwidth from L2
// (512 KiB), L3 (16 MiB) and DRAM (256 MiB).
func BenchmarkSumBytes(b *testing.B) {
	for _, k := range kernelSets() {
		for _, size := range []int{512 << 10, 16 << 20, 256 << 20} {
			b.Run(fmt.Sprintf("%s/%dKiB", k.name, size>>10), func(b *testing.B) {
				buf := new(weightArena).bytes(size)
				for i := range buf {
					buf[i] = byte(i)
				}
				b.SetBytes(int64(size))
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					k.sumBytes(buf)
				}
			})
		}
	}
}

// BenchmarkTernaryMatMulFew: the few tokens of a speculative verification
// pass (1 + k drafts) through the 6912×2560 matrix streamed from DRAM, as
// a pass streams each layer's weights; GMAC/s counts multiply-adds, and
// ternaryRows (one token) is the time to beat per weight byte.
func BenchmarkTernaryMatMulFew(b *testing.B) {
	const rows, n = 6912, 2560
	size := rows * n / 4
	ws, arena := make([][]byte, copies(size, true)), new(weightArena)
	for i := range ws {
		ws[i] = arena.bytes(size)
		for j := range ws[i] {
			ws[i][j] = byte(j*7+i) & 0xAA
		}
	}
	x := make([]int8, 16*n)
	for i := range x {
		x[i] = int8(i * 3)
	}
	out := make([]int32, 16*rows)
	for _, k := range kernelSets()[:len(kernelSets())-1] {
		for _, tokens := range []int{1, 2, 4, 8, 9, 12, 16} {
			b.Run(fmt.Sprintf("%s/%dx%dx%d", k.name, rows, n, tokens), func(b *testing.B) {
				b.SetBytes(int64(size))
				for i := 0; b.Loop(); i++ {
					k.ternaryMatMul(ws[i%len(ws)], n/4, rows, x, n, n, tokens, out, rows)
				}
				sec := b.Elapsed().Seconds()
				b.ReportMetric(float64(rows)*n*float64(tokens)*float64(b.N)/sec/1e9, "GMAC/s")
			})
		}
	}
}

// few runs one BenchmarkHeadFew case, name/tokens: call over a head slice
// of values (rows·n) held in bytes, reporting its multiply-adds as GMAC/s.
func few(b *testing.B, name string, tokens, values, bytes int, call func()) {
	b.Run(fmt.Sprintf("%s/%d", name, tokens), func(b *testing.B) {
		b.SetBytes(int64(bytes))
		for b.Loop() {
			call()
		}
		b.ReportMetric(float64(values)*float64(tokens)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GMAC/s")
	})
}

// BenchmarkHeadFew: the float16, int8, block-type (Q6_K's groups of 16)
// and Q4_0 (4.5 bits) heads over the few tokens of a speculative
// verification pass, a 32768-row slice of the 2B head (160 MiB as
// float16, beyond the L3) read once per call; GMAC/s counts multiply-adds
// (rows·n·tokens), and the FMA peak of the same run is reported beside the
// float16 one. "blocks-rows", "nibbles-rows" and "sixes-rows" are the
// block, the Q4_0 and the Q6_K (6.75 bits) heads as the row kernel per
// token over blocks of rows that stay in L2 (the way before
// dotBlockMatMul, dotNibbleMatMul and dotSixMatMul), beside "blocks",
// "nibbles" and "sixes".
func BenchmarkHeadFew(b *testing.B) {
	const rows, n = 32768, 2560
	w16 := new(weightArena).f16(rows * n)
	for i := range w16 {
		w16[i] = uint16(0x3C00 + i%512)
	}
	w8 := new(weightArena).i8(rows * n)
	for i := range w8 {
		w8[i] = int8(i * 5)
	}
	x := make([]float32, 16*n)
	x8 := make([]int8, 16*n)
	for i := range x {
		x[i] = float32(i%7) - 3
		x8[i] = int8(i%255 - 127)
	}
	out := make([]float32, 16*rows)
	out8 := make([]int32, 16*rows)
	const group = 16
	scales := make([]float32, rows*n/group)
	for i := range scales {
		scales[i] = float32(i%13) / 7
	}
	bias := make([]int32, 16*n/4)
	for t := 0; t < 16; t++ {
		blockBias(x8[t*n:(t+1)*n], bias[t*n/4:(t+1)*n/4])
	}
	w4, s4, _, _ := nibbleHead(rows, n)
	bias4 := make([]int32, 16*n/4)
	for t := 0; t < 16; t++ {
		nibbleBias(x8[t*n:(t+1)*n], bias4[t*n/4:(t+1)*n/4])
	}
	w6, s6, _, _ := benchSixHead(rows, n)
	x6, bias6 := make([]int8, 16*n), make([]int32, 16*n/16)
	for t := 0; t < 16; t++ {
		sixActivations(x8[t*n:(t+1)*n], x6[t*n:(t+1)*n], bias6[t*n/16:(t+1)*n/16])
	}
	for _, k := range kernelSets()[:len(kernelSets())-1] {
		perRow := blockedBlocks(k.dotBlockRows)
		perRow4 := blockedNibbles(k.dotNibbleRows)
		perRow6 := blockedSix(k.dotSixRows)
		peak := fmaPeak(&k.sgemm, 100*time.Millisecond) * 1e9 / 2 // multiply-adds per second
		for _, tokens := range []int{1, 2, 3, 4, 6, 9, 16} {
			b.Run(fmt.Sprintf("%s/f16/%d", k.name, tokens), func(b *testing.B) {
				b.SetBytes(int64(2 * len(w16)))
				for b.Loop() {
					k.dotF16MatMul(w16, n, rows, x, n, n, tokens, out, rows)
				}
				macs := float64(rows) * n * float64(tokens) * float64(b.N) / b.Elapsed().Seconds()
				b.ReportMetric(macs/1e9, "GMAC/s")
				b.ReportMetric(macs/peak, "of-FMA-peak")
			})
			if k.name == "avx2" { // its one-token kernel per token over L2-resident blocks (the way before dotF16MatMulAVX2)
				f := blockedF16(k.dotF16Rows)
				few(b, k.name+"/f16-rows", tokens, rows*n, 2*len(w16), func() { f(w16, n, rows, x, n, n, tokens, out, rows) })
			}
			few(b, k.name+"/i8", tokens, rows*n, len(w8), func() { k.dotI8MatMul(w8, n, rows, x8, n, n, tokens, out8, rows) })
			for _, v := range []struct {
				name string
				f    func(w []int8, scales []float32, group, rows int, x []int8, xBias []int32, n, tokens int, out []float32, outStride int)
			}{{"blocks", k.dotBlockMatMul}, {"blocks-rows", perRow}} {
				few(b, k.name+"/"+v.name, tokens, rows*n, len(w8)+4*len(scales), func() { v.f(w8, scales, group, rows, x8, bias, n, tokens, out, rows) })
			}
			for _, v := range []struct {
				name string
				f    func(w []byte, scales []uint16, rows int, x []int8, xBias []int32, n, tokens int, out []float32, outStride int)
			}{{"nibbles", k.dotNibbleMatMul}, {"nibbles-rows", perRow4}} {
				few(b, k.name+"/"+v.name, tokens, rows*n, len(w4)+2*len(s4), func() { v.f(w4, s4, rows, x8, bias4, n, tokens, out, rows) })
			}
			for _, v := range []struct {
				name string
				f    func(w []byte, scales []byte, rows int, x []int8, xBias []int32, n, tokens int, out []float32, outStride int)
			}{{"sixes", k.dotSixMatMul}, {"sixes-rows", perRow6}} {
				few(b, k.name+"/"+v.name, tokens, rows*n, len(w6)+len(s6), func() { v.f(w6, s6, rows, x6, bias6, n, tokens, out, rows) })
			}
		}
	}
}

// BenchmarkDotBlockRows: a 32768-row slice of a block-type head (Q6_K's
// groups of 16, Q8_0's and Q4_0's of 32) held as int8 codes and float32
// group scales; MB/s counts both.
func BenchmarkDotBlockRows(b *testing.B) {
	const rows, n = 32768, 2560
	w, x, bias := blockHead(rows, n)
	out := make([]float32, rows)
	for _, k := range kernelSets() {
		for _, group := range []int{16, 32} {
			scales := blockScales(rows, n, group)
			b.Run(fmt.Sprintf("%s/group%d", k.name, group), func(b *testing.B) {
				probed(b, len(w)+4*len(scales), func(int) { k.dotBlockRows(w, scales, group, x, bias, out) })
			})
		}
	}
}

// BenchmarkDotNibbleRows: a 65536-row slice of a Q4_0 head held in its
// 4.5 bits (dotNibbleRows); MB/s counts the codes and the float16 scales.
func BenchmarkDotNibbleRows(b *testing.B) {
	const rows, n = 65536, 2560
	w, scales, x, bias := nibbleHead(rows, n)
	out := make([]float32, rows)
	for _, k := range kernelSets() {
		b.Run(k.name, func(b *testing.B) {
			probed(b, len(w)+2*len(scales), func(int) { k.dotNibbleRows(w, scales, x, bias, out) })
		})
	}
}

// BenchmarkDotSixRows: a 49152-row slice of a Q6_K head held in its 6.75
// bits (dotSixRows); MB/s counts the codes and the scales.
func BenchmarkDotSixRows(b *testing.B) {
	const rows, n = 49152, 2560
	w, scales, xs, bias := benchSixHead(rows, n)
	out := make([]float32, rows)
	for _, k := range kernelSets() {
		b.Run(k.name, func(b *testing.B) {
			probed(b, len(w)+len(scales), func(int) { k.dotSixRows(w, scales, xs, bias, out) })
		})
	}
}

// BenchmarkSumSquares: rmsNorm's in-order float64 sum of squares over a
// row of the 2B shape's widths (a decode step has 90 of 2560 and 30 of
// 6912), per set: Gaussian values, as the residual stream's, and at 6912
// the ReLU² gate's relu(g)²·u of Gaussian g and u, as the FFN's sub-norm
// sums (a wide spread of magnitudes, half of them zero); generic is the
// one-add-at-a-time chain.
func BenchmarkSumSquares(b *testing.B) {
	rng := newRand()
	for _, row := range []struct {
		name string
		n    int
		gate bool
	}{{"2560", 2560, false}, {"6912", 6912, false}, {"6912-relu2", 6912, true}} {
		n := row.n
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
			if row.gate {
				g := max(float32(rng.NormFloat64()), 0)
				x[i] = g * g * x[i]
			}
		}
		for _, k := range kernelSets() {
			b.Run(fmt.Sprintf("%s/%s", k.name, row.name), func(b *testing.B) {
				var sum float64
				for b.Loop() {
					sum += k.sumSquares(x)
				}
				if sum != sum*1 || sum < 0 {
					b.Fatal("sum", sum)
				}
				b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gelem/s")
			})
		}
	}
}

// probedPool is probed for a kernel call split across the pool's workers
// (op runs the call): after each call the read probe reads as many bytes
// of probeBuf on the same workers, in chunks they claim as they free up
// (so that a core the VM slows now and then does not hold the probe back
// more than the kernels, which the heads' chunks spare too), and the two
// are measured in turn on the same threads.
func probedPool(b *testing.B, p *pool, bytes int, op func(i int)) {
	sum := kernelSets()[0].sumBytes
	if probeBuf == nil {
		probeBuf = new(weightArena).bytes(256 << 20)
		for i := range probeBuf {
			probeBuf[i] = byte(i)
		}
	}
	sums := make([]uint64, p.workers)
	var kernel, probe time.Duration
	off := 0
	read := (bytes + 63) &^ 63 // the probe reads whole 64-byte steps, as probeBuf holds them
	b.SetBytes(int64(bytes))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t := time.Now()
		op(i)
		kernel += time.Since(t)
		b.StopTimer()
		t = time.Now()
		for left := read; left > 0; {
			if off == len(probeBuf) {
				off = 0
			}
			c := min(left, len(probeBuf)-off)
			part := probeBuf[off : off+c]
			p.runChunks(c, 1<<12, func(w, lo, hi int) { sums[w] += sum(part[lo:hi]) })
			off += c
			left -= c
		}
		probe += time.Since(t)
		b.StartTimer()
	}
	sink = sums[0]
	n := float64(b.N)
	kernelRate, probeRate := float64(bytes)*n/kernel.Seconds(), float64(read)*n/probe.Seconds()
	b.ReportMetric(kernelRate/1e9, "GB/s")
	b.ReportMetric(probeRate/1e9, "probe-GB/s")
	b.ReportMetric(kernelRate/probeRate, "of-probe")
}

// BenchmarkRowsThreads: the decode kernels of the fastest set from DRAM on
// one thread and on every CPU, each call split as a decode step splits it
// (the ternary products in fixed shares of 16 rows, the heads in chunks
// the workers claim, 64 rows apart), against the read probe on the same
// threads measured after each call (probedPool): of-probe is the share of
// the plain read a kernel streams at, the issue's measure "on one thread
// and on all threads". Attention over a long context is one of them: a
// decode step's at 4,001 positions.
//
//	go test -run '^$' -bench RowsThreads -count 3 ./cpu
func BenchmarkRowsThreads(b *testing.B) {
	k := kernelSets()[0]
	threads := []int{1}
	if n := runtime.NumCPU(); n > 1 {
		threads = append(threads, n)
	}
	const rows, n = 32768, 2560 // a head slice, as BenchmarkDotF16Rows
	type kernel struct {
		name  string
		bytes int
		op    func(p *pool, i int)
	}
	var kernels []kernel
	for _, s := range []struct{ rows, n int }{{6912, 2560}, {2560, 6912}} {
		size := s.rows * s.n / 4
		ws, x, out := ternaryCopies(s.rows, s.n, true)
		kernels = append(kernels, kernel{fmt.Sprintf("ternaryRows/%dx%d", s.rows, s.n), size, func(p *pool, i int) {
			w := ws[i%len(ws)]
			p.run(s.rows, 16, func(_, lo, hi int) { k.ternaryRows(w[lo*s.n/4:], s.n/4, x, out[lo:hi]) })
		}})
	}
	w16, xf, outF := f16Head(rows, n)
	kernels = append(kernels, kernel{fmt.Sprintf("dotF16Rows/%dx%d", rows, n), 2 * len(w16), func(p *pool, _ int) {
		p.runChunks(rows, 64, func(_, lo, hi int) { k.dotF16Rows(w16[lo*n:], n, xf, outF[lo:hi]) })
	}})
	w8, x8, bias := blockHead(rows, n)
	outI := make([]int32, rows)
	kernels = append(kernels, kernel{fmt.Sprintf("dotI8Rows/%dx%d", rows, n), len(w8), func(p *pool, _ int) {
		p.runChunks(rows, 64, func(_, lo, hi int) { k.dotI8Rows(w8[lo*n:], n, x8, outI[lo:hi]) })
	}})
	for _, group := range []int{16, 32} {
		scales := blockScales(rows, n, group)
		g := n / group
		kernels = append(kernels, kernel{fmt.Sprintf("dotBlockRows/group%d", group), len(w8) + 4*len(scales), func(p *pool, _ int) {
			p.runChunks(rows, 64, func(_, lo, hi int) {
				k.dotBlockRows(w8[lo*n:hi*n], scales[lo*g:hi*g], group, x8, bias, outF[lo:hi])
			})
		}})
	}
	// A Q4_0 head in its 4.5 bits: twice the rows, so that the slice
	// (94 MB) is as far beyond L3 as the others.
	wn, sn, xn, bn := nibbleHead(2*rows, n)
	outN := make([]float32, 2*rows)
	kernels = append(kernels, kernel{"dotNibbleRows/group32", len(wn) + 2*len(sn), func(p *pool, _ int) {
		p.runChunks(2*rows, 64, func(_, lo, hi int) {
			k.dotNibbleRows(wn[lo*n/2:hi*n/2], sn[lo*n/32:hi*n/32], xn, bn, outN[lo:hi])
		})
	}})
	// A Q6_K head in its 6.75 bits: 1.5 times the rows (106 MB).
	w6, s6, x6, b6 := benchSixHead(3*rows/2, n)
	out6 := make([]float32, 3*rows/2)
	kernels = append(kernels, kernel{"dotSixRows/group16", len(w6) + len(s6), func(p *pool, _ int) {
		p.runChunks(3*rows/2, 64, func(_, lo, hi int) {
			k.dotSixRows(w6[lo*3*n/4:hi*3*n/4], s6[lo*3*n/32:hi*3*n/32], x6, b6, out6[lo:hi])
		})
	}})
	name, bytes, attention := longAttention(threads[len(threads)-1])
	kernels = append(kernels, kernel{name, bytes, func(p *pool, _ int) { attention(k, p) }})
	for _, kn := range kernels {
		for _, t := range threads {
			b.Run(fmt.Sprintf("%s/%s/threads%d", k.name, kn.name, t), func(b *testing.B) {
				p := newPool(t)
				defer p.close()
				probedPool(b, p, kn.bytes, func(i int) { kn.op(p, i) })
			})
		}
	}
}

// longAttention makes a decode step's attention at 4,001 positions of the
// 2B shape: each of the 150 K/V heads (30 layers × 5) a 1 MB region of
// keys and one of values, read once by its four query heads
// (attendGroup), the workers claiming K/V heads (all 150 in one call,
// where the backend makes one per layer): 308 MB a step. It returns the
// benchmark's name, the bytes a step reads and a function running the
// step with a kernel set on a pool of at most workers workers.
func longAttention(workers int) (name string, bytes int, step func(k kernels, p *pool)) {
	const hd, ctx, kvHeads = 128, 4001, 150
	cached := (ctx + kBlock - 1) / kBlock * kBlock * hd
	kt, vc := new(weightArena).f16(kvHeads*cached), new(weightArena).f16(kvHeads*cached)
	for i := range kt {
		kt[i], vc[i] = uint16(0x2C00+i%512), uint16(0x3800+i%256)
	}
	qa := make([]float32, 4*hd)
	for i := range qa {
		qa[i] = float32(i%7)/7 - 0.4
	}
	type attScratch struct{ q16, scores, o []float32 }
	att := make([]attScratch, max(workers, 1))
	for w := range att {
		att[w] = attScratch{make([]float32, 4*hd), make([]float32, 4*ctx), make([]float32, 4*hd)}
	}
	return fmt.Sprintf("attention/%d", ctx), 2 * kvHeads * ctx * hd * 2, func(k kernels, p *pool) {
		p.runChunks(kvHeads, 1, func(w, lo, hi int) {
			for h := lo; h < hi; h++ {
				s := att[w]
				attendGroup(k, qa, hd, kt[h*cached:(h+1)*cached], vc[h*cached:(h+1)*cached], ctx, s.q16, s.scores, s.o)
			}
		})
	}
}
