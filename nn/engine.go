package nn

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Engine runs a sequence through a Backend: it knows which tokens the K/V
// cache holds, checks every token and the context limit before the backend
// sees them, and drives generation with a Sampler.
type Engine struct {
	c      *Config
	b      Backend
	tokens []int32    // the tokens whose keys and values the cache holds, in order
	logits []float32  // [vocab] logits after the last token of tokens
	all    []float32  // [k][vocab] logits of a verification pass
	cost   *DraftCost // what a verification pass costs here, learned across generations
	valid  bool       // logits belong to the last token
}

// ContextError is returned when a sequence would outgrow the context.
type ContextError struct {
	Have, Add, Context, Max int
}

func (e *ContextError) Error() string {
	msg := fmt.Sprintf("context is full: %d positions used + %d new > %d", e.Have, e.Add, e.Context)
	if e.Context < e.Max {
		return msg + fmt.Sprintf(" (raise -c, up to the model's %d)", e.Max)
	}
	return msg + " (the model's maximum)"
}

// NewEngine returns an engine over b for a model of configuration c.
func NewEngine(c *Config, b Backend) (*Engine, error) {
	if b.Context() < 1 || b.Context() > c.Context {
		return nil, fmt.Errorf("nn: backend context %d is outside 1..%d, the model's maximum", b.Context(), c.Context)
	}
	return &Engine{c: c, b: b, logits: make([]float32, c.Vocab)}, nil
}

// Backend is the backend the engine runs on.
func (e *Engine) Backend() Backend { return e.b }

// Config is the model's configuration.
func (e *Engine) Config() *Config { return e.c }

// Context is the number of positions the sequence may hold.
func (e *Engine) Context() int { return e.b.Context() }

// Pos is the number of tokens in the cache.
func (e *Engine) Pos() int { return len(e.tokens) }

// Tokens is the sequence in the cache (read-only).
func (e *Engine) Tokens() []int32 { return e.tokens }

// Reset empties the sequence.
func (e *Engine) Reset() { e.Truncate(0) }

// Truncate keeps the first n tokens of the sequence; later ones are
// forgotten (their cache positions are overwritten by the next Eval).
func (e *Engine) Truncate(n int) {
	if n < len(e.tokens) {
		e.tokens = e.tokens[:max(n, 0)]
		e.valid = false
	}
}

func (e *Engine) check(tokens []int32) error {
	for i, t := range tokens {
		if t < 0 || int(t) >= e.c.Vocab {
			return fmt.Errorf("token %d (at %d) is outside the vocabulary of %d", t, i, e.c.Vocab)
		}
	}
	if len(e.tokens)+len(tokens) > e.Context() {
		return &ContextError{Have: len(e.tokens), Add: len(tokens), Context: e.Context(), Max: e.c.Context}
	}
	return nil
}

// Eval appends tokens to the sequence and returns the logits [vocab] after
// the last one. The slice is the engine's own, valid until the next call.
// With no tokens it returns the logits after the sequence so far.
func (e *Engine) Eval(tokens []int32) ([]float32, error) {
	if len(tokens) == 0 {
		if !e.valid {
			return nil, errors.New("nn: no logits: the sequence is empty or was truncated")
		}
		return e.logits, nil
	}
	if err := e.check(tokens); err != nil {
		return nil, err
	}
	e.valid = false
	if err := e.b.Forward(tokens, len(e.tokens), e.logits); err != nil {
		return nil, err
	}
	e.tokens = append(e.tokens, tokens...)
	e.valid = true
	return e.logits, nil
}

// EvalAll appends tokens teacher-forced and calls fn with the logits after
// each of them, in order: what a perplexity or a logits comparison needs.
// The tokens are evaluated in batches of up to batch positions.
func (e *Engine) EvalAll(tokens []int32, batch int, fn func(i int, logits []float32) error) error {
	if err := e.check(tokens); err != nil {
		return err
	}
	batch = max(batch, 1)
	v := e.c.Vocab
	all := make([]float32, min(batch, len(tokens))*v)
	for start := 0; start < len(tokens); start += batch {
		chunk := tokens[start:min(start+batch, len(tokens))]
		e.valid = false
		out := all[:len(chunk)*v]
		if err := e.b.Forward(chunk, len(e.tokens), out); err != nil {
			return err
		}
		e.tokens = append(e.tokens, chunk...)
		copy(e.logits, out[(len(chunk)-1)*v:])
		e.valid = true
		for i := range chunk {
			if err := fn(start+i, out[i*v:(i+1)*v]); err != nil {
				return err
			}
		}
	}
	return nil
}

// StopReason says why a generation ended.
type StopReason string

const (
	StopLength      StopReason = "length"      // the requested number of tokens
	StopEOG         StopReason = "eog"         // the model ended its turn
	StopContext     StopReason = "context"     // the context is full
	StopInterrupted StopReason = "interrupted" // the caller cancelled
)

// Stats measures a generation.
type Stats struct {
	PromptTokens int           // tokens evaluated for the prompt
	PromptTime   time.Duration // time to evaluate them
	GenTokens    int           // tokens sampled
	GenTime      time.Duration // time from the first sample to the last
	Stop         StopReason
	Draft        DraftStats // speculative decoding (zero without a Drafter)
}

// PromptRate is prompt tokens per second (0 when none).
func (s Stats) PromptRate() float64 { return rate(s.PromptTokens, s.PromptTime) }

// GenRate is generated tokens per second (0 when none).
func (s Stats) GenRate() float64 { return rate(s.GenTokens, s.GenTime) }

// PassesSaved is how many fewer forward passes the generation took than
// plain decoding would have (one per generated token but the last).
func (s Stats) PassesSaved() int { return max(s.GenTokens-1-s.Draft.Steps, 0) }

func rate(n int, d time.Duration) float64 {
	if n == 0 || d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// GenerateOptions bound a generation.
type GenerateOptions struct {
	MaxTokens int              // stop after this many sampled tokens; ≤ 0: until the context is full
	IsEOG     func(int32) bool // the model's end-of-generation tokens; nil: none

	// Draft, when set, guesses the tokens ahead; each guess is verified
	// in one batched forward pass together with the token before it, and
	// the cache is rolled back past the first token the sampler refuses.
	// The generated tokens are exactly those of plain decoding with the
	// same sampler and seed (the sampler draws every position from the
	// model's own distribution, in the same order, and a drafted token is
	// kept only when it is the one drawn: the speculative-sampling rule
	// for a drafter whose distribution is a point mass), as long as the
	// backend gives a token in a batch the logits it gives it alone.
	Draft Drafter
	// DraftMax is the most tokens drafted per pass (0: DefaultDraftMax,
	// at most MaxDraft).
	DraftMax int
	// DraftThreshold > 0 replaces the lossless rule by a lossy one: a
	// drafted token is kept while its probability under the model (softmax
	// of the raw logits) is at least the threshold, without drawing. The
	// output then differs from plain decoding's.
	DraftThreshold float32
	// DraftEvery verifies every draft, as long as drafted, with no backoff:
	// for tests and measurements of the verification itself.
	DraftEvery bool
}

// Generate evaluates prompt (appended to the sequence) and then samples up to
// o.MaxTokens tokens, calling emit with each as soon as it is drawn. It ends
// at an end-of-generation token (emitted, not evaluated), at the length
// limit, when the context is full, or when ctx is cancelled; Stats says
// which. An error from emit stops the generation and is returned.
func (e *Engine) Generate(ctx context.Context, prompt []int32, o GenerateOptions, s *Sampler, emit func(int32) error) (st Stats, err error) {
	if len(prompt) == 0 && !e.valid {
		return st, errors.New("nn: nothing to generate from: the prompt is empty")
	}
	var policy *DraftPolicy
	if o.Draft != nil {
		switch {
		case o.DraftMax < 0 || o.DraftMax > MaxDraft:
			return st, fmt.Errorf("nn: draft max %d is outside 0..%d", o.DraftMax, MaxDraft)
		case o.DraftThreshold < 0 || o.DraftThreshold > 1 || o.DraftThreshold != o.DraftThreshold:
			return st, fmt.Errorf("nn: draft threshold %v is outside [0, 1]", o.DraftThreshold)
		case o.DraftMax == 0:
			o.DraftMax = DefaultDraftMax
		}
		if e.cost == nil {
			e.cost = NewDraftCost()
		}
		policy = NewDraftPolicy(o.DraftMax, o.DraftEvery, e.cost)
	}
	if err := ctx.Err(); err != nil {
		st.Stop = StopInterrupted
		return st, nil
	}
	// A Picker backend draws greedy tokens on its device: one id read back
	// per step instead of the logits.
	// A SamplingPicker selects the candidates of every other step on its
	// device and the sampler finishes from them: the same token.
	picker, _ := e.b.(Picker)
	greedy := picker != nil && s.Greedy()
	sampler, _ := e.b.(SamplingPicker)
	onDevice := sampler != nil && !greedy
	start := time.Now()
	var logits []float32
	id, picked := int32(-1), false
	switch {
	case greedy && len(prompt) > 0:
		id, err = e.evalArgmax(picker, prompt)
		picked = true
	case onDevice && len(prompt) > 0:
		id, err = e.evalSample(sampler, prompt, s)
		picked = true
	default:
		logits, err = e.Eval(prompt)
	}
	if err != nil {
		return st, err
	}
	st.PromptTokens, st.PromptTime = len(prompt), time.Since(start)
	start = time.Now()
	defer func() { st.GenTime = time.Since(start) }()
	var draft []int32
	for {
		if !picked {
			if id, err = s.Sample(logits, e.tokens); err != nil {
				return st, err
			}
		}
		if st.Stop, err = e.emitOne(ctx, &st, o, id, emit); st.Stop != "" || err != nil {
			return st, err
		}
		if policy != nil {
			draft, err = e.draft(draft[:0], id, o, st.GenTokens, policy, &st.Draft)
			if err != nil {
				return st, err
			}
			if len(draft) > 0 {
				if id, st.Stop, err = e.verify(ctx, id, draft, o, s, &st, policy, emit); st.Stop != "" || err != nil {
					return st, err
				}
				picked = true
				continue
			}
		}
		step := time.Now()
		switch {
		case greedy:
			id, err = e.evalArgmax(picker, []int32{id})
			picked = true
		case onDevice:
			id, err = e.evalSample(sampler, []int32{id}, s)
			picked = true
		default:
			logits, err = e.Eval([]int32{id})
			picked = false
		}
		if err != nil {
			return st, err
		}
		st.Draft.Steps++
		if policy != nil {
			policy.TimedPlain(time.Since(step))
		}
	}
}

// emitOne hands a sampled token to emit and says whether the generation
// ends after it. The sequence holds what plain decoding would hold at this
// point: every token before id.
func (e *Engine) emitOne(ctx context.Context, st *Stats, o GenerateOptions, id int32, emit func(int32) error) (StopReason, error) {
	st.GenTokens++
	if err := emit(id); err != nil {
		return "", err
	}
	switch {
	case o.IsEOG != nil && o.IsEOG(id):
		return StopEOG, nil
	case o.MaxTokens > 0 && st.GenTokens >= o.MaxTokens:
		return StopLength, nil
	case ctx.Err() != nil:
		return StopInterrupted, nil
	case e.Pos() >= e.Context():
		return StopContext, nil
	}
	return "", nil
}

// draft asks o.Draft for tokens to follow the sequence and id (the token
// about to be evaluated), and keeps as many as the policy finds worth a
// pass, within the context and the length limit.
func (e *Engine) draft(dst []int32, id int32, o GenerateOptions, generated int, p *DraftPolicy, ds *DraftStats) ([]int32, error) {
	room := min(o.DraftMax, e.Context()-len(e.tokens)-1)
	if o.MaxTokens > 0 {
		room = min(room, o.MaxTokens-generated-1) // the pass yields one token more than it keeps
	}
	if room <= 0 {
		return dst, nil
	}
	seq := append(e.tokens, id) // e.tokens' spare capacity; the drafter only reads it
	dst = o.Draft.Draft(dst, seq, room)
	if len(dst) > room {
		dst = dst[:room]
	}
	for i, t := range dst {
		if t < 0 || int(t) >= e.c.Vocab {
			return dst, fmt.Errorf("nn: drafter proposed token %d (draft position %d), outside the vocabulary of %d", t, i, e.c.Vocab)
		}
	}
	if len(dst) == 0 {
		return dst, nil
	}
	k := p.Choose(len(dst))
	if k == 0 {
		ds.Declined++
	}
	return dst[:k], nil
}

// verify evaluates id and the drafted tokens after it in one forward pass,
// emits the drafted tokens the sampler confirms, and returns the token
// drawn after the last of them (to be emitted next, as if sampled at the
// top of the loop), or why the generation stopped. The sequence is left as
// plain decoding would leave it: the refused draft's cache positions are
// forgotten and overwritten by the next pass.
func (e *Engine) verify(ctx context.Context, id int32, draft []int32, o GenerateOptions, s *Sampler, st *Stats, p *DraftPolicy, emit func(int32) error) (int32, StopReason, error) {
	base, v := len(e.tokens), e.c.Vocab
	toks := append(append(make([]int32, 0, len(draft)+1), id), draft...)
	if err := e.check(toks); err != nil {
		return -1, "", err
	}
	if need := len(toks) * v; cap(e.all) < need {
		e.all = make([]float32, need)
	}
	all := e.all[:len(toks)*v]
	e.valid = false
	start := time.Now()
	if err := e.b.Forward(toks, base, all); err != nil {
		return -1, "", err
	}
	took := time.Since(start)
	full := append(e.tokens, toks...)
	st.Draft.Steps++
	st.Draft.Passes++
	st.Draft.Drafted += len(draft)
	kept := 0
	done := func(rejected bool) {
		st.Draft.Accepted += kept
		st.Draft.Lengths[kept]++
		p.TimedPass(len(draft), kept, rejected, took)
	}
	for j := 0; ; j++ {
		// The sequence plain decoding holds here: everything through
		// toks[j]; the logits after it are row j.
		l := all[j*v : (j+1)*v]
		e.tokens = full[:base+1+j]
		copy(e.logits, l)
		e.valid = true
		var y int32
		if j < len(draft) && o.DraftThreshold > 0 && TokenProb(l, draft[j]) >= float64(o.DraftThreshold) {
			y = draft[j]
		} else {
			var err error
			if y, err = s.Sample(l, e.tokens); err != nil {
				done(j < len(draft))
				return -1, "", err
			}
		}
		if j == len(draft) || y != draft[j] {
			done(j < len(draft))
			return y, "", nil
		}
		kept++
		e.tokens = full[:base+1+j] // y is emitted before it is evaluated
		if stop, err := e.emitOne(ctx, st, o, y, emit); stop != "" || err != nil {
			done(false)
			return -1, stop, err
		}
	}
}

// evalArgmax appends tokens to the sequence and returns the greedy next
// token, picked by the backend; the logits are not read back (Eval(nil)
// has none to return until the next Eval).
func (e *Engine) evalArgmax(p Picker, tokens []int32) (int32, error) {
	if err := e.check(tokens); err != nil {
		return -1, err
	}
	e.valid = false
	id, err := p.ForwardArgmax(tokens, len(e.tokens))
	if err != nil {
		return -1, err
	}
	e.tokens = append(e.tokens, tokens...)
	if id < 0 {
		return -1, ErrNoCandidate
	}
	return id, nil
}

// evalSample appends tokens to the sequence and returns the next token as
// s.Sample would draw it, selected by the backend; the logits are not read
// back (as with evalArgmax).
func (e *Engine) evalSample(p SamplingPicker, tokens []int32, s *Sampler) (int32, error) {
	if err := e.check(tokens); err != nil {
		return -1, err
	}
	e.valid = false
	history := append(e.tokens, tokens...) // what Sample would see after Eval
	id, err := p.ForwardSample(tokens, len(e.tokens), s, history)
	if err != nil {
		return -1, err
	}
	e.tokens = history
	return id, nil
}
