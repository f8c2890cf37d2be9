package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/bitvk/bitvk/cpu"
	"github.com/bitvk/bitvk/nn"
	"github.com/bitvk/bitvk/nn/nntest"
	"github.com/bitvk/bitvk/tokenizer"
)

// The tests run real servers on 127.0.0.1 over the tiny synthetic model on
// the CPU, and talk to them the way OpenAI's clients do.

var (
	tinyOnce  sync.Once
	tinyModel *nntest.Model
)

func tiny(t testing.TB) *nntest.Model {
	tinyOnce.Do(func() { tinyModel = nntest.NewModel(t, "tiny", nntest.StoreI2S, 1) })
	if tinyModel == nil {
		t.Fatal("no tiny model")
	}
	return tinyModel
}

// testBackend wraps the CPU backend to make replies long, slow or
// controllable: the end-of-generation tokens can be forbidden (so that a
// reply runs to its length limit), each Forward can be delayed, and hook
// sees (and may hold) each Forward before it runs.
type testBackend struct {
	nn.Backend
	vocab  int
	noEOG  []int32
	delay  time.Duration
	hook   func(call int64)
	calls  atomic.Int64 // forward passes
	copies atomic.Int64 // CopySeq calls
	seen   func(batch []nn.SeqToken)
}

func (b *testBackend) Forward(tokens []int32, pos int, logits []float32) error {
	b.before()
	if err := b.Backend.Forward(tokens, pos, logits); err != nil {
		return err
	}
	b.after(logits)
	return nil
}

// ForwardMulti, Slots and CopySeq make it an nn.MultiBackend when the
// backend it wraps is one.
func (b *testBackend) ForwardMulti(batch []nn.SeqToken, logits []float32) error {
	if b.seen != nil {
		b.seen(batch)
	}
	b.before()
	if err := nn.AsMulti(b.Backend).ForwardMulti(batch, logits); err != nil {
		return err
	}
	b.after(logits)
	return nil
}

func (b *testBackend) Slots() int { return nn.AsMulti(b.Backend).Slots() }

func (b *testBackend) CopySeq(dst, src, n int) error {
	b.copies.Add(1)
	return nn.AsMulti(b.Backend).CopySeq(dst, src, n)
}

func (b *testBackend) before() {
	n := b.calls.Add(1)
	if b.hook != nil {
		b.hook(n)
	}
	if b.delay > 0 {
		time.Sleep(b.delay)
	}
}

func (b *testBackend) after(logits []float32) {
	for row := 0; row+b.vocab <= len(logits); row += b.vocab {
		for _, id := range b.noEOG {
			logits[row+int(id)] = float32(math.Inf(-1))
		}
	}
}

// testOptions change a test server.
type testOptions struct {
	ctx     int           // context positions; 0: the model's 512
	noEOG   bool          // replies never end their turn
	delay   time.Duration // per Forward
	hook    func(int64)
	edit    func(*Config)
	listen  bool // only make the Server, without an httptest server
	threads int
	slots   int // slots of the K/V cache; 0: 4
}

type testServer struct {
	*Server
	url     string
	backend *testBackend
	engine  *nn.Engine
	tok     *tokenizer.Tokenizer
	client  *http.Client
}

// newTestServer starts a server on 127.0.0.1 over the tiny model, greedy
// by default; it is closed when the test ends.
func newTestServer(t testing.TB, o testOptions) *testServer {
	t.Helper()
	m := tiny(t)
	threads := o.threads
	if threads == 0 {
		threads = 1
	}
	slots := o.slots
	if slots == 0 {
		slots = 4
	}
	cb, err := cpu.New(m.Config, m.Weights, cpu.Options{Threads: threads, Context: o.ctx, Slots: slots})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := nn.NewTokenizer(m.File)
	if err != nil {
		t.Fatal(err)
	}
	tb := &testBackend{Backend: cb, vocab: m.Config.Vocab, delay: o.delay, hook: o.hook}
	if o.noEOG {
		tb.noEOG = tok.EOG()
	}
	e, err := nn.NewEngine(m.Config, tb)
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := nn.ChatTemplate(m.File, "")
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{
		Engine: e, Tokenizer: tok, Template: tmpl, ModelName: "tiny", Backend: cb.Name(),
		Sampler: nn.SamplerConfig{}, Queue: 8, MaxTokens: 16,
	}
	if o.edit != nil {
		o.edit(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := &testServer{Server: s, backend: tb, engine: e, tok: tok, client: &http.Client{Transport: &http.Transport{}}}
	if !o.listen {
		hs := httptest.NewServer(s.Handler())
		ts.url = hs.URL
		t.Cleanup(hs.Close)
	}
	t.Cleanup(func() {
		ts.client.CloseIdleConnections()
		s.Close()
		cb.Close()
	})
	return ts
}

// post sends a JSON body (a string is sent as it is) and returns the
// response with its body read.
func (ts *testServer) post(t *testing.T, path string, body any) (*http.Response, []byte) {
	t.Helper()
	return ts.do(t, http.MethodPost, path, body, nil)
}

func (ts *testServer) do(t *testing.T, method, path string, body any, hdr map[string]string) (*http.Response, []byte) {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, ts.url+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := ts.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// The response shapes as an OpenAI client reads them.
type (
	clientUsage struct {
		PromptTokens        int `json:"prompt_tokens"`
		CompletionTokens    int `json:"completion_tokens"`
		TotalTokens         int `json:"total_tokens"`
		PromptTokensDetails struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	}
	clientChoice struct {
		Index   int `json:"index"`
		Message *struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"message"`
		Delta *struct {
			Role    *string `json:"role"`
			Content *string `json:"content"`
		} `json:"delta"`
		Text         *string `json:"text"`
		FinishReason *string `json:"finish_reason"`
	}
	clientCompletion struct {
		ID      string         `json:"id"`
		Object  string         `json:"object"`
		Created int64          `json:"created"`
		Model   string         `json:"model"`
		Choices []clientChoice `json:"choices"`
		Usage   *clientUsage   `json:"usage"`
	}
	clientError struct {
		Error *struct {
			Message string  `json:"message"`
			Type    string  `json:"type"`
			Param   *string `json:"param"`
			Code    *string `json:"code"`
		} `json:"error"`
	}
)

// decodeStrict unmarshals b into v, failing on unknown shapes.
func decodeStrict(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("response %q: %v", b, err)
	}
}

// clientReply is a completion as a client assembles it, streamed or not.
type clientReply struct {
	id, object, model string
	text              string
	finish            string
	usage             *clientUsage
	chunks            int // streamed: content chunks
}

// wantID checks an id's prefix and that the rest is a UUID.
func wantID(t *testing.T, id, prefix string) {
	t.Helper()
	rest, ok := strings.CutPrefix(id, prefix)
	if !ok {
		t.Errorf("id %q does not start with %q", id, prefix)
		return
	}
	if _, err := uuid.Parse(rest); err != nil {
		t.Errorf("id %q: %v", id, err)
	}
}

// complete makes one non-streamed request and checks the response's shape.
func (ts *testServer) complete(t *testing.T, path string, body map[string]any) clientReply {
	t.Helper()
	resp, b := ts.post(t, path, body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: status %d: %s", path, resp.StatusCode, b)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("content type %q", ct)
	}
	var c clientCompletion
	decodeStrict(t, b, &c)
	chat := path == "/v1/chat/completions"
	r := clientReply{id: c.ID, object: c.Object, model: c.Model, usage: c.Usage}
	if chat {
		wantID(t, c.ID, "chatcmpl-")
		if c.Object != "chat.completion" {
			t.Errorf("object %q", c.Object)
		}
	} else {
		wantID(t, c.ID, "cmpl-")
		if c.Object != "text_completion" {
			t.Errorf("object %q", c.Object)
		}
	}
	if len(c.Choices) != 1 || c.Choices[0].Index != 0 || c.Choices[0].FinishReason == nil {
		t.Fatalf("choices: %s", b)
	}
	ch := c.Choices[0]
	r.finish = *ch.FinishReason
	switch {
	case chat && (ch.Message == nil || ch.Message.Role != "assistant"):
		t.Fatalf("chat choice without an assistant message: %s", b)
	case chat:
		r.text = ch.Message.Content
	case ch.Text == nil:
		t.Fatalf("completion choice without text: %s", b)
	default:
		r.text = *ch.Text
	}
	if c.Created < time.Now().Add(-time.Hour).Unix() || c.Model != "tiny" {
		t.Errorf("created %d, model %q", c.Created, c.Model)
	}
	checkUsage(t, c.Usage)
	return r
}

func checkUsage(t *testing.T, u *clientUsage) {
	t.Helper()
	if u == nil {
		t.Fatal("no usage")
	}
	if u.PromptTokens < 1 || u.TotalTokens != u.PromptTokens+u.CompletionTokens || u.PromptTokensDetails.CachedTokens >= u.PromptTokens {
		t.Errorf("usage %+v", *u)
	}
}

// stream makes one streamed request and reads it the way OpenAI's clients
// do: "data: " lines, a JSON chunk each, until "data: [DONE]".
func (ts *testServer) stream(t *testing.T, path string, body map[string]any) clientReply {
	t.Helper()
	body["stream"] = true
	j, _ := json.Marshal(body)
	resp, err := ts.client.Post(ts.url+path, "application/json", bytes.NewReader(j))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("%s: status %d: %s", path, resp.StatusCode, b)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("content type %q", ct)
	}
	return readStream(t, resp.Body, path == "/v1/chat/completions")
}

func readStream(t *testing.T, body io.Reader, chat bool) clientReply {
	t.Helper()
	var r clientReply
	sc := bufio.NewScanner(body)
	done, n, finished := false, 0, false
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		if done {
			t.Fatalf("data after [DONE]: %q", line)
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("not a data line: %q", line)
		}
		if data == "[DONE]" {
			done = true
			continue
		}
		var c clientCompletion
		decodeStrict(t, []byte(data), &c)
		if c.Usage != nil && len(c.Choices) == 0 { // stream_options.include_usage
			r.usage = c.Usage
			continue
		}
		if len(c.Choices) != 1 {
			t.Fatalf("chunk %d: %s", n, data)
		}
		if r.id == "" {
			r.id, r.object, r.model = c.ID, c.Object, c.Model
		} else if c.ID != r.id {
			t.Errorf("chunk %d: id %q, the first was %q", n, c.ID, r.id)
		}
		ch := c.Choices[0]
		if finished {
			t.Errorf("a choice chunk after the finish: %s", data)
		}
		if ch.FinishReason != nil {
			r.finish, finished = *ch.FinishReason, true
		}
		if chat {
			if c.Object != "chat.completion.chunk" || ch.Delta == nil {
				t.Fatalf("chat chunk %d: %s", n, data)
			}
			if n == 0 {
				if ch.Delta.Role == nil || *ch.Delta.Role != "assistant" {
					t.Errorf("the first chunk has no assistant role: %s", data)
				}
			} else if ch.Delta.Role != nil {
				t.Errorf("chunk %d repeats the role: %s", n, data)
			}
			if ch.Delta.Content != nil && *ch.Delta.Content != "" {
				r.text += *ch.Delta.Content
				r.chunks++
			}
			if finished && ch.Delta.Content != nil {
				t.Errorf("the finish chunk has content: %s", data)
			}
		} else {
			if c.Object != "text_completion" || ch.Text == nil {
				t.Fatalf("completion chunk %d: %s", n, data)
			}
			if *ch.Text != "" {
				r.text += *ch.Text
				r.chunks++
			}
		}
		n++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if !done || !finished {
		t.Fatalf("the stream ended without a finish reason (%v) or [DONE] (%v)", finished, done)
	}
	if chat {
		wantID(t, r.id, "chatcmpl-")
	} else {
		wantID(t, r.id, "cmpl-")
	}
	return r
}

func chatBody(text string, extra ...any) map[string]any {
	b := map[string]any{"model": "tiny", "messages": []map[string]any{{"role": "user", "content": text}}}
	for i := 0; i+1 < len(extra); i += 2 {
		b[extra[i].(string)] = extra[i+1]
	}
	return b
}

func TestChatCompletion(t *testing.T) {
	ts := newTestServer(t, testOptions{noEOG: true})
	r := ts.complete(t, "/v1/chat/completions", chatBody("hello", "max_tokens", 7))
	if r.finish != "length" || r.usage.CompletionTokens != 7 {
		t.Errorf("finish %q after %d tokens, want length after 7", r.finish, r.usage.CompletionTokens)
	}
	// The prompt is the chat template's rendering, with BOS.
	want := ts.bos(ts.tok.Encode("User: hello<|eot_id|>Assistant: ", tokenizer.EncodeOptions{NoBOS: true, ParseSpecial: true}))
	if r.usage.PromptTokens != len(want) {
		t.Errorf("prompt_tokens %d, want %d (the rendered template)", r.usage.PromptTokens, len(want))
	}
	// Streamed, the same request gives the same text, in pieces.
	s := ts.stream(t, "/v1/chat/completions", chatBody("hello", "max_tokens", 7))
	if s.text != r.text || s.finish != r.finish || s.chunks < 2 {
		t.Errorf("streamed %q (%s, %d chunks), whole %q (%s)", s.text, s.finish, s.chunks, r.text, r.finish)
	}
	// include_usage adds the usage chunk.
	s = ts.stream(t, "/v1/chat/completions", chatBody("hello", "max_tokens", 7, "stream_options", map[string]any{"include_usage": true}))
	if s.usage == nil || s.usage.CompletionTokens != 7 || s.usage.PromptTokens != r.usage.PromptTokens {
		t.Errorf("streamed usage %+v", s.usage)
	}
	// Content as an array of text parts, and a system message.
	p := ts.complete(t, "/v1/chat/completions", map[string]any{"messages": []map[string]any{
		{"role": "developer", "content": "Be brief."},
		{"role": "user", "content": []map[string]any{{"type": "text", "text": "hel"}, {"type": "text", "text": "lo"}}},
	}, "max_tokens": 2})
	want = ts.bos(ts.tok.Encode("System: Be brief.<|eot_id|>User: hel\nlo<|eot_id|>Assistant: ", tokenizer.EncodeOptions{NoBOS: true, ParseSpecial: true}))
	if p.usage.PromptTokens != len(want) {
		t.Errorf("prompt_tokens %d, want %d", p.usage.PromptTokens, len(want))
	}
}

func TestChatEndOfTurn(t *testing.T) {
	// Without the test's block on end-of-turn tokens, sampled replies of the
	// random model end their turn early: finish_reason "stop".
	ts := newTestServer(t, testOptions{edit: func(c *Config) { c.MaxTokens = 400 }})
	stops := 0
	for seed := range 20 {
		r := ts.complete(t, "/v1/chat/completions", chatBody("hello", "temperature", 1.0, "seed", seed))
		switch r.finish {
		case "stop":
			stops++
			if r.usage.CompletionTokens >= 400 {
				t.Errorf("stopped after %d tokens", r.usage.CompletionTokens)
			}
		case "length":
		default:
			t.Errorf("finish %q", r.finish)
		}
	}
	if stops == 0 {
		t.Error("no reply of 20 ended its turn")
	}
}

func TestCompletions(t *testing.T) {
	ts := newTestServer(t, testOptions{noEOG: true})
	body := func(prompt any) map[string]any {
		return map[string]any{"prompt": prompt, "max_tokens": 6}
	}
	r := ts.complete(t, "/v1/completions", body("The capital of France is"))
	ids := ts.bos(ts.tok.Encode("The capital of France is", tokenizer.EncodeOptions{NoBOS: true}))
	if r.finish != "length" || r.usage.CompletionTokens != 6 || r.usage.PromptTokens != len(ids) {
		t.Errorf("finish %q, usage %+v; want length, 6 tokens, prompt %d", r.finish, *r.usage, len(ids))
	}
	for _, p := range []any{[]string{"The capital of France is"}, ids} {
		if o := ts.complete(t, "/v1/completions", body(p)); o.text != r.text {
			t.Errorf("prompt %v: %q, want %q", p, o.text, r.text)
		}
	}
	s := ts.stream(t, "/v1/completions", body("The capital of France is"))
	if s.text != r.text || s.finish != "length" {
		t.Errorf("streamed %q (%s), whole %q", s.text, s.finish, r.text)
	}
}

func TestSampling(t *testing.T) {
	ts := newTestServer(t, testOptions{noEOG: true, edit: func(c *Config) { c.RandomSeed = true }})
	text := func(extra ...any) string {
		return ts.complete(t, "/v1/chat/completions", chatBody("hello", append([]any{"max_tokens", 24}, extra...)...)).text
	}
	greedy := text("temperature", 0)
	if again := text("temperature", 0); again != greedy {
		t.Errorf("greedy twice: %q, %q", greedy, again)
	}
	a, b := text("temperature", 1, "seed", 7), text("temperature", 1, "seed", 7)
	if a != b {
		t.Errorf("seed 7 twice: %q, %q", a, b)
	}
	if c := text("temperature", 1, "seed", 8); c == a {
		t.Errorf("seeds 7 and 8 give the same text %q", a)
	}
	// The greedy reply of the random model repeats itself; penalties, which
	// the sampler applies before the argmax, change it.
	for _, p := range []string{"presence_penalty", "frequency_penalty"} {
		if x := text("temperature", 0, p, 2); x == greedy {
			t.Errorf("%s 2 left the greedy reply %q as it was", p, greedy)
		}
	}
	for _, p := range []float64{0, 1e-300} { // 1e-300 is 0 as a float32
		if x := text("temperature", 1, "seed", 7, "top_p", p); x != greedy {
			t.Errorf("top_p %v: %q, want the greedy %q", p, x, greedy)
		}
	}
}

func TestStopStrings(t *testing.T) {
	ts := newTestServer(t, testOptions{noEOG: true})
	const n = 40
	full := ts.complete(t, "/v1/completions", map[string]any{"prompt": "the", "max_tokens": n}).text
	runes := []rune(full)
	if len(runes) < 12 {
		t.Fatalf("the reply %q is too short to cut", full)
	}
	// A stop string from the middle of the reply: the reply ends before its
	// first occurrence, streamed or not, and the stop string is not sent.
	stop := string(runes[len(runes)/2 : len(runes)/2+3])
	want := full[:strings.Index(full, stop)]
	for _, stream := range []bool{false, true} {
		body := map[string]any{"prompt": "the", "max_tokens": n, "stop": []string{"never in this text \x00", stop}}
		var r clientReply
		if stream {
			r = ts.stream(t, "/v1/completions", body)
		} else {
			r = ts.complete(t, "/v1/completions", body)
		}
		if r.text != want || r.finish != "stop" {
			t.Errorf("stream %v, stop %q: %q (%s), want %q (stop)", stream, stop, r.text, r.finish, want)
		}
	}
	// llama-server's /completion says which stop string it met.
	_, b := ts.post(t, "/completion", map[string]any{"prompt": "the", "n_predict": n, "stop": []string{"never in this text \x00", stop}})
	var lc struct {
		Content      string `json:"content"`
		StopType     string `json:"stop_type"`
		StoppingWord string `json:"stopping_word"`
	}
	if json.Unmarshal(b, &lc) != nil || lc.Content != want || lc.StopType != "word" || lc.StoppingWord != stop {
		t.Errorf("/completion with stop %q: %s; want content %q", stop, b, want)
	}
	// A stop string that never comes: nothing is held back at the end.
	r := ts.stream(t, "/v1/completions", map[string]any{"prompt": "the", "max_tokens": n, "stop": full + "!"})
	if r.text != full || r.finish != "length" {
		t.Errorf("stop never met: %q (%s), want %q", r.text, r.finish, full)
	}
}

func TestStopper(t *testing.T) {
	for _, c := range []struct {
		stops  []string
		pieces []string
		out    string // what is released, joined
		hit    bool
	}{
		{nil, []string{"ab", "c"}, "abc", false},
		{[]string{"END"}, []string{"abc", "E", "N", "D", "x"}, "abc", true},
		{[]string{"END"}, []string{"abE", "Nx"}, "abENx", false},
		{[]string{"END"}, []string{"abEN", "END"}, "abEN", true},
		{[]string{"ab", "b"}, []string{"xab"}, "x", true},
		{[]string{"bc", "abcd"}, []string{"ab", "c"}, "a", true},
		{[]string{"é!"}, []string{"caf", "é", "?"}, "café?", false},
		{[]string{"\n\n"}, []string{"line\n", "\n", "more"}, "line", true},
	} {
		s := newStopper(c.stops)
		var out strings.Builder
		hit := false
		for _, p := range c.pieces {
			o, h := s.feed(p)
			out.WriteString(o)
			if h {
				hit = true
				break
			}
		}
		if !hit {
			out.WriteString(s.flush())
		}
		if out.String() != c.out || hit != c.hit {
			t.Errorf("stops %q, pieces %q: %q (hit %v), want %q (%v)", c.stops, c.pieces, out.String(), hit, c.out, c.hit)
		}
	}
}

func TestPrefixReuse(t *testing.T) {
	ts := newTestServer(t, testOptions{noEOG: true})
	fresh := newTestServer(t, testOptions{noEOG: true, edit: func(c *Config) { c.NoReuse = true }})
	first := chatBody("hello", "max_tokens", 8)
	r1 := ts.complete(t, "/v1/chat/completions", first)
	if r1.usage.PromptTokensDetails.CachedTokens != 0 {
		t.Errorf("first request: %d cached tokens", r1.usage.PromptTokensDetails.CachedTokens)
	}
	// The conversation goes on: everything up to the new message is cached.
	next := map[string]any{"max_tokens": 8, "messages": []map[string]any{
		{"role": "user", "content": "hello"}, {"role": "assistant", "content": r1.text}, {"role": "user", "content": "and then?"},
	}}
	r2 := ts.complete(t, "/v1/chat/completions", next)
	if c := r2.usage.PromptTokensDetails.CachedTokens; c < r1.usage.PromptTokens {
		t.Errorf("second turn: %d cached tokens, want at least the first prompt's %d", c, r1.usage.PromptTokens)
	}
	// Reuse changes nothing in the reply.
	if f := fresh.complete(t, "/v1/chat/completions", next); f.text != r2.text || f.usage.PromptTokensDetails.CachedTokens != 0 {
		t.Errorf("without reuse: %q (%d cached), with: %q", f.text, f.usage.PromptTokensDetails.CachedTokens, r2.text)
	}
	// The same request again evaluates only its last token.
	r3 := ts.complete(t, "/v1/chat/completions", next)
	if r3.text != r2.text || r3.usage.PromptTokensDetails.CachedTokens != r3.usage.PromptTokens-1 {
		t.Errorf("again: %q, %d of %d cached; want %q, all but one", r3.text, r3.usage.PromptTokensDetails.CachedTokens, r3.usage.PromptTokens, r2.text)
	}
}

func TestModelsHealthAndPage(t *testing.T) {
	ts := newTestServer(t, testOptions{})
	resp, b := ts.do(t, http.MethodGet, "/v1/models", nil, nil)
	var list struct {
		Object string `json:"object"`
		Data   []struct {
			ID, Object, OwnedBy string
			Meta                struct{ Context int }
		} `json:"data"`
	}
	decodeStrict(t, b, &list)
	if resp.StatusCode != 200 || list.Object != "list" || len(list.Data) != 1 || list.Data[0].ID != "tiny" || list.Data[0].Object != "model" || list.Data[0].Meta.Context != 512 {
		t.Errorf("/v1/models: %d %s", resp.StatusCode, b)
	}
	if resp, b := ts.do(t, http.MethodGet, "/v1/models/tiny", nil, nil); resp.StatusCode != 200 || !strings.Contains(string(b), `"id":"tiny"`) {
		t.Errorf("/v1/models/tiny: %d %s", resp.StatusCode, b)
	}
	wantError(t, "/v1/models/gpt-4", 404, "invalid_request_error", "does not exist")(ts.do(t, http.MethodGet, "/v1/models/gpt-4", nil, nil))
	if resp, b := ts.do(t, http.MethodGet, "/health", nil, nil); resp.StatusCode != 200 || !strings.Contains(string(b), `"status":"ok"`) {
		t.Errorf("/health: %d %s", resp.StatusCode, b)
	}
	// The page and its files: no URL outside this server, a policy that
	// forbids any.
	for _, p := range []string{"/", "/app.js", "/style.css"} {
		resp, b := ts.do(t, http.MethodGet, p, nil, nil)
		if resp.StatusCode != 200 || len(b) < 100 {
			t.Fatalf("%s: %d, %d bytes", p, resp.StatusCode, len(b))
		}
		if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "connect-src 'self'") {
			t.Errorf("%s: policy %q", p, csp)
		}
		if m := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}`).Find(b); m != nil {
			t.Errorf("%s refers to %q, outside the server", p, m)
		}
	}
}

// metric reads one sample from the Prometheus text of /metrics.
func metric(t *testing.T, text, name string) float64 {
	t.Helper()
	for _, line := range strings.Split(text, "\n") {
		if rest, ok := strings.CutPrefix(line, name+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return v
		}
	}
	t.Fatalf("no %s in the metrics:\n%s", name, text)
	return 0
}

func TestMetrics(t *testing.T) {
	ts := newTestServer(t, testOptions{noEOG: true})
	r := ts.complete(t, "/v1/chat/completions", chatBody("hello", "max_tokens", 5))
	ts.stream(t, "/v1/completions", map[string]any{"prompt": "hi", "max_tokens": 3})
	ts.post(t, "/v1/chat/completions", "{")
	resp, b := ts.do(t, http.MethodGet, "/metrics", nil, nil)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("/metrics: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	text := string(b)
	for name, want := range map[string]float64{
		`bitvk_http_requests_total{code="200",endpoint="/v1/chat/completions"}`: 1,
		`bitvk_http_requests_total{code="400",endpoint="/v1/chat/completions"}`: 1,
		`bitvk_http_requests_total{code="200",endpoint="/v1/completions"}`:      1,
		`bitvk_generated_tokens_total`:                                          8,
		`bitvk_time_to_first_token_seconds_count`:                               2,
		`bitvk_generation_tokens_per_second_count`:                              2,
		`bitvk_queue_depth`:      0,
		`bitvk_requests_running`: 0,
	} {
		if got := metric(t, text, name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	ids := ts.bos(ts.tok.Encode("hi", tokenizer.EncodeOptions{NoBOS: true}))
	if got, want := metric(t, text, "bitvk_prompt_tokens_total"), float64(r.usage.PromptTokens+len(ids)); got != want {
		t.Errorf("bitvk_prompt_tokens_total = %v, want %v", got, want)
	}
	for _, name := range []string{"bitvk_prompt_tokens_cached_total", "bitvk_queue_wait_seconds_count", "go_goroutines", "bitvk_http_request_duration_seconds_count{endpoint=\"/v1/completions\"}"} {
		metric(t, text, name)
	}
	// Steps: each prompt in one step of its own (no slot decoding beside
	// it), then a step per generated token but the last (5 + 3 tokens: 4
	// and 2), each decoding one slot; a pass inside each step.
	for _, tc := range []struct {
		labels string
		steps  float64
	}{{`{prompt="true",streams="0"}`, 2}, {`{prompt="false",streams="1"}`, 6}} {
		steps, passes := metric(t, text, "bitvk_step_seconds_count"+tc.labels), metric(t, text, "bitvk_forward_pass_seconds_count"+tc.labels)
		stepS, passS := metric(t, text, "bitvk_step_seconds_sum"+tc.labels), metric(t, text, "bitvk_forward_pass_seconds_sum"+tc.labels)
		if steps != tc.steps || passes != tc.steps || !(passS > 0 && passS <= stepS) {
			t.Errorf("%s: %v steps of %v s, %v passes of %v s; want %v steps, each holding its pass", tc.labels, steps, stepS, passes, passS, tc.steps)
		}
	}
}

// goroutines waits for the number of goroutines to fall to at most n, and
// returns it.
func goroutines(n int) int {
	deadline := time.Now().Add(5 * time.Second)
	for {
		g := runtime.NumGoroutine()
		if g <= n || time.Now().After(deadline) {
			return g
		}
		time.Sleep(10 * time.Millisecond)
	}
}
