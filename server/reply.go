package server

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"net/http"
	"sync"
	"time"

	"github.com/google/uuid"
)

// run is one request's jobs (one per choice) from the queue to the end of
// the reply.
type run struct {
	s      *Server
	ctx    context.Context
	cancel context.CancelCauseFunc
	g      *generation
	jobs   []*job
	stop   func() // releases the run's context
}

// submit queues g's jobs and waits until the scheduler has started them
// all. On failure it has answered the request and returns nil.
func (s *Server) submit(w http.ResponseWriter, r *http.Request, rec *recorder, g *generation) *run {
	arrived := time.Now()
	ctx, cancel := context.WithCancelCause(r.Context())
	stopAfter := context.AfterFunc(s.stopCtx, func() { cancel(context.Cause(s.stopCtx)) })
	release := []func(){func() { cancel(nil) }, func() { stopAfter() }}
	if s.cfg.Timeout > 0 {
		var c context.CancelFunc
		ctx, c = context.WithTimeoutCause(ctx, s.cfg.Timeout, errDeadline)
		release = append(release, c)
	}
	rn := &run{s: s, ctx: ctx, cancel: cancel, g: g, stop: func() {
		for i := len(release) - 1; i >= 0; i-- {
			release[i]()
		}
	}}
	fail := func(e *apiError) *run {
		for _, j := range rn.jobs {
			s.q.remove(j)
		}
		writeError(w, e)
		rn.stop()
		return nil
	}
	if s.draining.Load() {
		return fail(shuttingDown())
	}
	n := max(g.n, 1)
	prompts := g.prompts
	if prompts == nil {
		prompts = [][]int32{g.prompt}
	}
	for k := range len(prompts) * n {
		i := k % n // the choice of its prompt
		j := newJob(ctx, arrived)
		j.prompt, j.sampling, j.maxTokens, j.stop, j.ignoreEOS, j.json = prompts[k/n], g.sampling, g.maxTokens, g.stop, g.ignoreEOS, g.json
		j.evalOnly, j.echo = g.evalOnly, g.echo
		j.sampling.Seed += uint64(i)
		if g.logprobs {
			j.logprobs = g.topLogprobs
			if j.logprobs == 0 {
				j.logprobs = -1 // the drawn token's only
			}
		}
		if ok, closed := s.q.push(j, len(s.w.slots)-int(s.w.busy.Load())); !ok {
			if closed {
				return fail(shuttingDown())
			}
			e := newError(http.StatusServiceUnavailable, "server_error", "queue_full", "",
				"the server is busy: %d requests are waiting already (--queue); try again later", s.cfg.Queue)
			if n > 1 {
				e.Message = "the server is busy: the queue (--queue) has no room for all the choices asked for (n); try again later"
			}
			e.retryAfter = s.w.retryAfter()
			return fail(e)
		}
		rn.jobs = append(rn.jobs, j)
	}
	for i, j := range rn.jobs {
		select {
		case <-j.started:
			continue
		case <-ctx.Done():
		}
		// The jobs not started yet leave the queue; those started end
		// within a token (their context has ended).
		left := false
		for _, k := range rn.jobs[i:] {
			if s.q.remove(k) {
				left = true
			}
		}
		if left {
			s.abandon(w, rec, context.Cause(ctx), time.Since(arrived))
			rn.stop()
			return nil
		}
		break // all were started just now; they end within a token
	}
	return rn
}

// complete queues g, waits for the scheduler and sends the reply in
// OpenAI's shape, streamed or whole.
func (s *Server) complete(w http.ResponseWriter, r *http.Request, rec *recorder, g *generation) {
	rn := s.submit(w, r, rec, g)
	if rn == nil {
		return
	}
	defer rn.stop()
	reply := &reply{run: rn, w: w, rec: rec, created: time.Now().Unix()}
	if g.chat {
		reply.id = "chatcmpl-" + uuid.NewString()
	} else {
		reply.id = "cmpl-" + uuid.NewString()
	}
	if g.stream {
		reply.stream()
	} else {
		reply.whole()
	}
	rn.log(rec)
}

// log adds the run's counts to the request's log line.
func (rn *run) log(rec *recorder) {
	res := &rn.jobs[0].res
	gen := 0
	for _, j := range rn.jobs {
		gen += j.res.stats.GenTokens
	}
	rec.attrs = append(rec.attrs, slog.Int("prompt_tokens", res.prompt), slog.Int("cached_tokens", res.cached),
		slog.Int("completion_tokens", gen), slog.String("finish", res.finish), slog.Int("slot", res.slot))
}

// indexed is a piece of choice i; done marks the choice's end.
type indexed struct {
	i    int
	p    piece
	done bool
}

// pieces merges the jobs' pipes into one channel, in the order the pieces
// come; it is closed after every job's end.
func (rn *run) pieces() <-chan indexed {
	out := make(chan indexed, 16)
	var wg sync.WaitGroup
	for i, j := range rn.jobs {
		wg.Go(func() {
			for {
				p, ok := j.out.next()
				if !ok {
					out <- indexed{i: i, done: true}
					return
				}
				out <- indexed{i: i, p: p}
			}
		})
	}
	go func() { wg.Wait(); close(out) }()
	return out
}

func shuttingDown() *apiError {
	return newError(http.StatusServiceUnavailable, "server_error", "shutting_down", "", "the server is shutting down")
}

// abandon answers a request that left the queue before the scheduler took
// it.
func (s *Server) abandon(w http.ResponseWriter, rec *recorder, cause error, waited time.Duration) {
	switch {
	case errors.Is(cause, errDeadline):
		e := newError(http.StatusServiceUnavailable, "server_error", "timeout", "",
			"the server is busy: the request waited %.1f s in the queue, past its deadline of %v (--timeout); try again later",
			waited.Seconds(), s.cfg.Timeout)
		e.retryAfter = s.w.retryAfter()
		writeError(w, e)
	case errors.Is(cause, errShuttingDown):
		writeError(w, shuttingDown())
	default:
		rec.gone = true
	}
}

// outcome decides, once the jobs are done, what the client is told: ok
// with each choice's finish reason, or an error, or nothing (it is gone).
func (rn *run) outcome() (finish []string, e *apiError, gone bool) {
	interrupted, shutdown := false, false
	for _, j := range rn.jobs {
		res := &j.res
		if res.err != nil {
			return nil, newError(http.StatusInternalServerError, "server_error", "", "", "the model failed: %v", res.err), false
		}
		interrupted = interrupted || res.interrupted
		shutdown = shutdown || res.shutdown
		finish = append(finish, res.finish)
	}
	if !interrupted {
		return finish, nil, false
	}
	cause := context.Cause(rn.ctx)
	if shutdown && cause == nil {
		cause = errShuttingDown
	}
	switch {
	case errors.Is(cause, errDeadline):
		return finish, nil, false // as far as it got by the deadline
	case errors.Is(cause, errShuttingDown):
		return nil, newError(http.StatusServiceUnavailable, "server_error", "shutting_down", "", "the server is shutting down; the reply was cut short"), false
	}
	return nil, nil, true
}

// reply writes one run's answer in OpenAI's shape.
type reply struct {
	*run
	w       http.ResponseWriter
	rec     *recorder
	id      string
	created int64
}

// whole collects the reply and sends it as one JSON object.
func (rp *reply) whole() {
	n := len(rp.jobs)
	texts := make([][]byte, n)
	chatLP := make([][]chatTokenLogprob, n)
	textLP := make([]*textLogprobs, n)
	for x := range rp.pieces() {
		if x.done {
			continue
		}
		if lp := x.p.lp; lp != nil {
			if rp.g.chat {
				chatLP[x.i] = append(chatLP[x.i], lp.chat())
			} else {
				if textLP[x.i] == nil {
					textLP[x.i] = &textLogprobs{}
				}
				textLP[x.i].add(lp, len(texts[x.i]))
			}
		}
		texts[x.i] = append(texts[x.i], x.p.text...)
	}
	finish, e, gone := rp.outcome()
	switch {
	case gone:
		rp.rec.gone = true
		return
	case e != nil:
		writeError(rp.w, e)
		return
	}
	out := completion{ID: rp.id, Created: rp.created, Model: rp.s.cfg.ModelName, Usage: rp.usage(), Timings: rp.timings()}
	out.Object = "text_completion"
	if rp.g.chat {
		out.Object = "chat.completion"
	}
	for i := range n {
		c := choice{Index: i, FinishReason: &finish[i]}
		if rp.g.chat {
			c.Message = &message{Role: "assistant", Content: string(texts[i])}
			if rp.g.logprobs {
				c.Logprobs = &chatLogprobs{Content: append([]chatTokenLogprob{}, chatLP[i]...)}
			}
		} else {
			t := string(texts[i])
			c.Text = &t
			if rp.g.logprobs {
				if textLP[i] == nil {
					textLP[i] = &textLogprobs{}
				}
				c.Logprobs = textLP[i]
			}
		}
		out.Choices = append(out.Choices, c)
	}
	writeJSON(rp.w, http.StatusOK, out)
}

// stream sends the reply as Server-Sent Events, one chunk per piece of
// text, as OpenAI does: for chat a first chunk with the role, then the
// content, then an empty delta with the finish reason (per choice); with
// include_usage a last chunk with no choices and the usage; then
// "data: [DONE]".
func (rp *reply) stream() {
	h := rp.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // no proxy buffering of the events
	rp.w.WriteHeader(http.StatusOK)
	sse := &sseWriter{w: rp.w, rc: http.NewResponseController(rp.w)}
	defer sse.rc.SetWriteDeadline(time.Time{}) // the connection may serve another request
	if rp.g.chat {
		for i := range rp.jobs {
			empty := ""
			sse.send(rp.chunk(i, &delta{Role: "assistant", Content: &empty}, nil))
		}
	}
	ended := make([]bool, len(rp.jobs))
	var last []chunk                    // the finish chunks, sent once every choice is done
	offset := make([]int, len(rp.jobs)) // the length of each choice's text so far, for text_offset
	for x := range rp.pieces() {
		if sse.err != nil {
			continue // drain: the scheduler stops within a token
		}
		if x.done {
			ended[x.i] = true
			continue
		}
		piece := x.p.text
		var c chunk
		if rp.g.chat {
			c = rp.chunk(x.i, &delta{Content: &piece}, nil)
		} else {
			c = rp.chunk(x.i, nil, &piece)
		}
		if lp := x.p.lp; lp != nil {
			if rp.g.chat {
				c.Choices[0].Logprobs = &chatLogprobs{Content: []chatTokenLogprob{lp.chat()}}
			} else {
				t := &textLogprobs{}
				t.add(lp, offset[x.i])
				c.Choices[0].Logprobs = t
			}
		}
		offset[x.i] += len(piece)
		sse.send(c)
		if sse.err != nil {
			rp.cancel(errClientGone)
		}
	}
	finish, e, gone := rp.outcome()
	switch {
	case gone || sse.err != nil:
		rp.rec.gone = true
		return
	case e != nil:
		sse.send(struct {
			Error *apiError `json:"error"`
		}{e})
		return
	}
	for i := range rp.jobs {
		var c chunk
		if rp.g.chat {
			c = rp.chunk(i, &delta{}, nil)
		} else {
			empty := ""
			c = rp.chunk(i, nil, &empty)
		}
		c.Choices[0].FinishReason = &finish[i]
		if i == len(rp.jobs)-1 {
			c.Timings = rp.timings()
		}
		last = append(last, c)
	}
	for _, c := range last {
		sse.send(c)
	}
	if rp.g.includeUsage {
		u := rp.chunk(0, nil, nil)
		u.Choices, u.Usage = []choice{}, rp.usage()
		sse.send(u)
	}
	sse.done()
	if sse.err != nil {
		rp.rec.gone = true
	}
}

// chunk is one streamed event of choice i: a delta (chat) or a text
// (completions).
func (rp *reply) chunk(i int, d *delta, text *string) chunk {
	c := chunk{ID: rp.id, Created: rp.created, Model: rp.s.cfg.ModelName, Object: "text_completion"}
	if rp.g.chat {
		c.Object = "chat.completion.chunk"
	}
	if d != nil || text != nil {
		c.Choices = []choice{{Index: i, Delta: d, Text: text}}
	}
	return c
}

// usage counts each prompt once (its n choices share it) and every
// choice's tokens.
func (rn *run) usage() *usage {
	prompt, cached, gen := 0, 0, 0
	n := max(rn.g.n, 1)
	for k, j := range rn.jobs {
		if k%n == 0 {
			prompt += j.res.prompt
			cached += j.res.cached
		}
		gen += j.res.stats.GenTokens
	}
	return &usage{
		PromptTokens: prompt, CompletionTokens: gen, TotalTokens: prompt + gen,
		PromptTokensDetails: &promptDetails{CachedTokens: cached},
	}
}

// timings are the first choice's.
func (rn *run) timings() *timings {
	j := rn.jobs[0]
	st := j.res.stats
	ms := func(d time.Duration) float64 { return math.Round(d.Seconds()*1e6) / 1e3 }
	return &timings{
		QueueMS: ms(j.res.queueWait),
		PromptN: st.PromptTokens, PromptMS: ms(st.PromptTime), PromptPerSecond: st.PromptRate(),
		PredictedN: st.GenTokens, PredictedMS: ms(st.GenTime), PredictedPerSecond: st.GenRate(),
		DraftN: st.Draft.Drafted, DraftAccepted: st.Draft.Accepted, DraftPasses: st.Draft.Passes, PassesSaved: st.PassesSaved(),
	}
}
