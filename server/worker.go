package server

import (
	"context"
	"sync"
	"time"

	"github.com/bitvk/bitvk/nn"
)

// A job goes from its HTTP handler to the scheduler (slots.go) through a
// bounded queue, and its text comes back through the job's pipe, which the
// scheduler closes when the job is over, after writing the job's result.
// The handler does all the network I/O, so a slow client slows only its
// own reply: the scheduler never waits for a client (the text waiting for
// one is bounded by the job's length limit and the context). The scheduler
// looks at each job's context between forward passes: a client that goes
// away, a deadline and a server shutting down all stop the generation
// within one token, without disturbing the other slots.

// job is one completion request on its way through the scheduler.
type job struct {
	ctx       context.Context
	arrived   time.Time
	prompt    []int32
	sampling  nn.SamplerConfig
	maxTokens int // ≤ 0: until the context is full
	stop      []string
	ignoreEOS bool
	logprobs  int  // > 0: return this many top alternatives (and the chosen token's log-probability) per token; −1: the chosen one's only
	json      bool // constrain the output to a JSON object
	evalOnly  bool // end once the prompt is in the cache, before the first sample
	echo      bool // the reply starts with the prompt's tokens (and, with logprobs, their log-probabilities)

	started chan struct{} // closed when the scheduler takes the job
	out     pipe          // the reply's text, piece by piece; closed at the end
	res     result        // written before out is closed
}

func newJob(ctx context.Context, arrived time.Time) *job {
	j := &job{ctx: ctx, arrived: arrived, started: make(chan struct{})}
	j.out.wake = make(chan struct{}, 1)
	return j
}

// result is how a job ended.
type result struct {
	finish      string // "stop" (end of turn or a stop string) or "length" (max_tokens, a full context, the deadline)
	interrupted bool   // the job's context ended it (the finish says how far it got)
	shutdown    bool   // the server stopped it (Close), perhaps before its context ended
	err         error  // the model failed
	stopWord    string // the stop string that ended it, if one did
	stats       nn.Stats
	prompt      int // prompt tokens
	cached      int // of which were reused from a slot's cache
	slot        int // the slot that served it
	queueWait   time.Duration
}

// piece is one step of a reply: the text a token added (possibly none,
// when it ends a character or a stop string's candidate later) and, when
// asked, the token's log-probabilities.
type piece struct {
	text string
	lp   *tokenLogprob // nil unless the job asked for logprobs
}

// pipe carries a job's pieces from the scheduler to its handler without
// ever blocking the scheduler.
type pipe struct {
	mu     sync.Mutex
	buf    []piece
	closed bool
	wake   chan struct{} // one pending wake-up for the reader
}

func (p *pipe) put(x piece) {
	p.mu.Lock()
	p.buf = append(p.buf, x)
	p.mu.Unlock()
	p.signal()
}

func (p *pipe) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.signal()
}

func (p *pipe) signal() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// next waits for the next piece; false when the pipe is closed and empty.
func (p *pipe) next() (piece, bool) {
	for {
		p.mu.Lock()
		if len(p.buf) > 0 {
			x := p.buf[0]
			p.buf[0] = piece{}
			p.buf = p.buf[1:]
			p.mu.Unlock()
			return x, true
		}
		closed := p.closed
		p.mu.Unlock()
		if closed {
			return piece{}, false
		}
		<-p.wake
	}
}

// queue holds the jobs waiting for a slot, at most limit of them.
type queue struct {
	mu     sync.Mutex
	jobs   []*job
	limit  int
	closed bool
	ready  chan struct{} // one pending wake-up for the scheduler
}

func newQueue(limit int) *queue { return &queue{limit: limit, ready: make(chan struct{}, 1)} }

// push adds j; false when the queue is full or closed. The jobs that
// idle slots are about to take do not count against the limit: with a
// limit of 0 a request still runs when a slot is free.
func (q *queue) push(j *job, idle int) (ok bool, closed bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return false, true
	}
	if len(q.jobs) >= q.limit+max(idle, 0) {
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

// remove takes j out of the queue; false when the scheduler already has it.
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
