package server

import (
	"encoding/json"
	"net/http"
	"slices"
	"sync"
	"testing"
)

// replay drafts the continuation of a sequence it has seen before: a
// drafter that is always right once it has recorded a generation.
type replay struct {
	mu   sync.Mutex
	seen []int32
}

func (r *replay) Draft(dst, seq []int32, max int) []int32 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(seq) > len(r.seen) || !slices.Equal(r.seen[:len(seq)], seq) {
		if len(seq) > len(r.seen) {
			r.seen = slices.Clone(seq) // recording
		}
		return dst
	}
	return append(dst, r.seen[len(seq):min(len(seq)+max, len(r.seen))]...)
}

// A server that drafts answers as one that does not, and counts the
// drafting in each response's timings and in /metrics.
func TestServerDrafting(t *testing.T) {
	body := map[string]any{"prompt": "In the beginning", "max_tokens": 24}
	plain := newTestServer(t, testOptions{noEOG: true, edit: func(c *Config) { c.NoReuse = true }})
	want := plain.complete(t, "/v1/completions", body)

	d := &replay{}
	ts := newTestServer(t, testOptions{noEOG: true, edit: func(c *Config) {
		c.Draft, c.DraftMax, c.NoReuse, c.DraftEvery = d, 6, true, true
	}})
	first := ts.complete(t, "/v1/completions", body) // records
	resp, b := ts.post(t, "/v1/completions", body)   // replays
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	var c struct {
		Choices []struct {
			Text string `json:"text"`
		} `json:"choices"`
		Timings struct {
			PredictedN    int `json:"predicted_n"`
			DraftN        int `json:"draft_n"`
			DraftAccepted int `json:"draft_n_accepted"`
			DraftPasses   int `json:"draft_passes"`
			PassesSaved   int `json:"passes_saved"`
		} `json:"timings"`
	}
	if err := json.Unmarshal(b, &c); err != nil || len(c.Choices) != 1 {
		t.Fatalf("response %s: %v", b, err)
	}
	if first.text != want.text || c.Choices[0].Text != want.text {
		t.Errorf("texts with drafting %q and %q, without %q", first.text, c.Choices[0].Text, want.text)
	}
	tm := c.Timings
	if tm.PredictedN != 24 || tm.DraftAccepted < 12 || tm.DraftAccepted > tm.DraftN || tm.DraftPasses == 0 || tm.PassesSaved != tm.DraftAccepted {
		t.Errorf("timings of a replayed reply: %+v", tm)
	}
	_, m := ts.do(t, http.MethodGet, "/metrics", nil, nil)
	text := string(m)
	if got := metric(t, text, "bitvk_draft_tokens_accepted_total"); got != float64(tm.DraftAccepted) {
		t.Errorf("bitvk_draft_tokens_accepted_total = %v, want %d", got, tm.DraftAccepted)
	}
	if got := metric(t, text, "bitvk_draft_accepted_length_count"); got != float64(tm.DraftPasses) {
		t.Errorf("bitvk_draft_accepted_length_count = %v, want %d passes", got, tm.DraftPasses)
	}
	for _, name := range []string{"bitvk_draft_tokens_total", "bitvk_draft_passes_total", "bitvk_decode_passes_saved_total"} {
		if metric(t, text, name) == 0 {
			t.Errorf("%s is 0", name)
		}
	}
	if _, err := New(Config{Engine: ts.engine, Tokenizer: ts.tok, DraftMax: 99}); err == nil {
		t.Error("a draft max of 99 was accepted")
	}
}
