package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// TestLoad: 32 clients send 5 requests each, streamed and not, at a server
// whose queue holds 4. Every request is answered whole and right, or
// refused with 503 and Retry-After; the replies do not depend on what else
// ran (each prompt always gets the same text); and no goroutine is left.
func TestLoad(t *testing.T) {
	const clients, each = 32, 5
	ts := newTestServer(t, testOptions{noEOG: true, delay: 200 * time.Microsecond, edit: func(c *Config) { c.Queue = 4 }})
	before := goroutinesNow()

	prompts := []string{"hello", "what is two plus two?"}
	want := make([]string, len(prompts))
	for i, p := range prompts {
		want[i] = ts.complete(t, "/v1/chat/completions", chatBody(p, "max_tokens", 8)).text
	}

	var mu sync.Mutex
	counts := map[int]int{}
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			for i := range each {
				p := (c + i) % len(prompts)
				body, _ := json.Marshal(chatBody(prompts[p], "max_tokens", 8, "stream", (c+i)%2 == 0))
				resp, err := ts.client.Post(ts.url+"/v1/chat/completions", "application/json", bytes.NewReader(body))
				if err != nil {
					t.Errorf("client %d: %v", c, err)
					return
				}
				code := resp.StatusCode
				switch code {
				case http.StatusOK:
					var text string
					if resp.Header.Get("Content-Type") == "text/event-stream" {
						text = readStream(t, resp.Body, true).text
					} else {
						var cc clientCompletion
						if err := json.NewDecoder(resp.Body).Decode(&cc); err != nil || len(cc.Choices) != 1 || cc.Choices[0].Message == nil {
							t.Errorf("client %d: a bad 200 (%v)", c, err)
						} else {
							text = cc.Choices[0].Message.Content
						}
					}
					if text != want[p] {
						t.Errorf("client %d, prompt %d: %q, want %q", c, p, text, want[p])
					}
				case http.StatusServiceUnavailable:
					b, _ := io.ReadAll(resp.Body)
					wantError(t, "503", 503, "server_error", "busy")(resp, b)
					if resp.Header.Get("Retry-After") == "" {
						t.Errorf("503 without Retry-After")
					}
				default:
					b, _ := io.ReadAll(resp.Body)
					t.Errorf("client %d: status %d: %s", c, code, b)
				}
				resp.Body.Close()
				mu.Lock()
				counts[code]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	t.Logf("answers: %v", counts)
	if counts[200]+counts[503] != clients*each || counts[200] == 0 || counts[503] == 0 {
		t.Errorf("answers %v: want only 200 and 503, some of each, %d in all", counts, clients*each)
	}
	_, b := ts.do(t, http.MethodGet, "/metrics", nil, nil)
	if got := metric(t, string(b), `bitvk_http_requests_total{code="503",endpoint="/v1/chat/completions"}`); int(got) != counts[503] {
		t.Errorf("the metrics count %v 503s, the clients %d", got, counts[503])
	}
	if got := metric(t, string(b), `bitvk_http_requests_total{code="200",endpoint="/v1/chat/completions"}`); int(got) != counts[200]+len(prompts) {
		t.Errorf("the metrics count %v 200s, the clients %d", got, counts[200]+len(prompts))
	}
	ts.client.CloseIdleConnections()
	if n := goroutines(before); n > before {
		t.Errorf("%d goroutines after the load, %d before", n, before)
	}
}

func goroutinesNow() int { return goroutines(1 << 30) }

// gate holds the model in one chosen Forward call until released.
type gate struct {
	at      int64
	entered chan struct{}
	release chan struct{}
}

func newGate(at int64) *gate {
	return &gate{at: at, entered: make(chan struct{}), release: make(chan struct{})}
}

func (g *gate) hook(call int64) {
	if call == g.at {
		close(g.entered)
		<-g.release
	}
}

func waitFor(t *testing.T, what string, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("waited 10 s for %s", what)
	}
}

// TestDisconnect: a client that goes away stops its generation within one
// token. The model is held in its 6th forward pass (the prompt's and four
// tokens') while the client leaves; once let go, that pass ends, one more
// token is drawn, and the worker sees the request is gone: there is no 7th
// pass.
func TestDisconnect(t *testing.T) {
	var cur atomic.Pointer[gate]
	done := make(chan *job, 1)
	ts := newTestServer(t, testOptions{noEOG: true, hook: func(n int64) { cur.Load().hook(n) }})
	started := make(chan *job, 1)
	ts.w.onStart = func(j *job) { started <- j }
	ts.w.onDone = func(j *job) { done <- j }

	for _, stream := range []bool{true, false} {
		g := newGate(ts.backend.calls.Load() + 6)
		cur.Store(g)
		ctx, cancel := context.WithCancel(context.Background())
		body, _ := json.Marshal(chatBody("hello", "max_tokens", 1000, "stream", stream))
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ts.url+"/v1/chat/completions", bytes.NewReader(body))
		errc := make(chan error, 1)
		go func() {
			resp, err := ts.client.Do(req)
			if err == nil {
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			errc <- err
		}()
		waitFor(t, "the 6th forward pass", g.entered)
		j := <-started
		calls := ts.backend.calls.Load()
		cancel() // the client goes away
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Errorf("stream %v: the client's request ended with %v", stream, err)
		}
		waitFor(t, "the server to see the client leave", j.ctx.Done())
		close(g.release)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("the generation did not stop")
		}
		if n := ts.backend.calls.Load(); n != calls {
			t.Errorf("stream %v: %d forward passes after the client left, want none", stream, n-calls)
		}
		// The prompt's pass drew token 1, passes 2 to 6 tokens 2 to 6.
		if !j.res.interrupted || j.res.stats.GenTokens != 6 {
			t.Errorf("stream %v: interrupted %v after %d tokens, want true after 6", stream, j.res.interrupted, j.res.stats.GenTokens)
		}
	}
	// The server goes on.
	ts.w.onStart, ts.w.onDone = nil, nil
	ts.complete(t, "/v1/chat/completions", chatBody("hello", "max_tokens", 3))
	// The handlers count their answers as they end, just after the worker.
	waitMetric(t, ts, `bitvk_http_requests_total{code="499",endpoint="/v1/chat/completions"}`, 2)
}

// waitMetric waits up to 10 s for a metric to reach want.
func waitMetric(t *testing.T, ts *testServer, name string, want float64) {
	t.Helper()
	var b []byte
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		_, b = ts.do(t, http.MethodGet, "/metrics", nil, nil)
		if strings.Contains(string(b), "\n"+name+" ") && metric(t, string(b), name) == want {
			return
		}
	}
	t.Errorf("%s did not reach %v in 10 s:\n%s", name, want, b)
}

// TestDeadline: a request past its deadline while generating gets what was
// generated so far, finish_reason "length"; one past its deadline while
// waiting in the queue gets 503 with Retry-After.
func TestDeadline(t *testing.T) {
	g := newGate(3)
	ts := newTestServer(t, testOptions{noEOG: true, hook: g.hook, edit: func(c *Config) { c.Timeout = 300 * time.Millisecond }})
	type answer struct {
		r   *http.Response
		b   []byte
		err error
	}
	first := make(chan answer, 1)
	go func() {
		body, _ := json.Marshal(chatBody("hello", "max_tokens", 1000))
		r, err := ts.client.Post(ts.url+"/v1/chat/completions", "application/json", bytes.NewReader(body))
		var b []byte
		if err == nil {
			b, err = io.ReadAll(r.Body)
			r.Body.Close()
		}
		first <- answer{r, b, err}
	}()
	waitFor(t, "the first request's 3rd forward pass", g.entered)
	// The model is held: the second request waits in the queue past its deadline.
	resp, b := ts.post(t, "/v1/chat/completions", chatBody("hello", "max_tokens", 5))
	wantError(t, "queued past the deadline", 503, "server_error", "past its deadline")(resp, b)
	if resp.Header.Get("Retry-After") == "" {
		t.Error("no Retry-After")
	}
	close(g.release)
	a := <-first
	if a.err != nil {
		t.Fatal(a.err)
	}
	var c clientCompletion
	decodeStrict(t, a.b, &c)
	if a.r.StatusCode != 200 || len(c.Choices) != 1 || *c.Choices[0].FinishReason != "length" || c.Usage.CompletionTokens >= 1000 || c.Usage.CompletionTokens < 2 {
		t.Errorf("the request past its deadline: %d %s", a.r.StatusCode, a.b)
	}
}

// TestShutdown: when Serve's context ends (SIGINT, SIGTERM), it stops
// accepting, lets a request in flight finish within the grace period, ends
// one that runs past it (the stream says why), and returns.
func TestShutdown(t *testing.T) {
	for _, past := range []bool{false, true} {
		g := newGate(3)
		ts := newTestServer(t, testOptions{noEOG: true, hook: g.hook, listen: true, delay: 2 * time.Millisecond})
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ts.url = "http://" + ln.Addr().String()
		ctx, stop := context.WithCancel(context.Background())
		grace := 10 * time.Second
		if past {
			grace = 100 * time.Millisecond
		}
		served := make(chan error, 1)
		go func() { served <- ts.Serve(ctx, ln, grace) }()

		body, _ := json.Marshal(chatBody("hello", "max_tokens", map[bool]int{false: 20, true: 100000}[past], "stream", true))
		resp, err := ts.client.Post(ts.url+"/v1/chat/completions", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the 3rd forward pass", g.entered)
		stop() // the signal
		deadline := time.Now().Add(5 * time.Second)
		for !ts.draining.Load() && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		close(g.release)
		if !past {
			r := readStream(t, resp.Body, true)
			if r.finish != "length" || r.chunks == 0 {
				t.Errorf("within the grace: finish %q after %d chunks, want length", r.finish, r.chunks)
			}
		} else {
			// The stream ends with an error event, without [DONE].
			var last string
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				if sc.Text() != "" {
					last = sc.Text()
				}
			}
			if !strings.Contains(last, `"error"`) || !strings.Contains(last, "shutting down") {
				t.Errorf("past the grace: the stream ended with %q", last)
			}
		}
		resp.Body.Close()
		select {
		case err := <-served:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Serve did not return")
		}
		if _, err := net.Dial("tcp", ln.Addr().String()); !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("a connection after the shutdown: %v, want refused", err)
		}
	}
}

// TestClose: Close ends what runs and what waits, and the server refuses
// what comes after. One slot, so that the second request waits.
func TestClose(t *testing.T) {
	g := newGate(2)
	ts := newTestServer(t, testOptions{noEOG: true, hook: g.hook, slots: 1})
	results := make(chan int, 2)
	for range 2 {
		go func() {
			body, _ := json.Marshal(chatBody("hello", "max_tokens", 100))
			r, err := ts.client.Post(ts.url+"/v1/chat/completions", "application/json", bytes.NewReader(body))
			if err != nil {
				results <- -1
				return
			}
			io.Copy(io.Discard, r.Body)
			r.Body.Close()
			results <- r.StatusCode
		}()
	}
	waitFor(t, "the 2nd forward pass", g.entered)
	for deadline := time.Now().Add(10 * time.Second); ts.q.len() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the second request is not in the queue after 10 s")
		}
	}
	closed := make(chan struct{})
	go func() { ts.Close(); close(closed) }()
	waitFor(t, "Close to end the requests", ts.stopCtx.Done())
	close(g.release)
	waitFor(t, "Close", closed)
	for range 2 {
		if code := <-results; code != 503 {
			t.Errorf("a request ended by Close: %d, want 503", code)
		}
	}
	resp, b := ts.post(t, "/v1/chat/completions", chatBody("hello"))
	wantError(t, "after Close", 503, "server_error", "shutting down")(resp, b)
	if resp, _ := ts.do(t, http.MethodGet, "/health", nil, nil); resp.StatusCode != 503 {
		t.Errorf("/health after Close: %d", resp.StatusCode)
	}
}

// TestQueueZero: with --queue 0 a request runs when a slot is free, and
// one that finds every slot busy is refused at once with 503.
func TestQueueZero(t *testing.T) {
	g := newGate(3)
	ts := newTestServer(t, testOptions{noEOG: true, slots: 1, hook: g.hook, edit: func(c *Config) { c.Queue = 0 }})
	first := make(chan error, 1)
	go func() {
		body, _ := json.Marshal(chatBody("hello", "max_tokens", 5))
		r, err := ts.client.Post(ts.url+"/v1/chat/completions", "application/json", bytes.NewReader(body))
		if err == nil {
			b, _ := io.ReadAll(r.Body)
			r.Body.Close()
			if r.StatusCode != 200 {
				err = fmt.Errorf("%d %s", r.StatusCode, b)
			}
		}
		first <- err
	}()
	waitFor(t, "the first request's 3rd forward pass", g.entered)
	resp, b := ts.post(t, "/v1/chat/completions", chatBody("hello", "max_tokens", 5))
	wantError(t, "every slot busy", 503, "server_error", "busy")(resp, b)
	close(g.release)
	if err := <-first; err != nil {
		t.Errorf("the request with a free slot: %v", err)
	}
	ts.complete(t, "/v1/chat/completions", chatBody("hello", "max_tokens", 2))
	// n past the one slot is a mistake, not a busy server.
	resp, b = ts.post(t, "/v1/chat/completions", chatBody("hello", "max_tokens", 2, "n", 2))
	wantError(t, "n 2 with 1 slot and no queue", 400, "invalid_request_error", "'n' may be at most 1")(resp, b)
}
