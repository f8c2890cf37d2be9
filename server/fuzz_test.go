package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"
)

// FuzzRequests sends arbitrary bodies to every endpoint that reads one,
// one request at a time, and holds the server to its promise: any body
// gets a clear 4xx error or a correct answer. That is:
//
//   - no panic, and an answer within fuzzHang;
//   - no 5xx at all: a 503 (queue full, deadline, shutdown) is legitimate
//     only under load, past --timeout or while the server shuts down, and
//     the fuzzer has none of these: it waits for each answer, the server
//     has no timeout and is never closed, and n is refused past what the
//     slots and the queue hold, so every request finds room; a 500 is the
//     model failing, which no request may cause;
//   - an error has its API's shape: OpenAI's {"error": {"message",
//     "type", "param", "code"}} (llama-server's endpoints too), Ollama's
//     {"error": "…"}, and says something;
//   - an answer is one JSON object, or a stream of them in its API's
//     framing (Server-Sent Events ending in [DONE] or "stop": true,
//     NDJSON ending in "done": true) with no error in it, and a completion
//     has its choices, each with one finish reason, and usage that adds up;
//   - afterwards no slot is busy and no job waits, and /slots says so.
//
// The endpoint byte picks the endpoint; with its high bit set, a body
// that is a JSON object is completed with what a valid request of the
// endpoint needs (fuzzEndpoint.base), so that more of the fuzzer's
// variations reach the model instead of being refused for lack of a
// prompt.
//
// The server has 64 positions of context, 4 slots, a queue of 4, a
// default of 4 tokens per reply and a 4 KiB body limit; fuzzBody lowers
// the token limits a body asks for to fuzzMaxTokens, so every request is
// short (one that asks for no limit stops at the context's end).
func FuzzRequests(f *testing.F) {
	ts := newTestServer(f, testOptions{ctx: 64, listen: true, edit: func(c *Config) {
		c.MaxTokens, c.MaxBody, c.Queue = 4, 4096, 4
	}})
	for _, s := range fuzzSeeds {
		f.Add(uint8(s.ep), []byte(s.body))
	}
	h := ts.Handler()
	f.Fuzz(func(t *testing.T, ep uint8, body []byte) {
		e := fuzzEndpoints[int(ep&0x7f)%len(fuzzEndpoints)]
		body = fuzzBody(body, e, ep&0x80 != 0)
		rec := serveFuzz(t, h, http.MethodPost, e.path, body)
		if err := checkReply(e, rec); err != nil {
			t.Fatalf("POST %s %s: %v\nstatus %d, %s\n%s", e.path, body, err, rec.Code, rec.Header().Get("Content-Type"), rec.Body.Bytes())
		}
		if busy, waiting := ts.w.busy.Load(), ts.q.len(); busy != 0 || waiting != 0 {
			t.Fatalf("POST %s %s: after the answer %d slots are busy and %d jobs wait", e.path, body, busy, waiting)
		}
		// /slots is published by the scheduler between passes: it says
		// so within moments.
		for deadline := time.Now().Add(2 * time.Second); ; {
			r := serveFuzz(t, h, http.MethodGet, "/slots", nil)
			var slots []slotView
			if err := json.Unmarshal(r.Body.Bytes(), &slots); r.Code != http.StatusOK || err != nil {
				t.Fatalf("/slots: %d %v: %s", r.Code, err, r.Body.Bytes())
			}
			busy := 0
			for _, s := range slots {
				if s.IsProcessing || s.State != "idle" {
					busy++
				}
			}
			if busy == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("POST %s %s: /slots shows %d slots busy after the answer: %s", e.path, body, busy, r.Body.Bytes())
			}
			time.Sleep(time.Millisecond)
		}
	})
}

// fuzzHang is how long one request may take: the longest the fuzzer makes
// (8 choices of fuzzMaxTokens, or one reply that fills the context) take
// well under a second.
const fuzzHang = 20 * time.Second

// serveFuzz runs one request through h, turning a panic or a hang into
// the test's failure.
func serveFuzz(t *testing.T, h http.Handler, method, path string, body []byte) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, path, bytes.NewReader(body))
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	rec := httptest.NewRecorder()
	done := make(chan string, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- fmt.Sprintf("panic: %v\n%s", p, debug.Stack())
				return
			}
			done <- ""
		}()
		h.ServeHTTP(rec, req)
	}()
	select {
	case p := <-done:
		if p != "" {
			t.Fatalf("%s %s %s: %s", method, path, body, p)
		}
	case <-time.After(fuzzHang):
		t.Fatalf("%s %s %s: no answer after %v", method, path, body, fuzzHang)
	}
	return rec
}

type fuzzEndpoint struct {
	path   string
	ollama bool   // Ollama's error shape and NDJSON streams
	openAI bool   // a completion in OpenAI's shape
	base   string // the fields a valid request needs
}

// fuzzEndpoints are the POST endpoints; the fuzzer's byte picks one.
var fuzzEndpoints = []fuzzEndpoint{
	{path: "/v1/chat/completions", openAI: true, base: `{"messages":[{"role":"user","content":"hi"}]}`},
	{path: "/v1/completions", openAI: true, base: `{"prompt":"hi"}`},
	{path: "/completion", base: `{"prompt":"hi"}`},
	{path: "/tokenize", base: `{"content":"hi"}`},
	{path: "/detokenize", base: `{"tokens":[1,2]}`},
	{path: "/api/generate", ollama: true, base: `{"prompt":"hi"}`},
	{path: "/api/chat", ollama: true, base: `{"messages":[{"role":"user","content":"hi"}]}`},
	{path: "/api/show", ollama: true, base: `{"model":"tiny"}`},
}

// Seeds name their endpoint by its index in fuzzEndpoints.
const (
	epChat = iota
	epCompletions
	epLlama
	epTokenize
	epDetokenize
	epGenerate
	epOllamaChat
	epShow

	complete = 0x80 // the body is completed with the endpoint's base request
)

// fuzzMaxTokens is the most tokens per choice a fuzzed body may ask for.
const fuzzMaxTokens = 8

// fuzzLimits are the fields that bound a reply's length; "options" is
// Ollama's object of them.
var fuzzLimits = []string{"max_tokens", "max_completion_tokens", "n_predict", "num_predict"}

// fuzzBody lowers the token limits a JSON body asks for to fuzzMaxTokens,
// at the top and in "options", and, with complete, adds the fields of e's
// base request that it lacks. A body that is not a JSON object, or needs
// no change, is sent as it is, byte for byte. Go's JSON decoder matches
// names without regard to case, so this does too.
func fuzzBody(body []byte, e fuzzEndpoint, complete bool) []byte {
	m, ok := fuzzObject(body)
	if !ok {
		return body
	}
	changed := lowerLimits(m)
	if complete {
		base, _ := fuzzObject([]byte(e.base))
	fields:
		for bk, bv := range base {
			for k := range m {
				if strings.EqualFold(k, bk) {
					continue fields
				}
			}
			m[bk], changed = bv, true
		}
	}
	for k, v := range m {
		if o, ok := v.(map[string]any); ok && strings.EqualFold(k, "options") {
			changed = lowerLimits(o) || changed
		}
	}
	if !changed {
		return body
	}
	out, err := json.Marshal(m)
	if err != nil {
		return body
	}
	return out
}

// fuzzObject decodes a body that is one JSON object, keeping its numbers
// as they are written.
func fuzzObject(body []byte) (map[string]any, bool) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var m map[string]any
	if dec.Decode(&m) != nil || m == nil {
		return nil, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, false // more than one value: refused as it is
	}
	return m, true
}

func lowerLimits(m map[string]any) bool {
	changed := false
	for k, v := range m {
		n, ok := v.(json.Number)
		if !ok {
			continue
		}
		for _, name := range fuzzLimits {
			if !strings.EqualFold(k, name) {
				continue
			}
			// A limit the decoder would refuse (a fraction, too large for
			// an int) stays as it is, to be refused.
			if x, err := strconv.ParseInt(string(n), 10, 0); err == nil && x > fuzzMaxTokens {
				m[k] = json.Number(strconv.Itoa(fuzzMaxTokens))
				changed = true
			}
		}
	}
	return changed
}

// checkReply checks an answer's status, shape and framing.
func checkReply(e fuzzEndpoint, rec *httptest.ResponseRecorder) error {
	body := rec.Body.Bytes()
	ct := rec.Header().Get("Content-Type")
	switch {
	case rec.Code >= 500:
		return fmt.Errorf("a server error")
	case rec.Code >= 400:
		if ct != "application/json" {
			return fmt.Errorf("an error of content type %q", ct)
		}
		return checkError(e, body)
	case rec.Code != http.StatusOK:
		return fmt.Errorf("status %d", rec.Code)
	}
	switch ct {
	case "application/json":
		return checkObject(e, body)
	case "text/event-stream":
		return checkSSE(e, body)
	case "application/x-ndjson":
		if !e.ollama {
			return errors.New("NDJSON from an endpoint not Ollama's")
		}
		return checkNDJSON(body)
	}
	return fmt.Errorf("content type %q", ct)
}

// checkError checks an error's shape, which is the whole body.
func checkError(e fuzzEndpoint, body []byte) error {
	if e.ollama {
		var oe struct {
			Error *string `json:"error"`
		}
		if err := strictJSON(body, &oe); err != nil || oe.Error == nil || *oe.Error == "" {
			return fmt.Errorf("not an Ollama error (%v)", err)
		}
		return nil
	}
	var ae struct {
		Error *struct {
			Message string  `json:"message"`
			Type    string  `json:"type"`
			Param   *string `json:"param"`
			Code    *string `json:"code"`
		} `json:"error"`
	}
	if err := strictJSON(body, &ae); err != nil || ae.Error == nil || ae.Error.Message == "" || ae.Error.Type == "" {
		return fmt.Errorf("not an OpenAI error (%v)", err)
	}
	return nil
}

// strictJSON decodes one JSON value, the whole of b but a final newline,
// with no field v does not have.
func strictJSON(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("more than one JSON value")
	}
	return nil
}

// fuzzCompletion is what checkObject and checkSSE read of an OpenAI
// completion or chunk.
type fuzzCompletion struct {
	Object  string `json:"object"`
	Choices []struct {
		Index        int     `json:"index"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *clientUsage `json:"usage"`
}

// checkObject checks an answer that is one JSON object.
func checkObject(e fuzzEndpoint, body []byte) error {
	var m map[string]json.RawMessage
	if err := strictJSON(body, &m); err != nil || m == nil {
		return fmt.Errorf("not one JSON object (%v)", err)
	}
	if _, ok := m["error"]; ok {
		return errors.New("an error in a 200 answer")
	}
	switch {
	case e.openAI:
		var c fuzzCompletion
		if err := json.Unmarshal(body, &c); err != nil {
			return err
		}
		if c.Object != "chat.completion" && c.Object != "text_completion" {
			return fmt.Errorf("object %q", c.Object)
		}
		if len(c.Choices) == 0 {
			return errors.New("no choices")
		}
		for i, ch := range c.Choices {
			if ch.Index != i || ch.FinishReason == nil || (*ch.FinishReason != "stop" && *ch.FinishReason != "length") {
				return fmt.Errorf("choice %d: index %d, finish reason %v", i, ch.Index, ch.FinishReason)
			}
		}
		return checkUsageAddsUp(c.Usage)
	case e.path == "/completion":
		if string(m["stop"]) != "true" {
			return errors.New(`no "stop": true`)
		}
	case e.ollama && e.path != "/api/show":
		if string(m["done"]) != "true" {
			return errors.New(`no "done": true`)
		}
	}
	return nil
}

func checkUsageAddsUp(u *clientUsage) error {
	if u == nil || u.PromptTokens < 1 || u.CompletionTokens < 0 || u.TotalTokens != u.PromptTokens+u.CompletionTokens ||
		u.PromptTokensDetails.CachedTokens < 0 || u.PromptTokensDetails.CachedTokens >= u.PromptTokens {
		return fmt.Errorf("usage %+v", u)
	}
	return nil
}

// checkSSE checks a stream of Server-Sent Events: "data: " lines of JSON
// objects with blank lines between. OpenAI's end with "[DONE]", after the
// finish reason of every choice (and the usage chunk, if any);
// llama-server's with an event of "stop": true.
func checkSSE(e fuzzEndpoint, body []byte) error {
	if !e.openAI && e.path != "/completion" {
		return errors.New("an event stream from an endpoint that does not stream")
	}
	events := strings.Split(string(body), "\n\n")
	if len(events) < 2 || events[len(events)-1] != "" {
		return errors.New("the stream does not end with a blank line")
	}
	events = events[:len(events)-1]
	for i, ev := range events {
		data, ok := strings.CutPrefix(ev, "data: ")
		if !ok || strings.Contains(data, "\n") {
			return fmt.Errorf("event %d is not one data line: %q", i, ev)
		}
		events[i] = data
	}
	if !e.openAI {
		for i, data := range events {
			var m map[string]json.RawMessage
			if err := strictJSON([]byte(data), &m); err != nil || m == nil {
				return fmt.Errorf("event %d is not a JSON object (%v): %s", i, err, data)
			}
			if _, ok := m["error"]; ok {
				return fmt.Errorf("event %d is an error: %s", i, data)
			}
			if last := i == len(events)-1; string(m["stop"]) != strconv.FormatBool(last) {
				return fmt.Errorf("event %d of %d has \"stop\": %s", i, len(events), m["stop"])
			}
		}
		return nil
	}
	if events[len(events)-1] != "[DONE]" {
		return fmt.Errorf("the stream ends with %q, not [DONE]", events[len(events)-1])
	}
	finished := map[int]bool{}
	var usage *clientUsage
	for i, data := range events[:len(events)-1] {
		var m map[string]json.RawMessage
		if err := strictJSON([]byte(data), &m); err != nil || m == nil {
			return fmt.Errorf("event %d is not a JSON object (%v): %s", i, err, data)
		}
		if _, ok := m["error"]; ok {
			return fmt.Errorf("event %d is an error: %s", i, data)
		}
		var c fuzzCompletion
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			return fmt.Errorf("event %d (%v): %s", i, err, data)
		}
		if c.Object != "chat.completion.chunk" && c.Object != "text_completion" {
			return fmt.Errorf("event %d: object %q", i, c.Object)
		}
		if usage != nil {
			return fmt.Errorf("event %d follows the usage chunk", i)
		}
		if len(c.Choices) == 0 {
			if c.Usage == nil {
				return fmt.Errorf("event %d has neither choices nor usage: %s", i, data)
			}
			usage = c.Usage
			if err := checkUsageAddsUp(usage); err != nil {
				return err
			}
			continue
		}
		for _, ch := range c.Choices {
			if finished[ch.Index] {
				return fmt.Errorf("event %d: choice %d after its finish", i, ch.Index)
			}
			if ch.FinishReason != nil {
				if *ch.FinishReason != "stop" && *ch.FinishReason != "length" {
					return fmt.Errorf("event %d: finish reason %q", i, *ch.FinishReason)
				}
				finished[ch.Index] = true
			}
		}
	}
	for i := range len(finished) {
		if !finished[i] {
			return fmt.Errorf("choice %d has no finish reason (choices finished: %v)", i, finished)
		}
	}
	if len(finished) == 0 {
		return errors.New("no choice finished")
	}
	return nil
}

// checkNDJSON checks Ollama's stream: a JSON object per line, the last,
// only, with "done": true.
func checkNDJSON(body []byte) error {
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<20)
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) == 0 || !bytes.HasSuffix(body, []byte("\n")) {
		return errors.New("an empty or unterminated stream")
	}
	for i, l := range lines {
		var m map[string]json.RawMessage
		if err := strictJSON([]byte(l), &m); err != nil || m == nil {
			return fmt.Errorf("line %d is not a JSON object (%v): %s", i, err, l)
		}
		if _, ok := m["error"]; ok {
			return fmt.Errorf("line %d is an error: %s", i, l)
		}
		if last := i == len(lines)-1; string(m["done"]) != strconv.FormatBool(last) {
			return fmt.Errorf("line %d of %d has \"done\": %s", i, len(lines), m["done"])
		}
	}
	return nil
}

// fuzzSeeds are valid requests for every endpoint, in every form each
// takes, and some malformed ones.
var fuzzSeeds = []struct {
	ep   int
	body string
}{
	// OpenAI chat
	{epChat, `{"model":"tiny","messages":[{"role":"user","content":"hello"}],"max_tokens":3}`},
	{epChat, `{"messages":[{"role":"user","content":"hello"}],"stream":true,"stream_options":{"include_usage":true}}`},
	{epChat, `{"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":[{"type":"text","text":"hi"}]},{"role":"assistant","content":null},{"role":"user","content":"more"}],"max_completion_tokens":2}`},
	{epChat, `{"messages":[{"role":"user","content":"x"}],"logprobs":true,"top_logprobs":3,"max_tokens":2}`},
	{epChat, `{"messages":[{"role":"user","content":"x"}],"logprobs":true,"top_logprobs":20,"stream":true,"n":2}`},
	{epChat, `{"messages":[{"role":"user","content":"x"}],"n":3,"temperature":1,"seed":7,"top_p":0.9,"top_k":5,"min_p":0.05}`},
	{epChat, `{"messages":[{"role":"user","content":"x"}],"n":8,"stream":true,"max_tokens":1}`},
	{epChat, `{"messages":[{"role":"user","content":"give JSON"}],"response_format":{"type":"json_object"},"max_tokens":8}`},
	{epChat, `{"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_object"},"stream":true,"logprobs":true}`},
	{epChat, `{"messages":[{"role":"user","content":"x"}],"stop":["\n","e"," the"],"ignore_eos":true,"max_tokens":8}`},
	{epChat, `{"messages":[{"role":"developer","content":"x"},{"role":"user","content":"y"}],"stop":"a","stream":true,"presence_penalty":1.5,"frequency_penalty":-1,"repeat_penalty":1.2}`},
	{epChat, `{"messages":[{"role":"user","content":"x"}],"tool_choice":"none","functions":[],"logit_bias":{},"seed":-1,"temperature":0}`},
	{epChat, `{"messages":[{"role":"user","content":"<|eot_id|>User: <|begin_of_text|>"}],"top_p":0}`},
	// OpenAI text completions
	{epCompletions, `{"prompt":"The capital of France is","max_tokens":4}`},
	{epCompletions, `{"prompt":[1,2,3],"max_tokens":2,"logprobs":2}`},
	{epCompletions, `{"prompt":[[5,6,7]],"stream":true,"logprobs":5,"n":2}`},
	{epCompletions, `{"prompt":["once"],"stream":true,"stream_options":{"include_usage":true},"stop":["\n\n"],"best_of":1,"suffix":""}`},
	{epCompletions, `{"prompt":"x","n":4,"ignore_eos":true,"max_tokens":8,"temperature":2,"seed":3}`},
	{epCompletions, `{"prompt":"x","logprobs":0,"echo":false}`},
	// llama-server
	{epLlama, `{"prompt":"once upon","n_predict":3,"n_probs":2}`},
	{epLlama, `{"prompt":"once upon","n_predict":4,"stream":true,"stop":["a","b"]}`},
	{epLlama, `{"prompt":"warm the cache","n_predict":0}`},
	{epLlama, `{"prompt":"warm the cache","n_predict":0,"stream":true}`},
	{epLlama, `{"prompt":[1,2,3],"n_predict":-1,"seed":-1,"top_k":0,"grammar":"","json_schema":null}`},
	{epLlama, `{"prompt":"x","n_probs":20,"stream":true,"ignore_eos":true}`},
	{epTokenize, `{"content":"hello world","add_special":true,"with_pieces":true}`},
	{epTokenize, `{"content":"<|eot_id|>é\u00ff"}`},
	{epDetokenize, `{"tokens":[1,2,3]}`},
	{epDetokenize, `{"tokens":[]}`},
	// Ollama
	{epGenerate, `{"model":"tiny","prompt":"hi","stream":false,"options":{"num_predict":3,"temperature":0.5,"seed":1,"stop":["x"]}}`},
	{epGenerate, `{"model":"tiny","prompt":"hi","system":"Be brief.","options":{"num_predict":2}}`},
	{epGenerate, `{"prompt":"hi","raw":true,"format":"json","options":{"num_predict":-1}}`},
	{epGenerate, `{"model":"tiny"}`},
	{epOllamaChat, `{"model":"tiny","messages":[{"role":"user","content":"hi"}],"stream":false,"options":{"num_predict":2,"top_k":3,"top_p":0.5,"min_p":0.1}}`},
	{epOllamaChat, `{"messages":[{"role":"user","content":"hi"}],"format":"json","options":{"num_predict":6,"repeat_penalty":1.1,"presence_penalty":0.5,"frequency_penalty":0.5}}`},
	{epOllamaChat, `{"messages":[]}`},
	{epShow, `{"model":"tiny"}`},
	{epShow, `{"name":"tiny:latest"}`},
	{epShow, `{"model":"llama3"}`},
	// completed with a prompt or messages
	{epChat | complete, `{"n":3,"stream":true,"logprobs":true,"top_logprobs":2,"stop":["a"]}`},
	{epChat | complete, `{"response_format":{"type":"json_object"},"temperature":1.5,"seed":11,"max_tokens":8,"stop":["}"]}`},
	{epChat | complete, `{"ignore_eos":true,"presence_penalty":2,"repeat_penalty":0,"top_k":1,"stream":true,"stream_options":{"include_usage":true}}`},
	{epCompletions | complete, `{"logprobs":5,"n":2,"stream":true,"min_p":0.2,"temperature":0.7}`},
	{epCompletions | complete, `{"max_tokens":3,"mirostat":2,"mirostat_tau":2,"typical_p":0.8,"temperature":0.9}`},
	{epCompletions | complete, `{"max_tokens":0,"echo":true,"logprobs":3}`},
	{epCompletions | complete, `{"max_tokens":2,"echo":true,"n":2}`},
	{epCompletions, `{"prompt":["a",[1,2],""],"max_tokens":2,"echo":true,"logprobs":1}`},
	{epCompletions | complete, `{"max_tokens":3,"logit_bias":{"3":-100,"5":2.5},"dry_multiplier":0.8,"dry_sequence_breakers":["\n","a"],"xtc_probability":0.5}`},
	{epLlama | complete, `{"n_predict":2,"logit_bias":[[4,false],["hi",1.5]],"dry_multiplier":1,"dry_penalty_last_n":8}`},
	{epLlama | complete, `{"n_predict":-1,"n_probs":3,"ignore_eos":true,"stream":true,"stop":["xyz"]}`},
	{epLlama | complete, `{"n_predict":0}`},
	{epTokenize | complete, `{"with_pieces":true,"add_special":true}`},
	{epDetokenize | complete, `{}`},
	{epGenerate | complete, `{"format":"json","options":{"num_predict":-1,"temperature":1,"seed":2}}`},
	{epGenerate | complete, `{"raw":true,"system":"s","stream":false,"options":{"stop":["a","b"],"top_k":2}}`},
	{epOllamaChat | complete, `{"stream":false,"format":"json","options":{"num_predict":8,"repeat_penalty":1.5}}`},
	{epShow | complete, `{"name":"x"}`},
	// malformed
	{epChat, ``},
	{epChat, `{"messages":[`},
	{epChat, `[{"role":"user"}]`},
	{epChat, `{"messages":[{"role":"user","content":"x"}]} {}`},
	{epChat, `{"messages":[{"role":"user","content":"x"}],"max_tokens":1e400,"temperature":"hot"}`},
	{epChat, `{"messages":[{"role":"tool","content":[{"type":"image_url"}]}]}`},
	{epCompletions, `{"prompt":[1,99999]}`},
	{epCompletions, `{"prompt":[[1],[2]],"n":99}`},
	{epLlama, `{"prompt":"x","n_probs":-1,"grammar":"root ::= x"}`},
	{epDetokenize, `{"tokens":[-1,null,"a"]}`},
	{epTokenize, `null`},
	{epGenerate, `{"prompt":"x","format":{"type":"object"},"images":["aGk="]}`},
	{epOllamaChat, `{"messages":[{"role":"user","content":"x","images":["aGk="]}],"options":{"num_predict":"x"}}`},
	{epShow, `{"model":5}`},
}
