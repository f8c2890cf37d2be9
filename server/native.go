package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/bitvk/bitvk/tokenizer"
)

// The native APIs of llama-server (POST /completion, /tokenize,
// /detokenize, GET /props, /slots) and of Ollama (POST /api/generate,
// /api/chat, GET /api/tags, POST /api/show), so that their clients and
// UIs work against bitvk. Generation goes through the same checks,
// queue and slots as the OpenAI endpoints.

// slotsStatus is llama-server's GET /slots: each slot's state as of the
// last forward pass.
func (s *Server) slotsStatus(w http.ResponseWriter, _ *http.Request, _ *recorder) {
	writeJSON(w, http.StatusOK, s.w.status())
}

// props is llama-server's GET /props.
func (s *Server) props(w http.ResponseWriter, _ *http.Request, _ *recorder) {
	tmpl := ""
	if s.cfg.Template != nil {
		tmpl = s.cfg.Template.Name()
	}
	sc := s.cfg.Sampler
	nPredict := s.cfg.MaxTokens
	if nPredict <= 0 {
		nPredict = -1 // llama-server's "no limit"
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"default_generation_settings": map[string]any{
			"n_ctx": s.cfg.Engine.Context(), "n_predict": nPredict,
			"temperature": sc.Temperature, "top_k": sc.TopK, "top_p": sc.TopP, "min_p": sc.MinP,
			"typical_p": sc.TypicalP, "mirostat": sc.Mirostat, "mirostat_tau": sc.MirostatTau, "mirostat_eta": sc.MirostatEta,
			"xtc_probability": sc.XTCProbability, "xtc_threshold": sc.XTCThreshold,
			"dry_multiplier": sc.DRYMultiplier, "dry_base": sc.DRYBase, "dry_allowed_length": sc.DRYAllowedLength, "dry_penalty_last_n": sc.DRYLastN,
			"repeat_penalty": sc.RepeatPenalty, "seed": sc.Seed,
		},
		"total_slots": len(s.w.slots), "model_path": s.cfg.ModelName, "chat_template": tmpl,
		"build_info": "bitvk", "backend": s.cfg.Backend,
	})
}

// tokenize is llama-server's POST /tokenize: {"content", "add_special",
// "with_pieces"} → {"tokens": [ids]} or [{"id", "piece"}].
func (s *Server) tokenize(w http.ResponseWriter, r *http.Request, _ *recorder) {
	var req struct {
		Content    *string `json:"content"`
		AddSpecial bool    `json:"add_special"`
		WithPieces bool    `json:"with_pieces"`
	}
	if e := decodeBody(w, r, s.cfg.MaxBody, &req); e != nil {
		writeError(w, e)
		return
	}
	if req.Content == nil {
		writeError(w, invalid("content", "'content' is missing"))
		return
	}
	ids := s.cfg.Tokenizer.Encode(*req.Content, tokenizer.EncodeOptions{NoBOS: true, ParseSpecial: true})
	if req.AddSpecial {
		ids = s.bos(ids)
	}
	if !req.WithPieces {
		writeJSON(w, http.StatusOK, map[string]any{"tokens": ids})
		return
	}
	type withPiece struct {
		ID    int32 `json:"id"`
		Piece any   `json:"piece"` // a string, or its bytes when they are not UTF-8 (as llama-server)
	}
	out := make([]withPiece, len(ids))
	for i, id := range ids {
		p := s.cfg.Tokenizer.Piece(id)
		out[i] = withPiece{id, p}
		if !utf8.ValidString(p) {
			out[i].Piece = byteList(p)
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"tokens": out})
}

// detokenize is llama-server's POST /detokenize: {"tokens"} → {"content"}.
func (s *Server) detokenize(w http.ResponseWriter, r *http.Request, _ *recorder) {
	var req struct {
		Tokens []json.RawMessage `json:"tokens"`
	}
	if e := decodeBody(w, r, s.cfg.MaxBody, &req); e != nil {
		writeError(w, e)
		return
	}
	ids, e := tokenIDs(req.Tokens, "tokens", s.cfg.Tokenizer.Len())
	if e != nil {
		writeError(w, e)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"content": s.cfg.Tokenizer.Decode(ids)})
}

// llamaCompletionRequest is llama-server's POST /completion body.
type llamaCompletionRequest struct {
	Prompt      json.RawMessage `json:"prompt"`
	NPredict    *int            `json:"n_predict"`
	Temperature *float64        `json:"temperature"`
	TopK        *int            `json:"top_k"`
	TopP        *float64        `json:"top_p"`
	MinP        *float64        `json:"min_p"`
	llamaSampling
	RepeatPenalty    *float64        `json:"repeat_penalty"`
	PresencePenalty  *float64        `json:"presence_penalty"`
	FrequencyPenalty *float64        `json:"frequency_penalty"`
	Seed             *int64          `json:"seed"`
	Stop             json.RawMessage `json:"stop"`
	Stream           bool            `json:"stream"`
	IgnoreEOS        bool            `json:"ignore_eos"`
	NProbs           int             `json:"n_probs"`
	// refused when they ask for something
	Grammar    json.RawMessage `json:"grammar"`
	JSONSchema json.RawMessage `json:"json_schema"`
	LogitBias  json.RawMessage `json:"logit_bias"`
}

// llamaCompletion is llama-server's POST /completion: the reply as one
// object, or streamed as Server-Sent Events of {"content", "stop": false}
// ending with one that has "stop": true and the counts (no [DONE]).
func (s *Server) llamaCompletion(w http.ResponseWriter, r *http.Request, rec *recorder) {
	var req llamaCompletionRequest
	if e := decodeBody(w, r, s.cfg.MaxBody, &req); e != nil {
		writeError(w, e)
		return
	}
	switch {
	case asks(req.Grammar):
		writeError(w, invalid("grammar", "'grammar' is not supported by this server"))
		return
	case asks(req.JSONSchema):
		writeError(w, invalid("json_schema", "'json_schema' is not supported by this server; /v1/chat/completions takes \"response_format\": {\"type\": \"json_object\"}"))
		return
	}
	c := commonRequest{Temperature: req.Temperature, TopK: req.TopK, TopP: req.TopP, MinP: req.MinP,
		llamaSampling: req.llamaSampling, RepeatPenalty: req.RepeatPenalty, PresencePenalty: req.PresencePenalty, FrequencyPenalty: req.FrequencyPenalty,
		Seed: req.Seed, Stop: req.Stop, IgnoreEOS: req.IgnoreEOS, LogitBias: req.LogitBias, maxStops: maxNativeStops}
	if req.NPredict != nil && *req.NPredict > 0 { // < 0: no limit
		c.MaxTokens = req.NPredict
	}
	g, e := s.completionGeneration(&completionRequest{commonRequest: c, Prompt: req.Prompt})
	if e != nil {
		writeError(w, e.rename("max_tokens", "n_predict"))
		return
	}
	if req.NProbs < 0 || req.NProbs > maxTopLogprobs {
		writeError(w, invalid("n_probs", "'n_probs' is %d; it must be between 0 and %d", req.NProbs, maxTopLogprobs))
		return
	}
	g.logprobs, g.topLogprobs = req.NProbs > 0, req.NProbs
	// llama-server: "When 0, no tokens will be generated but the prompt is
	// evaluated into the cache" (a client warming the prefix cache).
	g.evalOnly = req.NPredict != nil && *req.NPredict == 0
	g.stream = req.Stream
	rn := s.submit(w, r, rec, g)
	if rn == nil {
		return
	}
	defer rn.stop()
	defer rn.log(rec)
	type prob struct {
		ID      int32   `json:"id"`
		Token   string  `json:"token"`
		Logprob float64 `json:"logprob"`
	}
	type tokenProbs struct {
		ID          int32   `json:"id"`
		Token       string  `json:"token"`
		Logprob     float64 `json:"logprob"`
		TopLogprobs []prob  `json:"top_logprobs"`
	}
	probs := func(lp *tokenLogprob) tokenProbs {
		t := tokenProbs{ID: lp.ID, Token: lp.Token, Logprob: lp.Logprob, TopLogprobs: []prob{}}
		for _, a := range lp.Top {
			t.TopLogprobs = append(t.TopLogprobs, prob(a))
		}
		return t
	}
	final := func(content string, all []tokenProbs) map[string]any {
		res := &rn.jobs[0].res
		stopType := "limit"
		switch {
		case res.finish == "stop" && res.stats.Stop == "eog":
			stopType = "eos"
		case res.finish == "stop":
			stopType = "word"
		}
		out := map[string]any{
			"content": content, "id_slot": res.slot, "stop": true, "model": s.cfg.ModelName,
			"tokens_predicted": res.stats.GenTokens, "tokens_evaluated": res.prompt, "tokens_cached": res.cached,
			"stop_type": stopType, "stopping_word": res.stopWord, "truncated": false, "timings": rn.timings(),
		}
		if all != nil {
			out["completion_probabilities"] = all
		}
		return out
	}
	if !g.stream {
		var text strings.Builder
		var all []tokenProbs
		for x := range rn.pieces() {
			text.WriteString(x.p.text)
			if x.p.lp != nil {
				all = append(all, probs(x.p.lp))
			}
		}
		if _, e, gone := rn.outcome(); gone {
			rec.gone = true
		} else if e != nil {
			writeError(w, e)
		} else {
			if g.logprobs && all == nil {
				all = []tokenProbs{}
			}
			writeJSON(w, http.StatusOK, final(text.String(), all))
		}
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	sse := &sseWriter{w: w, rc: http.NewResponseController(w)}
	defer sse.rc.SetWriteDeadline(time.Time{})
	for x := range rn.pieces() {
		if sse.err != nil || x.done {
			continue
		}
		ev := map[string]any{"content": x.p.text, "stop": false, "id_slot": rn.jobs[0].res.slot}
		if x.p.lp != nil {
			ev["completion_probabilities"] = []tokenProbs{probs(x.p.lp)}
		}
		sse.send(ev)
		if sse.err != nil {
			rn.cancel(errClientGone)
		}
	}
	_, e, gone := rn.outcome()
	switch {
	case gone || sse.err != nil:
		rec.gone = true
	case e != nil:
		sse.send(struct {
			Error *apiError `json:"error"`
		}{e})
	default:
		sse.send(final("", nil))
	}
}

// Ollama's API. Requests name a model; this server has one and answers
// to any name in /api/generate and /api/chat (Ollama's clients send what
// /api/tags listed), but /api/show of another name is a 404 as in Ollama.
// Errors are {"error": "…"}; streaming (the default) is NDJSON.

type ollamaOptions struct {
	Temperature      *float64        `json:"temperature"`
	TopK             *int            `json:"top_k"`
	TopP             *float64        `json:"top_p"`
	MinP             *float64        `json:"min_p"`
	TypicalP         *float64        `json:"typical_p"`
	Mirostat         *int            `json:"mirostat"`
	MirostatTau      *float64        `json:"mirostat_tau"`
	MirostatEta      *float64        `json:"mirostat_eta"`
	NumPredict       *int            `json:"num_predict"`
	Seed             *int64          `json:"seed"`
	Stop             json.RawMessage `json:"stop"`
	RepeatPenalty    *float64        `json:"repeat_penalty"`
	PresencePenalty  *float64        `json:"presence_penalty"`
	FrequencyPenalty *float64        `json:"frequency_penalty"`
}

// ollamaOptionNames are the JSON names of ollamaOptions' fields that
// commonRequest shares, for errors about them.
var ollamaOptionNames = []string{"temperature", "top_k", "top_p", "min_p", "seed", "stop",
	"repeat_penalty", "presence_penalty", "frequency_penalty", "typical_p", "mirostat", "mirostat_tau", "mirostat_eta"}

type ollamaRequest struct {
	Model    string          `json:"model"`
	Prompt   *string         `json:"prompt"`
	System   string          `json:"system"`
	Raw      bool            `json:"raw"`
	Messages []ollamaMessage `json:"messages"`
	Stream   *bool           `json:"stream"`
	Format   json.RawMessage `json:"format"`
	Options  ollamaOptions   `json:"options"`
	// refused when they ask for something
	Images json.RawMessage `json:"images"`
	Suffix json.RawMessage `json:"suffix"`
	Tools  json.RawMessage `json:"tools"`
}

type ollamaMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	Images  json.RawMessage `json:"images"` // refused when it holds any
}

// ollamaError writes Ollama's error shape.
func ollamaError(w http.ResponseWriter, status int, format string, a ...any) {
	writeJSON(w, status, map[string]string{"error": fmt.Sprintf(format, a...)})
}

func (s *Server) ollamaGenerate(w http.ResponseWriter, r *http.Request, rec *recorder) {
	s.ollama(w, r, rec, false)
}

func (s *Server) ollamaChat(w http.ResponseWriter, r *http.Request, rec *recorder) {
	s.ollama(w, r, rec, true)
}

// ollama serves /api/generate and /api/chat.
func (s *Server) ollama(w http.ResponseWriter, r *http.Request, rec *recorder, chat bool) {
	var req ollamaRequest
	if e := decodeBody(w, r, s.cfg.MaxBody, &req); e != nil {
		ollamaError(w, e.status, "%s", e.Message)
		return
	}
	model := req.Model
	if model == "" {
		model = s.cfg.ModelName
	}
	// As Ollama: no prompt (or no messages) asks only to load the model,
	// which is loaded.
	if chat && len(req.Messages) == 0 || !chat && (req.Prompt == nil || *req.Prompt == "") {
		ev := map[string]any{"model": model, "created_at": time.Now().UTC().Format(time.RFC3339Nano), "done": true, "done_reason": "load"}
		if chat {
			ev["message"] = map[string]string{"role": "assistant", "content": ""}
		} else {
			ev["response"] = ""
		}
		writeJSON(w, http.StatusOK, ev)
		return
	}
	msgs := make([]chatMessage, len(req.Messages))
	images := asks(req.Images)
	for i, m := range req.Messages {
		msgs[i] = chatMessage{Role: m.Role, Content: m.Content}
		images = images || asks(m.Images)
	}
	switch {
	case images:
		ollamaError(w, http.StatusBadRequest, "'images' is not supported: this model reads only text")
		return
	case asks(req.Tools):
		ollamaError(w, http.StatusBadRequest, "'tools' is not supported by this server")
		return
	case asks(req.Suffix):
		ollamaError(w, http.StatusBadRequest, "'suffix' is not supported by this server")
		return
	}
	o := req.Options
	c := commonRequest{Temperature: o.Temperature, TopK: o.TopK, TopP: o.TopP, MinP: o.MinP, Seed: o.Seed, Stop: o.Stop,
		llamaSampling: llamaSampling{TypicalP: o.TypicalP, Mirostat: o.Mirostat, MirostatTau: o.MirostatTau, MirostatEta: o.MirostatEta},
		RepeatPenalty: o.RepeatPenalty, PresencePenalty: o.PresencePenalty, FrequencyPenalty: o.FrequencyPenalty,
		maxStops: maxNativeStops}
	var limit *int
	if o.NumPredict != nil && *o.NumPredict > 0 { // ≤ 0: no limit
		limit = o.NumPredict
		c.MaxTokens = limit
	}
	var g *generation
	var e *apiError
	switch {
	case chat:
		g, e = s.chatGeneration(&chatRequest{commonRequest: c, Messages: msgs, MaxCompletionTokens: limit})
	case req.Raw || s.cfg.Template == nil:
		raw, _ := json.Marshal(*req.Prompt)
		g, e = s.completionGeneration(&completionRequest{commonRequest: c, Prompt: raw})
	default:
		msgs := []chatMessage{}
		if req.System != "" {
			sys, _ := json.Marshal(req.System)
			msgs = append(msgs, chatMessage{Role: "system", Content: sys})
		}
		user, _ := json.Marshal(*req.Prompt)
		msgs = append(msgs, chatMessage{Role: "user", Content: user})
		g, e = s.chatGeneration(&chatRequest{commonRequest: c, Messages: msgs, MaxCompletionTokens: limit})
	}
	if e != nil {
		e.rename("max_completion_tokens", "options.num_predict")
		for _, name := range ollamaOptionNames {
			e.rename(name, "options."+name)
		}
		ollamaError(w, e.status, "%s", e.Message)
		return
	}
	switch f := strings.TrimSpace(string(req.Format)); f {
	case "", "null", `""`:
	case `"json"`:
		g.json = true
	default:
		ollamaError(w, http.StatusBadRequest, "format %s is not supported; only \"json\"", f)
		return
	}
	g.stream = req.Stream == nil || *req.Stream
	rn := s.submit(w, r, rec, g)
	if rn == nil {
		return
	}
	defer rn.stop()
	defer rn.log(rec)
	start := time.Now()
	event := func(text string, done bool) map[string]any {
		ev := map[string]any{"model": model, "created_at": time.Now().UTC().Format(time.RFC3339Nano), "done": done}
		if chat {
			ev["message"] = map[string]string{"role": "assistant", "content": text}
		} else {
			ev["response"] = text
		}
		if done {
			res := &rn.jobs[0].res
			st := res.stats
			ev["done_reason"] = res.finish
			ev["total_duration"] = time.Since(start).Nanoseconds() + res.queueWait.Nanoseconds()
			ev["load_duration"] = 0
			ev["prompt_eval_count"] = res.prompt
			ev["prompt_eval_duration"] = st.PromptTime.Nanoseconds()
			ev["eval_count"] = st.GenTokens
			ev["eval_duration"] = st.GenTime.Nanoseconds()
		}
		return ev
	}
	if !g.stream {
		var text strings.Builder
		for x := range rn.pieces() {
			text.WriteString(x.p.text)
		}
		if _, e, gone := rn.outcome(); gone {
			rec.gone = true
		} else if e != nil {
			ollamaError(w, e.status, "%s", e.Message)
		} else {
			writeJSON(w, http.StatusOK, event(text.String(), true))
		}
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	defer rc.SetWriteDeadline(time.Time{})
	var werr error
	send := func(v any) {
		if werr != nil {
			return
		}
		rc.SetWriteDeadline(time.Now().Add(writeTimeout))
		b, _ := json.Marshal(v)
		if _, werr = w.Write(append(b, '\n')); werr == nil {
			werr = rc.Flush()
		}
		if werr != nil {
			rn.cancel(errClientGone)
		}
	}
	for x := range rn.pieces() {
		if !x.done && x.p.text != "" {
			send(event(x.p.text, false))
		}
	}
	_, e, gone := rn.outcome()
	switch {
	case gone || werr != nil:
		rec.gone = true
	case e != nil:
		send(map[string]string{"error": e.Message})
	default:
		send(event("", true))
	}
}

// ollamaDetails describes the model as Ollama does.
func (s *Server) ollamaDetails() map[string]any {
	c := s.cfg.Engine.Config()
	return map[string]any{"format": "gguf", "family": c.Arch, "families": []string{c.Arch},
		"parameter_size": "", "quantization_level": "ternary"}
}

// ollamaTags is GET /api/tags: the one model.
func (s *Server) ollamaTags(w http.ResponseWriter, _ *http.Request, _ *recorder) {
	writeJSON(w, http.StatusOK, map[string]any{"models": []map[string]any{{
		"name": s.cfg.ModelName, "model": s.cfg.ModelName, "modified_at": time.Unix(s.created, 0).UTC().Format(time.RFC3339),
		"size": 0, "digest": "", "details": s.ollamaDetails(),
	}}})
}

// ollamaShow is POST /api/show {"model"} (or "name").
func (s *Server) ollamaShow(w http.ResponseWriter, r *http.Request, _ *recorder) {
	var req struct {
		Model string `json:"model"`
		Name  string `json:"name"`
	}
	if e := decodeBody(w, r, s.cfg.MaxBody, &req); e != nil {
		ollamaError(w, e.status, "%s", e.Message)
		return
	}
	name := req.Model
	if name == "" {
		name = req.Name
	}
	if name == "" {
		ollamaError(w, http.StatusBadRequest, "'model' is missing: name the model to show (this server has %q)", s.cfg.ModelName)
		return
	}
	if name != s.cfg.ModelName && name != s.cfg.ModelName+":latest" {
		ollamaError(w, http.StatusNotFound, "model '%s' not found", name)
		return
	}
	c := s.cfg.Engine.Config()
	tmpl := ""
	if s.cfg.Template != nil {
		tmpl = s.cfg.Template.Name()
	}
	sc := s.cfg.Sampler
	writeJSON(w, http.StatusOK, map[string]any{
		"modelfile":  "FROM " + s.cfg.ModelName + "\n",
		"parameters": fmt.Sprintf("temperature %v\ntop_k %d\ntop_p %v", sc.Temperature, sc.TopK, sc.TopP),
		"template":   tmpl,
		"details":    s.ollamaDetails(),
		"model_info": map[string]any{
			"general.architecture":           c.Arch,
			c.Arch + ".context_length":       s.cfg.Engine.Context(),
			c.Arch + ".embedding_length":     c.Embd,
			c.Arch + ".block_count":          c.Layers,
			c.Arch + ".attention.head_count": c.Heads,
			"tokenizer.ggml.model":           s.cfg.Tokenizer.Model(),
			"bitvk.slots":                    len(s.w.slots),
		},
		"capabilities": []string{"completion"},
	})
}
