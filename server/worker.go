package server

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bitvk/bitvk/nn"
	"github.com/bitvk/bitvk/tokenizer"
)

// One worker goroutine owns the Engine and serves the jobs one at a time,
// oldest first, from a bounded queue: no two requests ever touch the model
// at once, and a request's sampler, decoder and stop strings are its own.
//
// A job goes from its HTTP handler to the worker through the queue, and its
// text comes back on the job's events channel, which the worker closes when
// the job is over, after writing the job's result. The handler does all the
// network I/O, so a slow client slows only its own reply (the worker waits
// on the channel for it, within its deadline), and the worker looks at the
// job's context between tokens: a client that goes away, a deadline and a
// server shutting down all stop the generation within one token.
//
// The K/V cache is kept from one job to the next: a prompt that begins with
// the tokens the cache holds (the conversation so far, when a chat client
// sends the next message) evaluates only the rest. The CPU backend computes
// a position the same whether it is evaluated in a batch or alone, so reuse
// changes no result there.

// job is one completion request on its way through the worker.
type job struct {
	ctx       context.Context
	arrived   time.Time
	prompt    []int32
	sampling  nn.SamplerConfig
	maxTokens int // ≤ 0: until the context is full
	stop      []string
	ignoreEOS bool

	started chan struct{} // closed when the worker takes the job
	events  chan string   // the reply's text, piece by piece; closed at the end
	res     result        // written before events is closed
}

func newJob(ctx context.Context, arrived time.Time) *job {
	return &job{ctx: ctx, arrived: arrived, started: make(chan struct{}), events: make(chan string, 64)}
}

// result is how a job ended.
type result struct {
	finish      string // "stop" (end of turn or a stop string) or "length" (max_tokens, a full context, the deadline)
	interrupted bool   // the job's context ended it (the finish says how far it got)
	err         error  // the engine failed
	stats       nn.Stats
	prompt      int // prompt tokens
	cached      int // of which were kept in the cache from the job before
	queueWait   time.Duration
}

// errStopString ends a generation whose text reached a stop string.
var errStopString = errors.New("stop string")

// errInterrupted ends a generation whose context ended while it waited to
// hand over text.
var errInterrupted = errors.New("interrupted")

// queue holds the jobs waiting for the worker, at most limit of them.
type queue struct {
	mu     sync.Mutex
	jobs   []*job
	limit  int
	closed bool
	ready  chan struct{} // one pending wake-up for the worker
}

func newQueue(limit int) *queue { return &queue{limit: limit, ready: make(chan struct{}, 1)} }

// push adds j; false when the queue is full or closed.
func (q *queue) push(j *job) (ok bool, closed bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return false, true
	}
	if len(q.jobs) >= q.limit {
		return false, false
	}
	q.jobs = append(q.jobs, j)
	select {
	case q.ready <- struct{}{}:
	default:
	}
	return true, false
}

// pop takes the oldest job, or nil.
func (q *queue) pop() *job {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.jobs) == 0 {
		return nil
	}
	j := q.jobs[0]
	q.jobs[0] = nil
	q.jobs = q.jobs[1:]
	return j
}

// remove takes j out of the queue; false when the worker already has it.
func (q *queue) remove(j *job) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	for i, x := range q.jobs {
		if x == j {
			q.jobs = append(q.jobs[:i], q.jobs[i+1:]...)
			return true
		}
	}
	return false
}

// len is the number of jobs waiting.
func (q *queue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.jobs)
}

// close refuses further jobs.
func (q *queue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
}

// worker owns the engine.
type worker struct {
	engine  *nn.Engine
	tok     *tokenizer.Tokenizer
	reuse   bool               // keep the K/V cache's common prefix between jobs
	draft   nn.GenerateOptions // the drafting fields of every job's options
	q       *queue
	m       *metrics
	running atomic.Bool
	avgJob  atomic.Int64 // moving average of a job's time in ns, for Retry-After
	onStart func(*job)   // tests: called as each job starts
	onDone  func(*job)   // tests: called after each job, before its events close
}

// loop serves jobs until quit is closed.
func (w *worker) loop(quit <-chan struct{}) {
	for {
		select {
		case <-quit:
			return
		default:
		}
		j := w.q.pop()
		if j == nil {
			select {
			case <-w.q.ready:
			case <-quit:
				return
			}
			continue
		}
		w.running.Store(true)
		start := time.Now()
		w.serve(j)
		w.running.Store(false)
		// avg ← avg + (t − avg)/8
		avg := w.avgJob.Load()
		w.avgJob.Store(avg + (int64(time.Since(start))-avg)/8)
	}
}

// serve generates j's reply.
func (w *worker) serve(j *job) {
	j.res.queueWait = time.Since(j.arrived)
	close(j.started)
	defer close(j.events)
	if w.onStart != nil {
		w.onStart(j)
	}
	if w.onDone != nil {
		defer w.onDone(j)
	}
	w.m.queueWait.Observe(j.res.queueWait.Seconds())
	r := &j.res
	r.prompt = len(j.prompt)
	e := w.engine
	keep := 0
	if w.reuse {
		keep = min(commonPrefix(e.Tokens(), j.prompt), len(j.prompt)-1)
	}
	e.Truncate(keep)
	r.cached = keep
	s, err := nn.NewSampler(j.sampling)
	if err != nil {
		r.err = err
		return
	}
	dec := w.tok.NewDecoder()
	dec.Prime(j.prompt)
	stop := newStopper(j.stop)
	send := func(text string) error {
		if text == "" {
			return nil
		}
		select {
		case j.events <- text:
			return nil
		case <-j.ctx.Done():
			return errInterrupted
		}
	}
	opts := nn.GenerateOptions{MaxTokens: j.maxTokens, IsEOG: w.tok.IsEOG,
		Draft: w.draft.Draft, DraftMax: w.draft.DraftMax, DraftThreshold: w.draft.DraftThreshold}
	if j.ignoreEOS {
		opts.IsEOG = nil
	}
	first := true
	st, err := e.Generate(j.ctx, j.prompt[keep:], opts, s, func(id int32) error {
		if first {
			first = false
			w.m.firstToken.Observe(time.Since(j.arrived).Seconds())
		}
		if opts.IsEOG != nil && opts.IsEOG(id) {
			return nil // the end of the turn is not text
		}
		out, hit := stop.feed(dec.Next(id))
		if err := send(out); err != nil {
			return err
		}
		if hit {
			return errStopString
		}
		return nil
	})
	r.stats = st
	switch {
	case errors.Is(err, errStopString):
		r.finish = "stop"
	case errors.Is(err, errInterrupted):
		r.interrupted = true
	case err != nil:
		r.err = err
		e.Reset() // the cache may be in any state
	default:
		switch st.Stop {
		case nn.StopEOG:
			r.finish = "stop"
		case nn.StopInterrupted:
			r.interrupted = true
		default: // StopLength, StopContext
			r.finish = "length"
		}
		if !r.interrupted {
			out, hit := stop.feed(dec.Flush())
			if !hit {
				out += stop.flush()
			} else {
				r.finish = "stop"
			}
			if send(out) != nil {
				r.interrupted = true
			}
		}
	}
	if r.interrupted {
		r.finish = "length" // what a client still listening (a deadline) is told
	}
	w.m.promptTokens.Add(float64(r.prompt))
	w.m.cachedTokens.Add(float64(r.cached))
	w.m.genTokens.Add(float64(st.GenTokens))
	if st.PromptTokens > 0 && st.PromptTime > 0 {
		w.m.promptRate.Observe(st.PromptRate())
	}
	if st.GenTokens >= 2 {
		w.m.genRate.Observe(st.GenRate())
	}
	w.m.observeDraft(st)
}

// retryAfter estimates how many seconds until the queue has room: the
// average job time for every job ahead, at least 1 s and at most 60 s.
func (w *worker) retryAfter() int {
	ahead := time.Duration(w.q.len()+1) * time.Duration(w.avgJob.Load())
	return min(max(int((ahead+time.Second-1)/time.Second), 1), 60)
}

// commonPrefix is the number of leading tokens a and b share.
func commonPrefix(a, b []int32) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}
