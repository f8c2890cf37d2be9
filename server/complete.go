package server

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"

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
	n            int       // choices, each its own job (and slot); their seeds are the request's, +1, +2, …
	logprobs     bool      // return each token's log-probability
	topLogprobs  int       // and this many alternatives
	json         bool      // response_format json_object
	evalOnly     bool      // n_predict 0: evaluate the prompt into a slot's cache, generate nothing
	echo         bool      // completions' echo: the reply starts with the prompt
	prompts      [][]int32 // a completion's prompts when it has several (prompt is the first); each gets n choices
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
	case asks(req.Tools):
		return nil, invalid("tools", "'tools' is not supported by this server")
	case asks(req.Functions):
		return nil, invalid("functions", "'functions' is not supported by this server")
	case asks(req.FunctionCall) && string(req.FunctionCall) != `"none"` && string(req.FunctionCall) != `"auto"`:
		return nil, invalid("function_call", "'function_call' is %s, but this server calls no functions", req.FunctionCall)
	case asks(req.ToolChoice) && string(req.ToolChoice) != `"none"` && string(req.ToolChoice) != `"auto"`:
		return nil, invalid("tool_choice", "'tool_choice' is %s, but this server calls no tools", req.ToolChoice)
	case req.ResponseFormat != nil && req.ResponseFormat.Type != "" && req.ResponseFormat.Type != "text" && req.ResponseFormat.Type != "json_object":
		return nil, invalid("response_format", "'response_format' %q is not supported; only \"text\" and \"json_object\"", req.ResponseFormat.Type)
	case len(req.Messages) == 0:
		return nil, invalid("messages", "'messages' must hold at least one message")
	}
	limit := req.MaxTokens
	if req.MaxCompletionTokens != nil {
		limit = req.MaxCompletionTokens
	}
	g, e := s.common(&req.commonRequest, limit)
	if e != nil {
		if req.MaxCompletionTokens != nil {
			e.rename("max_tokens", "max_completion_tokens")
		}
		return nil, e
	}
	g.json = req.ResponseFormat != nil && req.ResponseFormat.Type == "json_object"
	switch lp := string(req.Logprobs); lp {
	case "", "null", "false":
		if req.TopLogprobs != nil && *req.TopLogprobs > 0 {
			return nil, invalid("top_logprobs", "'top_logprobs' needs \"logprobs\": true")
		}
	case "true":
		g.logprobs = true
		if req.TopLogprobs != nil {
			if *req.TopLogprobs < 0 || *req.TopLogprobs > maxTopLogprobs {
				return nil, invalid("top_logprobs", "'top_logprobs' is %d; it must be between 0 and %d", *req.TopLogprobs, maxTopLogprobs)
			}
			g.topLogprobs = *req.TopLogprobs
		}
	default:
		return nil, invalid("logprobs", "'logprobs' must be a boolean in a chat completion")
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
	// The template's text holds its control tokens; the messages' text is
	// plain text, control-token text and all (a user cannot end a turn or
	// forge a system message). BOS goes first as the vocabulary asks, and
	// no EOS goes last, as in bitvk chat.
	text, plain := s.cfg.Template.ApplyRanges(msgs, true)
	g.prompt = s.bos(s.cfg.Tokenizer.Encode(text, tokenizer.EncodeOptions{NoBOS: true, ParseSpecial: true, Plain: plain}))
	return g, s.checkPrompt(g.prompt, "messages")
}

func (s *Server) completionGeneration(req *completionRequest) (*generation, *apiError) {
	switch {
	case req.BestOf != nil && *req.BestOf != 1:
		return nil, invalid("best_of", "'best_of' is %d: this server generates one choice per request", *req.BestOf)
	case req.Suffix != nil && *req.Suffix != "":
		return nil, invalid("suffix", "'suffix' is not supported by this server")
	case isNull(req.Prompt):
		return nil, invalid("prompt", "'prompt' is missing")
	}
	maxTokens := req.MaxTokens
	scoreOnly := req.Echo && maxTokens != nil && *maxTokens == 0 // the prompt's log-probabilities alone
	if scoreOnly {
		maxTokens = nil
	}
	g, e := s.common(&req.commonRequest, maxTokens)
	if e != nil {
		return nil, e
	}
	g.echo, g.evalOnly = req.Echo, scoreOnly
	if !isNull(req.Logprobs) && string(req.Logprobs) != "false" {
		var k int
		if err := json.Unmarshal(req.Logprobs, &k); err != nil || k < 0 || k > 5 {
			return nil, invalid("logprobs", "'logprobs' must be an integer between 0 and 5 in a text completion (the alternatives per token)")
		}
		g.logprobs, g.topLogprobs = true, k
	}
	prompts, e := s.readPrompts(req.Prompt)
	if e != nil {
		return nil, e
	}
	if most := len(s.w.slots) + s.cfg.Queue; len(prompts)*g.n > most {
		return nil, invalid("prompt", "%d prompts × %d choices (n) is %d requests, but this server runs %d at once (--parallel) and queues %d more (--queue): at most %d",
			len(prompts), g.n, len(prompts)*g.n, len(s.w.slots), s.cfg.Queue, most)
	}
	g.prompts = prompts
	g.prompt = prompts[0]
	return g, nil
}

// readPrompts reads a completion's prompts: a string, token ids, or an
// array of strings or of arrays of token ids (OpenAI's batch forms, each
// prompt its own choices), each checked against the context.
func (s *Server) readPrompts(raw json.RawMessage) ([][]int32, *apiError) {
	one := func(text string, ids []int32, param string) ([]int32, *apiError) {
		if ids == nil {
			ids = s.bos(s.cfg.Tokenizer.Encode(text, tokenizer.EncodeOptions{NoBOS: true}))
		}
		return ids, s.checkPrompt(ids, param)
	}
	var text string
	if json.Unmarshal(raw, &text) == nil {
		p, e := one(text, nil, "prompt")
		return [][]int32{p}, e
	}
	var parts []json.RawMessage
	if json.Unmarshal(raw, &parts) != nil {
		return nil, invalid("prompt", "'prompt' must be a string, an array of strings, or an array of token ids, not %s", jsonKind(valueKind(raw)))
	}
	if len(parts) == 0 || parts[0][0] != '"' && parts[0][0] != '[' {
		ids, e := tokenIDs(parts, "prompt", s.cfg.Engine.Config().Vocab)
		if e != nil {
			return nil, e
		}
		p, e := one("", ids, "prompt")
		return [][]int32{p}, e
	}
	if len(parts) > maxPrompts {
		return nil, invalid("prompt", "'prompt' holds %d prompts; at most %d per request", len(parts), maxPrompts)
	}
	var prompts [][]int32
	for i, part := range parts {
		param := fmt.Sprintf("prompt[%d]", i)
		var p []int32
		var e *apiError
		var ids []json.RawMessage
		switch {
		case json.Unmarshal(part, &text) == nil:
			p, e = one(text, nil, param)
		case json.Unmarshal(part, &ids) == nil && !isNull(part):
			if p, e = tokenIDs(ids, param, s.cfg.Engine.Config().Vocab); e == nil {
				p, e = one("", p, param)
			}
		default:
			e = invalid(param, "'%s' must be a string or an array of token ids", param)
		}
		if e != nil {
			return nil, e
		}
		prompts = append(prompts, p)
	}
	return prompts, nil
}

// maxPrompts bounds the prompts of one completion request.
const maxPrompts = 64

// tokenIDs reads an array of token ids, each below vocab.
func tokenIDs(parts []json.RawMessage, param string, vocab int) ([]int32, *apiError) {
	ids := make([]int32, len(parts))
	for i, p := range parts {
		var id int64
		if err := json.Unmarshal(p, &id); err != nil || isNull(p) { // null would leave id 0
			what := jsonKind(valueKind(p))
			if valueKind(p) == "number" {
				what = string(p)
			}
			return nil, invalid(param, "'%s[%d]' is %s, not a token id (an integer from 0 to %d)", param, i, what, vocab-1)
		}
		if id < 0 || id >= int64(vocab) {
			return nil, invalid(param, "'%s[%d]' is token %d, outside the vocabulary of %d", param, i, id, vocab)
		}
		ids[i] = int32(id)
	}
	return ids, nil
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
	for _, r := range []struct {
		name   string
		v      *float64
		lo, hi float64
	}{
		{"temperature", c.Temperature, 0, 2},
		{"top_p", c.TopP, 0, 1},
		{"min_p", c.MinP, 0, 1},
		{"typical_p", c.TypicalP, 0, 1},
		{"mirostat_tau", c.MirostatTau, 0, 100},
		{"mirostat_eta", c.MirostatEta, 0, 10},
		{"xtc_probability", c.XTCProbability, 0, 1},
		{"xtc_threshold", c.XTCThreshold, 0, 1},
		{"dry_multiplier", c.DRYMultiplier, 0, 100},
		{"dry_base", c.DRYBase, 1, 100},
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
	if c.DRYAllowedLength != nil && (*c.DRYAllowedLength < 0 || *c.DRYAllowedLength > maxDRYLength) {
		return nil, invalid("dry_allowed_length", "'dry_allowed_length' is %d; it must be between 0 and %d", *c.DRYAllowedLength, maxDRYLength)
	}
	if c.DRYPenaltyLastN != nil && *c.DRYPenaltyLastN < -1 {
		return nil, invalid("dry_penalty_last_n", "'dry_penalty_last_n' is %d; it must be -1 (the context), 0 (off) or more", *c.DRYPenaltyLastN)
	}
	if c.DRYBreakers != nil {
		if len(*c.DRYBreakers) > maxDRYBreakers {
			return nil, invalid("dry_sequence_breakers", "'dry_sequence_breakers' has %d strings; at most %d", len(*c.DRYBreakers), maxDRYBreakers)
		}
		for i, b := range *c.DRYBreakers {
			if b == "" || len(b) > maxDRYBreakerLen {
				return nil, invalid("dry_sequence_breakers", "'dry_sequence_breakers[%d]' is %d bytes; a breaker is 1 to %d bytes", i, len(b), maxDRYBreakerLen)
			}
		}
	}
	if c.Mirostat != nil && (*c.Mirostat < 0 || *c.Mirostat > 2) {
		return nil, invalid("mirostat", "'mirostat' is %d; it must be 0 (off), 1 (Mirostat) or 2 (Mirostat 2.0)", *c.Mirostat)
	}
	g := &generation{stream: c.Stream, ignoreEOS: c.IgnoreEOS, maxTokens: s.cfg.MaxTokens, n: 1}
	if c.N != nil {
		if *c.N < 1 || *c.N > maxChoices {
			return nil, invalid("n", "'n' is %d; it must be between 1 and %d", *c.N, maxChoices)
		}
		// Every choice runs or waits at once; more than fit would be
		// refused with 503 forever.
		if most := len(s.w.slots) + s.cfg.Queue; *c.N > most {
			return nil, invalid("n", "'n' is %d, but this server runs %d requests at once (--parallel) and queues %d more (--queue): 'n' may be at most %d",
				*c.N, len(s.w.slots), s.cfg.Queue, most)
		}
		g.n = *c.N
	}
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
	bias, e := parseLogitBias(c.LogitBias, s.cfg.Tokenizer)
	if e != nil {
		return nil, e
	}
	limit := c.maxStops
	if limit == 0 {
		limit = maxStops
	}
	stop, e := parseStop(c.Stop, limit)
	if e != nil {
		return nil, e
	}
	g.stop = stop

	sc := s.cfg.Sampler
	if len(bias) > 0 {
		sc.LogitBias = bias
	}
	set := func(dst *float32, v *float64) {
		if v != nil {
			*dst = float32(*v)
		}
	}
	set(&sc.Temperature, c.Temperature)
	set(&sc.MinP, c.MinP)
	set(&sc.TypicalP, c.TypicalP)
	set(&sc.MirostatTau, c.MirostatTau)
	set(&sc.MirostatEta, c.MirostatEta)
	set(&sc.XTCProbability, c.XTCProbability)
	set(&sc.XTCThreshold, c.XTCThreshold)
	set(&sc.DRYMultiplier, c.DRYMultiplier)
	set(&sc.DRYBase, c.DRYBase)
	if c.DRYAllowedLength != nil {
		sc.DRYAllowedLength = *c.DRYAllowedLength
	}
	if c.DRYPenaltyLastN != nil {
		sc.DRYLastN = *c.DRYPenaltyLastN
		if sc.DRYLastN == 0 {
			sc.DRYMultiplier = 0 // llama-server's "off"
		}
	}
	if c.DRYBreakers != nil && sc.DRYMultiplier > 0 {
		sc.DRYBreakers = s.cfg.Tokenizer.Containing(*c.DRYBreakers)
	}
	if c.Mirostat != nil {
		sc.Mirostat = *c.Mirostat
	}
	set(&sc.RepeatPenalty, c.RepeatPenalty)
	set(&sc.FrequencyPenalty, c.FrequencyPenalty)
	set(&sc.PresencePenalty, c.PresencePenalty)
	if c.TopP != nil {
		sc.TopP = float32(*c.TopP)
		if sc.TopP == 0 { // the limit of top-p → 0 (and a p below float32's least): the most likely token alone
			sc.TopK, sc.TopP = 1, 1
		}
	}
	if c.TopK != nil {
		sc.TopK = *c.TopK
	}
	switch {
	case c.Seed != nil && *c.Seed != -1: // −1: llama-server's and Ollama's "no seed"
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
