package view

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bitvk/bitvk/gpu"
	"github.com/bitvk/bitvk/nn"
	"github.com/bitvk/bitvk/tokenizer"
)

// Session is the model a view shows at work, and what the window needs
// to know about it.
type Session struct {
	Title     string // the title bar: model and backend
	Engine    *nn.Engine
	Tokenizer *tokenizer.Tokenizer
	Sampler   *nn.Sampler
	MaxTokens int    // per generation
	Prompt    string // generated from at the start; editable
	// Bandwidth is the memory bandwidth measured on the device that runs
	// the model (bytes per second) and BytesPerToken what one decode step
	// reads: their ratio is the roofline the speed panel draws.
	Bandwidth     float64
	BytesPerToken int64
	// Reference, when set, is a CPU backend of the same model: the Vulkan
	// hidden states of the prompt are compared with its (bitvk check's
	// figure, per position) and drawn as the heatmap, with Tolerance marked.
	Reference nn.Backend
	Tolerance float64
}

// Event kinds the model's goroutine sends the window.
const (
	evStart   = iota // a generation begins: prompt
	evToken          // text (may be empty), rate of the step (0 for the first token)
	evDone           // stats, err
	evProfile        // profile or note
	evCheck          // diffs or note
)

type event struct {
	kind    int
	text    string
	rate    float64
	stats   nn.Stats
	err     error
	profile *gpu.Profile
	diffs   [][2]nn.BlockDiff
	note    string
}

// runner runs generations on its own goroutine, one at a time, and reports
// tokens, timings, the profile and the check through events.
type runner struct {
	s        *Session
	gpu      *gpu.Backend // nil when the model runs on the CPU
	requests chan string  // prompts to generate from
	events   chan event
	quit     chan struct{}
	done     chan struct{}
	cancel   chan context.CancelFunc // holds the running generation's cancel, if any
	checked  bool
}

func startRunner(s *Session) *runner {
	r := &runner{s: s, requests: make(chan string, 1), events: make(chan event, 4096), quit: make(chan struct{}), done: make(chan struct{}), cancel: make(chan context.CancelFunc, 1)}
	r.gpu, _ = s.Engine.Backend().(*gpu.Backend)
	r.cancel <- nil
	go r.loop()
	return r
}

// generate asks for a generation from prompt, stopping one under way.
func (r *runner) generate(prompt string) {
	r.stop()
	select {
	case <-r.requests: // an older request not started yet
	default:
	}
	r.requests <- prompt
}

// stop cancels the generation under way, if any.
func (r *runner) stop() {
	c := <-r.cancel
	if c != nil {
		c()
	}
	r.cancel <- c
}

// close stops the generation and waits for the goroutine to end.
func (r *runner) close() {
	r.stop()
	close(r.quit)
	<-r.done
}

func (r *runner) send(ev event) {
	select {
	case r.events <- ev:
	case <-r.quit:
	}
}

func (r *runner) loop() {
	defer close(r.done)
	for {
		select {
		case <-r.quit:
			return
		case p := <-r.requests:
			r.run(p)
		}
	}
}

func (r *runner) run(prompt string) {
	e, s := r.s.Engine, r.s
	ids := s.Tokenizer.Encode(prompt, tokenizer.EncodeOptions{})
	if len(ids) > e.Context()-1 {
		ids = ids[len(ids)-(e.Context()-1):]
	}
	if s.Reference != nil && !r.checked && len(ids) > 0 {
		r.checked = true
		r.send(r.check(ids))
		e.Reset() // the trace wrote the cache: evaluate the prompt again
	}
	r.send(event{kind: evStart, text: prompt})
	if len(ids) == 0 {
		r.send(event{kind: evDone, err: errors.New("the prompt is empty: type one and press Enter")})
		if s.Reference != nil && !r.checked {
			r.send(event{kind: evCheck, note: "the prompt is empty: nothing to compare yet"})
		}
		if r.gpu != nil {
			r.send(event{kind: evProfile, note: "no decode step timed yet: the prompt is empty"})
		}
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	<-r.cancel
	r.cancel <- cancel
	defer func() {
		<-r.cancel
		r.cancel <- nil
	}()
	e.Reset()
	dec := s.Tokenizer.NewDecoder()
	dec.Prime(ids)
	var last time.Time
	st, err := e.Generate(ctx, ids, nn.GenerateOptions{MaxTokens: s.MaxTokens, IsEOG: s.Tokenizer.IsEOG}, s.Sampler, func(id int32) error {
		now := time.Now()
		rate := 0.0
		if !last.IsZero() {
			rate = 1 / now.Sub(last).Seconds()
		}
		last = now
		text := ""
		if !s.Tokenizer.IsEOG(id) {
			text = dec.Next(id)
		}
		r.send(event{kind: evToken, text: text, rate: rate})
		return nil
	})
	if tail := dec.Flush(); tail != "" {
		r.send(event{kind: evToken, text: tail})
	}
	r.send(event{kind: evDone, stats: st, err: err})
	switch {
	case r.gpu == nil:
	case err != nil:
		r.send(event{kind: evProfile, note: "no decode step timed: the generation failed"})
	default:
		r.send(r.profileStep())
	}
}

// profileStep times one decode step at the next position, dispatch by
// dispatch (its K/V entry there is overwritten; the next generation starts
// afresh anyway).
func (r *runner) profileStep() event {
	pos := r.s.Engine.Pos()
	if pos >= r.gpu.Context() {
		return event{kind: evProfile, note: "the context is full: no position left to time a decode step at"}
	}
	p, err := r.gpu.ProfileForward(1, pos, 3)
	if err != nil {
		return event{kind: evProfile, note: fmt.Sprintf("profiling the decode step: %v", err)}
	}
	return event{kind: evProfile, profile: p}
}

// check traces the prompt on the model's Vulkan backend and on the CPU
// reference and compares the hidden states as bitvk check does.
func (r *runner) check(ids []int32) event {
	c := r.s.Engine.Config()
	ref, _, err := nn.RunTrace(r.s.Reference, c, ids)
	if err != nil {
		return event{kind: evCheck, note: fmt.Sprintf("tracing the CPU reference: %v", err)}
	}
	got, _, err := nn.RunTrace(r.s.Engine.Backend(), c, ids)
	if err != nil {
		return event{kind: evCheck, note: fmt.Sprintf("tracing the model: %v", err)}
	}
	d, err := nn.CompareTraces(ref, got, c.Embd)
	if err != nil {
		return event{kind: evCheck, note: err.Error()}
	}
	return event{kind: evCheck, diffs: d}
}

// apply folds an event into the state.
func (st *state) apply(ev event) {
	switch ev.kind {
	case evStart:
		st.shown, st.text, st.rates, st.running, st.status = ev.text, "", nil, true, ""
	case evToken:
		st.text += ev.text
		if ev.rate > 0 {
			st.rates = append(st.rates, ev.rate)
		}
	case evDone:
		st.running = false
		st.promptRate, st.genRate = ev.stats.PromptRate(), ev.stats.GenRate()
		st.status = fmt.Sprintf("%d tokens at %.1f tok/s (prompt %d at %.1f tok/s), stopped: %s", ev.stats.GenTokens, st.genRate, ev.stats.PromptTokens, st.promptRate, ev.stats.Stop)
		if ev.err != nil {
			st.status = "error: " + ev.err.Error()
		}
	case evProfile:
		if ev.profile != nil {
			st.profile = ev.profile
		}
		st.profileNote, st.profiled = ev.note, true
	case evCheck:
		st.diffs, st.checkNote, st.checked = ev.diffs, ev.note, true
	}
}
