package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/bitvk/bitvk/nn"
)

// llama-server's POST /completion, streamed and not, answers as its
// clients parse it, with the text /v1/completions gives.
func TestLlamaCompletion(t *testing.T) {
	ts := newTestServer(t, testOptions{noEOG: true})
	want := ts.complete(t, "/v1/completions", map[string]any{"prompt": "once upon", "max_tokens": 7}).text

	resp, b := ts.post(t, "/completion", map[string]any{"prompt": "once upon", "n_predict": 7, "n_probs": 2})
	var c struct {
		Content         string `json:"content"`
		Stop            bool   `json:"stop"`
		IDSlot          *int   `json:"id_slot"`
		TokensPredicted int    `json:"tokens_predicted"`
		TokensEvaluated int    `json:"tokens_evaluated"`
		StopType        string `json:"stop_type"`
		Timings         struct {
			PredictedN int `json:"predicted_n"`
		} `json:"timings"`
		Probs []struct {
			Token       string `json:"token"`
			TopLogprobs []struct {
				Token string `json:"token"`
			} `json:"top_logprobs"`
		} `json:"completion_probabilities"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(b, &c) != nil {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	if c.Content != want || !c.Stop || c.IDSlot == nil || c.TokensPredicted != 7 || c.TokensEvaluated < 2 || c.StopType != "limit" ||
		c.Timings.PredictedN != 7 || len(c.Probs) != 7 || len(c.Probs[0].TopLogprobs) != 2 {
		t.Errorf("/completion: %s; want content %q", b, want)
	}

	// n_predict 0 (llama-server): the prompt is evaluated into a slot's
	// cache and nothing is generated; the same prompt next time finds it
	// there, all but its last token (evaluated again for its logits).
	long := "once upon a time there was a king and a queen who lived"
	var warm, hot struct {
		Content         string `json:"content"`
		TokensPredicted int    `json:"tokens_predicted"`
		TokensEvaluated int    `json:"tokens_evaluated"`
		TokensCached    int    `json:"tokens_cached"`
		StopType        string `json:"stop_type"`
	}
	for _, r := range []struct {
		n   int
		dst any
	}{{0, &warm}, {3, &hot}} {
		resp, b := ts.post(t, "/completion", map[string]any{"prompt": long, "n_predict": r.n})
		if resp.StatusCode != 200 || json.Unmarshal(b, r.dst) != nil {
			t.Fatalf("n_predict %d: %d %s", r.n, resp.StatusCode, b)
		}
	}
	if warm.Content != "" || warm.TokensPredicted != 0 || warm.StopType != "limit" || warm.TokensEvaluated < 3 {
		t.Errorf("n_predict 0: %+v; want no content, 0 tokens predicted, stop_type limit", warm)
	}
	if hot.TokensPredicted != 3 || hot.TokensCached != warm.TokensEvaluated-1 {
		t.Errorf("after n_predict 0: %+v; want 3 tokens predicted and %d cached", hot, warm.TokensEvaluated-1)
	}

	// Streamed: "data: {...}" events, the last with "stop": true; no [DONE].
	j, _ := json.Marshal(map[string]any{"prompt": "once upon", "n_predict": 7, "stream": true})
	sresp, err := ts.client.Post(ts.url+"/completion", "application/json", bytes.NewReader(j))
	if err != nil {
		t.Fatal(err)
	}
	defer sresp.Body.Close()
	var text string
	var last map[string]any
	sc := bufio.NewScanner(sresp.Body)
	for sc.Scan() {
		if sc.Text() == "" {
			continue
		}
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "[DONE]" {
			t.Fatalf("line %q", sc.Text())
		}
		var ev map[string]any
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatal(err)
		}
		if last != nil && last["stop"] == true {
			t.Errorf("an event after the stop: %s", data)
		}
		text += ev["content"].(string)
		last = ev
	}
	if text != want || last["stop"] != true || last["tokens_predicted"] != float64(7) {
		t.Errorf("streamed /completion: %q, last %v; want %q", text, last, want)
	}
}

// /tokenize, /detokenize and /props, as llama-server has them.
func TestTokenizeAndProps(t *testing.T) {
	ts := newTestServer(t, testOptions{})
	resp, b := ts.post(t, "/tokenize", map[string]any{"content": "hello world"})
	var tk struct {
		Tokens []int32 `json:"tokens"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(b, &tk) != nil || len(tk.Tokens) == 0 {
		t.Fatalf("/tokenize: %d %s", resp.StatusCode, b)
	}
	resp, b = ts.post(t, "/detokenize", map[string]any{"tokens": tk.Tokens})
	var dt struct {
		Content string `json:"content"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(b, &dt) != nil || dt.Content != "hello world" {
		t.Errorf("/detokenize of /tokenize: %d %s", resp.StatusCode, b)
	}
	resp, b = ts.post(t, "/tokenize", map[string]any{"content": "hello", "with_pieces": true})
	var wp struct {
		Tokens []struct {
			ID    int32  `json:"id"`
			Piece string `json:"piece"`
		} `json:"tokens"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(b, &wp) != nil || len(wp.Tokens) == 0 || wp.Tokens[0].Piece == "" {
		t.Errorf("/tokenize with pieces: %s", b)
	}
	// A piece that is not UTF-8 (part of a character) is its bytes, as
	// llama-server gives it; JSON's strings would turn it into U+FFFD.
	resp, b = ts.post(t, "/tokenize", map[string]any{"content": "hello 中", "with_pieces": true})
	var raw struct {
		Tokens []struct {
			ID    int32           `json:"id"`
			Piece json.RawMessage `json:"piece"`
		} `json:"tokens"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(b, &raw) != nil {
		t.Fatalf("/tokenize with pieces: %d %s", resp.StatusCode, b)
	}
	var all []byte
	for _, tp := range raw.Tokens {
		var text string
		var got []byte
		var ints []int
		switch {
		case json.Unmarshal(tp.Piece, &text) == nil:
			got = []byte(text)
		case json.Unmarshal(tp.Piece, &ints) == nil:
			for _, x := range ints {
				got = append(got, byte(x))
			}
		default:
			t.Errorf("token %d: piece %s", tp.ID, tp.Piece)
		}
		if string(got) != ts.tok.Piece(tp.ID) {
			t.Errorf("token %d: piece %s, want %q", tp.ID, tp.Piece, ts.tok.Piece(tp.ID))
		}
		all = append(all, got...)
	}
	if string(all) != "hello 中" {
		t.Errorf("the pieces make %q: %s", all, b)
	}
	resp, b = ts.post(t, "/detokenize", map[string]any{"tokens": []int{1 << 30}})
	wantError(t, "/detokenize out of range", 400, "invalid_request_error", "outside the vocabulary")(resp, b)

	resp, b = ts.do(t, http.MethodGet, "/props", nil, nil)
	var p struct {
		Settings struct {
			NCtx int `json:"n_ctx"`
		} `json:"default_generation_settings"`
		TotalSlots int `json:"total_slots"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(b, &p) != nil || p.TotalSlots != 4 || p.Settings.NCtx != 512 {
		t.Errorf("/props: %s", b)
	}
	// n_predict is the default limit, -1 for none, as llama-server says it.
	for _, c := range []struct{ max, want int }{{16, 16}, {0, -1}} {
		ts := newTestServer(t, testOptions{edit: func(cfg *Config) { cfg.MaxTokens = c.max }})
		_, b := ts.do(t, http.MethodGet, "/props", nil, nil)
		var p struct {
			Settings struct {
				NPredict *int `json:"n_predict"`
			} `json:"default_generation_settings"`
		}
		if json.Unmarshal(b, &p) != nil || p.Settings.NPredict == nil || *p.Settings.NPredict != c.want {
			t.Errorf("/props of MaxTokens %d: %s; want n_predict %d", c.max, b, c.want)
		}
	}
}

// Ollama's /api/generate and /api/chat (NDJSON streaming by default),
// /api/tags and /api/show, as Ollama's clients parse them.
func TestOllama(t *testing.T) {
	ts := newTestServer(t, testOptions{noEOG: true})
	want := ts.complete(t, "/v1/chat/completions", chatBody("hello", "max_tokens", 6)).text

	// /api/generate, streamed (the default): one JSON object per line.
	j, _ := json.Marshal(map[string]any{"model": "tiny", "prompt": "hello", "options": map[string]any{"num_predict": 6}})
	resp, err := ts.client.Post(ts.url+"/api/generate", "application/json", bytes.NewReader(j))
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/x-ndjson" {
		t.Errorf("content type %q", ct)
	}
	var text string
	var last map[string]any
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		var ev map[string]any
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		text += ev["response"].(string)
		last = ev
	}
	resp.Body.Close()
	if text != want || last["done"] != true || last["eval_count"] != float64(6) || last["done_reason"] != "length" || last["model"] != "tiny" {
		t.Errorf("/api/generate: %q, last %v; want %q", text, last, want)
	}

	// /api/chat, not streamed.
	_, b := ts.post(t, "/api/chat", map[string]any{"model": "tiny", "stream": false, "options": map[string]any{"num_predict": 6},
		"messages": []map[string]any{{"role": "user", "content": "hello"}}})
	var c struct {
		Message struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"message"`
		Done            bool `json:"done"`
		PromptEvalCount int  `json:"prompt_eval_count"`
	}
	if json.Unmarshal(b, &c) != nil || c.Message.Content != want || c.Message.Role != "assistant" || !c.Done || c.PromptEvalCount == 0 {
		t.Errorf("/api/chat: %s; want %q", b, want)
	}
	// format json constrains the reply.
	_, b = ts.post(t, "/api/chat", map[string]any{"model": "tiny", "stream": false, "format": "json", "options": map[string]any{"num_predict": 10},
		"messages": []map[string]any{{"role": "user", "content": "hello"}}})
	if json.Unmarshal(b, &c) != nil || !newJSONState().feed(c.Message.Content) {
		t.Errorf("/api/chat with format json: %s", b)
	}

	_, b = ts.do(t, http.MethodGet, "/api/tags", nil, nil)
	var tags struct {
		Models []struct {
			Name    string         `json:"name"`
			Details map[string]any `json:"details"`
		} `json:"models"`
	}
	if json.Unmarshal(b, &tags) != nil || len(tags.Models) != 1 || tags.Models[0].Name != "tiny" || tags.Models[0].Details["format"] != "gguf" {
		t.Errorf("/api/tags: %s", b)
	}
	resp2, b := ts.post(t, "/api/show", map[string]any{"model": "tiny"})
	var show struct {
		ModelInfo map[string]any `json:"model_info"`
	}
	if resp2.StatusCode != 200 || json.Unmarshal(b, &show) != nil || show.ModelInfo["general.architecture"] == nil {
		t.Errorf("/api/show: %d %s", resp2.StatusCode, b)
	}
	resp2, b = ts.post(t, "/api/show", map[string]any{"model": "other"})
	var oe struct {
		Error string `json:"error"`
	}
	if resp2.StatusCode != 404 || json.Unmarshal(b, &oe) != nil || !strings.Contains(oe.Error, "not found") {
		t.Errorf("/api/show of another model: %d %s", resp2.StatusCode, b)
	}
}

// The mistakes a llama-server or Ollama client can make get a 400 that
// names the field as that API does; what these APIs take and OpenAI's does
// not (many stop strings, Ollama's load request) is taken.
func TestNativeBadRequests(t *testing.T) {
	ts := newTestServer(t, testOptions{noEOG: true})
	stops := func(n int) []string {
		s := make([]string, n)
		for i := range s {
			s[i] = fmt.Sprintf("never%d", i)
		}
		return s
	}
	for _, c := range []struct {
		name, path string
		body       map[string]any
		status     int
		msg        string // in the error, or in the body of a 200
	}{
		{"grammar", "/completion", map[string]any{"prompt": "x", "grammar": `root ::= "a"`}, 400, "'grammar' is not supported"},
		{"json_schema", "/completion", map[string]any{"prompt": "x", "json_schema": map[string]any{"type": "object"}}, 400, "'json_schema' is not supported"},
		{"logit_bias true", "/completion", map[string]any{"prompt": "x", "logit_bias": [][]any{{5, true}}}, 400, "'logit_bias[0]' is true"},
		{"logit_bias pair", "/completion", map[string]any{"prompt": "x", "logit_bias": [][]any{{5}}}, 400, "'logit_bias[0]' is not a [token, bias] pair"},
		{"logit_bias ban", "/completion", map[string]any{"prompt": "x", "n_predict": 2, "logit_bias": [][]any{{5, false}, {"hello", -3.5}}}, 200, `"tokens_predicted":2`},
		{"token id null", "/completion", map[string]any{"prompt": []any{1, nil}}, 400, "'prompt[1]' is null"},
		{"more stops than OpenAI's", "/completion", map[string]any{"prompt": "x", "n_predict": 2, "stop": stops(6)}, 200, `"stop_type":"limit"`},
		{"too many stops", "/completion", map[string]any{"prompt": "x", "stop": stops(maxNativeStops + 1)}, 400, "at most 64"},
		{"unused grammar", "/completion", map[string]any{"prompt": "x", "n_predict": 1, "grammar": "", "json_schema": nil}, 200, `"tokens_predicted":1`},
		{"detokenize null", "/detokenize", map[string]any{"tokens": []any{nil}}, 400, "'tokens[0]' is null"},
		{"detokenize fraction", "/detokenize", map[string]any{"tokens": []any{1, 2.5}}, 400, "'tokens[1]' is 2.5"},
		{"option range", "/api/generate", map[string]any{"prompt": "x", "options": map[string]any{"temperature": 9}}, 400, "'options.temperature' is 9"},
		{"option top_k", "/api/chat", map[string]any{"messages": []map[string]any{{"role": "user", "content": "x"}}, "options": map[string]any{"top_k": -1}}, 400, "'options.top_k' is -1"},
		{"option stop", "/api/generate", map[string]any{"prompt": "x", "options": map[string]any{"stop": 5}}, 400, "'options.stop' must be"},
		{"option mirostat", "/api/generate", map[string]any{"prompt": "x", "options": map[string]any{"mirostat": 7}}, 400, "'options.mirostat' is 7"},
		{"option typical_p", "/api/chat", map[string]any{"messages": []map[string]any{{"role": "user", "content": "x"}}, "options": map[string]any{"typical_p": -0.5}}, 400, "'options.typical_p' is -0.5"},
		{"Ollama Mirostat", "/api/generate", map[string]any{"prompt": "x", "stream": false, "options": map[string]any{"num_predict": 3, "mirostat": 2, "mirostat_tau": 3, "mirostat_eta": 0.2, "typical_p": 0.9}}, 200, `"eval_count":3`},
		{"llama-server Mirostat", "/completion", map[string]any{"prompt": "x", "n_predict": 3, "mirostat": 1, "typical_p": 0.5, "temperature": 1}, 200, `"tokens_predicted":3`},
		{"llama-server XTC", "/completion", map[string]any{"prompt": "x", "n_predict": 3, "xtc_probability": 0.5, "xtc_threshold": 0.1, "temperature": 1}, 200, `"tokens_predicted":3`},
		{"images", "/api/generate", map[string]any{"prompt": "x", "images": []string{"aGk="}}, 400, "images"},
		{"message images", "/api/chat", map[string]any{"messages": []map[string]any{{"role": "user", "content": "x", "images": []string{"aGk="}}}}, 400, "images"},
		{"tools", "/api/chat", map[string]any{"messages": []map[string]any{{"role": "user", "content": "x"}}, "tools": []map[string]any{{"type": "function"}}}, 400, "'tools' is not supported"},
		{"suffix", "/api/generate", map[string]any{"prompt": "x", "suffix": "y"}, 400, "'suffix' is not supported"},
		{"show without a model", "/api/show", map[string]any{}, 400, "'model' is missing"},
		{"Ollama stops", "/api/generate", map[string]any{"prompt": "x", "stream": false, "options": map[string]any{"num_predict": 2, "stop": stops(6)}}, 200, `"done_reason":"length"`},
		{"load by generate", "/api/generate", map[string]any{"model": "tiny"}, 200, `"done_reason":"load"`},
		{"load by empty prompt", "/api/generate", map[string]any{"model": "tiny", "prompt": ""}, 200, `"response":""`},
		{"load by chat", "/api/chat", map[string]any{"model": "tiny", "messages": []any{}}, 200, `"message":{"content":"","role":"assistant"}`},
	} {
		resp, b := ts.post(t, c.path, c.body)
		var e struct {
			Error json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(b, &e); err != nil {
			t.Errorf("%s: %v: %s", c.name, err, b)
			continue
		}
		if resp.StatusCode != c.status || (c.status == 200) != (e.Error == nil) || !strings.Contains(string(b), c.msg) {
			t.Errorf("%s: %d %s; want %d with %q", c.name, resp.StatusCode, b, c.status, c.msg)
		}
	}
}

// Seed −1 is llama-server's and Ollama's "no seed": the server's default,
// a fresh seed when it draws one per request.
func TestSeedMinusOne(t *testing.T) {
	for _, random := range []bool{false, true} {
		ts := newTestServer(t, testOptions{noEOG: true, edit: func(c *Config) {
			c.Sampler, c.RandomSeed = nn.SamplerConfig{Temperature: 1, Seed: 5}, random
		}})
		texts := map[string]bool{}
		for _, path := range []string{"/v1/completions", "/completion", "/api/generate", "/v1/completions"} {
			body := map[string]any{"prompt": "once upon", "max_tokens": 12, "n_predict": 12, "seed": -1, "stream": false, "raw": true,
				"options": map[string]any{"num_predict": 12, "seed": -1}}
			resp, b := ts.post(t, path, body)
			var r struct {
				Choices []struct {
					Text string `json:"text"`
				} `json:"choices"`
				Content  string `json:"content"`
				Response string `json:"response"`
			}
			if resp.StatusCode != 200 || json.Unmarshal(b, &r) != nil {
				t.Fatalf("%s: %d %s", path, resp.StatusCode, b)
			}
			text := r.Content + r.Response
			if len(r.Choices) == 1 {
				text = r.Choices[0].Text
			}
			texts[text] = true
		}
		nomatter := ts.complete(t, "/v1/completions", map[string]any{"prompt": "once upon", "max_tokens": 12}).text
		switch {
		case !random && (len(texts) != 1 || !texts[nomatter]):
			t.Errorf("--seed 5: seed -1 gave %v; without a seed %q", texts, nomatter)
		case random && len(texts) == 1:
			t.Errorf("--seed -1: seed -1 gave the same text four times: %v", texts)
		}
	}
}
