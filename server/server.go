// Package server is bitvk's OpenAI-compatible HTTP API and its web chat page.
//
// It serves one model: POST /v1/chat/completions and /v1/completions (with
// and without streaming, as Server-Sent Events), GET /v1/models, /health,
// /metrics (Prometheus) and the chat page at /, llama-server's and
// Ollama's native endpoints (native.go). A bounded queue sits in front of
// the model, and one scheduler goroutine, the only user of the backend,
// serves up to Config.Parallel requests at once in the slots of its K/V
// cache, all in one forward pass per step (see slots.go).
// docs/SERVER.md describes the API for its users.
package server

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bitvk/bitvk/nn"
	"github.com/bitvk/bitvk/tokenizer"
)

// Config is what a Server serves and how.
type Config struct {
	Engine    *nn.Engine           // the model; the server's worker is its only user until Close
	Tokenizer *tokenizer.Tokenizer // the model's
	Template  *tokenizer.Template  // the chat template; nil: /v1/chat/completions is refused
	ModelName string               // the model id of /v1/models and of every response; "": "bitvk"
	Backend   string               // what runs the model, shown by /v1/models

	Sampler    nn.SamplerConfig // the sampling of a request that does not say
	RandomSeed bool             // a request with no seed gets a fresh one (else Sampler.Seed)
	MaxTokens  int              // max_tokens of a request that does not say; ≤ 0: until the context is full

	// Draft drafts tokens for speculative decoding (nil: none); it must
	// be safe for concurrent use (the drafters of nn/spec only read).
	// DraftMax, DraftThreshold and DraftEvery are nn.GenerateOptions'.
	Draft          nn.Drafter
	DraftMax       int
	DraftThreshold float32
	DraftEvery     bool // verify every draft, no backoff (tests, measurements)

	// Parallel is the number of requests generated at once, each in its
	// own slot of the backend's K/V cache (nn.MultiBackend); 0: every slot
	// the backend has. A backend without ForwardMulti has one.
	Parallel int
	// PrefillChunk is the most prompt tokens evaluated per forward pass
	// while some slot generates; 0: DefaultPrefillChunk.
	PrefillChunk int

	Queue   int           // requests that may wait for a slot; more are refused with 503
	Timeout time.Duration // deadline of a request from its arrival, queue wait included; 0: none
	MaxBody int64         // request body limit in bytes; 0: DefaultMaxBody
	APIKey  string        // when set, the API and /metrics need "Authorization: Bearer APIKey"
	NoReuse bool          // evaluate every prompt in full, never reusing the slots' K/V caches (no prefix cache)
	// CORSOrigins are the origins (scheme://host[:port]) whose pages may
	// call the API from a browser; "*": any. None: only the server's own
	// page, as browsers allow by default.
	CORSOrigins []string
	Log         *slog.Logger // one line per request; nil: none
	ServerLog   *slog.Logger // errors of the HTTP server itself (Serve); nil: Log
}

// DefaultMaxBody is the request body limit when Config.MaxBody is 0.
const DefaultMaxBody = 1 << 20

// DefaultPrefillChunk is Config.PrefillChunk when 0.
const DefaultPrefillChunk = 32

// writeTimeout bounds each write to a client: one that stops reading for
// this long loses its connection rather than holding the model.
const writeTimeout = time.Minute

// Causes of a request's context ending, other than its client leaving.
var (
	errShuttingDown = errors.New("the server is shutting down")
	errDeadline     = errors.New("the request's deadline passed")
	errClientGone   = errors.New("the client went away")
)

// Server serves one model over HTTP. Make it with New, mount Handler (or
// call Serve), and Close it when done; it does not close the engine.
type Server struct {
	cfg     Config
	w       *scheduler
	q       *queue
	m       *metrics
	handler http.Handler
	keyHash *[32]byte // sha256 of the API key, nil when none
	created int64     // Unix time of New, the model's "created"

	stopCtx  context.Context // ended by Close and when a shutdown's grace runs out: every request ends
	stopAll  context.CancelCauseFunc
	draining atomic.Bool // shutting down: /health says so, new requests are refused
	quit     chan struct{}
	done     chan struct{} // the scheduler has returned
	once     sync.Once
}

// New checks c and starts the server's scheduler.
func New(c Config) (*Server, error) {
	switch {
	case c.Engine == nil || c.Tokenizer == nil:
		return nil, errors.New("server: the config needs an engine and its tokenizer")
	case c.Queue < 0:
		return nil, fmt.Errorf("server: queue length %d is negative", c.Queue)
	case c.Parallel < 0 || c.PrefillChunk < 0:
		return nil, fmt.Errorf("server: parallel %d and prefill chunk %d must not be negative", c.Parallel, c.PrefillChunk)
	case c.Timeout < 0:
		return nil, fmt.Errorf("server: timeout %v is negative", c.Timeout)
	case c.MaxBody < 0:
		return nil, fmt.Errorf("server: body limit %d is negative", c.MaxBody)
	case c.DraftMax < 0 || c.DraftMax > nn.MaxDraft:
		return nil, fmt.Errorf("server: draft max %d is outside 0..%d", c.DraftMax, nn.MaxDraft)
	case !(c.DraftThreshold >= 0 && c.DraftThreshold <= 1):
		return nil, fmt.Errorf("server: draft threshold %v is outside [0, 1]", c.DraftThreshold)
	}
	if _, err := nn.NewSampler(c.Sampler); err != nil {
		return nil, fmt.Errorf("server: default sampling: %w", err)
	}
	origins := make([]string, len(c.CORSOrigins))
	for i, o := range c.CORSOrigins {
		if err := CheckOrigin(o); err != nil {
			return nil, err
		}
		origins[i] = strings.TrimSuffix(o, "/") // a browser's Origin has no slash
	}
	c.CORSOrigins = origins
	if c.MaxBody == 0 {
		c.MaxBody = DefaultMaxBody
	}
	if c.PrefillChunk == 0 {
		c.PrefillChunk = DefaultPrefillChunk
	}
	mb := nn.AsMulti(c.Engine.Backend())
	switch {
	case c.Parallel == 0:
		c.Parallel = mb.Slots()
	case c.Parallel > mb.Slots():
		return nil, fmt.Errorf("server: %d parallel requests need as many slots; the backend (%s) has %d", c.Parallel, mb.Name(), mb.Slots())
	}
	if c.ModelName == "" {
		c.ModelName = "bitvk"
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	if c.ServerLog == nil {
		c.ServerLog = c.Log
	}
	s := &Server{cfg: c, q: newQueue(c.Queue), created: time.Now().Unix(), quit: make(chan struct{}), done: make(chan struct{})}
	if c.APIKey != "" {
		h := sha256.Sum256([]byte(c.APIKey))
		s.keyHash = &h
	}
	s.stopCtx, s.stopAll = context.WithCancelCause(context.Background())
	s.m = newMetrics(
		func() float64 { return float64(s.q.len()) },
		func() float64 { return float64(s.w.busy.Load()) },
		float64(c.Parallel))
	s.w = newScheduler(mb, c.Engine.Config(), c.Tokenizer, c.Parallel, s.q, s.m)
	s.w.reuse, s.w.chunk = !c.NoReuse, c.PrefillChunk
	s.w.draft = nn.GenerateOptions{Draft: c.Draft, DraftMax: c.DraftMax, DraftThreshold: c.DraftThreshold, DraftEvery: c.DraftEvery}
	if s.w.draft.DraftMax == 0 {
		s.w.draft.DraftMax = nn.DefaultDraftMax
	}
	s.handler = s.routes()
	go func() {
		defer close(s.done)
		s.w.loop(s.quit)
	}()
	return s, nil
}

// Close ends every request still running or waiting (they get 503 or an
// error event) and stops the scheduler. It returns when the scheduler has
// left the backend.
func (s *Server) Close() error {
	s.once.Do(func() {
		s.draining.Store(true)
		s.q.close()
		s.stopAll(errShuttingDown)
		close(s.quit)
		<-s.done
	})
	return nil
}

// Handler is the server's HTTP handler: the API, the metrics and the page.
func (s *Server) Handler() http.Handler { return s.handler }

// Serve answers requests on ln until ctx ends, then shuts down: it stops
// accepting, lets the requests in flight (running and queued) finish for up
// to grace, then ends those still going, each within one token, and
// returns when every connection is closed. ln is closed.
func (s *Server) Serve(ctx context.Context, ln net.Listener, grace time.Duration) error {
	hs := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       time.Minute, // the whole request; replies stream for as long as they need
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(s.cfg.ServerLog.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	s.draining.Store(true)
	gctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := hs.Shutdown(gctx); err != nil {
		s.cfg.ServerLog.Warn("shutdown: the grace period is over; ending the requests still in flight", "grace", grace)
		s.stopAll(errShuttingDown)
		// Each ends within a token and says why; give them a moment to.
		fctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if hs.Shutdown(fctx) != nil {
			hs.Close()
		}
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// routes maps the paths to their handlers.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	type route struct {
		path, method string
		public       bool // served without the API key
		h            func(w http.ResponseWriter, r *http.Request, rec *recorder)
	}
	for _, rt := range []route{
		{"/v1/chat/completions", http.MethodPost, false, s.chatCompletions},
		{"/v1/completions", http.MethodPost, false, s.completions},
		{"/v1/models", http.MethodGet, false, s.models},
		{"/v1/models/{id}", http.MethodGet, false, s.model},
		{"/health", http.MethodGet, true, s.health},
		{"/slots", http.MethodGet, false, s.slotsStatus},
		{"/props", http.MethodGet, false, s.props},
		{"/completion", http.MethodPost, false, s.llamaCompletion},
		{"/tokenize", http.MethodPost, false, s.tokenize},
		{"/detokenize", http.MethodPost, false, s.detokenize},
		{"/api/generate", http.MethodPost, false, s.ollamaGenerate},
		{"/api/chat", http.MethodPost, false, s.ollamaChat},
		{"/api/tags", http.MethodGet, false, s.ollamaTags},
		{"/api/show", http.MethodPost, false, s.ollamaShow},
		{"/metrics", http.MethodGet, false, func(w http.ResponseWriter, r *http.Request, _ *recorder) { s.m.handler().ServeHTTP(w, r) }},
		{"/{$}", http.MethodGet, true, servePage},
		{"/app.js", http.MethodGet, true, servePage},
		{"/style.css", http.MethodGet, true, servePage},
	} {
		name := strings.TrimSuffix(rt.path, "{$}")
		mux.Handle(rt.path, s.endpoint(name, rt.method, rt.public, rt.h))
	}
	mux.Handle("/", s.endpoint("other", "", true, func(w http.ResponseWriter, r *http.Request, _ *recorder) {
		writeError(w, newError(http.StatusNotFound, "invalid_request_error", "unknown_url", "", "unknown request URL: %s %s", r.Method, r.URL.Path))
	}))
	return mux
}

// recorder remembers what a handler answered, for the metrics and the log.
type recorder struct {
	http.ResponseWriter
	status int
	gone   bool        // the client left before the answer was complete
	attrs  []slog.Attr // what the handler adds to the log line
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// endpoint wraps a handler with the method check, the API key check, the
// request metrics and the log line. method "" allows any.
func (s *Server) endpoint(name, method string, public bool, h func(http.ResponseWriter, *http.Request, *recorder)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &recorder{ResponseWriter: w}
		defer func() {
			code := rec.status
			switch {
			case rec.gone:
				code = 499 // nginx's "client closed request"
			case code == 0:
				code = http.StatusOK
			}
			s.m.requests.WithLabelValues(name, fmt.Sprint(code)).Inc()
			s.m.duration.WithLabelValues(name).Observe(time.Since(start).Seconds())
			attrs := append([]slog.Attr{
				slog.String("method", r.Method), slog.String("path", r.URL.Path),
				slog.Int("status", code), slog.Duration("duration", time.Since(start)),
			}, rec.attrs...)
			s.cfg.Log.LogAttrs(r.Context(), slog.LevelInfo, "request", attrs...)
		}()
		if s.cors(w, r, method) {
			rec.status = http.StatusNoContent
			return
		}
		if method != "" && r.Method != method && !(method == http.MethodGet && r.Method == http.MethodHead) {
			w.Header().Set("Allow", method)
			writeError(rec, newError(http.StatusMethodNotAllowed, "invalid_request_error", "method_not_allowed", "",
				"%s %s is not allowed; use %s", r.Method, r.URL.Path, method))
			return
		}
		if !public && !s.authorized(r) {
			writeError(rec, newError(http.StatusUnauthorized, "invalid_request_error", "invalid_api_key", "",
				"this server needs an API key: send the header \"Authorization: Bearer KEY\" with the key it was started with (--api-key)"))
			return
		}
		h(rec, r, rec)
	})
}

// cors answers for the origins of Config.CORSOrigins: it marks a request
// from one as readable by its page, and answers a browser's preflight
// (OPTIONS with Access-Control-Request-Method) for one itself, without the
// API key, which browsers never send with a preflight; handled reports
// that. A request from another origin gets no CORS headers: the browser
// then withholds the answer from the page (a preflight gets 405).
func (s *Server) cors(w http.ResponseWriter, r *http.Request, method string) (handled bool) {
	origin := r.Header.Get("Origin")
	if origin == "" || !s.corsAllows(origin) {
		return false
	}
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", origin)
	h.Add("Vary", "Origin")
	h.Set("Access-Control-Expose-Headers", "Retry-After")
	if r.Method != http.MethodOptions || r.Header.Get("Access-Control-Request-Method") == "" {
		return false
	}
	allow := method
	if allow == "" {
		allow = "GET, POST"
	} else if allow == http.MethodGet {
		allow = "GET, HEAD"
	}
	h.Set("Access-Control-Allow-Methods", allow)
	h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type")
	h.Set("Access-Control-Max-Age", "600")
	w.WriteHeader(http.StatusNoContent)
	return true
}

// CheckOrigin accepts "*" or an origin as browsers send it:
// scheme://host[:port], no path, query or user (Config.CORSOrigins).
func CheckOrigin(o string) error {
	if o == "*" {
		return nil
	}
	u, err := url.Parse(o)
	if err != nil || u.Scheme == "" || u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("server: CORS origin %q is not \"*\" or scheme://host[:port] (such as http://localhost:3000)", o)
	}
	return nil
}

func (s *Server) corsAllows(origin string) bool {
	for _, o := range s.cfg.CORSOrigins {
		if o == "*" || strings.EqualFold(o, origin) {
			return true
		}
	}
	return false
}

// authorized checks the bearer token against the API key, in constant time
// (the hashes have one length, whatever the token's).
func (s *Server) authorized(r *http.Request) bool {
	if s.keyHash == nil {
		return true
	}
	scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	h := sha256.Sum256([]byte(strings.TrimSpace(token)))
	return subtle.ConstantTimeCompare(h[:], s.keyHash[:]) == 1
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// health is 200 while the server takes requests and 503 while it shuts down.
func (s *Server) health(w http.ResponseWriter, _ *http.Request, _ *recorder) {
	if s.draining.Load() {
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"status": "shutting down"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "queue": s.q.len(), "queue_limit": s.cfg.Queue})
}

// modelInfo is one entry of /v1/models; meta is bitvk's own.
type modelInfo struct {
	ID      string    `json:"id"`
	Object  string    `json:"object"`
	Created int64     `json:"created"`
	OwnedBy string    `json:"owned_by"`
	Meta    modelMeta `json:"meta"`
}

type modelMeta struct {
	Context  int    `json:"context"`
	Vocab    int    `json:"vocab"`
	Backend  string `json:"backend,omitempty"`
	Template string `json:"chat_template,omitempty"`
}

func (s *Server) info() modelInfo {
	m := modelInfo{ID: s.cfg.ModelName, Object: "model", Created: s.created, OwnedBy: "bitvk",
		Meta: modelMeta{Context: s.cfg.Engine.Context(), Vocab: s.cfg.Tokenizer.Len(), Backend: s.cfg.Backend}}
	if s.cfg.Template != nil {
		m.Meta.Template = s.cfg.Template.Name()
	}
	return m
}

func (s *Server) models(w http.ResponseWriter, _ *http.Request, _ *recorder) {
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []modelInfo{s.info()}})
}

func (s *Server) model(w http.ResponseWriter, r *http.Request, _ *recorder) {
	if id := r.PathValue("id"); id != s.cfg.ModelName {
		writeError(w, newError(http.StatusNotFound, "invalid_request_error", "model_not_found", "model",
			"the model %q does not exist; this server has %q", id, s.cfg.ModelName))
		return
	}
	writeJSON(w, http.StatusOK, s.info())
}

// roles maps the roles a message may have to the template's.
var roles = map[string]string{"system": "system", "developer": "system", "user": "user", "assistant": "assistant"}

func roleNames() string {
	names := make([]string, 0, len(roles))
	for r := range roles {
		names = append(names, r)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}
