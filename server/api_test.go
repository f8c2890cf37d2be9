package server

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/bitvk/bitvk/cpu"
	"github.com/bitvk/bitvk/tokenizer"
)

// wantError returns a check of an error response in OpenAI's shape.
func wantError(t *testing.T, what string, status int, typ, msg string) func(*http.Response, []byte) *clientError {
	return func(resp *http.Response, b []byte) *clientError {
		t.Helper()
		var e clientError
		if err := json.Unmarshal(b, &e); err != nil || e.Error == nil {
			t.Errorf("%s: not an OpenAI error (%v): %s", what, err, b)
			return &e
		}
		if resp.StatusCode != status || e.Error.Type != typ || !strings.Contains(e.Error.Message, msg) {
			t.Errorf("%s: %d %s %q, want %d %s containing %q", what, resp.StatusCode, e.Error.Type, e.Error.Message, status, typ, msg)
		}
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s: content type %q", what, ct)
		}
		return &e
	}
}

func TestBadRequests(t *testing.T) {
	ts := newTestServer(t, testOptions{ctx: 64, edit: func(c *Config) { c.MaxBody = 4096 }})
	long := strings.Repeat("word ", 100)
	chat, comp := "/v1/chat/completions", "/v1/completions"
	for _, c := range []struct {
		name, path, body string
		status           int
		param, msg       string
	}{
		{"empty body", chat, "", 400, "", "empty"},
		{"malformed", chat, `{"messages": [`, 400, "", "not valid JSON"},
		{"syntax", chat, `{"messages": [}`, 400, "", "not valid JSON"},
		{"two values", chat, `{"messages":[{"role":"user","content":"x"}]} {}`, 400, "", "more than one JSON value"},
		{"not an object", chat, `[1, 2]`, 400, "", "must be a JSON object, not an array"},
		{"null", chat, ` null `, 400, "", "must be a JSON object, not null"},
		{"role type", chat, `{"messages":[{"role":5}]}`, 400, "messages.role", "must be a string, not a number"},
		{"seed range", chat, `{"messages":[{"role":"user","content":"x"}],"seed":1e30}`, 400, "seed", "must be an integer, not the number 1e30"},
		{"temperature type", chat, `{"messages":[{"role":"user","content":"x"}],"temperature":"hot"}`, 400, "temperature", "must be a number, not a string"},
		{"max_tokens float", chat, `{"messages":[{"role":"user","content":"x"}],"max_tokens":1.5}`, 400, "max_tokens", "must be an integer"},
		{"stream type", chat, `{"messages":[{"role":"user","content":"x"}],"stream":"yes"}`, 400, "stream", "must be a boolean"},
		{"messages type", chat, `{"messages":"hi"}`, 400, "messages", "must be an array"},
		{"no messages", chat, `{"messages":[]}`, 400, "messages", "at least one"},
		{"unknown role", chat, `{"messages":[{"role":"tool","content":"x"}]}`, 400, "messages[0].role", `"tool"`},
		{"no role", chat, `{"messages":[{"content":"x"}]}`, 400, "messages[0].role", "missing"},
		{"content type", chat, `{"messages":[{"role":"user","content":5}]}`, 400, "messages[0].content", "string or an array of text parts"},
		{"image part", chat, `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]}`, 400, "messages[0].content[0].type", "only text parts"},
		{"no content", chat, `{"messages":[{"role":"user"}]}`, 400, "messages[0].content", "missing"},
		{"n 0", chat, `{"messages":[{"role":"user","content":"x"}],"n":0}`, 400, "n", "between 1 and 16"},
		{"n 17", chat, `{"messages":[{"role":"user","content":"x"}],"n":17}`, 400, "n", "between 1 and 16"},
		{"max_tokens 0", chat, `{"messages":[{"role":"user","content":"x"}],"max_tokens":0}`, 400, "max_tokens", "at least 1"},
		{"temperature range", chat, `{"messages":[{"role":"user","content":"x"}],"temperature":3}`, 400, "temperature", "between 0 and 2"},
		{"top_p range", chat, `{"messages":[{"role":"user","content":"x"}],"top_p":1.5}`, 400, "top_p", "between 0 and 1"},
		{"penalty range", chat, `{"messages":[{"role":"user","content":"x"}],"presence_penalty":-3}`, 400, "presence_penalty", "between -2 and 2"},
		{"typical_p range", chat, `{"messages":[{"role":"user","content":"x"}],"typical_p":1.5}`, 400, "typical_p", "between 0 and 1"},
		{"mirostat mode", comp, `{"prompt":"x","mirostat":3}`, 400, "mirostat", "0 (off), 1 (Mirostat) or 2"},
		{"mirostat_tau range", chat, `{"messages":[{"role":"user","content":"x"}],"mirostat":2,"mirostat_tau":-1}`, 400, "mirostat_tau", "between 0 and 100"},
		{"mirostat_eta type", comp, `{"prompt":"x","mirostat_eta":"fast"}`, 400, "mirostat_eta", "must be a number"},
		{"xtc_probability range", comp, `{"prompt":"x","xtc_probability":2}`, 400, "xtc_probability", "between 0 and 1"},
		{"dry_base range", comp, `{"prompt":"x","dry_multiplier":1,"dry_base":0.5}`, 400, "dry_base", "between 1 and 100"},
		{"dry_allowed_length", chat, `{"messages":[{"role":"user","content":"x"}],"dry_allowed_length":-1}`, 400, "dry_allowed_length", "between 0 and"},
		{"dry_penalty_last_n", comp, `{"prompt":"x","dry_penalty_last_n":-2}`, 400, "dry_penalty_last_n", "-1 (the context), 0 (off)"},
		{"dry_sequence_breakers type", comp, `{"prompt":"x","dry_sequence_breakers":"\n"}`, 400, "dry_sequence_breakers", "must be an array"},
		{"dry_sequence_breakers empty", comp, `{"prompt":"x","dry_sequence_breakers":[""]}`, 400, "dry_sequence_breakers", "a breaker is 1 to 40 bytes"},
		{"stop type", chat, `{"messages":[{"role":"user","content":"x"}],"stop":7}`, 400, "stop", "string or an array"},
		{"too many stops", chat, `{"messages":[{"role":"user","content":"x"}],"stop":["a","b","c","d","e"]}`, 400, "stop", "at most 4"},
		{"stream_options alone", chat, `{"messages":[{"role":"user","content":"x"}],"stream_options":{"include_usage":true}}`, 400, "stream_options", "stream"},
		{"tools", chat, `{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function"}]}`, 400, "tools", "not supported"},
		{"logprobs type", chat, `{"messages":[{"role":"user","content":"x"}],"logprobs":3}`, 400, "logprobs", "boolean"},
		{"top_logprobs alone", chat, `{"messages":[{"role":"user","content":"x"}],"top_logprobs":3}`, 400, "top_logprobs", "needs"},
		{"top_logprobs range", chat, `{"messages":[{"role":"user","content":"x"}],"logprobs":true,"top_logprobs":21}`, 400, "top_logprobs", "between 0 and 20"},
		{"completion logprobs range", comp, `{"prompt":"x","logprobs":6}`, 400, "logprobs", "between 0 and 5"},
		{"response_format", chat, `{"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema"}}`, 400, "response_format", "json_object"},
		{"chat prompt too long", chat, `{"messages":[{"role":"user","content":"` + long + `"}]}`, 400, "messages", "context holds 64 positions"},
		{"prompt too long", comp, `{"prompt":"` + long + `"}`, 400, "prompt", "a prompt may be at most 63 tokens"},
		{"no prompt", comp, `{"max_tokens":3}`, 400, "prompt", "missing"},
		{"prompt type", comp, `{"prompt":{"text":"x"}}`, 400, "prompt", "must be a string"},
		{"prompts past the slots and queue", comp, `{"prompt":["a","b","c","d","e","f","g"],"n":2}`, 400, "prompt", "7 prompts × 2 choices (n) is 14 requests"},
		{"prompt of another type", comp, `{"prompt":["a",5]}`, 400, "prompt[1]", "'prompt[1]' must be a string or an array of token ids"},
		{"token outside", comp, `{"prompt":[1, 99999]}`, 400, "prompt", "outside the vocabulary"},
		{"max_tokens 0 without echo", comp, `{"prompt":"x","max_tokens":0}`, 400, "max_tokens", "at least 1"},
		{"max_tokens overflow", chat, `{"messages":[{"role":"user","content":"x"}],"max_tokens":99999999999999999999}`, 400, "max_tokens", "'max_tokens' is 99999999999999999999, out of range for an integer"},
		{"temperature overflow", chat, `{"messages":[{"role":"user","content":"x"}],"temperature":1e400}`, 400, "temperature", "'temperature' is 1e400, out of range for a number"},
		{"max_completion_tokens 0", chat, `{"messages":[{"role":"user","content":"x"}],"max_completion_tokens":0}`, 400, "max_completion_tokens", "'max_completion_tokens' is 0"},
		{"logit_bias key", chat, `{"messages":[{"role":"user","content":"x"}],"logit_bias":{"five":100}}`, 400, "logit_bias", `the key "five"; its keys are token ids`},
		{"logit_bias range", comp, `{"prompt":"x","logit_bias":{"5":-101}}`, 400, "logit_bias", "'logit_bias[5]' is -101; a bias is a number from -100 to 100"},
		{"logit_bias token", comp, `{"prompt":"x","logit_bias":{"99999":1}}`, 400, "logit_bias", "outside the vocabulary"},
		{"logit_bias type", comp, `{"prompt":"x","logit_bias":5}`, 400, "logit_bias", "must be an object of token ids"},
		{"logit_bias value", comp, `{"prompt":"x","logit_bias":{"5":"lots"}}`, 400, "logit_bias", "'logit_bias[5]' is a string"},
		{"functions", chat, `{"messages":[{"role":"user","content":"x"}],"functions":[{"name":"f"}]}`, 400, "functions", "not supported"},
		{"function_call", chat, `{"messages":[{"role":"user","content":"x"}],"function_call":{"name":"f"}}`, 400, "function_call", "calls no functions"},
		{"tool_choice required", chat, `{"messages":[{"role":"user","content":"x"}],"tool_choice":"required"}`, 400, "tool_choice", "calls no tools"},
		{"n past the slots and queue", chat, `{"messages":[{"role":"user","content":"x"}],"n":13}`, 400, "n", "'n' may be at most 12"},
		{"prompt id not an integer", comp, `{"prompt":[1, 1.5]}`, 400, "prompt", "'prompt[1]' is 1.5, not a token id"},
		{"prompt id null", comp, `{"prompt":[null]}`, 400, "prompt", "'prompt[0]' is null, not a token id"},
		{"prompt id string", comp, `{"prompt":[1, "a"]}`, 400, "prompt", "'prompt[1]' is a string, not a token id"},
		{"prompt no ids", comp, `{"prompt":[]}`, 400, "prompt", "the prompt is empty"},
		{"prompt nested id", comp, `{"prompt":[[1, {}]]}`, 400, "prompt[0]", "'prompt[0][1]' is an object, not a token id"},
		{"prompt nested empty", comp, `{"prompt":[[]]}`, 400, "prompt[0]", "the prompt is empty"},
		{"a batch prompt too long", comp, `{"prompt":["a","` + long + `"]}`, 400, "prompt[1]", "a prompt may be at most 63 tokens"},
		{"body limit", chat, `{"messages":[{"role":"user","content":"` + strings.Repeat("x", 5000) + `"}]}`, 413, "", "limit of 4096 bytes"},
	} {
		resp, b := ts.post(t, c.path, c.body)
		e := wantError(t, c.name, c.status, "invalid_request_error", c.msg)(resp, b)
		if e.Error == nil {
			continue
		}
		if got := ""; e.Error.Param != nil {
			got = *e.Error.Param
			if got != c.param {
				t.Errorf("%s: param %q, want %q", c.name, got, c.param)
			}
		} else if c.param != "" {
			t.Errorf("%s: no param, want %q", c.name, c.param)
		}
	}
	// The prompt-too-long message says how long the prompt was.
	_, b := ts.post(t, comp, `{"prompt":"`+long+`"}`)
	n := len(ts.bos(ts.tok.Encode(long, tokenizer.EncodeOptions{NoBOS: true})))
	if !strings.Contains(string(b), fmt.Sprintf("the prompt is %d tokens long", n)) || !strings.Contains(string(b), "context_length_exceeded") {
		t.Errorf("too long: %s (the prompt is %d tokens)", b, n)
	}
	// Wrong method, unknown path.
	resp, b := ts.do(t, http.MethodGet, chat, nil, nil)
	wantError(t, "GET "+chat, 405, "invalid_request_error", "use POST")(resp, b)
	if resp.Header.Get("Allow") != "POST" {
		t.Errorf("405 without Allow: POST")
	}
	wantError(t, "unknown path", 404, "invalid_request_error", "unknown request URL")(ts.do(t, http.MethodPost, "/v1/embeddings", "{}", nil))
	// None of this reached the model.
	if n := ts.backend.calls.Load(); n != 0 {
		t.Errorf("bad requests made %d forward passes", n)
	}
	// And the server still serves.
	ts.complete(t, chat, chatBody("x", "max_tokens", 2))

	// What asks for nothing is taken; one prompt of ids in a batch is the
	// prompt of those ids.
	for _, body := range []map[string]any{
		chatBody("x", "max_tokens", 2, "logit_bias", map[string]any{}, "tool_choice", "auto", "functions", []any{}, "function_call", "none"),
		chatBody("x", "max_tokens", 2, "n", 12),
	} {
		if resp, b := ts.post(t, chat, body); resp.StatusCode != 200 {
			t.Errorf("%v: %d %s", body, resp.StatusCode, b)
		}
	}
	ids := []int{1, 2, 3}
	if a, b := ts.complete(t, comp, map[string]any{"prompt": ids, "max_tokens": 4}).text,
		ts.complete(t, comp, map[string]any{"prompt": [][]int{ids}, "max_tokens": 4}).text; a != b {
		t.Errorf("prompt [[1,2,3]]: %q; [1,2,3]: %q", b, a)
	}
}

func TestAPIKey(t *testing.T) {
	const key = "sk-test-1234"
	ts := newTestServer(t, testOptions{edit: func(c *Config) { c.APIKey = key }})
	body := `{"messages":[{"role":"user","content":"x"}],"max_tokens":2}`
	for _, h := range []map[string]string{nil, {"Authorization": "Bearer wrong"}, {"Authorization": key}, {"Authorization": "Basic " + key}, {"Authorization": "Bearer " + key + "x"}} {
		resp, b := ts.do(t, http.MethodPost, "/v1/chat/completions", body, h)
		wantError(t, fmt.Sprint(h), 401, "invalid_request_error", "API key")(resp, b)
		if !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("401 without WWW-Authenticate: Bearer")
		}
	}
	auth := map[string]string{"Authorization": "Bearer " + key}
	if resp, b := ts.do(t, http.MethodPost, "/v1/chat/completions", body, auth); resp.StatusCode != 200 {
		t.Errorf("with the key: %d %s", resp.StatusCode, b)
	}
	if resp, _ := ts.do(t, http.MethodGet, "/metrics", nil, nil); resp.StatusCode != 401 {
		t.Errorf("/metrics without the key: %d", resp.StatusCode)
	}
	if resp, _ := ts.do(t, http.MethodGet, "/metrics", nil, auth); resp.StatusCode != 200 {
		t.Errorf("/metrics with the key: %d", resp.StatusCode)
	}
	for _, p := range []string{"/health", "/", "/app.js"} { // the page asks for the key itself
		if resp, _ := ts.do(t, http.MethodGet, p, nil, nil); resp.StatusCode != 200 {
			t.Errorf("%s without the key: %d", p, resp.StatusCode)
		}
	}
}

// TestSamplingFields: llama.cpp's typical_p, Mirostat and XTC fields reach the
// sampler over the server's defaults, and an absent field leaves the
// default alone.
func TestSamplingFields(t *testing.T) {
	ts := newTestServer(t, testOptions{ctx: 64, edit: func(c *Config) {
		c.Sampler.Mirostat, c.Sampler.MirostatTau = 1, 4
	}})
	two, tau, eta, tp, xp, xt := 2, 3.5, 0.25, 0.7, 0.5, 0.2
	g, e := ts.common(&commonRequest{llamaSampling: llamaSampling{Mirostat: &two, MirostatTau: &tau, MirostatEta: &eta, TypicalP: &tp, XTCProbability: &xp, XTCThreshold: &xt}}, nil)
	if e != nil {
		t.Fatal(e)
	}
	if sc := g.sampling; sc.Mirostat != 2 || sc.MirostatTau != 3.5 || sc.MirostatEta != 0.25 || sc.TypicalP != 0.7 || sc.XTCProbability != 0.5 || sc.XTCThreshold != 0.2 {
		t.Errorf("sampler config %+v", sc)
	}
	g, e = ts.common(&commonRequest{}, nil)
	if e != nil {
		t.Fatal(e)
	}
	if sc := g.sampling; sc.Mirostat != 1 || sc.MirostatTau != 4 || sc.TypicalP != 0 {
		t.Errorf("defaults: sampler config %+v", sc)
	}
	mult, base, allowed, lastN, brk := 0.8, 2.0, 3, 100, []string{"l", "o"}
	g, e = ts.common(&commonRequest{llamaSampling: llamaSampling{DRYMultiplier: &mult, DRYBase: &base, DRYAllowedLength: &allowed, DRYPenaltyLastN: &lastN, DRYBreakers: &brk}}, nil)
	if e != nil {
		t.Fatal(e)
	}
	sc := g.sampling
	if want := ts.tok.Containing(brk); sc.DRYMultiplier != 0.8 || sc.DRYBase != 2 || sc.DRYAllowedLength != 3 || sc.DRYLastN != 100 || len(want) == 0 || !slices.Equal(sc.DRYBreakers, want) {
		t.Errorf("DRY: sampler config %+v, breakers want %v", sc, want)
	}
	zero := 0
	if g, e = ts.common(&commonRequest{llamaSampling: llamaSampling{DRYMultiplier: &mult, DRYPenaltyLastN: &zero}}, nil); e != nil || g.sampling.DRYMultiplier != 0 {
		t.Errorf("dry_penalty_last_n 0 leaves DRY on: %+v, %v", g.sampling, e)
	}
}

// TestLogitBias: OpenAI's object and llama-server's pairs (ids or texts,
// numbers or false) become the sampler's biases; a banned greedy token is
// not generated.
func TestLogitBias(t *testing.T) {
	ts := newTestServer(t, testOptions{ctx: 64})
	g, e := ts.common(&commonRequest{LogitBias: json.RawMessage(`{"3": 2.5, "7": -100}`)}, nil)
	if e != nil {
		t.Fatal(e)
	}
	if b := g.sampling.LogitBias; len(b) != 2 || b[3] != 2.5 || b[7] != -100 {
		t.Errorf("OpenAI logit_bias: %v", b)
	}
	hello := ts.tok.Encode("hello", tokenizer.EncodeOptions{NoBOS: true})
	if len(hello) == 0 {
		t.Fatal("no tokens for hello")
	}
	g, e = ts.common(&commonRequest{LogitBias: json.RawMessage(`[[4, false], ["hello", 1.5]]`)}, nil)
	if e != nil {
		t.Fatal(e)
	}
	b := g.sampling.LogitBias
	if !math.IsInf(float64(b[4]), -1) || len(b) != 1+len(hello) {
		t.Errorf("llama-server logit_bias: %v (hello is %v)", b, hello)
	}
	for _, id := range hello {
		if id != 4 && b[id] != 1.5 {
			t.Errorf("llama-server logit_bias: token %d of hello has %v", id, b[id])
		}
	}
	// Ban the token greedy decoding writes first: another comes instead
	// (llama-server's /completion reports the ids).
	first := func(bias string) int32 {
		resp, body := ts.post(t, "/completion", `{"prompt":"once upon","n_predict":1,"temperature":0,"n_probs":1`+bias+`}`)
		if resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, body)
		}
		var r struct {
			Probs []struct {
				ID int32 `json:"id"`
			} `json:"completion_probabilities"`
		}
		if err := json.Unmarshal(body, &r); err != nil || len(r.Probs) != 1 {
			t.Fatalf("reply %s: %v", body, err)
		}
		return r.Probs[0].ID
	}
	plain := first("")
	if banned := first(fmt.Sprintf(`,"logit_bias":[[%d,false]]`, plain)); banned == plain {
		t.Errorf("token %d banned, still generated", plain)
	}
	if raised := first(fmt.Sprintf(`,"logit_bias":{"%d":100}`, (plain+1)%int32(ts.tok.Len()))); raised != (plain+1)%int32(ts.tok.Len()) {
		t.Errorf("token %d raised by 100, %d generated", (plain+1)%int32(ts.tok.Len()), raised)
	}
}

// TestEcho: a completion with echo starts with the prompt; with logprobs,
// every prompt token after the first has the log-probability the model
// gives it after the tokens before it (checked against a separate CPU
// backend evaluating each prefix), the first has null, and max_tokens 0
// scores the prompt alone: what evaluation harnesses ask of a completions
// API. A cached prefix does not skip the scoring.
func TestEcho(t *testing.T) {
	ts := newTestServer(t, testOptions{ctx: 64})
	m := tiny(t)
	ref, err := cpu.New(m.Config, m.Weights, cpu.Options{Threads: 1, Context: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	prompt := []int32{ts.tok.BOS(), 7, 42, 9, 100, 3}
	want := []float64{0}
	for q := 1; q < len(prompt); q++ {
		logits := make([]float32, q*m.Config.Vocab)
		if err := ref.Forward(prompt[:q], 0, logits); err != nil {
			t.Fatal(err)
		}
		l := logits[(q-1)*m.Config.Vocab:]
		mx := math.Inf(-1)
		for _, x := range l {
			mx = max(mx, float64(x))
		}
		sum := 0.0
		for _, x := range l {
			sum += math.Exp(float64(x) - mx)
		}
		want = append(want, float64(l[prompt[q]])-mx-math.Log(sum))
	}
	ids, _ := json.Marshal(prompt)
	for round, body := range []string{
		`{"prompt":` + string(ids) + `,"max_tokens":0,"echo":true,"logprobs":2}`,
		`{"prompt":` + string(ids) + `,"max_tokens":0,"echo":true,"logprobs":0}`, // the prompt is cached now
		`{"prompt":` + string(ids) + `,"max_tokens":3,"echo":true,"logprobs":1,"temperature":0}`,
	} {
		resp, b := ts.post(t, "/v1/completions", body)
		var r struct {
			Choices []struct {
				Text     string `json:"text"`
				Logprobs struct {
					Tokens        []string             `json:"tokens"`
					TokenLogprobs []*float64           `json:"token_logprobs"`
					TopLogprobs   []map[string]float64 `json:"top_logprobs"`
					TextOffset    []int                `json:"text_offset"`
				} `json:"logprobs"`
			} `json:"choices"`
			Usage struct {
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
		}
		if resp.StatusCode != 200 || json.Unmarshal(b, &r) != nil || len(r.Choices) != 1 {
			t.Fatalf("round %d: %d %s", round, resp.StatusCode, b)
		}
		c := r.Choices[0]
		gen := []int{0, 0, 3}[round]
		lp := c.Logprobs
		if r.Usage.CompletionTokens != gen || len(lp.Tokens) != len(prompt)+gen || len(lp.TokenLogprobs) != len(lp.Tokens) || len(lp.TextOffset) != len(lp.Tokens) {
			t.Fatalf("round %d: %d generated, logprobs %+v", round, r.Usage.CompletionTokens, lp)
		}
		if lp.TokenLogprobs[0] != nil || lp.TopLogprobs[0] != nil {
			t.Errorf("round %d: the first prompt token has a log-probability: %v %v", round, lp.TokenLogprobs[0], lp.TopLogprobs[0])
		}
		for q := 1; q < len(prompt); q++ {
			if g := lp.TokenLogprobs[q]; g == nil || math.Abs(*g-want[q]) > 1e-6 {
				t.Errorf("round %d: token %d: log-probability %v, want %g", round, q, g, want[q])
			}
		}
		if text := ts.tok.Decode(prompt); !strings.HasPrefix(c.Text, text) || gen == 0 && c.Text != text {
			t.Errorf("round %d: text %q, want the prompt %q first", round, c.Text, text)
		}
	}
	// Streamed: the prompt's tokens come first, one chunk each, with the
	// same log-probabilities.
	resp, b := ts.post(t, "/v1/completions", `{"prompt":`+string(ids)+`,"max_tokens":2,"echo":true,"logprobs":0,"stream":true,"temperature":0}`)
	if resp.StatusCode != 200 {
		t.Fatalf("streamed: %d %s", resp.StatusCode, b)
	}
	var got []*float64
	for _, line := range strings.Split(string(b), "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var c struct {
			Choices []struct {
				Logprobs *struct {
					TokenLogprobs []*float64 `json:"token_logprobs"`
				} `json:"logprobs"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatalf("chunk %q: %v", data, err)
		}
		if len(c.Choices) == 1 && c.Choices[0].Logprobs != nil {
			got = append(got, c.Choices[0].Logprobs.TokenLogprobs...)
		}
	}
	if len(got) != len(prompt)+2 || got[0] != nil {
		t.Fatalf("streamed: %d token log-probabilities (first %v), want %d", len(got), got[0], len(prompt)+2)
	}
	for q := 1; q < len(prompt); q++ {
		if g := got[q]; g == nil || math.Abs(*g-want[q]) > 1e-6 {
			t.Errorf("streamed: token %d: log-probability %v, want %g", q, g, want[q])
		}
	}
}

// TestBatchPrompts: a completion with several prompts answers each with n
// choices, indexed prompt by prompt, as OpenAI does; greedy, each choice
// is what the prompt gets alone, and the usage counts each prompt once.
func TestBatchPrompts(t *testing.T) {
	ts := newTestServer(t, testOptions{ctx: 64})
	type reply struct {
		Choices []struct {
			Index int    `json:"index"`
			Text  string `json:"text"`
		} `json:"choices"`
		Usage struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	ask := func(body string) reply {
		t.Helper()
		resp, b := ts.post(t, "/v1/completions", body)
		var r reply
		if resp.StatusCode != 200 || json.Unmarshal(b, &r) != nil {
			t.Fatalf("%s: %d %s", body, resp.StatusCode, b)
		}
		return r
	}
	a := ask(`{"prompt":"once upon","max_tokens":4,"temperature":0}`)
	b := ask(`{"prompt":[7,8,9],"max_tokens":4,"temperature":0}`)
	both := ask(`{"prompt":[[7,8,9],"once upon"],"max_tokens":4,"temperature":0,"n":2}`)
	if len(both.Choices) != 4 {
		t.Fatalf("%d choices, want 4", len(both.Choices))
	}
	for i, c := range both.Choices {
		want := []string{b.Choices[0].Text, b.Choices[0].Text, a.Choices[0].Text, a.Choices[0].Text}[i]
		if c.Index != i || c.Text != want {
			t.Errorf("choice %d: index %d, text %q; want %q", i, c.Index, c.Text, want)
		}
	}
	if both.Usage.PromptTokens != a.Usage.PromptTokens+b.Usage.PromptTokens || both.Usage.CompletionTokens != 2*(a.Usage.CompletionTokens+b.Usage.CompletionTokens) {
		t.Errorf("usage %+v; alone %+v and %+v", both.Usage, a.Usage, b.Usage)
	}
}
