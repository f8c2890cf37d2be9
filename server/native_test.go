package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
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
	resp2, b = ts.post(t, "/api/generate", map[string]any{"model": "tiny"})
	if resp2.StatusCode != 400 || json.Unmarshal(b, &oe) != nil || !strings.Contains(oe.Error, "prompt") {
		t.Errorf("/api/generate without a prompt: %d %s", resp2.StatusCode, b)
	}
}
