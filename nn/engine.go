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
	tokens []int32   // the tokens whose keys and values the cache holds, in order
	logits []float32 // [vocab] logits after the last token of tokens
	valid  bool      // logits belong to the last token
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
}

// PromptRate is prompt tokens per second (0 when none).
func (s Stats) PromptRate() float64 { return rate(s.PromptTokens, s.PromptTime) }

// GenRate is generated tokens per second (0 when none).
func (s Stats) GenRate() float64 { return rate(s.GenTokens, s.GenTime) }

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
	for {
		if !picked {
			if id, err = s.Sample(logits, e.tokens); err != nil {
				return st, err
			}
		}
		st.GenTokens++
		if err := emit(id); err != nil {
			return st, err
		}
		switch {
		case o.IsEOG != nil && o.IsEOG(id):
			st.Stop = StopEOG
			return st, nil
		case o.MaxTokens > 0 && st.GenTokens >= o.MaxTokens:
			st.Stop = StopLength
			return st, nil
		case ctx.Err() != nil:
			st.Stop = StopInterrupted
			return st, nil
		case e.Pos() >= e.Context():
			st.Stop = StopContext
			return st, nil
		}
		switch {
		case greedy:
			id, err = e.evalArgmax(picker, []int32{id})
			picked = true
		case onDevice:
			id, err = e.evalSample(sampler, []int32{id}, s)
			picked = true
		default:
			logits, err = e.Eval([]int32{id})
		}
		if err != nil {
			return st, err
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
