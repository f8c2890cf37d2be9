package cpu

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/bitvk/bitvk/nn/nntest"
)

// eachWideSet runs f for every kernel set with the wide attention kernels,
// the twins included (their bits must be their own four-query kernels').
func eachWideSet(t *testing.T, f func(t *testing.T, k kernels)) {
	for _, k := range kernelSets() {
		if k.kScoresWide == nil {
			continue
		}
		t.Run(k.name, func(t *testing.T) { f(t, k) })
	}
}

// TestKScoresWide: every score from transposed queries has kScores' bits
// in the same set, and nothing outside the scores is written.
func TestKScoresWide(t *testing.T) {
	eachWideSet(t, func(t *testing.T, k kernels) {
		rng := newRand()
		for _, hd := range []int{1, 2, 64, 80, 128} {
			for _, n := range []int{1, 15, 16, 17, 33, 64, 100, 129} {
				for _, nq := range []int{1, 2, 3, 4, 5, 7, 8, 12, 15, 16, 17, 21, 32} {
					kt := randomF16(rng, (n+kBlock-1)/kBlock*kBlock*hd)
					q := randomF32(rng, nq*hd)
					k.roundF16(q, q)
					qStride := nq + rng.IntN(3)
					qT := make([]float32, (hd-1)*qStride+nq)
					for j := 0; j < nq; j++ {
						for d := 0; d < hd; d++ {
							qT[d*qStride+j] = q[j*hd+d]
						}
					}
					stride := n + rng.IntN(5)
					want := make([]float32, (nq-1)*stride+n)
					k.kScores(kt, hd, n, q, nq, want, stride)
					got, all := poisoned((nq-1)*stride+n, 1+rng.IntN(7), 16, float32(math.NaN()))
					k.kScoresWide(kt, hd, n, qT, qStride, nq, got, stride)
					what := fmt.Sprintf("head size %d, %d positions, %d queries", hd, n, nq)
					for j := 0; j < nq; j++ {
						sameBits(t, fmt.Sprintf("%s: query %d", what, j), got[j*stride:j*stride+n], want[j*stride:j*stride+n])
						for p := n; p < stride && j+1 < nq; p++ {
							if v := got[j*stride+p]; v == v {
								t.Fatalf("%s: the gap after query %d was written (%g at %d)", what, j, v, p)
							}
						}
					}
					checkPoisonFunc(t, all, got, func(v float32) bool { return v != v })
				}
			}
		}
	})
}

// TestAxpyF16RowsWide: the wide sums have axpyF16Rows4's (and
// axpyF16Rows') bits in the same set, from y's starting values on.
func TestAxpyF16RowsWide(t *testing.T) {
	eachWideSet(t, func(t *testing.T, k kernels) {
		rng := newRand()
		for _, n := range []int{16, 32, 48, 64, 80, 128} {
			for _, np := range []int{1, 2, 3, 4, 5, 7, 64, 65, 130} {
				for _, nq := range []int{1, 2, 3, 4, 5, 8, 12, 16, 17, 20} {
					v, stride := randomVRows(rng, np, n)
					aStride := np + rng.IntN(4)
					a := randomF32(rng, (nq-1)*aStride+np)
					y0 := randomF32(rng, nq*n)
					want := append([]float32(nil), y0[:nq*n]...)
					j := 0
					for ; j+4 <= nq; j += 4 {
						k.axpyF16Rows4(a[j*aStride:], aStride, np, v, stride, want[j*n:], n, n)
					}
					for ; j < nq; j++ {
						k.axpyF16Rows(a[j*aStride:j*aStride+np], v, stride, want[j*n:(j+1)*n])
					}
					got, all := poisoned(nq*n, rng.IntN(16), 16, float32(math.NaN()))
					copy(got, y0[:nq*n])
					k.axpyF16RowsWide(a, aStride, nq, np, v, stride, got, n)
					sameBits(t, fmt.Sprintf("%d elements, %d rows, %d queries", n, np, nq), got, want)
					checkPoisonFunc(t, all, got, func(v float32) bool { return v != v })
				}
			}
		}
	})
}

// TestWideRefused: the wide kernels refuse operands that do not hold what
// they would read or write, with a panic naming the kernel.
func TestWideRefused(t *testing.T) {
	eachWideSet(t, func(t *testing.T, k kernels) {
		kt := make([]uint16, 16*64)
		qT := make([]float32, 64*4)
		out := make([]float32, 4*16)
		a, v, y := make([]float32, 4*16), make([]uint16, 16*64), make([]float32, 4*64)
		for _, c := range []struct {
			name string
			call func()
		}{
			{"keys", func() { k.kScoresWide(kt[:16*64-1], 64, 16, qT, 4, 4, out, 16) }},
			{"queries", func() { k.kScoresWide(kt, 64, 16, qT[:63*4+3], 4, 4, out, 16) }},
			{"scores", func() { k.kScoresWide(kt, 64, 16, qT, 4, 4, out[:3*16+15], 16) }},
			{"weights", func() { k.axpyF16RowsWide(a[:3*16+15], 16, 4, 16, v, 64, y, 64) }},
			{"values", func() { k.axpyF16RowsWide(a, 16, 4, 16, v[:15*64+63], 64, y, 64) }},
			{"sums", func() { k.axpyF16RowsWide(a, 16, 4, 16, v, 64, y[:4*64-1], 64) }},
			{"odd width", func() { k.axpyF16RowsWide(a, 16, 4, 16, v, 64, y, 60) }},
		} {
			func() {
				defer func() {
					if r := recover(); r == nil {
						t.Errorf("%s: no panic", c.name)
					} else if s := fmt.Sprint(r); len(s) < 14 || s[:14] != "cpu: kScoresWi" && s[:14] != "cpu: axpyF16Ro" {
						t.Errorf("%s: %v", c.name, r)
					}
				}()
				c.call()
			}()
		}
	})
}

// BenchmarkAttendRun: an item of a long prompt's attention (4 tokens × 4
// query heads of one K/V head, as the 2B shape takes them past
// longRunPositions) at 256, 1,000 and 4,000 positions, with each assembly
// set's kernels four queries a call (kScores, axpyF16Rows4) and many
// (kScoresWide, axpyF16RowsWide), alternated; GFLOP/s of the scores and the
// weighted sums, best of the rounds, against the set's FMA probe.
//
//	go test -run '^$' -bench AttendRun -benchtime 50x ./cpu
func BenchmarkAttendRun(b *testing.B) {
	timed := false
	for _, k := range kernelSets() {
		if k.kScoresWide == nil || k.name == goKernels.name || k.name == generic.name {
			continue
		}
		timed = true
		peak := fmaPeak(&k.sgemm, 50*time.Millisecond)
		for _, n0 := range []int{256, 1000, 4000} {
			b.Run(fmt.Sprintf("%s/positions%d", k.name, n0), func(b *testing.B) {
				const hd, sub, R = 128, 4, 4
				rng := newRand()
				n := n0 + R - 1
				kt := randomF16(rng, (n+kBlock-1)/kBlock*kBlock*hd)
				vc := randomF16(rng, n*hd)
				q := randomF32(rng, R*sub*hd)
				q16, scores, ob := make([]float32, R*sub*hd), make([]float32, R*sub*n), make([]float32, R*sub*hd)
				o, qT := make([]float32, R*sub*hd), make([]float32, R*sub*hd)
				var best [2]time.Duration
				for b.Loop() {
					for i, t := range [][]float32{nil, qT} {
						start := time.Now()
						attendRun(k, q, sub*hd, R, sub, hd, kt, vc, n0, q16, scores, ob, o, sub*hd, t)
						if d := time.Since(start); best[i] == 0 || d < best[i] {
							best[i] = d
						}
					}
				}
				flops := 2 * 2 * float64(R*sub) * float64(n0) * hd // scores and sums
				for i, name := range []string{"four", "wide"} {
					g := flops / best[i].Seconds() / 1e9
					b.ReportMetric(g, name+"-GFLOP/s")
					b.ReportMetric(g/peak, name+"-of-peak")
				}
			})
		}
	}
	if !timed {
		b.Skip("no assembly kernel set here has the wide attention kernels")
	}
}

// TestWideAttentionPass: a long prompt's later chunk (past
// longRunPositions) gives the same logits, bit for bit, through the wide
// kernels (items of 16 queries) as through four-query items, for every set
// with them but the twins (slow here; TestKScoresWide and
// TestAxpyF16RowsWide hold them to their four-query kernels), on one thread
// and on three (the go set, on three).
func TestWideAttentionPass(t *testing.T) {
	m := nntest.NewModel(t, "small", nntest.StoreI2S, 1)
	v := m.Config.Vocab
	prompt := make([]int32, longRunPositions+40)
	for i := range prompt {
		prompt[i] = int32((i*7919 + 11) % v)
	}
	split := longRunPositions + 4 // the chunk's first token sees longRunPositions+5 positions
	eachWideSet(t, func(t *testing.T, k kernels) {
		threadCounts := []int{1, 3}
		switch k.name {
		case generic.name:
			t.Skip("the twins' pass is slow; their kernels are checked alone")
		case goKernels.name:
			threadCounts = threadCounts[1:]
		}
		for _, threads := range threadCounts {
			var logits [2][]float32
			for i, wide := range []bool{false, true} {
				saved := active
				active = k
				if !wide {
					active.kScoresWide, active.axpyF16RowsWide = nil, nil
				}
				b, err := New(m.Config, m.Weights, Options{Threads: threads, Context: len(prompt), Batch: 64})
				active = saved
				if err != nil {
					t.Fatal(err)
				}
				if err := b.Forward(prompt[:split], 0, nil); err != nil {
					t.Fatal(err)
				}
				logits[i] = make([]float32, (len(prompt)-split)*v)
				if err := b.Forward(prompt[split:], split, logits[i]); err != nil {
					t.Fatal(err)
				}
				if wide && allZero(b.s.qT[0]) {
					t.Fatalf("%d threads: the wide kernels were not used (no transposed queries)", threads)
				}
				b.Close()
			}
			sameBits(t, fmt.Sprintf("%d threads, the chunk's logits", threads), logits[1], logits[0])
		}
	})
}

func allZero(x []float32) bool {
	for _, v := range x {
		if v != 0 {
			return false
		}
	}
	return true
}
