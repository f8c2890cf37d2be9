package cpu

import (
	"runtime"
	"sync/atomic"
	"time"
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
	yield   bool // more workers than GOMAXPROCS: polling yields the thread

	// the current job
	n, align int
	chunk    int          // > 0: workers claim chunks of this many items (runChunks)
	next     atomic.Int64 // the next unclaimed item of a chunked job
	fn       func(worker, lo, hi int)

	// waited, when set (by Backend.ProfileForward), accumulates how long
	// the caller waits for the helpers after running its own share.
	waited *time.Duration
}

// spinTime is how long an idle helper polls for the next job, and the
// caller for the helpers to finish theirs, before blocking on a channel. A
// forward pass runs about five jobs per layer a few microseconds apart;
// blocking between them costs a futex sleep and wake-up each time, which
// measured 40-70 µs per job on a 2-core VM (a decode step of the 2B shape
// waited 8 ms for its helper). Polling never yields the thread: a yield
// lets the scheduler move the caller and the helper between threads, and
// that costs as much as blocking. (It does yield when there are more
// workers than GOMAXPROCS, so that every worker gets to run.)
const spinTime = 200 * time.Microsecond

// spinUntil polls cond for up to spinTime and reports whether it held.
func (p *pool) spinUntil(cond func() bool) bool {
	var start time.Time
	for i := 0; ; i++ {
		if cond() {
			return true
		}
		if i%256 == 255 {
			if start.IsZero() {
				start = time.Now()
			} else if time.Since(start) > spinTime {
				return false
			}
			if p.yield {
				runtime.Gosched()
			}
		}
	}
}

func newPool(workers int) *pool {
	p := &pool{workers: max(workers, 1), done: make(chan struct{}, 1)}
	p.yield = p.workers > runtime.GOMAXPROCS(0)
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
	p.start(n, align, 0, fn)
}

// runChunks is run with the ranges handed out as the workers ask for them:
// [0, n) in chunks of about 1/chunksPerWorker of a worker's share (a
// multiple of align), each claimed by the next worker to be free. A
// streaming step whose workers read memory at unequal rates (one core's
// neighbour on the memory bus, a helper that started late) then ends when
// the memory is read, not when the slower worker's fixed half is; the
// chunk boundaries depend on n, align and the number of workers only.
// chunksPerWorker: the 2B shape's float16 head (656 MB) on two threads of
// the Zen 5 VM, a decode step's median 24.9 ms with 4 chunks per worker
// (the caller waited 2.2 ms for its helper's last chunk), 22.9 with 16
// (1.25 ms), 24.0 with 32, 25.2 with 64 (shorter streams). The ternary
// products keep fixed halves: chunked, a step took 24.0-26.8 ms.
const chunksPerWorker = 16

func (p *pool) runChunks(n, align int, fn func(worker, lo, hi int)) {
	align = max(align, 1)
	per := (n + chunksPerWorker*p.workers - 1) / (chunksPerWorker * p.workers)
	p.start(n, align, (per+align-1)/align*align, fn)
}

// claim runs fn on chunks of the current job until none is left.
func (p *pool) claim(w int) {
	for {
		lo := int(p.next.Add(int64(p.chunk))) - p.chunk
		if lo >= p.n {
			return
		}
		p.fn(w, lo, min(lo+p.chunk, p.n))
	}
}

func (p *pool) start(n, align, chunk int, fn func(worker, lo, hi int)) {
	if n <= 0 {
		return
	}
	align = max(align, 1)
	workers := min(p.workers, (n+align-1)/align)
	if workers == 1 {
		fn(0, 0, n)
		return
	}
	p.n, p.align, p.chunk, p.fn = n, align, chunk, fn
	p.next.Store(0)
	p.pending.Store(int32(p.workers - 1))
	p.gen.Add(1)
	for _, ch := range p.wake {
		select {
		case ch <- struct{}{}:
		default: // already signalled; the spinning worker sees gen
		}
	}
	if chunk > 0 {
		p.claim(0)
	} else {
		lo, hi := share(n, align, p.workers, 0)
		fn(0, lo, hi)
	}
	var t time.Time
	if p.waited != nil {
		t = time.Now()
	}
	// The last helper to finish sends on done right after it counts
	// itself out, so once pending is 0 the receive is immediate.
	p.spinUntil(func() bool { return p.pending.Load() == 0 })
	<-p.done
	if p.waited != nil {
		*p.waited += time.Since(t)
	}
	p.fn = nil
}

func (p *pool) loop(w int, wake chan struct{}) {
	seen := uint64(0)
	for {
		// Poll for a moment: in a forward pass the next job comes soon.
		if !p.spinUntil(func() bool { return p.gen.Load() != seen }) {
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
		if p.chunk > 0 {
			p.claim(w)
		} else if lo, hi := share(p.n, p.align, p.workers, w); lo < hi {
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
