package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math"
	"net/http"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// n > 1: each choice is the reply a request with the seed of its index
// gets alone (choice i: seed + i), streamed or not.
func TestChoices(t *testing.T) {
	ts := newTestServer(t, testOptions{noEOG: true})
	body := func(extra ...any) map[string]any {
		return chatBody("hello", append([]any{"max_tokens", 6, "temperature", 1.0, "seed", 40}, extra...)...)
	}
	var want []string
	for i := range 3 {
		b := chatBody("hello", "max_tokens", 6, "temperature", 1.0, "seed", 40+i)
		want = append(want, ts.complete(t, "/v1/chat/completions", b).text)
	}
	resp, b := ts.post(t, "/v1/chat/completions", body("n", 3))
	var c clientCompletion
	decodeStrict(t, b, &c)
	if resp.StatusCode != 200 || len(c.Choices) != 3 || c.Usage.CompletionTokens != 18 {
		t.Fatalf("n = 3: %d %s", resp.StatusCode, b)
	}
	for i, ch := range c.Choices {
		if ch.Index != i || ch.Message == nil || ch.Message.Content != want[i] {
			t.Errorf("choice %d: %+v, want index %d and %q", i, ch, i, want[i])
		}
	}
	// Streamed: the chunks of the choices interleave; each has its index.
	j, _ := json.Marshal(body("n", 3, "stream", true))
	sresp, err := ts.client.Post(ts.url+"/v1/chat/completions", "application/json", bytes.NewReader(j))
	if err != nil {
		t.Fatal(err)
	}
	defer sresp.Body.Close()
	got := make([]string, 3)
	finished := 0
	sc := bufio.NewScanner(sresp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var ck clientCompletion
		decodeStrict(t, []byte(data), &ck)
		for _, ch := range ck.Choices {
			if ch.Delta != nil && ch.Delta.Content != nil {
				got[ch.Index] += *ch.Delta.Content
			}
			if ch.FinishReason != nil {
				finished++
			}
		}
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("streamed choice %d: %q, want %q", i, got[i], want[i])
		}
	}
	if finished != 3 {
		t.Errorf("%d finish reasons for 3 choices", finished)
	}
}

// logprobs: each generated token's log-probability and its top
// alternatives, in the chat shape and the text completion shape; greedy
// tokens are their position's most likely.
func TestLogprobs(t *testing.T) {
	ts := newTestServer(t, testOptions{noEOG: true})
	resp, b := ts.post(t, "/v1/chat/completions", chatBody("hello", "max_tokens", 5, "logprobs", true, "top_logprobs", 3))
	var c struct {
		Choices []struct {
			Message  struct{ Content string }
			Logprobs struct {
				Content []struct {
					Token       string  `json:"token"`
					Logprob     float64 `json:"logprob"`
					Bytes       []int   `json:"bytes"`
					TopLogprobs []struct {
						Token   string  `json:"token"`
						Logprob float64 `json:"logprob"`
					} `json:"top_logprobs"`
				} `json:"content"`
			} `json:"logprobs"`
		} `json:"choices"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(b, &c) != nil || len(c.Choices) != 1 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	lps := c.Choices[0].Logprobs.Content
	if len(lps) != 5 {
		t.Fatalf("%d token logprobs for 5 tokens: %s", len(lps), b)
	}
	var text []byte
	for i, lp := range lps {
		if len(lp.TopLogprobs) != 3 || lp.Logprob > 0 || len(lp.Bytes) == 0 {
			t.Errorf("token %d: %+v", i, lp)
			continue
		}
		for _, x := range lp.Bytes {
			text = append(text, byte(x))
		}
		top := lp.TopLogprobs
		if top[0].Token != lp.Token || top[0].Logprob != lp.Logprob || top[1].Logprob > top[0].Logprob || top[2].Logprob > top[1].Logprob {
			t.Errorf("token %d: greedy %q (%v), top %+v", i, lp.Token, lp.Logprob, top)
		}
		if p := math.Exp(top[0].Logprob) + math.Exp(top[1].Logprob) + math.Exp(top[2].Logprob); p > 1+1e-9 {
			t.Errorf("token %d: the top 3 sum to probability %v", i, p)
		}
	}
	// (A token may hold part of a character; the text then shows U+FFFD.)
	if utf8.Valid(text) && string(text) != c.Choices[0].Message.Content {
		t.Errorf("the tokens' bytes %q are not the text %q", text, c.Choices[0].Message.Content)
	}

	// Text completions: logprobs is the number of alternatives.
	resp, b = ts.post(t, "/v1/completions", map[string]any{"prompt": "hello", "max_tokens": 4, "logprobs": 2})
	var tc struct {
		Choices []struct {
			Text     string
			Logprobs struct {
				Tokens        []string             `json:"tokens"`
				TokenLogprobs []float64            `json:"token_logprobs"`
				TopLogprobs   []map[string]float64 `json:"top_logprobs"`
				TextOffset    []int                `json:"text_offset"`
			} `json:"logprobs"`
		} `json:"choices"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(b, &tc) != nil || len(tc.Choices) != 1 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	l := tc.Choices[0].Logprobs
	if len(l.Tokens) != 4 || len(l.TokenLogprobs) != 4 || len(l.TopLogprobs) != 4 || len(l.TextOffset) != 4 || l.TextOffset[0] != 0 {
		t.Errorf("text completion logprobs: %s", b)
	}
	for i := range l.TopLogprobs {
		if len(l.TopLogprobs[i]) == 0 || len(l.TopLogprobs[i]) > 2 {
			t.Errorf("token %d: top %v", i, l.TopLogprobs[i])
		}
	}
	// Streamed, each token's text_offset is its place in the whole text.
	sb, _ := json.Marshal(map[string]any{"prompt": "hello", "max_tokens": 4, "logprobs": 2, "stream": true})
	sresp, err := ts.client.Post(ts.url+"/v1/completions", "application/json", bytes.NewReader(sb))
	if err != nil {
		t.Fatal(err)
	}
	var offsets []int
	sc := bufio.NewScanner(sresp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var ev struct {
			Choices []struct {
				Logprobs *struct {
					TextOffset []int `json:"text_offset"`
				} `json:"logprobs"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil || len(ev.Choices) != 1 {
			t.Fatalf("event %s: %v", data, err)
		}
		if lp := ev.Choices[0].Logprobs; lp != nil {
			offsets = append(offsets, lp.TextOffset...)
		}
	}
	sresp.Body.Close()
	if !slices.Equal(offsets, l.TextOffset) {
		t.Errorf("streamed text_offset %v, whole %v", offsets, l.TextOffset)
	}

	// Streamed: every chunk of content carries its token's logprobs.
	r := ts.stream(t, "/v1/chat/completions", chatBody("hello", "max_tokens", 3, "logprobs", true))
	if r.usage != nil || r.finish != "length" {
		t.Errorf("streamed with logprobs: %+v", r)
	}
}

// response_format json_object: the reply is always a prefix of a JSON
// object, and a whole one when it stops by itself.
func TestJSONMode(t *testing.T) {
	ts := newTestServer(t, testOptions{})
	for seed := range 4 {
		r := ts.complete(t, "/v1/chat/completions", chatBody("give me json", "max_tokens", 40, "temperature", 1.0, "seed", seed,
			"response_format", map[string]any{"type": "json_object"}))
		s := newJSONState()
		if !s.feed(r.text) || !strings.HasPrefix(strings.TrimLeft(r.text, " \n\t\r"), "{") {
			t.Errorf("seed %d: %q is not the start of a JSON object", seed, r.text)
		}
		if r.finish == "stop" && !json.Valid([]byte(r.text)) {
			t.Errorf("seed %d: stopped with %q, not valid JSON", seed, r.text)
		}
	}
	resp, _ := ts.post(t, "/v1/chat/completions", chatBody("x", "response_format", map[string]any{"type": "text"}))
	if resp.StatusCode != http.StatusOK {
		t.Errorf("response_format text: %d", resp.StatusCode)
	}
}

func TestJSONState(t *testing.T) {
	valid := []string{
		`{}`, ` { } `, `{"a":1}`, `{"a": [1, -2.5e+3, 0, true, false, null, "x\n\u00e9"], "b": {"c": {}}}`,
		`{"a":[]}`, `{"é":"ü"}`, `{"a":0.5E-1}`,
	}
	for _, s := range valid {
		st := newJSONState()
		if !st.feed(s) {
			t.Errorf("%q refused", s)
		} else if !st.complete() && strings.TrimSpace(s) == s {
			t.Errorf("%q not complete", s)
		}
	}
	prefixes := []string{`{`, `{"a`, `{"a":`, `{"a": [1,`, `{"a": tr`, `{"a": -`, `{"a": "\u00`}
	for _, s := range prefixes {
		st := newJSONState()
		if !st.feed(s) || st.complete() {
			t.Errorf("prefix %q: refused or complete", s)
		}
	}
	invalid := []string{
		`[]`, `"x"`, `1`, `{a}`, `{"a" 1}`, `{"a":1,}`, `{"a":01}`, `{"a":1.}`, `{"a":-}`, `{"a":tru}x`, `{"a":"\x"}`,
		"{\"a\":\"\n\"}", `{"a":[1}`, `{"a":1]`, `{} {}`, `{"a":1}x`, `{"a":.5}`, `{"a":1e}`, "{" + strings.Repeat(" ", 17) + "}",
		`{"a":` + strings.Repeat("[", 40),
	}
	for _, s := range invalid {
		if newJSONState().feed(s) {
			t.Errorf("%q accepted", s)
		}
	}
}
