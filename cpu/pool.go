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
//
// Every piece of a job (a worker's fixed share, or a chunk) is claimed with
// an atomic compare-and-swap before it runs, and the caller waits for the
// pieces to be done, not for the helpers to report. A caller whose own
// share is done claims the shares no helper has taken yet and runs them
// itself (with their worker index, so per-worker scratch stays per
// share). So a helper that the operating system has not scheduled (another
// program holds the core) delays nothing: the job then runs at one thread's
// speed instead of waiting a time slice per job. (Waiting for every helper
// to check in, nano-kjv decoded at 100-200 tok/s on two threads against
// 2700-3300 on one, with one core of a 2-core VM busy elsewhere.)
type pool struct {
	workers int             // including the caller, which does share 0
	wake    []chan struct{} // one per helper goroutine (workers−1)
	done    chan struct{}   // a helper that finishes a job's last piece signals here, if the caller sleeps
	sleeper atomic.Uint64   // the job the caller sleeps on (done), 0 when it does not
	gen     atomic.Uint64   // job generation, published once the job is set up
	closed  atomic.Bool
	yield   bool // more workers than GOMAXPROCS: polling yields the thread
	// solo, set by the caller between jobs, runs every job on the caller
	// alone (Backend.soloDecode); the helpers are not woken.
	solo bool

	// The current job, written by the caller before it publishes gen.
	// The helpers read n, align and chunk only through jobN, jobAlign and
	// jobChunk (a stale helper may read them while the next job is set
	// up), and fn only after claiming a piece, which the caller cannot
	// outlive into the next job.
	// jobChunk is 0 for fixed shares, a chunk's items when chunked, and
	// −(the smallest chunk) when guided (guidedChunk).
	fn                       job
	jobN, jobAlign, jobChunk atomic.Int64
	shares                   []atomic.Uint64 // fixed shares: 2·gen unclaimed, 2·gen+1 claimed
	next                     atomic.Uint64   // chunked: gen<<32 | the next unclaimed item
	left                     atomic.Int64    // fixed shares: pieces not yet done; chunked: items

	// waited, when set (by Backend.ProfileForward), accumulates how long
	// the caller waits for the helpers after running its own share.
	waited *time.Duration

	// stall, in tests, runs in a helper before it works on a job (a helper
	// the operating system has not scheduled yet).
	stall func(worker int)
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
	p.shares = make([]atomic.Uint64, p.workers)
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

// job is the work of one pool job: do(worker, lo, hi) runs its items
// [lo, hi) as worker. The forward pass keeps its jobs in long-lived
// structs and passes pointers to them, which costs no allocation; a
// closure handed to the pool escapes to the heap at every call (110
// allocations a decode step of nano-kjv, 5-17% of its time in the
// allocator, with each allocation shortly followed by a garbage collection
// of the step's own garbage).
type job interface {
	do(worker, lo, hi int)
}

// jobFunc is a function as a job (for the steps outside a forward pass).
type jobFunc func(worker, lo, hi int)

func (f jobFunc) do(worker, lo, hi int) { f(worker, lo, hi) }

// run calls fn(worker, lo, hi) on disjoint ranges covering [0, n), split
// across the workers in multiples of align, and returns when all are done.
// fn must not call run.
func (p *pool) run(n, align int, fn func(worker, lo, hi int)) {
	p.start(n, align, 0, jobFunc(fn))
}

// runJob is run with a job.
func (p *pool) runJob(n, align int, j job) {
	p.start(n, align, 0, j)
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
	p.runChunksJob(n, align, jobFunc(fn))
}

// runChunksJob is runChunks with a job.
func (p *pool) runChunksJob(n, align int, j job) {
	align = max(align, 1)
	per := (n + chunksPerWorker*p.workers - 1) / (chunksPerWorker * p.workers)
	p.start(n, align, (per+align-1)/align*align, j)
}

// runGuidedJob is run with the ranges handed out as the workers ask for
// them, each claim taking a part of what is left (guidedChunk): large
// ranges first, then smaller ones, down to smallest items (a multiple of
// align), so a worker that runs slower for a while (a busy neighbour on
// a VM's core) takes less, while each range stays long enough to keep a
// blocked kernel's reuse (a prompt's products: l1Blocks' panels). The
// boundaries depend on n, align, smallest and the number of workers only.
func (p *pool) runGuidedJob(n, align, smallest int, j job) {
	align = max(align, 1)
	p.start(n, align, -((max(smallest, 1) + align - 1) / align * align), j)
}

// guidedChunk is the size of the range claimed when left items of a
// guided job remain: half a worker's share of them, at least smallest (a
// multiple of align).
func guidedChunk(left, align, smallest, workers int) int {
	c := max(smallest, left/(2*workers))
	return (c + align - 1) / align * align
}

// maxItems is the most items a job may have (chunked: the item index
// shares a word with the generation).
const maxItems = 1<<32 - 1

func (p *pool) start(n, align, chunk int, fn job) {
	if n <= 0 {
		return
	}
	align = max(align, 1)
	workers := min(p.workers, (n+align-1)/align)
	if workers == 1 || p.solo || n > maxItems {
		fn.do(0, 0, n)
		return
	}
	// The claim words first: a stale helper (one still in the last job)
	// that read the old word and then this job's n or chunk fails its
	// claim, since the word has changed; one that reads the new word
	// sees another generation and stops.
	// A job of fixed shares sets the chunk word too, to no items: a
	// helper still claiming chunks of the job before must not take this
	// job's items as chunks.
	g := p.gen.Load() + 1
	pieces := int64(p.workers)
	if chunk != 0 {
		p.next.Store(g << 32)
		pieces = int64(n)
	} else {
		p.next.Store(g<<32 | maxItems)
		for i := range p.shares {
			p.shares[i].Store(2 * g)
		}
	}
	p.fn = fn
	p.jobN.Store(int64(n))
	p.jobAlign.Store(int64(align))
	p.jobChunk.Store(int64(chunk))
	p.left.Store(pieces)
	p.gen.Store(g)
	for _, ch := range p.wake {
		select {
		case ch <- struct{}{}:
		default: // already signalled; the spinning worker sees gen
		}
	}
	last := p.work(0, g)
	var t time.Time
	if p.waited != nil {
		t = time.Now()
	}
	if !last && !p.spinUntil(func() bool { return p.left.Load() == 0 }) {
		p.sleep(g)
	}
	if p.waited != nil {
		*p.waited += time.Since(t)
	}
	p.fn = nil
}

// sleep blocks the caller until a helper has done job g's last piece.
// The caller names the job it sleeps on (sleeper) before it looks at left
// once more; the helper that does the last piece takes the name back
// (finished) and only then signals done. Exactly one of the two takes it
// back from g, so done is signalled exactly when the caller receives. A
// caller that saw the job finish while polling (the usual case, the
// helpers a few microseconds behind) touches no channel: a receive that
// came before the helper's send parked the caller, and the send then
// readied it on the helper's thread, where it waited for the scheduler
// to move it (30-300 µs in 1-2% of a decode step's jobs on the Zen 5 VM).
func (p *pool) sleep(g uint64) {
	p.sleeper.Store(g)
	if p.left.Load() != 0 || !p.sleeper.CompareAndSwap(g, 0) {
		<-p.done
	}
}

// finished is what a helper does after the last piece of job g: wake the
// caller if it sleeps on g.
func (p *pool) finished(g uint64) {
	if p.sleeper.CompareAndSwap(g, 0) {
		p.done <- struct{}{}
	}
}

// work runs pieces of job g as worker w: its own share first, then any
// share or chunk no one has claimed; it reports whether it did the job's
// last piece.
func (p *pool) work(w int, g uint64) (last bool) {
	if p.jobChunk.Load() != 0 {
		return p.claimChunks(w, g)
	}
	for k := range p.workers {
		s := (w + k) % p.workers
		if !p.shares[s].CompareAndSwap(2*g, 2*g+1) {
			continue
		}
		if lo, hi := share(int(p.jobN.Load()), int(p.jobAlign.Load()), p.workers, s); lo < hi {
			p.fn.do(s, lo, hi)
		}
		if p.left.Add(-1) == 0 {
			last = true
		}
	}
	return last
}

// claimChunks runs chunks of job g until none is left (or the job is
// another's: a stale helper's claim fails).
func (p *pool) claimChunks(w int, g uint64) (last bool) {
	for {
		word := p.next.Load()
		lo := int(word & maxItems)
		n, chunk := int(p.jobN.Load()), int(p.jobChunk.Load())
		if word>>32 != g&maxItems || lo >= n || chunk == 0 {
			return last
		}
		if chunk < 0 {
			chunk = guidedChunk(n-lo, int(p.jobAlign.Load()), -chunk, p.workers)
		}
		hi := min(lo+chunk, n)
		if !p.next.CompareAndSwap(word, word+uint64(hi-lo)) {
			continue
		}
		p.fn.do(w, lo, hi)
		if p.left.Add(-int64(hi-lo)) == 0 {
			last = true
		}
	}
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
		if p.stall != nil {
			p.stall(w)
		}
		if p.work(w, g) {
			p.finished(g)
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
