package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/bitvk/bitvk/nn"
	"github.com/bitvk/bitvk/tokenizer"
)

// A conversation is a chat whose K/V cache is kept from turn to turn.
//
// The chat templates render message by message, so the rendering of the
// conversation so far (cached) is a prefix of the rendering with the next
// user message and the opening of the reply; a turn evaluates only the text
// past cached. Every turn boundary falls right after the template's closing
// text, which ends in a control token (or a newline after one), so encoding
// the new text on its own gives the tokens that encoding the whole rendering
// would give there.
//
// A reply stops at an end-of-generation token, which Generate emits but does
// not evaluate (nor the last token of a reply cut short). After the reply the
// conversation evaluates what is missing and then the template's closing
// text (<|eot_id|>, <|im_end|>\n, …), so that the cache holds the
// template's rendering of the assistant's turn. The reply's tokens stay as the
// model drew them, which need not be the tokenization of their text; the
// text is re-tokenized only when the whole conversation is evaluated again:
// after the oldest turns are dropped for room, after /system, or after a
// reply filled the context.
type conversation struct {
	engine     *nn.Engine
	tok        *tokenizer.Tokenizer
	tmpl       *tokenizer.Template
	sampler    *nn.Sampler
	maxTokens  int                       // per reply; ≤ 0: until the end of the turn or a full context
	keepSystem bool                      // drop only user/assistant turns when the context is full
	draft      func(*nn.GenerateOptions) // sets the drafting options; nil: none

	// generate is engine.Generate; tests replace it to script the replies.
	generate func(ctx context.Context, prompt []int32, o nn.GenerateOptions, s *nn.Sampler, emit func(int32) error) (nn.Stats, error)

	system        string              // the system message; "" for none
	systemDropped bool                // dropped with the oldest turn to make room
	msgs          []tokenizer.Message // user and assistant messages, alternating
	cached        string              // the rendering of system+msgs that the cache holds, when synced
	synced        bool                // false: the next turn evaluates the whole conversation again

	last        nn.Stats      // the last reply's
	lastRebuilt bool          // the last reply's prompt was the whole conversation
	dropped     int           // turns dropped to make room since the start or /reset
	evaluated   int           // tokens evaluated in this session (prompts and closings)
	generated   int           // tokens generated in this session
	drafted     nn.DraftStats // speculative decoding in this session
	saved       int           // forward passes drafting saved in this session
}

// conversationConfig is what a conversation needs from the command line.
type conversationConfig struct {
	engine     *nn.Engine
	tok        *tokenizer.Tokenizer
	tmpl       *tokenizer.Template
	sampler    *nn.Sampler
	maxTokens  int
	keepSystem bool
	system     string
	draft      func(*nn.GenerateOptions)
}

func newConversation(cfg conversationConfig) *conversation {
	c := &conversation{
		engine: cfg.engine, tok: cfg.tok, tmpl: cfg.tmpl, sampler: cfg.sampler,
		maxTokens: cfg.maxTokens, keepSystem: cfg.keepSystem, system: cfg.system,
		draft: cfg.draft,
	}
	c.generate = c.engine.Generate
	c.engine.Reset()
	return c
}

// errNoRoom says that a message does not fit in the context even with every
// earlier turn dropped; the conversation is unchanged and goes on.
var errNoRoom = errors.New("the message does not fit in the context")

// messages is the conversation as the template renders it.
func (c *conversation) messages() []tokenizer.Message {
	return c.messagesAfter(dropCut{})
}

// dropCut is how much of the conversation's start to leave out.
type dropCut struct {
	turns  int  // user/assistant pairs, oldest first
	system bool // the system message too
}

func (c *conversation) messagesAfter(cut dropCut) []tokenizer.Message {
	msgs := make([]tokenizer.Message, 0, len(c.msgs)+2)
	if c.system != "" && !c.systemDropped && !cut.system {
		msgs = append(msgs, tokenizer.Message{Role: "system", Content: c.system})
	}
	return append(msgs, c.msgs[2*cut.turns:]...)
}

// Turns is the number of user/assistant turns in the conversation.
func (c *conversation) Turns() int { return len(c.msgs) / 2 }

// encode tokenizes template text: its control tokens are parsed, and BOS is
// never added (bos adds it where a sequence starts).
func (c *conversation) encode(text string) []int32 {
	return c.tok.Encode(text, tokenizer.EncodeOptions{NoBOS: true, ParseSpecial: true})
}

// encodeFrom is encode of rendered[from:], where plain (Template.ApplyRanges)
// marks the messages' text in rendered: control-token text a message holds
// (a user pasting "<|eot_id|>") stays text.
func (c *conversation) encodeFrom(rendered string, plain []tokenizer.Range, from int) []int32 {
	var tail []tokenizer.Range
	for _, r := range plain {
		if r.End > from {
			tail = append(tail, tokenizer.Range{Start: max(r.Start, from) - from, End: r.End - from})
		}
	}
	return c.tok.Encode(rendered[from:], tokenizer.EncodeOptions{NoBOS: true, ParseSpecial: true, Plain: tail})
}

func (c *conversation) bos(tokens []int32) []int32 {
	if c.tok.AddsBOS() && c.tok.BOS() >= 0 {
		return append([]int32{c.tok.BOS()}, tokens...)
	}
	return tokens
}

// reserve is the room a new turn keeps free for its reply: the reply limit,
// or a quarter of the context without one, and never more than half.
func (c *conversation) reserve() int {
	n := c.engine.Context()
	r := n / 4
	if c.maxTokens > 0 {
		r = c.maxTokens
	}
	return min(r, n/2)
}

// turnPlan is what a turn evaluates before the reply.
type turnPlan struct {
	user    tokenizer.Message
	prompt  []int32 // the tokens to evaluate: the new text, or everything from BOS
	rebuild bool    // start the cache over with prompt
	cut     dropCut // what a rebuild leaves out to make room
}

// plan decides what the turn for text evaluates: the new text after the
// cache when it fits with room for a reply, or else the whole conversation
// again, with as few of the oldest turns dropped as leave room. It changes
// nothing; say carries the plan out.
func (c *conversation) plan(text string) (turnPlan, error) {
	user := tokenizer.Message{Role: "user", Content: text}
	n, reserve := c.engine.Context(), c.reserve()
	if c.synced {
		full, plain := c.tmpl.ApplyRanges(append(c.messages(), user), true)
		if strings.HasPrefix(full, c.cached) {
			prompt := c.encodeFrom(full, plain, len(c.cached))
			if c.engine.Pos()+len(prompt)+reserve <= n {
				return turnPlan{user: user, prompt: prompt}, nil
			}
		}
	}
	// The cuts, least first: the oldest turns one by one, the system
	// message with the first of them unless it is kept, and the system
	// message alone when there are no turns to drop.
	hasSystem := c.system != "" && !c.systemDropped
	cuts := []dropCut{{}}
	for k := 1; k <= c.Turns(); k++ {
		cuts = append(cuts, dropCut{turns: k, system: hasSystem && !c.keepSystem})
	}
	if c.Turns() == 0 && hasSystem && !c.keepSystem {
		cuts = append(cuts, dropCut{system: true})
	}
	var fallback, last turnPlan
	for _, cut := range cuts {
		text, plain := c.tmpl.ApplyRanges(append(c.messagesAfter(cut), user), true)
		prompt := c.bos(c.encodeFrom(text, plain, 0))
		p := turnPlan{user: user, prompt: prompt, rebuild: true, cut: cut}
		if len(prompt)+reserve <= n {
			return p, nil
		}
		if len(prompt) < n && fallback.prompt == nil {
			fallback = p // fits, with less room for the reply than asked
		}
		last = p
	}
	if fallback.prompt != nil {
		return fallback, nil
	}
	hint := " (the model's maximum)"
	if max := c.engine.Config().Context; n < max {
		hint = fmt.Sprintf(" (raise -c, up to the model's %d)", max)
	}
	what := "with the chat template"
	if last.cut.turns > 0 || last.cut.system {
		what += " and every earlier turn dropped"
	}
	return turnPlan{}, fmt.Errorf("%w: %s it needs %d positions, and the context has %d%s", errNoRoom, what, len(last.prompt)+1, n, hint)
}

// turnReport is what a turn did.
type turnReport struct {
	nn.Stats
	Kept bool // the turn is part of the conversation (false: interrupted before the reply began)
	Full bool // the reply filled the context: the next turn starts over
}

// say carries out p: it evaluates the plan's prompt, streams the reply's
// text to emit as it is generated, and adds the turn to the conversation.
// A reply cut short (by the length limit, a full context or ctx) is kept
// as far as it got; a turn interrupted before its first token is dropped.
func (c *conversation) say(ctx context.Context, p turnPlan, emit func(string) error) (turnReport, error) {
	if p.rebuild {
		c.engine.Reset()
		c.synced, c.cached = false, ""
		if p.cut.system {
			c.systemDropped = true
		}
		c.msgs = slices.Delete(c.msgs, 0, 2*p.cut.turns)
		c.dropped += p.cut.turns
	}
	msgs := append(c.messages(), p.user)
	before := c.engine.Pos()
	dec := c.tok.NewDecoder()
	dec.Prime(p.prompt)
	var gen []int32
	var reply strings.Builder
	opts := nn.GenerateOptions{MaxTokens: max(c.maxTokens, 0), IsEOG: c.tok.IsEOG}
	if c.draft != nil {
		c.draft(&opts)
	}
	st, err := c.generate(ctx, p.prompt, opts, c.sampler, func(id int32) error {
		gen = append(gen, id)
		if c.tok.IsEOG(id) {
			return nil // the end of the turn is not text
		}
		s := dec.Next(id)
		reply.WriteString(s)
		return emit(s)
	})
	if err == nil {
		s := dec.Flush()
		reply.WriteString(s)
		err = emit(s)
	}
	rep := turnReport{Stats: st}
	c.last, c.lastRebuilt = st, p.rebuild
	c.evaluated += st.PromptTokens
	c.generated += st.GenTokens
	c.drafted.Add(st.Draft)
	c.saved += st.PassesSaved()
	if err != nil || len(gen) == 0 || c.engine.Pos() < before+len(p.prompt) {
		// Nothing to keep (an error, or an interrupt before the reply
		// began): forget the user's message, as if it was never sent.
		c.engine.Truncate(before)
		return rep, err
	}

	content := gen
	if c.tok.IsEOG(gen[len(gen)-1]) {
		content = gen[:len(gen)-1]
	}
	inCache := c.engine.Pos() - before - len(p.prompt)
	if inCache < 0 || inCache > len(content) {
		c.synced = false
		return rep, fmt.Errorf("internal error: the cache holds %d of the reply's %d tokens", inCache, len(content))
	}
	closing, err := c.closing(msgs)
	if err != nil {
		return rep, err
	}
	tail := append(slices.Clone(content[inCache:]), c.encode(closing)...)
	c.msgs = append(c.msgs, p.user, tokenizer.Message{Role: "assistant", Content: reply.String()})
	rep.Kept = true
	if c.engine.Pos()+len(tail) > c.engine.Context() {
		c.synced, rep.Full = false, true
		return rep, nil
	}
	if len(tail) > 0 {
		if _, err := c.engine.Eval(tail); err != nil {
			c.synced = false
			return rep, err
		}
		c.evaluated += len(tail)
	}
	c.cached, c.synced = c.tmpl.Apply(c.messages(), false), true
	return rep, nil
}

// closing is the text the template puts after an assistant message that
// answers msgs: the rendering of an empty reply past the generation prompt.
func (c *conversation) closing(msgs []tokenizer.Message) (string, error) {
	open := c.tmpl.Apply(msgs, true)
	done := c.tmpl.Apply(append(slices.Clip(msgs), tokenizer.Message{Role: "assistant"}), false)
	if !strings.HasPrefix(done, open) {
		return "", fmt.Errorf("chat template %s: an assistant turn does not begin with the generation prompt", c.tmpl.Name())
	}
	return done[len(open):], nil
}

// Reset forgets the turns and empties the cache; the system message stays.
func (c *conversation) Reset() {
	c.msgs, c.systemDropped, c.dropped = nil, false, 0
	c.synced, c.cached = false, ""
	c.last, c.lastRebuilt = nn.Stats{}, false
	c.engine.Reset()
}

// SetSystem replaces the system message ("" removes it). The turns stay; as
// the system message comes first, the next turn evaluates them again.
func (c *conversation) SetSystem(text string) {
	if text == c.system && !c.systemDropped {
		return
	}
	c.system, c.systemDropped = text, false
	c.synced = false
}

// System is the system message in effect ("" when none or dropped).
func (c *conversation) System() string {
	if c.systemDropped {
		return ""
	}
	return c.system
}

// writeStats prints what /stats shows.
func (c *conversation) writeStats(w io.Writer) {
	fmt.Fprintf(w, "turns:     %d in the context, %d dropped for room\n", c.Turns(), c.dropped)
	fmt.Fprintf(w, "context:   %d of %d positions used\n", c.engine.Pos(), c.engine.Context())
	if c.last.PromptTokens+c.last.GenTokens == 0 {
		fmt.Fprintf(w, "last turn: none yet\n")
	} else {
		what := "only the new text"
		if c.lastRebuilt {
			what = "the whole conversation"
		}
		fmt.Fprintf(w, "prompt:    %d tokens in %.3f s, %.1f tok/s (last turn: %s)\n", c.last.PromptTokens, c.last.PromptTime.Seconds(), c.last.PromptRate(), what)
		fmt.Fprintf(w, "generated: %d tokens in %.3f s, %.1f tok/s (last turn, stopped: %s)\n", c.last.GenTokens, c.last.GenTime.Seconds(), c.last.GenRate(), c.last.Stop)
	}
	fmt.Fprintf(w, "session:   %d tokens evaluated, %d generated\n", c.evaluated, c.generated)
	if d := c.drafted; d.Passes > 0 || d.Declined > 0 {
		fmt.Fprintf(w, "drafting:  %d tokens drafted in %d passes, %d kept (%.1f%%), %.2f per pass, %d passes saved (session)\n",
			d.Drafted, d.Passes, d.Accepted, 100*d.AcceptRate(), d.MeanAccepted(), c.saved)
		fmt.Fprintf(w, "kept/pass: %s (session)\n", draftHistogram(d))
	}
}
