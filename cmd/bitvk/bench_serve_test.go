package main

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// fakeStreamServer answers /v1/completions with n streamed chunks and a
// usage chunk, as an OpenAI-compatible server does. reads gets the number
// of completions requested so far at each read of /metrics.
func fakeStreamServer(t *testing.T, usage bool, status int) (ts *httptest.Server, requests *atomic.Int64, reads func() []int64) {
	requests = new(atomic.Int64)
	var mu sync.Mutex
	var seen []int64
	reads = func() []int64 {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(seen)
	}
	ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/metrics" { // as a bitvk server's: a 20 ms step with a 15 ms pass per completion so far, one stream each
			n := requests.Load()
			mu.Lock()
			seen = append(seen, n)
			mu.Unlock()
			fmt.Fprintf(w, "# HELP bitvk_step_seconds …\nbitvk_step_seconds_sum{prompt=\"false\",streams=\"1\"} %g\nbitvk_step_seconds_count{prompt=\"false\",streams=\"1\"} %d\n", 0.02*float64(n), n)
			fmt.Fprintf(w, "bitvk_forward_pass_seconds_sum{prompt=\"false\",streams=\"1\"} %g\nbitvk_forward_pass_seconds_count{prompt=\"false\",streams=\"1\"} %d\n", 0.015*float64(n), n)
			return
		}
		requests.Add(1)
		var req struct {
			MaxTokens int  `json:"max_tokens"`
			Stream    bool `json:"stream"`
			IgnoreEOS bool `json:"ignore_eos"`
		}
		if r.URL.Path != "/v1/completions" || json.NewDecoder(r.Body).Decode(&req) != nil || !req.Stream || !req.IgnoreEOS || r.Header.Get("Authorization") != "Bearer k" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		if status != http.StatusOK {
			http.Error(w, `{"error":{"message":"busy"}}`, status)
			return
		}
		for range req.MaxTokens {
			fmt.Fprintf(w, "data: {\"choices\":[{\"text\":\"a\"}]}\n\n")
			w.(http.Flusher).Flush()
		}
		if usage {
			fmt.Fprintf(w, "data: {\"choices\":[],\"usage\":{\"completion_tokens\":%d}}\n\n", req.MaxTokens)
		}
		fmt.Fprintf(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(ts.Close)
	return ts, requests, reads
}

func TestBenchServe(t *testing.T) {
	ts, requests, reads := fakeStreamServer(t, true, http.StatusOK)
	code, out, stderr := bitvk("bench", "--serve", ts.URL, "--api-key", "k", "-c", "1,3", "-n", "5", "-r", "2", "--json")
	if code != 0 {
		t.Fatalf("bench --serve: exit %d: %s", code, stderr)
	}
	var rs []serveResult
	if err := json.Unmarshal([]byte(out), &rs); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(rs) != 2 || requests.Load() != 9 {
		t.Fatalf("%d rows, %d requests; want 2 rows of 1 and 3 streams, 2 rounds each, after a warm-up (9 requests)", len(rs), requests.Load())
	}
	for i, want := range []int{1, 3} {
		r := rs[i]
		if r.Clients != want || r.Requests != 2*want || r.Tokens != 10*want || r.AggregateTs <= 0 || r.StreamTs <= 0 || r.TTFTMaxS < r.TTFTMeanS || r.VsOneStream <= 0 {
			t.Errorf("row %d: %+v", i, r)
		}
	}
	if rs[0].VsOneStream != 1 || rs[0].StreamVsSolo != 1 {
		t.Errorf("one stream against itself: %+v", rs[0])
	}
	// The server's own step times, for the steps of exactly that many
	// streams: the fake's one-stream steps for one client, none for three.
	if math.Abs(rs[0].StepMs-20) > 1e-6 || math.Abs(rs[0].PassMs-15) > 1e-6 || rs[1].StepMs != 0 || rs[1].PassMs != 0 {
		t.Errorf("step and pass ms: one stream %v, %v (want 20, 15); three %v, %v (want none)", rs[0].StepMs, rs[0].PassMs, rs[1].StepMs, rs[1].PassMs)
	}

	// The rounds take the concurrencies in turn, each between two reads of
	// the server's metrics: after the warm-up, 1, 3, 1 and 3 completions.
	if got, want := reads(), []int64{1, 2, 2, 5, 5, 6, 6, 9}; !slices.Equal(got, want) {
		t.Errorf("completions requested at each read of /metrics: %v, want %v (rounds of 1 and 3 streams in turn)", got, want)
	}

	noUsage, _, _ := fakeStreamServer(t, false, http.StatusOK)
	busy, _, _ := fakeStreamServer(t, true, http.StatusServiceUnavailable)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--serve", noUsage.URL, "--api-key", "k", "-c", "1"}, "without its usage chunk"},
		{[]string{"--serve", busy.URL, "--api-key", "k", "-c", "1"}, "503"},
		{[]string{"--serve", ts.URL, "-c", "0"}, "-c"},
		{[]string{"--serve", ts.URL, "--verify"}, "--serve times a running server"},
		{[]string{"--serve", "http://127.0.0.1:1", "-c", "1"}, "bench --serve"},
	} {
		code, _, stderr := bitvk(append([]string{"bench", "-n", "3", "-r", "1"}, tc.args...)...)
		if code == 0 || !strings.Contains(stderr, tc.want) {
			t.Errorf("bench %v: exit %d, %q; want an error naming %q", tc.args, code, stderr, tc.want)
		}
	}
}
