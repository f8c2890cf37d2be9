package server

import (
	"net/http"

	"github.com/bitvk/bitvk/nn"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are what GET /metrics exports, in a registry of the server's own
// (never the process-wide default), so that two servers in one process,
// as in tests, count apart.
type metrics struct {
	reg *prometheus.Registry

	requests     *prometheus.CounterVec // by endpoint and status code
	promptTokens prometheus.Counter     // prompt tokens, cached ones included
	cachedTokens prometheus.Counter     // prompt tokens whose K/V were reused from a slot's cache
	cacheHits    prometheus.Counter     // requests that reused some
	genTokens    prometheus.Counter     // tokens sampled
	genRate      prometheus.Histogram   // per request: generated tok/s
	promptRate   prometheus.Histogram   // per request: prompt tok/s (evaluated tokens)
	firstToken   prometheus.Histogram   // arrival to first sampled token, queue wait included
	queueWait    prometheus.Histogram   // arrival to the start of generation
	duration     *prometheus.HistogramVec
	stepTime     *prometheus.HistogramVec // a scheduler step: its pass, the draws and the replies
	passTime     *prometheus.HistogramVec // the step's forward pass

	// speculative decoding
	drafted     prometheus.Counter   // drafted tokens verified
	accepted    prometheus.Counter   // of which kept
	draftPasses prometheus.Counter   // verification passes
	passesSaved prometheus.Counter   // forward passes fewer than plain decoding
	keptLength  prometheus.Histogram // drafted tokens kept per verification pass
}

func newMetrics(queueDepth, running func() float64, slots float64) *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	f := promauto{m.reg}
	m.requests = f.counterVec("bitvk_http_requests_total",
		"HTTP requests answered, by endpoint and status code (499: the client went away first).", "endpoint", "code")
	m.promptTokens = f.counter("bitvk_prompt_tokens_total", "Prompt tokens of the completions served, cached ones included.")
	m.cachedTokens = f.counter("bitvk_prompt_tokens_cached_total", "Prompt tokens whose keys and values were reused from a slot's cache (the prefix cache; not evaluated again).")
	m.cacheHits = f.counter("bitvk_prefix_cache_hits_total", "Completions that reused the start of their prompt from a slot's cache.")
	m.genTokens = f.counter("bitvk_generated_tokens_total", "Tokens generated (sampled), the end-of-turn token included.")
	rates := prometheus.ExponentialBuckets(1, 2, 16) // 1 … 32768 tok/s
	m.genRate = f.histogram("bitvk_generation_tokens_per_second", "Generation speed of each completion of at least two tokens.", rates)
	m.promptRate = f.histogram("bitvk_prompt_tokens_per_second", "Prompt processing speed of each completion (tokens evaluated, cached ones left out).", rates)
	times := prometheus.ExponentialBuckets(0.001, 2.5, 14) // 1 ms … 150 s
	m.firstToken = f.histogram("bitvk_time_to_first_token_seconds", "From a request's arrival to its first generated token, queue wait and prompt included.", times)
	m.queueWait = f.histogram("bitvk_queue_wait_seconds", "From a request's arrival until the model starts on it.", times)
	m.drafted = f.counter("bitvk_draft_tokens_total", "Tokens drafted for speculative decoding and verified.")
	m.accepted = f.counter("bitvk_draft_tokens_accepted_total", "Drafted tokens kept (the sampler drew them); over bitvk_draft_tokens_total: the acceptance rate.")
	m.draftPasses = f.counter("bitvk_draft_passes_total", "Verification passes: a drafted continuation evaluated in one batched forward pass.")
	m.passesSaved = f.counter("bitvk_decode_passes_saved_total", "Forward passes speculative decoding saved against plain decoding.")
	m.keptLength = f.histogram("bitvk_draft_accepted_length", "Drafted tokens kept per verification pass.", prometheus.LinearBuckets(0, 1, nn.MaxDraft+1))
	m.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "bitvk_http_request_duration_seconds", Help: "Time to answer a request, streaming included, by endpoint.", Buckets: times,
	}, []string{"endpoint"})
	m.reg.MustRegister(m.duration)
	// A step's labels: how many slots it decoded a token for (the
	// continuous batch), and whether it also fed prompt tokens.
	steps := prometheus.ExponentialBuckets(0.0005, 1.5, 24) // 0.5 ms … 5.6 s
	m.stepTime = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "bitvk_step_seconds", Help: "A scheduler step: one forward pass over every busy slot's tokens, the sampling after it and the replies, by the slots decoding in it and whether it held prompt tokens.", Buckets: steps,
	}, []string{"streams", "prompt"})
	m.passTime = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "bitvk_forward_pass_seconds", Help: "The forward pass of a scheduler step, by the slots decoding in it and whether it held prompt tokens.", Buckets: steps,
	}, []string{"streams", "prompt"})
	m.reg.MustRegister(m.stepTime, m.passTime)
	m.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "bitvk_queue_depth", Help: "Requests waiting for a slot (those being generated not included)."}, queueDepth),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "bitvk_requests_running", Help: "Requests the model is generating now, one per busy slot."}, running),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "bitvk_slots", Help: "Slots: requests the server generates at once (--parallel)."}, func() float64 { return slots }),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return m
}

// observeDraft counts a completion's speculative decoding.
func (m *metrics) observeDraft(st nn.Stats) {
	d := st.Draft
	m.drafted.Add(float64(d.Drafted))
	m.accepted.Add(float64(d.Accepted))
	m.draftPasses.Add(float64(d.Passes))
	m.passesSaved.Add(float64(st.PassesSaved()))
	for n, c := range d.Lengths {
		for range c {
			m.keptLength.Observe(float64(n))
		}
	}
}

// handler serves the registry in Prometheus' text format.
func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// promauto registers each metric as it is made.
type promauto struct{ reg *prometheus.Registry }

func (p promauto) counter(name, help string) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	p.reg.MustRegister(c)
	return c
}

func (p promauto) counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	p.reg.MustRegister(c)
	return c
}

func (p promauto) histogram(name, help string, buckets []float64) prometheus.Histogram {
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets})
	p.reg.MustRegister(h)
	return h
}
