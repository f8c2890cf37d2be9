package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bitvk/bitvk/nn"
)

// batches records the slots and sizes of every forward pass.
type batches struct {
	mu     sync.Mutex
	passes [][]nn.SeqToken
}

func (b *batches) record(batch []nn.SeqToken) {
	b.mu.Lock()
	b.passes = append(b.passes, append([]nn.SeqToken(nil), batch...))
	b.mu.Unlock()
}

// maxSlots is the most distinct slots one pass held, and maxPrompt the
// most tokens a pass gave one slot.
func (b *batches) stats() (maxSlots, maxPerSlot int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, p := range b.passes {
		per := map[int]int{}
		for _, t := range p {
			per[t.Seq]++
		}
		maxSlots = max(maxSlots, len(per))
		for _, n := range per {
			maxPerSlot = max(maxPerSlot, n)
		}
	}
	return
}

// Four streams at once progress together: they share forward passes, each
// gets the text it gets alone, and /slots shows them while they run.
func TestSlotsConcurrent(t *testing.T) {
	var rec batches
	release := make(chan struct{})
	ts := newTestServer(t, testOptions{noEOG: true, delay: time.Millisecond})
	ts.backend.seen = rec.record
	prompts := []string{"hello", "what is two plus two?", "tell me a story", "why"}
	want := make([]string, len(prompts))
	for i, p := range prompts {
		want[i] = ts.complete(t, "/v1/chat/completions", chatBody(p, "max_tokens", 12)).text
	}
	rec.passes = nil

	// Hold the passes once all four are in, to look at /slots.
	held := make(chan struct{})
	var once sync.Once
	ts.backend.seen = func(b []nn.SeqToken) {
		rec.record(b)
		per := map[int]bool{}
		for _, t := range b {
			per[t.Seq] = true
		}
		if len(per) == 4 {
			once.Do(func() { close(held); <-release })
		}
	}
	var wg sync.WaitGroup
	got := make([]string, len(prompts))
	for i, p := range prompts {
		wg.Go(func() { got[i] = ts.stream(t, "/v1/chat/completions", chatBody(p, "max_tokens", 12)).text })
	}
	waitFor(t, "a pass with all four slots", held)
	_, b := ts.do(t, http.MethodGet, "/slots", nil, nil)
	var slots []slotView
	if err := json.Unmarshal(b, &slots); err != nil {
		t.Fatalf("/slots: %v: %s", err, b)
	}
	busy := 0
	for _, s := range slots {
		if s.IsProcessing {
			busy++
		}
	}
	close(release)
	wg.Wait()
	if len(slots) != 4 || busy != 4 {
		t.Errorf("/slots while four streams run: %s", b)
	}
	for i := range prompts {
		if got[i] != want[i] {
			t.Errorf("stream %d: %q together, %q alone", i, got[i], want[i])
		}
	}
	if n, _ := rec.stats(); n != 4 {
		t.Errorf("at most %d slots in one pass, want 4", n)
	}
}

// Streams whose tokens are drawn differently (sampled with a seed, with
// log-probabilities, constrained to JSON, greedy) share passes, and their
// draws run at once; each reply, log-probabilities included, is the one it
// gets alone.
func TestSlotsConcurrentDraws(t *testing.T) {
	ts := newTestServer(t, testOptions{noEOG: true, delay: time.Millisecond})
	bodies := []map[string]any{
		chatBody("hello", "max_tokens", 10, "temperature", 0.9, "seed", 7),
		chatBody("what is two plus two?", "max_tokens", 10, "logprobs", true, "top_logprobs", 3),
		chatBody("tell me a story", "max_tokens", 12, "response_format", map[string]any{"type": "json_object"}),
		chatBody("why", "max_tokens", 10, "temperature", 0.7, "seed", 3, "logprobs", true),
	}
	// reply is a choice's message and log-probabilities, as JSON.
	reply := func(body map[string]any) string {
		resp, b := ts.post(t, "/v1/chat/completions", body)
		if resp.StatusCode != http.StatusOK {
			t.Errorf("status %d: %s", resp.StatusCode, b)
			return ""
		}
		var r struct {
			Choices []struct {
				Message  json.RawMessage `json:"message"`
				Logprobs json.RawMessage `json:"logprobs"`
			} `json:"choices"`
		}
		if err := json.Unmarshal(b, &r); err != nil || len(r.Choices) != 1 {
			t.Errorf("reply %s: %v", b, err)
			return ""
		}
		return string(r.Choices[0].Message) + " " + string(r.Choices[0].Logprobs)
	}
	want := make([]string, len(bodies))
	for i, b := range bodies {
		want[i] = reply(b)
	}
	var rec batches
	ts.backend.seen = rec.record
	got := make([]string, len(bodies))
	var wg sync.WaitGroup
	for i, b := range bodies {
		wg.Go(func() { got[i] = reply(b) })
	}
	wg.Wait()
	for i := range bodies {
		if got[i] != want[i] {
			t.Errorf("request %d together:\n%s\nalone:\n%s", i, got[i], want[i])
		}
	}
	if !strings.Contains(want[1], "top_logprobs") || !strings.Contains(want[3], "logprob") {
		t.Errorf("no log-probabilities in the replies that ask for them: %q, %q", want[1], want[3])
	}
	if n, _ := rec.stats(); n < 2 {
		t.Errorf("at most %d slots in one pass: the draws never ran together", n)
	}
}

// A long prompt is read in chunks between the decode steps of a stream
// already running, which never waits for the whole prompt; the one cancelled
// in the middle leaves the others' text as it is alone.
func TestSlotsChunkedPrefillAndCancel(t *testing.T) {
	var rec batches
	ts := newTestServer(t, testOptions{noEOG: true, delay: time.Millisecond, edit: func(c *Config) { c.PrefillChunk = 8 }})
	long := strings.Repeat("the quick brown fox jumps over the lazy dog. ", 8)
	wantShort := ts.complete(t, "/v1/completions", map[string]any{"prompt": "once upon a time", "max_tokens": 60}).text
	wantLong := ts.complete(t, "/v1/completions", map[string]any{"prompt": long, "max_tokens": 5}).text
	ts.backend.seen = rec.record

	started := make(chan *job, 3)
	ts.w.onStart = func(j *job) { started <- j }
	var wg sync.WaitGroup
	var short, longText string
	wg.Go(func() {
		short = ts.stream(t, "/v1/completions", map[string]any{"prompt": "once upon a time", "max_tokens": 60}).text
	})
	<-started
	// A third request that its client abandons after its first text.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cancelled := make(chan error, 1)
	go func() {
		body, _ := json.Marshal(map[string]any{"prompt": "a b c", "max_tokens": 1000, "stream": true})
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ts.url+"/v1/completions", bytes.NewReader(body))
		resp, err := ts.client.Do(req)
		if err != nil {
			cancelled <- err
			return
		}
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if strings.Contains(sc.Text(), `"text"`) {
				cancel()
			}
		}
		cancelled <- sc.Err()
	}()
	<-started
	wg.Go(func() {
		longText = ts.complete(t, "/v1/completions", map[string]any{"prompt": long, "max_tokens": 5}).text
	})
	<-started
	wg.Wait()
	if err := <-cancelled; err == nil {
		t.Error("the abandoned request read its whole stream")
	}
	if short != wantShort || longText != wantLong {
		t.Errorf("with a long prompt and a cancelled request beside them: %q and %q, alone %q and %q", short, longText, wantShort, wantLong)
	}
	// Some pass held a prompt chunk beside decode steps (a slot's single
	// token with logits), and no such pass held more than a chunk of
	// prompt tokens (those without logits).
	mixed := false
	rec.mu.Lock()
	for _, p := range rec.passes {
		per := map[int]int{}
		prompt := 0
		for _, tk := range p {
			per[tk.Seq]++
			if !tk.Logits {
				prompt++
			}
		}
		decoding := false
		for _, tk := range p {
			if per[tk.Seq] == 1 && tk.Logits {
				decoding = true
			}
		}
		if decoding && prompt > 0 {
			mixed = true
		}
		if decoding && prompt > 8 {
			t.Errorf("a pass held %d prompt tokens beside decode steps; the chunk is 8", prompt)
		}
	}
	rec.mu.Unlock()
	if !mixed {
		t.Error("no pass mixed a prompt chunk with decode steps")
	}
	waitMetric(t, ts, `bitvk_requests_running`, 0)
}

// The prefix cache: a request sharing a system prompt with one that runs
// in another slot takes its keys and values from there (CopySeq) and
// evaluates only the rest; replies are those of a server without reuse.
func TestPrefixCacheAcrossSlots(t *testing.T) {
	system := strings.Repeat("You are a helpful assistant who answers briefly. ", 4)
	msgs := func(user string) map[string]any {
		return map[string]any{"max_tokens": 6, "messages": []map[string]any{
			{"role": "system", "content": system}, {"role": "user", "content": user}}}
	}
	fresh := newTestServer(t, testOptions{noEOG: true, edit: func(c *Config) { c.NoReuse = true }})
	wantA := fresh.complete(t, "/v1/chat/completions", msgs("first question"))
	wantB := fresh.complete(t, "/v1/chat/completions", msgs("second question"))

	g := newGate(3)
	ts := newTestServer(t, testOptions{noEOG: true, hook: func(n int64) { g.hook(n) }})
	var a clientReply
	done := make(chan struct{})
	go func() { defer close(done); a = ts.complete(t, "/v1/chat/completions", msgs("first question")) }()
	waitFor(t, "the first request's 3rd pass", g.entered)
	// The first request holds its slot (busy); the second, queued while
	// the pass is held, starts in another slot with the system prompt
	// copied from it.
	go func() {
		for ts.q.len() == 0 {
			time.Sleep(time.Millisecond)
		}
		close(g.release)
	}()
	b := ts.complete(t, "/v1/chat/completions", msgs("second question"))
	<-done
	if a.text != wantA.text || b.text != wantB.text {
		t.Errorf("replies %q, %q; without the cache %q, %q", a.text, b.text, wantA.text, wantB.text)
	}
	if b.usage.PromptTokensDetails.CachedTokens < 20 || ts.backend.copies.Load() == 0 {
		t.Errorf("the second request reused %d tokens after %d copies", b.usage.PromptTokensDetails.CachedTokens, ts.backend.copies.Load())
	}
	_, m := ts.do(t, http.MethodGet, "/metrics", nil, nil)
	if got := metric(t, string(m), "bitvk_prefix_cache_hits_total"); got != 1 {
		t.Errorf("bitvk_prefix_cache_hits_total = %v, want 1", got)
	}
	if got := metric(t, string(m), "bitvk_prompt_tokens_cached_total"); got != float64(b.usage.PromptTokensDetails.CachedTokens) {
		t.Errorf("bitvk_prompt_tokens_cached_total = %v, want %d", got, b.usage.PromptTokensDetails.CachedTokens)
	}
}

// A server over a backend of one slot serves the requests one at a time,
// and one asking for more slots than the backend has is refused.
func TestSlotsSingle(t *testing.T) {
	ts := newTestServer(t, testOptions{noEOG: true, slots: 1})
	var rec batches
	ts.backend.seen = rec.record
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() { ts.complete(t, "/v1/chat/completions", chatBody("hello", "max_tokens", 4)) })
	}
	wg.Wait()
	if n, _ := rec.stats(); n != 1 {
		t.Errorf("%d slots in a pass of a one-slot server", n)
	}
	if _, err := New(Config{Engine: ts.engine, Tokenizer: ts.tok, Parallel: 2}); err == nil || !strings.Contains(err.Error(), "has 1") {
		t.Errorf("2 parallel requests on a backend of one slot: %v", err)
	}
}
