package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/bitvk/bitvk/nn"
	"github.com/bitvk/bitvk/tokenizer"
)

// generation is a checked completion request, ready for the worker.
type generation struct {
	chat         bool
	stream       bool
	includeUsage bool
	prompt       []int32
	sampling     nn.SamplerConfig
	maxTokens    int
	stop         []string
	ignoreEOS    bool
}

func (s *Server) chatCompletions(w http.ResponseWriter, r *http.Request, rec *recorder) {
	var req chatRequest
	if e := decodeBody(w, r, s.cfg.MaxBody, &req); e != nil {
		writeError(w, e)
		return
	}
	g, e := s.chatGeneration(&req)
	if e != nil {
		writeError(w, e)
		return
	}
	s.complete(w, r, rec, g)
}

func (s *Server) completions(w http.ResponseWriter, r *http.Request, rec *recorder) {
	var req completionRequest
	if e := decodeBody(w, r, s.cfg.MaxBody, &req); e != nil {
		writeError(w, e)
		return
	}
	g, e := s.completionGeneration(&req)
	if e != nil {
		writeError(w, e)
		return
	}
	s.complete(w, r, rec, g)
}

func (s *Server) chatGeneration(req *chatRequest) (*generation, *apiError) {
	switch {
	case s.cfg.Template == nil:
		return nil, newError(http.StatusBadRequest, "invalid_request_error", "no_chat_template", "messages",
			"this model has no chat template bitvk knows: restart the server with --chat-template, or use /v1/completions")
	case len(req.Tools) > 0 && string(req.Tools) != "null" && string(req.Tools) != "[]":
		return nil, invalid("tools", "'tools' is not supported by this server")
	case req.ResponseFormat != nil && req.ResponseFormat.Type != "" && req.ResponseFormat.Type != "text":
		return nil, invalid("response_format", "'response_format' %q is not supported; only \"text\"", req.ResponseFormat.Type)
	case len(req.Messages) == 0:
		return nil, invalid("messages", "'messages' must hold at least one message")
	}
	limit := req.MaxTokens
	if req.MaxCompletionTokens != nil {
		limit = req.MaxCompletionTokens
	}
	g, e := s.common(&req.commonRequest, limit)
	if e != nil {
		return nil, e
	}
	msgs := make([]tokenizer.Message, len(req.Messages))
	for i, m := range req.Messages {
		p := fmt.Sprintf("messages[%d]", i)
		role, ok := roles[m.Role]
		if !ok {
			if m.Role == "" {
				return nil, invalid(p+".role", "'%s.role' is missing", p)
			}
			return nil, invalid(p+".role", "'%s.role' is %q, a role this server does not know (it takes %s)", p, m.Role, roleNames())
		}
		text := ""
		if !isNull(m.Content) {
			if text, e = parseContent(m.Content, p+".content"); e != nil {
				return nil, e
			}
		} else if role != "assistant" {
			return nil, invalid(p+".content", "'%s.content' is missing", p)
		}
		msgs[i] = tokenizer.Message{Role: role, Content: text}
	}
	g.chat = true
	// The template's text holds its control tokens; BOS goes first as the
	// vocabulary asks, and no EOS goes last, as in bitvk chat.
	text := s.cfg.Template.Apply(msgs, true)
	g.prompt = s.bos(s.cfg.Tokenizer.Encode(text, tokenizer.EncodeOptions{NoBOS: true, ParseSpecial: true}))
	return g, s.checkPrompt(g.prompt, "messages")
}

func (s *Server) completionGeneration(req *completionRequest) (*generation, *apiError) {
	switch {
	case req.Echo:
		return nil, invalid("echo", "'echo' is not supported by this server")
	case req.BestOf != nil && *req.BestOf != 1:
		return nil, invalid("best_of", "'best_of' is %d: this server generates one choice per request", *req.BestOf)
	case req.Suffix != nil && *req.Suffix != "":
		return nil, invalid("suffix", "'suffix' is not supported by this server")
	case isNull(req.Prompt):
		return nil, invalid("prompt", "'prompt' is missing")
	}
	g, e := s.common(&req.commonRequest, req.MaxTokens)
	if e != nil {
		return nil, e
	}
	var text string
	var texts []string
	var ids []int64
	switch {
	case json.Unmarshal(req.Prompt, &text) == nil:
	case json.Unmarshal(req.Prompt, &texts) == nil && len(texts) == 1:
		text = texts[0]
	case json.Unmarshal(req.Prompt, &ids) == nil && len(ids) > 0:
		g.prompt = make([]int32, len(ids))
		for i, id := range ids {
			if id < 0 || id >= int64(s.cfg.Engine.Config().Vocab) {
				return nil, invalid("prompt", "'prompt[%d]' is token %d, outside the vocabulary of %d", i, id, s.cfg.Engine.Config().Vocab)
			}
			g.prompt[i] = int32(id)
		}
		return g, s.checkPrompt(g.prompt, "prompt")
	case texts != nil:
		return nil, invalid("prompt", "'prompt' holds %d prompts; this server takes one per request", len(texts))
	default:
		return nil, invalid("prompt", "'prompt' must be a string, an array of one string, or an array of token ids")
	}
	g.prompt = s.bos(s.cfg.Tokenizer.Encode(text, tokenizer.EncodeOptions{NoBOS: true}))
	return g, s.checkPrompt(g.prompt, "prompt")
}

// bos puts the BOS token first when the vocabulary asks for one.
func (s *Server) bos(ids []int32) []int32 {
	if t := s.cfg.Tokenizer; t.AddsBOS() && t.BOS() >= 0 {
		return append([]int32{t.BOS()}, ids...)
	}
	return ids
}

// checkPrompt refuses an empty prompt and one that leaves no room in the
// context for a reply.
func (s *Server) checkPrompt(prompt []int32, param string) *apiError {
	n := s.cfg.Engine.Context()
	switch {
	case len(prompt) == 0:
		return invalid(param, "the prompt is empty")
	case len(prompt) >= n:
		hint := ""
		if most := s.cfg.Engine.Config().Context; n < most {
			hint = fmt.Sprintf(" (the server's -c; the model allows up to %d)", most)
		}
		return newError(http.StatusBadRequest, "invalid_request_error", "context_length_exceeded", param,
			"the prompt is %d tokens long, but the context holds %d positions%s: a prompt may be at most %d tokens, to leave room for the reply",
			len(prompt), n, hint, n-1)
	}
	return nil
}

// common checks the fields both endpoints share and maps them onto the
// sampler, over the server's defaults.
func (s *Server) common(c *commonRequest, maxTokens *int) (*generation, *apiError) {
	if e := c.unsupported(); e != nil {
		return nil, e
	}
	for _, r := range []struct {
		name   string
		v      *float64
		lo, hi float64
	}{
		{"temperature", c.Temperature, 0, 2},
		{"top_p", c.TopP, 0, 1},
		{"min_p", c.MinP, 0, 1},
		{"repeat_penalty", c.RepeatPenalty, 0, 10},
		{"frequency_penalty", c.FrequencyPenalty, -2, 2},
		{"presence_penalty", c.PresencePenalty, -2, 2},
	} {
		if e := checkRange(r.name, r.v, r.lo, r.hi); e != nil {
			return nil, e
		}
	}
	if c.TopK != nil && *c.TopK < 0 {
		return nil, invalid("top_k", "'top_k' is %d; it must be 0 (off) or more", *c.TopK)
	}
	g := &generation{stream: c.Stream, ignoreEOS: c.IgnoreEOS, maxTokens: s.cfg.MaxTokens}
	if c.StreamOptions != nil {
		if !c.Stream {
			return nil, invalid("stream_options", "'stream_options' needs \"stream\": true")
		}
		g.includeUsage = c.StreamOptions.IncludeUsage
	}
	if maxTokens != nil {
		if *maxTokens < 1 {
			return nil, invalid("max_tokens", "'max_tokens' is %d; it must be at least 1", *maxTokens)
		}
		g.maxTokens = *maxTokens
	}
	stop, e := parseStop(c.Stop)
	if e != nil {
		return nil, e
	}
	g.stop = stop

	sc := s.cfg.Sampler
	set := func(dst *float32, v *float64) {
		if v != nil {
			*dst = float32(*v)
		}
	}
	set(&sc.Temperature, c.Temperature)
	set(&sc.MinP, c.MinP)
	set(&sc.RepeatPenalty, c.RepeatPenalty)
	set(&sc.FrequencyPenalty, c.FrequencyPenalty)
	set(&sc.PresencePenalty, c.PresencePenalty)
	if c.TopP != nil {
		sc.TopP = float32(*c.TopP)
		if *c.TopP == 0 { // the limit of top-p → 0: the most likely token alone
			sc.TopK, sc.TopP = 1, 1
		}
	}
	if c.TopK != nil {
		sc.TopK = *c.TopK
	}
	switch {
	case c.Seed != nil:
		sc.Seed = uint64(*c.Seed)
	case s.cfg.RandomSeed:
		sc.Seed = rand.Uint64()
	}
	if _, err := nn.NewSampler(sc); err != nil {
		return nil, invalid("", "the sampling options do not work together: %v", err)
	}
	g.sampling = sc
	return g, nil
}

// complete queues g, waits for the worker and sends the reply, streamed or
// whole.
func (s *Server) complete(w http.ResponseWriter, r *http.Request, rec *recorder, g *generation) {
	arrived := time.Now()
	ctx, cancel := context.WithCancelCause(r.Context())
	defer cancel(nil)
	defer context.AfterFunc(s.stopCtx, func() { cancel(context.Cause(s.stopCtx)) })()
	if s.cfg.Timeout > 0 {
		var c context.CancelFunc
		ctx, c = context.WithTimeoutCause(ctx, s.cfg.Timeout, errDeadline)
		defer c()
	}
	j := newJob(ctx, arrived)
	j.prompt, j.sampling, j.maxTokens, j.stop, j.ignoreEOS = g.prompt, g.sampling, g.maxTokens, g.stop, g.ignoreEOS
	if s.draining.Load() {
		writeError(w, shuttingDown())
		return
	}
	if ok, closed := s.q.push(j); !ok {
		if closed {
			writeError(w, shuttingDown())
			return
		}
		e := newError(http.StatusServiceUnavailable, "server_error", "queue_full", "",
			"the server is busy: %d requests are waiting already (--queue); try again later", s.cfg.Queue)
		e.retryAfter = s.w.retryAfter()
		writeError(w, e)
		return
	}
	select {
	case <-j.started:
	case <-ctx.Done():
		if s.q.remove(j) {
			s.abandon(w, rec, context.Cause(ctx), time.Since(arrived))
			return
		}
		<-j.started // the worker took it just now; it ends within a token
	}
	reply := &reply{s: s, w: w, rec: rec, ctx: ctx, cancel: cancel, g: g, j: j, created: time.Now().Unix()}
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
	res := &j.res
	rec.attrs = append(rec.attrs, slog.Int("prompt_tokens", res.prompt), slog.Int("cached_tokens", res.cached),
		slog.Int("completion_tokens", res.stats.GenTokens), slog.String("finish", res.finish))
}

func shuttingDown() *apiError {
	return newError(http.StatusServiceUnavailable, "server_error", "shutting_down", "", "the server is shutting down")
}

// abandon answers a request that left the queue before the worker took it.
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

// reply writes one job's answer.
type reply struct {
	s       *Server
	w       http.ResponseWriter
	rec     *recorder
	ctx     context.Context
	cancel  context.CancelCauseFunc
	g       *generation
	j       *job
	id      string
	created int64
}

// outcome decides, once the worker is done, what the client is told: ok
// with the finish reason, or an error, or nothing (it is gone).
func (rp *reply) outcome() (finish string, e *apiError, gone bool) {
	res := &rp.j.res
	switch {
	case res.err != nil:
		return "", newError(http.StatusInternalServerError, "server_error", "", "", "the model failed: %v", res.err), false
	case !res.interrupted:
		return res.finish, nil, false
	}
	switch cause := context.Cause(rp.ctx); {
	case errors.Is(cause, errDeadline):
		return "length", nil, false // as far as it got by the deadline
	case errors.Is(cause, errShuttingDown):
		return "", newError(http.StatusServiceUnavailable, "server_error", "shutting_down", "", "the server is shutting down; the reply was cut short"), false
	}
	return "", nil, true
}

// whole collects the reply and sends it as one JSON object.
func (rp *reply) whole() {
	var text []byte
	for {
		p, ok := rp.j.out.next()
		if !ok {
			break
		}
		text = append(text, p.text...)
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
	if rp.g.chat {
		out.Object = "chat.completion"
		out.Choices = []choice{{Message: &message{Role: "assistant", Content: string(text)}, FinishReason: &finish}}
	} else {
		out.Object = "text_completion"
		t := string(text)
		out.Choices = []choice{{Text: &t, FinishReason: &finish}}
	}
	writeJSON(rp.w, http.StatusOK, out)
}

// stream sends the reply as Server-Sent Events, one chunk per piece of
// text, as OpenAI does: for chat a first chunk with the role, then the
// content, then an empty delta with the finish reason; with include_usage
// a last chunk with no choices and the usage; then "data: [DONE]".
func (rp *reply) stream() {
	h := rp.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // no proxy buffering of the events
	rp.w.WriteHeader(http.StatusOK)
	sse := &sseWriter{w: rp.w, rc: http.NewResponseController(rp.w)}
	defer sse.rc.SetWriteDeadline(time.Time{}) // the connection may serve another request
	if rp.g.chat {
		empty := ""
		sse.send(rp.chunk(&delta{Role: "assistant", Content: &empty}, nil))
	}
	for {
		p, ok := rp.j.out.next()
		if !ok {
			break
		}
		if sse.err != nil {
			continue // drain: the scheduler stops within a token
		}
		piece := p.text
		if rp.g.chat {
			sse.send(rp.chunk(&delta{Content: &piece}, nil))
		} else {
			sse.send(rp.chunk(nil, &piece))
		}
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
	var last chunk
	if rp.g.chat {
		last = rp.chunk(&delta{}, nil)
	} else {
		empty := ""
		last = rp.chunk(nil, &empty)
	}
	last.Choices[0].FinishReason = &finish
	last.Timings = rp.timings()
	sse.send(last)
	if rp.g.includeUsage {
		u := rp.chunk(nil, nil)
		u.Choices, u.Usage = []choice{}, rp.usage()
		sse.send(u)
	}
	sse.done()
	if sse.err != nil {
		rp.rec.gone = true
	}
}

// chunk is one streamed event: a delta (chat) or a text (completions).
func (rp *reply) chunk(d *delta, text *string) chunk {
	c := chunk{ID: rp.id, Created: rp.created, Model: rp.s.cfg.ModelName, Object: "text_completion"}
	if rp.g.chat {
		c.Object = "chat.completion.chunk"
	}
	if d != nil || text != nil {
		c.Choices = []choice{{Delta: d, Text: text}}
	}
	return c
}

func (rp *reply) usage() *usage {
	res := &rp.j.res
	return &usage{
		PromptTokens: res.prompt, CompletionTokens: res.stats.GenTokens, TotalTokens: res.prompt + res.stats.GenTokens,
		PromptTokensDetails: &promptDetails{CachedTokens: res.cached},
	}
}

func (rp *reply) timings() *timings {
	st := rp.j.res.stats
	ms := func(d time.Duration) float64 { return math.Round(d.Seconds()*1e6) / 1e3 }
	return &timings{
		QueueMS: ms(rp.j.res.queueWait),
		PromptN: st.PromptTokens, PromptMS: ms(st.PromptTime), PromptPerSecond: st.PromptRate(),
		PredictedN: st.GenTokens, PredictedMS: ms(st.GenTime), PredictedPerSecond: st.GenRate(),
		DraftN: st.Draft.Drafted, DraftAccepted: st.Draft.Accepted, DraftPasses: st.Draft.Passes, PassesSaved: st.PassesSaved(),
	}
}

// sseWriter writes Server-Sent Events and remembers the first failure.
type sseWriter struct {
	w   http.ResponseWriter
	rc  *http.ResponseController
	err error
}

func (s *sseWriter) write(data []byte) {
	if s.err != nil {
		return
	}
	s.rc.SetWriteDeadline(time.Now().Add(writeTimeout)) // not every writer has one; then it is unbounded
	if _, s.err = fmt.Fprintf(s.w, "data: %s\n\n", data); s.err == nil {
		s.err = s.rc.Flush()
	}
}

func (s *sseWriter) send(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		s.err = err
		return
	}
	s.write(b)
}

func (s *sseWriter) done() { s.write([]byte("[DONE]")) }

// The response shapes. completion and chunk serve both endpoints: a chat
// choice has a message or a delta, a text completion's a text.
type completion struct {
	ID      string   `json:"id"`
	Object  string   `json:"object"`
	Created int64    `json:"created"`
	Model   string   `json:"model"`
	Choices []choice `json:"choices"`
	Usage   *usage   `json:"usage"`
	Timings *timings `json:"timings,omitempty"`
}

type chunk struct {
	ID      string   `json:"id"`
	Object  string   `json:"object"`
	Created int64    `json:"created"`
	Model   string   `json:"model"`
	Choices []choice `json:"choices"`
	Usage   *usage   `json:"usage,omitempty"`
	Timings *timings `json:"timings,omitempty"`
}

type choice struct {
	Index        int      `json:"index"`
	Message      *message `json:"message,omitempty"`
	Delta        *delta   `json:"delta,omitempty"`
	Text         *string  `json:"text,omitempty"`
	Logprobs     any      `json:"logprobs"` // always null
	FinishReason *string  `json:"finish_reason"`
}

type message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type delta struct {
	Role    string  `json:"role,omitempty"`
	Content *string `json:"content,omitempty"`
}

type usage struct {
	PromptTokens        int            `json:"prompt_tokens"`
	CompletionTokens    int            `json:"completion_tokens"`
	TotalTokens         int            `json:"total_tokens"`
	PromptTokensDetails *promptDetails `json:"prompt_tokens_details,omitempty"`
}

type promptDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

// timings are llama.cpp's server's, plus the time spent in the queue and
// speculative decoding's counts.
type timings struct {
	QueueMS            float64 `json:"queue_ms"`
	PromptN            int     `json:"prompt_n"`
	PromptMS           float64 `json:"prompt_ms"`
	PromptPerSecond    float64 `json:"prompt_per_second"`
	PredictedN         int     `json:"predicted_n"`
	PredictedMS        float64 `json:"predicted_ms"`
	PredictedPerSecond float64 `json:"predicted_per_second"`
	// speculative decoding: llama-server's draft_n and draft_n_accepted,
	// and the verification passes and the passes they saved
	DraftN        int `json:"draft_n"`
	DraftAccepted int `json:"draft_n_accepted"`
	DraftPasses   int `json:"draft_passes"`
	PassesSaved   int `json:"passes_saved"`
}
