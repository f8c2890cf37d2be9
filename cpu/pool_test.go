package cpu

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestShareCovers(t *testing.T) {
	for _, workers := range []int{1, 2, 3, 7} {
		for _, align := range []int{1, 16, 64} {
			for n := 0; n < 300; n++ {
				next := 0
				for w := 0; w < workers; w++ {
					lo, hi := share(n, align, workers, w)
					if lo != next || hi < lo || (lo%align != 0 && lo != n) {
						t.Fatalf("n=%d align=%d workers=%d: worker %d gets [%d,%d), want start %d", n, align, workers, w, lo, hi, next)
					}
					next = hi
				}
				if next != n {
					t.Fatalf("n=%d align=%d workers=%d: covered up to %d", n, align, workers, next)
				}
			}
		}
	}
}

func TestPoolRun(t *testing.T) {
	for _, workers := range []int{1, 2, 5} {
		p := newPool(workers)
		for n := 0; n < 200; n += 7 {
			hits := make([]int32, n)
			var calls atomic.Int32
			p.run(n, 4, func(w, lo, hi int) {
				if w < 0 || w >= workers {
					t.Errorf("worker index %d of %d", w, workers)
				}
				calls.Add(1)
				for i := lo; i < hi; i++ {
					atomic.AddInt32(&hits[i], 1)
				}
			})
			for i, h := range hits {
				if h != 1 {
					t.Fatalf("workers=%d n=%d: item %d run %d times", workers, n, i, h)
				}
			}
		}
		p.close()
		p.close() // idempotent
	}
}

// runChunks runs every item exactly once, in ranges that start at
// multiples of align and are all one size but the last, whichever worker
// claims them.
func TestPoolRunChunks(t *testing.T) {
	for _, workers := range []int{1, 2, 5} {
		p := newPool(workers)
		for _, align := range []int{1, 16, 64} {
			for n := 0; n < 2000; n += 37 {
				hits := make([]int32, n)
				var sizes sync.Map
				p.runChunks(n, align, func(w, lo, hi int) {
					if w < 0 || w >= workers || lo%align != 0 || hi <= lo || hi > n {
						t.Errorf("worker %d of %d got [%d, %d) of %d (align %d)", w, workers, lo, hi, n, align)
						return
					}
					if hi < n {
						sizes.Store(hi-lo, true)
					}
					for i := lo; i < hi; i++ {
						atomic.AddInt32(&hits[i], 1)
					}
				})
				for i, h := range hits {
					if h != 1 {
						t.Fatalf("workers=%d align=%d n=%d: item %d run %d times", workers, align, n, i, h)
					}
				}
				count := 0
				sizes.Range(func(any, any) bool { count++; return true })
				if count > 1 {
					t.Errorf("workers=%d align=%d n=%d: chunks of %d sizes", workers, align, n, count)
				}
			}
		}
		p.close()
	}
}

// runGuidedJob runs every item exactly once, in ranges that start at
// multiples of align, shrink from half a worker's share of the items
// left down to smallest (the last one may be shorter), whichever worker
// claims them.
func TestPoolRunGuided(t *testing.T) {
	for _, workers := range []int{1, 2, 5} {
		p := newPool(workers)
		for _, align := range []int{1, 16} {
			for _, smallest := range []int{1, 64} {
				for n := 0; n < 3000; n += 97 {
					hits := make([]int32, n)
					var mu sync.Mutex
					var ranges [][2]int
					p.runGuidedJob(n, align, smallest, jobFunc(func(w, lo, hi int) {
						if w < 0 || w >= workers || lo%align != 0 || hi <= lo || hi > n {
							t.Errorf("worker %d of %d got [%d, %d) of %d (align %d)", w, workers, lo, hi, n, align)
							return
						}
						mu.Lock()
						ranges = append(ranges, [2]int{lo, hi})
						mu.Unlock()
						for i := lo; i < hi; i++ {
							atomic.AddInt32(&hits[i], 1)
						}
					}))
					for i, h := range hits {
						if h != 1 {
							t.Fatalf("workers=%d align=%d smallest=%d n=%d: item %d run %d times", workers, align, smallest, n, i, h)
						}
					}
					if workers == 1 {
						continue // the caller runs the whole job in one call
					}
					least := (smallest + align - 1) / align * align
					for _, r := range ranges {
						left := n - r[0]
						if want := min(left, (max(least, left/(2*workers))+align-1)/align*align); r[1]-r[0] != want {
							t.Errorf("workers=%d align=%d smallest=%d n=%d: range [%d, %d), want %d items from %d", workers, align, smallest, n, r[0], r[1], want, r[0])
						}
					}
				}
			}
		}
		p.close()
	}
}

// A helper that does not run (another program holds its core) delays no
// job: the caller claims its share or its chunks and runs them itself, with
// the share's worker index; once the helper runs again it finds the job
// done, and later jobs are split as before.
func TestPoolStalledHelper(t *testing.T) {
	p := newPool(2)
	defer p.close()
	release := make(chan struct{})
	var stalled atomic.Bool
	p.stall = func(int) {
		if stalled.Load() {
			<-release
		}
	}
	check := func(what string, n int, run func(fn func(w, lo, hi int))) map[int]bool {
		t.Helper()
		hits := make([]int32, n)
		var mu sync.Mutex
		workers := map[int]bool{}
		run(func(w, lo, hi int) {
			mu.Lock()
			workers[w] = true
			mu.Unlock()
			for i := lo; i < hi; i++ {
				atomic.AddInt32(&hits[i], 1)
			}
		})
		for i, h := range hits {
			if h != 1 {
				t.Fatalf("%s: item %d of %d run %d times", what, i, n, h)
			}
		}
		return workers
	}
	stalled.Store(true)
	// The helper is stalled from its first job on: every job below must
	// end without it.
	for k := range 20 {
		n := 100 + 37*k
		ws := check("stalled, run", n, func(fn func(w, lo, hi int)) { p.run(n, 4, fn) })
		if !ws[0] || !ws[1] {
			t.Errorf("stalled, run: worker indices %v; want both shares, 0 and 1, run by the caller", ws)
		}
		check("stalled, chunks", n, func(fn func(w, lo, hi int)) { p.runChunks(n, 4, fn) })
		check("stalled, guided", n, func(fn func(w, lo, hi int)) { p.runGuidedJob(n, 4, 8, jobFunc(fn)) })
	}
	stalled.Store(false)
	close(release)
	for k := range 200 {
		n := 50 + 13*k
		check("released, run", n, func(fn func(w, lo, hi int)) { p.run(n, 4, fn) })
		check("released, chunks", n, func(fn func(w, lo, hi int)) { p.runChunks(n, 4, fn) })
		check("released, guided", n, func(fn func(w, lo, hi int)) { p.runGuidedJob(n, 4, 8, jobFunc(fn)) })
	}
}

// A caller whose helper takes longer than spinTime to finish the last piece
// sleeps until the helper signals; jobs that end while it polls take no
// signal. Alternating slow and fast jobs (the helper's piece sleeping past
// the poll, or a few microseconds behind, or racing the caller's give-up
// point), every job must end once its pieces are done, never earlier, and
// no signal may be left over for a later job.
func TestPoolCallerSleeps(t *testing.T) {
	p := newPool(2)
	defer p.close()
	delays := []time.Duration{0, 2 * spinTime, 0, spinTime, spinTime + 5*time.Microsecond, 0, 3 * spinTime}
	for k := range 60 {
		d := delays[k%len(delays)]
		var finished atomic.Int32
		p.run(64, 1, func(w, lo, hi int) {
			if w == 1 {
				time.Sleep(d)
			}
			finished.Add(1)
		})
		if got := finished.Load(); got != 2 {
			t.Fatalf("job %d (helper delay %v) returned with %d of 2 pieces done", k, d, got)
		}
		if len(p.done) != 0 {
			t.Fatalf("job %d (helper delay %v) left a done signal behind", k, d)
		}
	}
}
