package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/bitvk/bitvk/models"
	"github.com/bitvk/bitvk/nn"
	"github.com/bitvk/bitvk/server"
	"github.com/bitvk/bitvk/tokenizer"
)

func runServe(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("serve", "-m MODEL [--host ADDR] [--port N] [--api-key KEY] [flags]", stderr)
	var src modelSource
	src.addFlags(fs)
	host := fs.String("host", "127.0.0.1", "address to listen on (0.0.0.0: every interface; then set --api-key)")
	port := fs.Int("port", 8080, "TCP port to listen on (0: any free port)")
	apiKey := fs.String("api-key", "", "require \"Authorization: Bearer KEY\" on the API and /metrics (default: $BITVK_API_KEY)")
	parallel := fs.Int("parallel", 4, "requests generated at once (slots of the K/V cache, each of -c positions, decoded together in one pass)")
	prefillChunk := fs.Int("prefill-chunk", server.DefaultPrefillChunk, "most prompt tokens read per forward pass while other requests generate (smaller: smoother streams, slower prompts)")
	queue := fs.Int("queue", 16, "requests that may wait for a free slot; more are refused with 503 and Retry-After")
	timeout := fs.Duration("timeout", 10*time.Minute, "deadline of each request from its arrival, queue wait included (0: none)")
	maxBody := fs.Int64("max-body", server.DefaultMaxBody, "largest request body in bytes")
	grace := fs.Duration("grace", 10*time.Second, "on SIGINT or SIGTERM, how long requests in flight may take to finish before they are cut")
	alias := fs.String("alias", "", "model id in /v1/models and responses (default: the file's name)")
	tmpl := fs.String("chat-template", "", "chat template instead of the model's: "+strings.Join(tokenizer.TemplateNames(), ", "))
	noReuse := fs.Bool("no-cache-reuse", false, "evaluate every prompt in full instead of reusing the start it shares with a slot's cache (the prefix cache)")
	n := fs.Int("n", -1, "max_tokens of a request that gives none (-1: until the model ends its turn or the context is full)")
	quiet := fs.Bool("quiet", false, "do not log each request")
	cors := fs.String("cors", "", "comma-separated origins (such as http://localhost:3000) whose web pages may call the API from a browser; * for any (default: none but the server's own page)")
	var bf backendFlags
	addBackendFlags(fs, &bf, true)
	var sf samplerFlags
	addSamplerFlags(fs, &sf)
	var df draftFlags
	addDraftFlags(fs, &df)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if *apiKey == "" {
		*apiKey = os.Getenv("BITVK_API_KEY")
	}
	switch {
	case len(pos) > 0:
		return usageError(fs, "unexpected argument %q", pos[0])
	case !src.given():
		return usageError(fs, errSources)
	case *port < 0 || *port > 65535:
		return usageError(fs, "--port %d is not a TCP port", *port)
	case *queue < 0 || *timeout < 0 || *maxBody <= 0 || *grace < 0:
		return usageError(fs, "--queue, --timeout and --grace must not be negative, and --max-body must be positive")
	case *n == 0 || *n < -1:
		return usageError(fs, "-n must be positive or -1")
	case *parallel < 1 || *parallel > 64:
		return usageError(fs, "--parallel %d is outside 1..64", *parallel)
	case *prefillChunk < 1:
		return usageError(fs, "--prefill-chunk must be at least 1")
	}
	var origins []string
	for _, o := range strings.Split(*cors, ",") {
		if o = strings.TrimSpace(o); o == "" {
			continue
		}
		if err := server.CheckOrigin(o); err != nil {
			return usageError(fs, "--cors: %v", strings.TrimPrefix(err.Error(), "server: "))
		}
		origins = append(origins, o)
	}
	if slices.Contains(origins, "*") && *apiKey == "" {
		fmt.Fprintln(stderr, "note: --cors '*' lets every web page this machine's browsers open call the API; consider --api-key")
	}
	if err := bf.check(fs); err != nil {
		return err
	}
	if err := df.check(fs); err != nil {
		return err
	}
	sc, randomSeed := sf.config()
	if _, err := nn.NewSampler(sc); err != nil {
		return usageError(fs, "%v", err)
	}

	bf.slots = *parallel
	m, err := src.open(bf)
	if err != nil {
		return err
	}
	defer m.Close()
	if err := sf.checkVocab(m.config.Vocab); err != nil {
		return err
	}
	slots := nn.AsMulti(m.backend).Slots()
	if slots < *parallel {
		fmt.Fprintf(stderr, "note: %s holds %d sequence(s): serving %d request(s) at a time instead of --parallel %d\n", m.backend.Name(), slots, slots, *parallel)
		*parallel = slots
	}
	tok, err := nn.NewTokenizer(m.file)
	if err != nil {
		return fmt.Errorf("serving needs the model's tokenizer: %w", err)
	}
	// The default breakers' tokens, for requests that turn DRY on too.
	sc.DRYBreakers = tok.Containing(sf.dryBreakerStrings())
	for _, note := range tok.Notes() {
		fmt.Fprintf(stderr, "note: %s\n", note)
	}
	t, err := nn.ChatTemplate(m.file, *tmpl)
	if err != nil {
		fmt.Fprintf(stderr, "note: %v; /v1/chat/completions is off (choose a template with --chat-template)\n", err)
		t = nil
	}
	drafter, what, err := df.drafter(m)
	if err != nil {
		return err
	}
	name := *alias
	if name == "" {
		name = modelName(src)
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	cfg := server.Config{
		Engine: m.engine, Tokenizer: tok, Template: t, ModelName: name, Backend: m.backend.Name(),
		Sampler: sc, RandomSeed: randomSeed, MaxTokens: max(*n, 0),
		Parallel: *parallel, PrefillChunk: *prefillChunk,
		Queue: *queue, Timeout: *timeout, MaxBody: *maxBody, APIKey: *apiKey, NoReuse: *noReuse, CORSOrigins: origins,
		Log: log, ServerLog: log,
	}
	cfg.Draft, cfg.DraftMax, cfg.DraftThreshold = drafter, df.max, float32(df.threshold)
	if *quiet {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	srv, err := server.New(cfg)
	if err != nil {
		return err
	}
	defer srv.Close()

	ln, err := net.Listen("tcp", net.JoinHostPort(*host, strconv.Itoa(*port)))
	if err != nil {
		return err
	}
	tmplName := "none"
	if t != nil {
		tmplName = t.Name()
	}
	fmt.Fprintf(stderr, "%s: %s, %s, %d slots of context %d, template %s\n", m.path, describe(m.config), m.backend.Name(), *parallel, m.engine.Context(), tmplName)
	df.announce(stderr, what, "while one request runs")
	if ip := net.ParseIP(*host); *apiKey == "" && (ip == nil || !ip.IsLoopback()) && *host != "localhost" {
		fmt.Fprintf(stderr, "warning: listening on %s without --api-key: anyone who can reach this port can use the model\n", *host)
	}
	fmt.Fprintf(stderr, "listening on http://%s (chat page at /, API at /v1); Ctrl-C stops\n", ln.Addr())

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln, *grace) }()
	select {
	case err := <-served: // the listener failed
		return err
	case <-ctx.Done():
	}
	stop() // a second signal ends the process at once
	fmt.Fprintf(stderr, "shutting down: finishing the requests in flight (up to --grace %v)\n", *grace)
	if err := <-served; err != nil {
		return err
	}
	fmt.Fprintln(stderr, "stopped")
	return nil
}

// config is the sampling the flags ask for (the sampler of run and chat,
// the server's defaults); with --seed -1 it draws a fresh seed and says so
// (the server then draws one for every request without a seed).
func (sf *samplerFlags) config() (nn.SamplerConfig, bool) {
	penalty := sf.repeatPenalty
	if sf.repeatLastN == 0 {
		penalty = 1 // as in llama.cpp, a window of 0 turns the penalty off
	}
	c := nn.SamplerConfig{
		Temperature: float32(sf.temp), TopK: sf.topK, TopP: float32(sf.topP), MinP: float32(sf.minP),
		RepeatPenalty: float32(penalty), RepeatLastN: sf.repeatLastN, Seed: uint64(sf.seed),
		TypicalP: float32(sf.typical), Mirostat: sf.mirostat,
		MirostatTau: float32(sf.mirostatEnt), MirostatEta: float32(sf.mirostatLR),
		XTCProbability: float32(sf.xtcProbability), XTCThreshold: float32(sf.xtcThreshold),
		DRYMultiplier: float32(sf.dryMultiplier), DRYBase: float32(sf.dryBase),
		DRYAllowedLength: sf.dryAllowedLength, DRYLastN: sf.dryLastN,
		LogitBias: sf.logitBias.m,
	}
	if sf.dryLastN == 0 {
		c.DRYMultiplier = 0 // as in llama.cpp, a window of 0 turns DRY off
	}
	if sf.seed < 0 {
		c.Seed = rand.Uint64()
		return c, true
	}
	return c, false
}

// modelName is the model's id for clients: the file's name without .gguf
// (-m, or -hf once pulled), "synthetic-SHAPE", or the built-in model's name.
func modelName(src modelSource) string {
	switch {
	case src.path != "":
		return strings.TrimSuffix(filepath.Base(src.path), ".gguf")
	case src.shape != "":
		return "synthetic-" + src.shape
	}
	return models.Default().Name
}
