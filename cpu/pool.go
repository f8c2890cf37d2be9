package cpu

import (
	"runtime"
	"sync/atomic"
)

// pool is a persistent set of worker goroutines that split a range of work
// items (output rows, heads) between them and the caller. A forward pass
// runs a few parallel steps per layer, so starting goroutines per step would
// cost more than the small steps themselves; the workers spin briefly
// before they sleep, so back-to-back steps find them awake.
type pool struct {
	workers int             // including the caller, which does share 0
	wake    []chan struct{} // one per helper goroutine (workers−1)
	done    chan struct{}   // the last helper to finish signals here
	pending atomic.Int32    // helpers still working on the current job
	gen     atomic.Uint64   // job generation, for spinning helpers
	closed  atomic.Bool

	// the current job
	n, align int
	fn       func(worker, lo, hi int)
}

// spinIterations is how long an idle worker polls for the next job before
// blocking on its channel (a few microseconds).
const spinIterations = 20000

func newPool(workers int) *pool {
	p := &pool{workers: max(workers, 1), done: make(chan struct{}, 1)}
	for i := 1; i < p.workers; i++ {
		ch := make(chan struct{}, 1)
		p.wake = append(p.wake, ch)
		go p.loop(i, ch)
	}
	return p
}

// share is the part [lo, hi) of [0, n) worker w runs: contiguous ranges of
// whole multiples of align, as equal as that allows.
func share(n, align, workers, w int) (lo, hi int) {
	units := (n + align - 1) / align
	per, extra := units/workers, units%workers
	lo = (w*per + min(w, extra)) * align
	hi = lo + per*align
	if w < extra {
		hi += align
	}
	return min(lo, n), min(hi, n)
}

// run calls fn(worker, lo, hi) on disjoint ranges covering [0, n), split
// across the workers in multiples of align, and returns when all are done.
// fn must not call run.
func (p *pool) run(n, align int, fn func(worker, lo, hi int)) {
	if n <= 0 {
		return
	}
	align = max(align, 1)
	workers := min(p.workers, (n+align-1)/align)
	if workers == 1 {
		fn(0, 0, n)
		return
	}
	p.n, p.align, p.fn = n, align, fn
	p.pending.Store(int32(p.workers - 1))
	p.gen.Add(1)
	for _, ch := range p.wake {
		select {
		case ch <- struct{}{}:
		default: // already signalled; the spinning worker sees gen
		}
	}
	lo, hi := share(n, align, p.workers, 0)
	fn(0, lo, hi)
	<-p.done
	p.fn = nil
}

func (p *pool) loop(w int, wake chan struct{}) {
	seen := uint64(0)
	for {
		// Spin for a moment: in a forward pass the next job comes soon.
		for i := 0; i < spinIterations && p.gen.Load() == seen; i++ {
			if i%64 == 63 {
				runtime.Gosched()
			}
		}
		if p.gen.Load() == seen {
			<-wake
		}
		if p.closed.Load() {
			return
		}
		g := p.gen.Load()
		if g == seen {
			continue // a stale wake-up
		}
		seen = g
		// drain a wake-up sent for this job so it is not mistaken for the next
		select {
		case <-wake:
		default:
		}
		if lo, hi := share(p.n, p.align, p.workers, w); lo < hi {
			p.fn(w, lo, hi)
		}
		if p.pending.Add(-1) == 0 {
			p.done <- struct{}{}
		}
	}
}

// close stops the helpers.
func (p *pool) close() {
	if p.closed.Swap(true) {
		return
	}
	p.gen.Add(1)
	for _, ch := range p.wake {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}
