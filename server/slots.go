package server

import (
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bitvk/bitvk/nn"
	"github.com/bitvk/bitvk/tokenizer"
)

// The scheduler is the one goroutine that uses the model. The backend's
// K/V cache holds several sequences (slots, nn.MultiBackend); each request
// gets one, and every step of the loop is one forward pass over all of
// them together (continuous batching):
//
//   - requests waiting in the queue are admitted as slots free up, into
//     the idle slot whose cache shares the longest start with the prompt
//     (prefix cache): those positions are not evaluated again, and when
//     another slot, busy or idle, shares a longer start, its keys and
//     values are copied over (a system prompt every request shares is
//     evaluated once);
//   - every slot that is generating contributes its last sampled token,
//     and the slots still reading their prompts contribute the next chunk
//     of it, at most Config.PrefillChunk tokens per pass in all while some
//     slot is generating, so that a long prompt never holds the other
//     streams for longer than a chunk;
//   - after the pass each slot samples with its own sampler, decodes, looks
//     for its stop strings and hands its text to its handler through a
//     pipe that never blocks; a slot whose request ended (finished,
//     cancelled, past its deadline) is freed at once, the others go on.
//
// Speculative decoding (Config.Draft) runs only while one slot is active
// and no request waits: a verification pass for one sequence costs as much
// as a step for several, so with several streams batching them is the
// better use of a pass. Its output is the same either way (the drafted
// tokens are kept only when the slot's sampler draws them).
//
// A backend that has one slot (no ForwardMulti) is served one request at
// a time by the same loop.
type scheduler struct {
	b      nn.MultiBackend
	vocab  int
	ctx    int // positions per slot
	tok    *tokenizer.Tokenizer
	reuse  bool               // keep the slots' caches between requests
	draft  nn.GenerateOptions // the drafting fields
	cost   *nn.DraftCost      // what a verification pass costs here, learned across requests
	chunk  int                // prompt tokens per pass while some slot generates
	q      *queue
	m      *metrics
	slots  []*slot
	steps  int64 // passes so far, the slots' clock
	busy   atomic.Int64
	avgJob atomic.Int64 // moving average of a job's time in ns, for Retry-After

	batch  []nn.SeqToken
	logits []float32
	draws  []draw // this step's tokens to sample, the slots' order

	view    sync.Mutex // guards views
	views   []slotView
	onStart func(*job) // tests: called as each job starts
	onDone  func(*job) // tests: called after each job, before its pipe closes
}

// slot is one sequence of the cache and the request it serves.
type slot struct {
	id    int
	cache []int32 // the tokens whose keys and values the slot holds, in order
	used  int64   // the step it was last given a request (least recently used goes first)

	j       *job // nil: idle
	s       *nn.Sampler
	dec     *tokenizer.Decoder
	stop    *stopper
	isEOG   func(int32) bool
	fed     int   // prompt tokens in the cache
	pending int32 // sampled, not yet evaluated; −1: none
	st      nn.Stats
	start   time.Time // the job's start
	first   time.Time // its first sample
	json    *jsonState
	echo    *tokenizer.Decoder // the echoed prompt's text (echo jobs)

	// this pass
	row0  int     // its first logits row
	n     int     // tokens it put in the pass
	draft []int32 // drafted tokens after pending

	policy *nn.DraftPolicy // the job's drafting backoff
}

func newScheduler(b nn.MultiBackend, c *nn.Config, tok *tokenizer.Tokenizer, parallel int, q *queue, m *metrics) *scheduler {
	w := &scheduler{b: b, vocab: c.Vocab, ctx: b.Context(), tok: tok, q: q, m: m}
	for i := range parallel {
		w.slots = append(w.slots, &slot{id: i, cache: make([]int32, 0, w.ctx), pending: -1})
	}
	w.views = make([]slotView, parallel)
	for i := range w.views {
		w.views[i].ID = i
	}
	return w
}

// loop serves jobs until quit is closed; then it ends the jobs in the
// slots (their contexts are ended by then).
func (w *scheduler) loop(quit <-chan struct{}) {
	defer func() {
		for _, sl := range w.slots {
			if sl.j != nil {
				sl.j.res.shutdown = true
				w.finish(sl, endInterrupted, nil)
			}
		}
	}()
	for {
		select {
		case <-quit:
			return
		default:
		}
		w.admit()
		w.reap()
		w.publish()
		if w.busy.Load() == 0 {
			select {
			case <-w.q.ready:
			case <-quit:
				return
			}
			continue
		}
		w.step()
	}
}

// admit gives waiting jobs the free slots.
func (w *scheduler) admit() {
	for w.busy.Load() < int64(len(w.slots)) {
		j := w.q.pop()
		if j == nil {
			return
		}
		w.start(j)
	}
}

// reap ends the jobs whose contexts ended.
func (w *scheduler) reap() {
	for _, sl := range w.slots {
		if sl.j != nil && sl.j.ctx.Err() != nil {
			w.finish(sl, endInterrupted, nil)
		}
	}
}

// start puts j in a slot, reusing the longest cached start of its prompt.
func (w *scheduler) start(j *job) {
	w.steps++
	var target, source *slot
	own, best := -1, 0
	for _, sl := range w.slots {
		p := 0
		if w.reuse {
			p = commonPrefix(sl.cache, j.prompt)
		}
		if sl.j == nil && (p > own || p == own && sl.used < target.used) {
			target, own = sl, p
		}
		if p > best {
			source, best = sl, p
		}
	}
	limit := len(j.prompt) - 1 // the last prompt token is evaluated for its logits
	if j.echo {
		limit = 0 // every position: the echoed prompt's log-probabilities
	}
	keep := min(own, limit)
	if n := min(best, limit); n > keep && source != target {
		if err := w.b.CopySeq(target.id, source.id, n); err == nil {
			target.cache = append(target.cache[:0], j.prompt[:n]...)
			keep = n
		}
	}
	sl := target
	sl.cache = sl.cache[:keep]
	sl.used = w.steps
	sl.j, sl.fed, sl.pending, sl.st, sl.draft = j, keep, -1, nn.Stats{}, nil
	sl.start, sl.first = time.Now(), time.Time{}
	w.busy.Add(1)
	j.res = result{prompt: len(j.prompt), cached: keep, slot: sl.id, queueWait: time.Since(j.arrived)}
	close(j.started)
	if w.onStart != nil {
		w.onStart(j)
	}
	w.m.queueWait.Observe(j.res.queueWait.Seconds())
	s, err := nn.NewSampler(j.sampling)
	if err != nil {
		w.finish(sl, endError, err)
		return
	}
	sl.s = s
	if w.draft.Draft != nil {
		if w.cost == nil {
			w.cost = nn.NewDraftCost()
		}
		sl.policy = nn.NewDraftPolicy(w.draft.DraftMax, w.draft.DraftEvery, w.cost)
	}
	sl.dec = w.tok.NewDecoder()
	sl.dec.Prime(j.prompt)
	sl.echo = nil
	if j.echo {
		sl.echo = w.tok.NewDecoder()
	}
	sl.stop = newStopper(j.stop)
	sl.isEOG = w.tok.IsEOG
	if j.ignoreEOS {
		sl.isEOG = func(int32) bool { return false }
	}
	sl.json = nil
	if j.json {
		sl.json = newJSONState()
	}
}

// step runs one forward pass over every active slot and hands each its
// token.
func (w *scheduler) step() {
	start := time.Now()
	w.batch = w.batch[:0]
	rows, active := 0, 0
	for _, sl := range w.slots {
		if sl.j != nil {
			active++
		}
	}
	decoding := false
	for _, sl := range w.slots {
		sl.n, sl.draft = 0, sl.draft[:0]
		if sl.j == nil || sl.pending < 0 {
			continue
		}
		decoding = true
		if w.draft.Draft != nil && active == 1 && w.q.len() == 0 && sl.json == nil {
			sl.draft = w.draftFor(sl)
		}
		sl.row0 = rows
		base := len(sl.cache)
		w.batch = append(w.batch, nn.SeqToken{Token: sl.pending, Seq: sl.id, Pos: base, Logits: true})
		for k, t := range sl.draft {
			w.batch = append(w.batch, nn.SeqToken{Token: t, Seq: sl.id, Pos: base + 1 + k, Logits: true})
		}
		sl.n = 1 + len(sl.draft)
		rows += sl.n
	}
	// Prompts, oldest request first, within the budget while some slot
	// generates (else a few chunks at once: no stream waits).
	budget := w.chunk
	if !decoding {
		budget = 4 * w.chunk
	}
	for _, sl := range w.prefilling() {
		if budget == 0 {
			break
		}
		p := sl.j.prompt
		n := min(len(p)-sl.fed, budget)
		budget -= n
		last := sl.fed+n == len(p)
		scored := sl.j.echo && sl.j.logprobs != 0 // every position's logits
		for k := range n {
			w.batch = append(w.batch, nn.SeqToken{Token: p[sl.fed+k], Seq: sl.id, Pos: sl.fed + k, Logits: scored || last && k == n-1})
		}
		sl.n = n
		switch {
		case scored:
			sl.row0 = rows
			rows += n
		case last:
			sl.row0 = rows
			rows++
		}
	}
	if len(w.batch) == 0 {
		return
	}
	streams, prompt := 0, false
	for _, sl := range w.slots {
		if sl.j != nil && sl.n > 0 {
			if sl.pending >= 0 {
				streams++
			} else {
				prompt = true
			}
		}
	}
	if need := rows * w.vocab; cap(w.logits) < need {
		w.logits = make([]float32, need)
	}
	logits := w.logits[:rows*w.vocab]
	passStart := time.Now()
	if err := w.b.ForwardMulti(w.batch, logits); err != nil {
		for _, sl := range w.slots {
			if sl.j != nil && sl.n > 0 {
				sl.cache = sl.cache[:0] // the cache may be in any state
				w.finish(sl, endError, err)
			}
		}
		return
	}
	labels := []string{strconv.Itoa(streams), strconv.FormatBool(prompt)} // streams, prompt
	w.m.passTime.WithLabelValues(labels...).Observe(time.Since(passStart).Seconds())
	defer func() { w.m.stepTime.WithLabelValues(labels...).Observe(time.Since(start).Seconds()) }()
	row := func(r int) []float32 { return logits[r*w.vocab : (r+1)*w.vocab] }
	w.draws = w.draws[:0]
	for _, sl := range w.slots {
		if sl.j == nil || sl.n == 0 {
			continue
		}
		switch {
		case sl.pending < 0: // a prompt chunk
			p := sl.j.prompt
			last := sl.row0 // the row of the chunk's last position, when it has logits
			if sl.echo != nil {
				last = w.echoPrompt(sl, row)
			}
			sl.cache = append(sl.cache, p[sl.fed:sl.fed+sl.n]...)
			sl.fed += sl.n
			if sl.fed < len(p) {
				continue
			}
			sl.st.PromptTokens = len(p) - sl.j.res.cached
			sl.st.PromptTime = time.Since(sl.start)
			if sl.j.evalOnly { // the prompt is cached for the requests after it
				w.finish(sl, endLength, nil)
				continue
			}
			w.draws = append(w.draws, draw{sl: sl, logits: row(last)})
		case len(sl.draft) == 0:
			sl.cache = append(sl.cache, sl.pending)
			sl.st.Draft.Steps++
			if sl.policy != nil && active == 1 && len(w.batch) == 1 {
				sl.policy.TimedPlain(time.Since(passStart)) // a plain step alone: the policy's unit of cost
			}
			w.draws = append(w.draws, draw{sl: sl, logits: row(sl.row0)})
		default:
			w.verify(sl, row, time.Since(passStart))
		}
	}
	drawAll(w.tok, w.draws)
	for i := range w.draws {
		d := &w.draws[i]
		if d.err != nil {
			w.finish(d.sl, endError, d.err)
			continue
		}
		w.emit(d.sl, d.y, d.lp)
	}
	clear(w.draws) // drop the slots and rows until the next step
}

// draw is a slot's next token to sample from its row of a pass's logits,
// and then what was drawn: the token, its log-probability when the request
// asks for them, or the sampler's error.
type draw struct {
	sl     *slot
	logits []float32
	y      int32
	lp     *tokenLogprob
	err    error
}

// run samples the slot's token (constrained to JSON when the request asks
// for it) and computes its log-probability. It touches only the slot's
// own sampler, constraint and row of logits, so the draws of different
// slots may run at once.
func (d *draw) run(tok *tokenizer.Tokenizer) {
	sl := d.sl
	if sl.json != nil {
		sl.json.mask(tok, d.logits, sl.isEOG)
	}
	d.y, d.err = sl.s.Sample(d.logits, sl.cache)
	if d.err == nil {
		d.lp = sl.logprob(tok, d.logits, d.y)
	}
}

// drawAll runs the draws, several at once on as many goroutines: each
// passes over the whole vocabulary (the sampler's selection, and for
// log-probabilities a sum of exponentials). A step of four streams of the
// 2B shape (128,256 tokens, log-probabilities asked) spent 2.8-3.0 ms
// after its pass one draw after another, 1.4-1.8 ms so on two cores of the
// Zen 5 VM, of a 35-40 ms step.
func drawAll(tok *tokenizer.Tokenizer, ds []draw) {
	if len(ds) == 0 {
		return
	}
	var wg sync.WaitGroup
	for i := 1; i < len(ds); i++ {
		wg.Go(func() { ds[i].run(tok) })
	}
	ds[0].run(tok)
	wg.Wait()
}

// echoPrompt hands the slot's request the prompt tokens of this pass's
// chunk, each with its log-probability given the ones before it (from the
// previous position's logits) when the request asks for log-probabilities:
// the first token has none. It returns the row of the chunk's last
// position.
func (w *scheduler) echoPrompt(sl *slot, row func(int) []float32) int {
	j, p := sl.j, sl.j.prompt
	scored := j.logprobs != 0
	if sl.fed == 0 {
		pc := piece{text: sl.echo.Next(p[0])}
		if scored {
			pc.lp = &tokenLogprob{ID: p[0], Token: w.tok.Piece(p[0]), None: true}
		}
		j.out.put(pc)
	}
	for k := range sl.n {
		q := sl.fed + k + 1 // the token row k's logits predict
		if q >= len(p) {
			break
		}
		pc := piece{text: sl.echo.Next(p[q])}
		if scored {
			pc.lp = logprobOf(w.tok, row(sl.row0+k), p[q], max(j.logprobs, 0))
		}
		j.out.put(pc)
	}
	if sl.fed+sl.n == len(p) {
		if rest := sl.echo.Flush(); rest != "" {
			j.out.put(piece{text: rest})
		}
	}
	if scored {
		return sl.row0 + sl.n - 1
	}
	return sl.row0
}

// prefilling lists the slots still reading their prompts, oldest request
// first.
func (w *scheduler) prefilling() []*slot {
	var out []*slot
	for _, sl := range w.slots {
		if sl.j != nil && sl.pending < 0 && sl.fed < len(sl.j.prompt) {
			out = append(out, sl)
		}
	}
	slices.SortFunc(out, func(a, b *slot) int { return a.j.arrived.Compare(b.j.arrived) })
	return out
}

// logprob is y's log-probability under logits with the request's top
// alternatives, or nil when the request asks for none.
func (sl *slot) logprob(tok *tokenizer.Tokenizer, logits []float32, y int32) *tokenLogprob {
	if k := sl.j.logprobs; k != 0 {
		return logprobOf(tok, logits, y, max(k, 0))
	}
	return nil
}

// emit hands a sampled token (with its log-probability lp, nil when the
// request asks for none) to the slot's request and ends the request when
// the token ends it; else the token is the next to evaluate. The cache
// holds every token before y.
func (w *scheduler) emit(sl *slot, y int32, lp *tokenLogprob) (ended bool) {
	j := sl.j
	if sl.first.IsZero() {
		sl.first = time.Now()
		w.m.firstToken.Observe(time.Since(j.arrived).Seconds())
	}
	sl.st.GenTokens++
	if sl.isEOG(y) {
		if lp != nil {
			j.out.put(piece{lp: lp})
		}
		w.finish(sl, endStop, nil)
		return true
	}
	if sl.json != nil {
		sl.json.feed(w.tok.Piece(y))
	}
	out, hit := sl.stop.feed(sl.dec.Next(y))
	if out != "" || lp != nil {
		j.out.put(piece{text: out, lp: lp})
	}
	switch {
	case hit:
		w.finish(sl, endStopString, nil)
	case sl.json != nil && sl.json.complete():
		w.finish(sl, endStop, nil)
	case j.maxTokens > 0 && sl.st.GenTokens >= j.maxTokens:
		w.finish(sl, endLength, nil)
	case j.ctx.Err() != nil:
		w.finish(sl, endInterrupted, nil)
	case len(sl.cache) >= w.ctx:
		w.finish(sl, endLength, nil)
	default:
		sl.pending = y
		return false
	}
	return true
}

// draftFor asks the drafter for tokens to follow the slot's sequence and
// its pending token, within the context and the length limit.
func (w *scheduler) draftFor(sl *slot) []int32 {
	room := min(w.draft.DraftMax, w.ctx-len(sl.cache)-1)
	if sl.j.maxTokens > 0 {
		room = min(room, sl.j.maxTokens-sl.st.GenTokens-1) // the pass yields one token more than it keeps
	}
	if room <= 0 {
		return sl.draft
	}
	seq := append(sl.cache, sl.pending) // spare capacity; the drafter only reads it
	d := w.draft.Draft.Draft(sl.draft[:0], seq, room)
	if len(d) > room {
		d = d[:room]
	}
	for i, t := range d {
		if t < 0 || int(t) >= w.vocab {
			d = d[:i] // a drafter's mistake costs only its draft
			break
		}
	}
	if len(d) == 0 {
		return d
	}
	k := sl.policy.Choose(len(d))
	if k == 0 {
		sl.st.Draft.Declined++
	}
	return d[:k]
}

// verify takes the pass that evaluated the slot's pending token and its
// draft: it samples each position in turn, as plain decoding would, and
// keeps the drafted tokens as long as they are what was drawn.
func (w *scheduler) verify(sl *slot, row func(int) []float32, took time.Duration) {
	d := sl.draft
	base := len(sl.cache)
	full := append(sl.cache, sl.pending)
	full = append(full, d...)
	ds := &sl.st.Draft
	ds.Steps++
	ds.Passes++
	ds.Drafted += len(d)
	kept, rejected := 0, false
	defer func() {
		ds.Accepted += kept
		ds.Lengths[kept]++
		sl.policy.TimedPass(len(d), kept, rejected, took)
	}()
	for k := 0; ; k++ {
		l := row(sl.row0 + k)
		sl.cache = full[:base+1+k] // what plain decoding holds here
		var y int32
		if k < len(d) && w.draft.DraftThreshold > 0 && nn.TokenProb(l, d[k]) >= float64(w.draft.DraftThreshold) {
			y = d[k]
		} else {
			var err error
			if y, err = sl.s.Sample(l, sl.cache); err != nil {
				w.finish(sl, endError, err)
				return
			}
		}
		match := k < len(d) && y == d[k]
		if match {
			kept++
		} else if k < len(d) {
			rejected = true
		}
		if w.emit(sl, y, sl.logprob(w.tok, l, y)) || !match {
			return
		}
	}
}

// How a job ends.
type ending int

const (
	endStop        ending = iota // the end of the turn, or a JSON value complete
	endStopString                // a stop string (the text after it is dropped)
	endLength                    // max_tokens or a full context
	endInterrupted               // the job's context ended
	endError                     // the model failed
)

// finish ends the slot's job: the rest of its text, its result, the
// metrics, and the slot is free.
func (w *scheduler) finish(sl *slot, how ending, err error) {
	j, r := sl.j, &sl.j.res
	switch how {
	case endStop, endLength:
		r.finish = map[ending]string{endStop: "stop", endLength: "length"}[how]
		if sl.dec != nil {
			out, hit := sl.stop.feed(sl.dec.Flush())
			if !hit {
				out += sl.stop.flush()
			} else {
				r.finish = "stop"
			}
			if out != "" {
				j.out.put(piece{text: out})
			}
		}
	case endStopString:
		r.finish = "stop"
	case endInterrupted:
		r.interrupted, r.finish = true, "length" // what a client still listening (a deadline) is told
	case endError:
		r.err, r.finish = err, "length"
		sl.cache = sl.cache[:0]
	}
	st := &sl.st
	switch {
	case how == endStop && st.GenTokens > 0:
		st.Stop = nn.StopEOG
	case how == endInterrupted:
		st.Stop = nn.StopInterrupted
	default:
		st.Stop = nn.StopLength
	}
	if !sl.first.IsZero() {
		st.GenTime = time.Since(sl.first)
	}
	if sl.fed < len(j.prompt) {
		st.PromptTokens, st.PromptTime = sl.fed-r.cached, time.Since(sl.start)
	}
	r.stats = *st
	if sl.stop != nil {
		r.stopWord = sl.stop.word
	}
	w.m.promptTokens.Add(float64(r.prompt))
	w.m.cachedTokens.Add(float64(r.cached))
	if r.cached > 0 {
		w.m.cacheHits.Inc()
	}
	w.m.genTokens.Add(float64(st.GenTokens))
	if st.PromptTokens > 0 && st.PromptTime > 0 {
		w.m.promptRate.Observe(st.PromptRate())
	}
	if st.GenTokens >= 2 {
		w.m.genRate.Observe(st.GenRate())
	}
	w.m.observeDraft(*st)
	if !w.reuse {
		sl.cache = sl.cache[:0]
	}
	// avg ← avg + (t − avg)/8
	avg := w.avgJob.Load()
	w.avgJob.Store(avg + (int64(time.Since(sl.start))-avg)/8)
	sl.j, sl.s, sl.dec, sl.stop, sl.json, sl.pending = nil, nil, nil, nil, nil, -1
	w.busy.Add(-1)
	if w.onDone != nil {
		w.onDone(j)
	}
	j.out.close()
}

// retryAfter estimates how many seconds until the queue has room: the
// average job time for every job ahead, shared by the slots, at least 1 s
// and at most 60 s.
func (w *scheduler) retryAfter() int {
	ahead := time.Duration(w.q.len()+1) * time.Duration(w.avgJob.Load()) / time.Duration(len(w.slots))
	return min(max(int((ahead+time.Second-1)/time.Second), 1), 60)
}

// slotView is what GET /slots shows of a slot.
type slotView struct {
	ID           int    `json:"id"`
	IsProcessing bool   `json:"is_processing"`
	State        string `json:"state"` // idle, prompt, generating
	Cached       int    `json:"n_ctx_used"`
	Context      int    `json:"n_ctx"`
	PromptN      int    `json:"n_prompt_tokens"`
	PromptDone   int    `json:"n_prompt_tokens_processed"`
	Decoded      int    `json:"n_decoded"`
	MaxTokens    int    `json:"n_predict"`
}

// publish copies the slots' state for GET /slots.
func (w *scheduler) publish() {
	w.view.Lock()
	defer w.view.Unlock()
	for i, sl := range w.slots {
		v := slotView{ID: sl.id, State: "idle", Cached: len(sl.cache), Context: w.ctx, MaxTokens: -1}
		if j := sl.j; j != nil {
			v.IsProcessing = true
			v.State = "generating"
			if sl.pending < 0 {
				v.State = "prompt"
			}
			v.PromptN, v.PromptDone, v.Decoded = len(j.prompt), sl.fed, sl.st.GenTokens
			if j.maxTokens > 0 {
				v.MaxTokens = j.maxTokens
			}
		}
		w.views[i] = v
	}
}

// status is the slots' state as of the last pass.
func (w *scheduler) status() []slotView {
	w.view.Lock()
	defer w.view.Unlock()
	return slices.Clone(w.views)
}
