package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"
)

// serveBench is bench --serve: streams of one prompt sent to a running
// server at several concurrencies, each measured as its clients see it.
type serveBench struct {
	url     string
	key     string
	clients []int
	prompt  string
	n, reps int
	asJSON  bool
	timeout time.Duration
}

// serveResult is one concurrency's row of bench --serve.
type serveResult struct {
	Clients      int     `json:"clients"`
	Requests     int     `json:"requests"`
	Tokens       int     `json:"tokens"`        // generated, all streams
	WallS        float64 `json:"wall_s"`        // first request sent to last reply done
	AggregateTs  float64 `json:"aggregate_ts"`  // Tokens / WallS
	StreamTs     float64 `json:"stream_ts"`     // mean per-stream decode speed (after its first token)
	MinStreamTs  float64 `json:"min_stream_ts"` // the slowest stream's
	TTFTMeanS    float64 `json:"ttft_mean_s"`   // time to first token
	TTFTMaxS     float64 `json:"ttft_max_s"`
	VsOneStream  float64 `json:"aggregate_vs_one_stream,omitempty"`
	StreamVsSolo float64 `json:"stream_vs_solo,omitempty"`
	// From a bitvk server's /metrics (absent from others): the mean step
	// that decoded exactly Clients streams and no prompt, and its forward
	// pass (the rest: sampling, log-probabilities, replies).
	StepMs float64 `json:"step_ms,omitempty"`
	PassMs float64 `json:"pass_ms,omitempty"`
}

// streamStats is one streamed completion as its client saw it.
type streamStats struct {
	ttft, total time.Duration
	tokens      int
}

func runServeBench(sb serveBench, stdout, stderr io.Writer) error {
	client := &http.Client{Timeout: sb.timeout}
	// One request first, not counted: the server's first touches of the
	// model's pages and buffers are not what a client waits for later.
	if _, err := sb.stream(client); err != nil {
		return err
	}
	// The rounds go through the concurrencies in turn (1, 4, 1, 4, …), not
	// one concurrency's rounds after another's: a VM's bandwidth moves
	// from minute to minute, and interleaved rounds see the same moments,
	// so the ratios between concurrencies hold even where the speeds drift.
	fmt.Fprintf(stderr, "bench: %d round(s) of %s concurrent streams in turn, %d tokens each…\n", sb.reps, joinInts(sb.clients), sb.n)
	type tally struct {
		r            serveResult
		ttfts, rates []float64
		wall         time.Duration
		steps        map[string]float64 // the server's step totals over this concurrency's rounds
	}
	tallies := make([]tally, len(sb.clients))
	for i, c := range sb.clients {
		tallies[i] = tally{r: serveResult{Clients: c}, steps: map[string]float64{}}
	}
	for rep := 0; rep < sb.reps; rep++ {
		for i, c := range sb.clients {
			tl := &tallies[i]
			before := sb.stepTotals(client)
			stats := make([]streamStats, c)
			errs := make([]error, c)
			var wg sync.WaitGroup
			start := time.Now()
			for j := range c {
				wg.Add(1)
				go func() {
					defer wg.Done()
					stats[j], errs[j] = sb.stream(client)
				}()
			}
			wg.Wait()
			tl.wall += time.Since(start)
			if err := errors.Join(errs...); err != nil {
				return err
			}
			after := sb.stepTotals(client)
			if before == nil || after == nil || tl.steps == nil {
				tl.steps = nil
			} else {
				for k, v := range after {
					tl.steps[k] += v - before[k]
				}
			}
			for _, s := range stats {
				tl.r.Requests++
				tl.r.Tokens += s.tokens
				tl.ttfts = append(tl.ttfts, s.ttft.Seconds())
				if s.tokens > 1 && s.total > s.ttft {
					tl.rates = append(tl.rates, float64(s.tokens-1)/(s.total-s.ttft).Seconds())
				}
			}
		}
	}
	var results []serveResult
	for _, tl := range tallies {
		r := tl.r
		if tl.steps != nil {
			r.StepMs, r.PassMs = stepMeans(map[string]float64{}, tl.steps, r.Clients)
		}
		r.WallS = tl.wall.Seconds()
		r.AggregateTs = float64(r.Tokens) / r.WallS
		r.TTFTMeanS, _ = meanSDf(tl.ttfts)
		r.TTFTMaxS = slices.Max(tl.ttfts)
		if len(tl.rates) > 0 {
			r.StreamTs, _ = meanSDf(tl.rates)
			r.MinStreamTs = slices.Min(tl.rates)
		}
		results = append(results, r)
	}
	var one *serveResult
	for i := range results {
		if results[i].Clients == 1 {
			one = &results[i]
		}
	}
	if one != nil {
		for i := range results {
			results[i].VsOneStream = results[i].AggregateTs / one.AggregateTs
			if one.StreamTs > 0 {
				results[i].StreamVsSolo = results[i].StreamTs / one.StreamTs
			}
		}
	}
	if sb.asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(results)
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "streams\trequests\ttokens\taggregate t/s\tvs 1 stream\tper stream t/s\tslowest\tvs solo\tTTFT mean s\tTTFT max s\tstep ms\tpass ms\t")
	for _, r := range results {
		vs, solo := "-", "-"
		if one != nil {
			vs, solo = fmt.Sprintf("%.2f×", r.VsOneStream), fmt.Sprintf("%.2f×", r.StreamVsSolo)
		}
		step, pass := "-", "-"
		if r.StepMs > 0 {
			step, pass = fmt.Sprintf("%.2f", r.StepMs), fmt.Sprintf("%.2f", r.PassMs)
		}
		fmt.Fprintf(tw, "%d\t%d\t%d\t%.2f\t%s\t%.2f\t%.2f\t%s\t%.3f\t%.3f\t%s\t%s\t\n", r.Clients, r.Requests, r.Tokens, r.AggregateTs, vs, r.StreamTs, r.MinStreamTs, solo, r.TTFTMeanS, r.TTFTMaxS, step, pass)
	}
	return tw.Flush()
}

// stream sends one streamed completion of sb.n tokens (the end of turn
// ignored) and times it as it arrives. It asks for the drawn token's log
// probability, so that every token arrives as a chunk even when it
// completes no character (a multi-byte character split over tokens).
func (sb serveBench) stream(client *http.Client) (streamStats, error) {
	var st streamStats
	body, _ := json.Marshal(map[string]any{
		"prompt": sb.prompt, "max_tokens": sb.n, "stream": true, "ignore_eos": true, "temperature": 0,
		"logprobs":       1, // a chunk per token, even one that completes no character yet
		"stream_options": map[string]any{"include_usage": true},
	})
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, strings.TrimSuffix(sb.url, "/")+"/v1/completions", bytes.NewReader(body))
	if err != nil {
		return st, err
	}
	req.Header.Set("Content-Type", "application/json")
	if sb.key != "" {
		req.Header.Set("Authorization", "Bearer "+sb.key)
	}
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return st, fmt.Errorf("bench --serve: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return st, fmt.Errorf("bench --serve: %s answered %s: %s", sb.url, resp.Status, bytes.TrimSpace(b))
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	usage := false
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			break
		}
		var chunk struct {
			Choices []struct {
				Text     string          `json:"text"`
				Logprobs json.RawMessage `json:"logprobs"`
			} `json:"choices"`
			Usage *struct {
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal([]byte(data), &chunk); err != nil {
			return st, fmt.Errorf("bench --serve: a stream chunk is not JSON: %q", data)
		}
		if c := chunk.Choices; st.ttft == 0 && len(c) > 0 && (c[0].Text != "" || len(c[0].Logprobs) > 0 && string(c[0].Logprobs) != "null") {
			st.ttft = time.Since(start)
		}
		if chunk.Usage != nil {
			st.tokens, usage = chunk.Usage.CompletionTokens, true
		}
	}
	if err := sc.Err(); err != nil {
		return st, fmt.Errorf("bench --serve: reading the stream: %w", err)
	}
	st.total = time.Since(start)
	if !usage {
		return st, errors.New("bench --serve: the stream ended without its usage chunk (is this a bitvk or OpenAI-compatible server?)")
	}
	if st.ttft == 0 {
		st.ttft = st.total
	}
	return st, nil
}

// stepTotals reads the step histograms' totals from the server's
// /metrics (bitvk_step_seconds and bitvk_forward_pass_seconds, their _sum
// and _count samples by label set), or nil where it has none: another
// server, or metrics it does not answer.
func (sb serveBench) stepTotals(client *http.Client) map[string]float64 {
	req, err := http.NewRequest(http.MethodGet, strings.TrimSuffix(sb.url, "/")+"/metrics", nil)
	if err != nil {
		return nil
	}
	if sb.key != "" {
		req.Header.Set("Authorization", "Bearer "+sb.key)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil
	}
	totals := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "bitvk_step_seconds_") && !strings.HasPrefix(line, "bitvk_forward_pass_seconds_") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			totals[line[:i]] = v
		}
	}
	return totals
}

// stepMeans is the mean step and pass, in ms, of the steps between two
// readings of stepTotals that decoded exactly c streams and no prompt; 0, 0
// when there were none or no readings.
func stepMeans(before, after map[string]float64, c int) (stepMs, passMs float64) {
	if before == nil || after == nil {
		return 0, 0
	}
	labels := fmt.Sprintf(`{prompt="false",streams="%d"}`, c)
	delta := func(name string) float64 { return after[name+labels] - before[name+labels] }
	n := delta("bitvk_step_seconds_count")
	if n <= 0 || delta("bitvk_forward_pass_seconds_count") != n {
		return 0, 0
	}
	return 1e3 * delta("bitvk_step_seconds_sum") / n, 1e3 * delta("bitvk_forward_pass_seconds_sum") / n
}
