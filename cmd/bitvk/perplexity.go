package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/bitvk/bitvk/gguf"
	"github.com/bitvk/bitvk/models"
	"github.com/bitvk/bitvk/nn"
	"github.com/bitvk/bitvk/nn/synth"
	"github.com/bitvk/bitvk/tokenizer"
)

// defaultPerplexityCtx is llama-perplexity's default -c, so that a run
// without -c gives numbers comparable with llama.cpp's.
const defaultPerplexityCtx = 512

func runPerplexity(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("perplexity", "-m MODEL -f TEXT [-c 512] [--chunks N] [-b N] [flags]", stderr)
	var src modelSource
	src.addFlags(fs)
	file := fs.String("f", "", "text `file` to score (tokenized whole, as bytes)")
	chunks := fs.Int("chunks", -1, "score at most `N` chunks (-1: every chunk the text fills)")
	batch := fs.Int("b", 512, "positions evaluated per forward pass")
	klBase := fs.String("kl-divergence-base", "", "log-probability `file`: written by a run without --kl-divergence, read by one with it")
	klMode := fs.Bool("kl-divergence", false, "run the tokens saved in --kl-divergence-base again and compare (KL divergence, top token, PPL ratio); -f is not needed")
	var bf backendFlags
	addBackendFlags(fs, &bf, true)
	cf := fs.Lookup("c")
	cf.Usage = "tokens per chunk, n_ctx, as llama-perplexity's -c (the default shrinks to a shorter model context; --kl-divergence takes the base's)"
	cf.DefValue = fmt.Sprint(defaultPerplexityCtx)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: bitvk perplexity -m MODEL -f TEXT [-c 512] [--chunks N] [-b N] [flags]")
		fmt.Fprintln(stderr, "       bitvk perplexity -m MODEL -f TEXT --kl-divergence-base BASE   (save log-probabilities)")
		fmt.Fprintln(stderr, "       bitvk perplexity -m MODEL --kl-divergence-base BASE --kl-divergence   (compare with them)")
		fmt.Fprintln(stderr)
		fmt.Fprintln(stderr, "Measures perplexity as llama.cpp's llama-perplexity does, so the numbers compare: the text is")
		fmt.Fprintln(stderr, "tokenized whole and cut into chunks of -c tokens, each evaluated from an empty context with")
		fmt.Fprintln(stderr, "its first token replaced by BOS, and the second half of each chunk scored. Prints the running")
		fmt.Fprintln(stderr, "estimate [1]…,[2]…, then 'Final estimate: PPL = … +/- …'; progress goes to standard error.")
		fmt.Fprintln(stderr)
		fs.PrintDefaults()
	}
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	cSet := flagGiven(fs, "c")
	switch {
	case len(pos) > 0:
		return usageError(fs, "unexpected argument %q", pos[0])
	case !src.given():
		return usageError(fs, errSources)
	case *klMode && *klBase == "":
		return usageError(fs, "--kl-divergence needs --kl-divergence-base FILE, written by an earlier run without --kl-divergence")
	case !*klMode && *file == "":
		return usageError(fs, "give the text to score with -f FILE")
	case *chunks == 0 || *chunks < -1:
		return usageError(fs, "--chunks must be positive, or -1 for every chunk")
	case *batch < 1:
		return usageError(fs, "-b must be positive")
	case cSet && bf.ctx < nn.MinPerplexityContext:
		return usageError(fs, "-c must be at least %d: half of each chunk is context, the other half is scored", nn.MinPerplexityContext)
	}
	if err := bf.check(fs); err != nil {
		return err
	}

	// The tokens come from the base file (comparison) or from the text.
	nCtx := defaultPerplexityCtx
	if cSet {
		nCtx = bf.ctx
	}
	var base *nn.KLBaseReader
	var text []byte
	if *klMode {
		if st, err := os.Stat(*klBase); err == nil && st.IsDir() {
			return fmt.Errorf("--kl-divergence-base %s is a directory: give the file an earlier run wrote", *klBase)
		}
		if base, err = nn.OpenKLBase(*klBase); err != nil {
			return err
		}
		defer base.Close()
		if cSet && nCtx != base.Header.Ctx {
			return usageError(fs, "-c %d differs from the n_ctx of %d that %s was computed with: leave -c out", nCtx, base.Header.Ctx, *klBase)
		}
		nCtx = base.Header.Ctx
		if *file != "" {
			fmt.Fprintf(stderr, "perplexity: note: -f %s is not read: --kl-divergence evaluates the tokens saved in %s\n", *file, *klBase)
		}
	} else {
		if *klBase != "" {
			if err := checkKLBaseOutput(*klBase, *file, src.path); err != nil {
				return err
			}
		}
		if text, err = os.ReadFile(*file); err != nil {
			return err
		}
		if len(text) == 0 {
			return fmt.Errorf("%s is empty: there is no text to score", *file)
		}
		if !utf8.Valid(text) {
			fmt.Fprintf(stderr, "perplexity: note: %s is not valid UTF-8 (first invalid byte at offset %d); its bytes are tokenized as they are\n", *file, firstInvalidUTF8(text))
		}
	}

	// The backend's cache holds one chunk. -c beyond the model's context
	// cannot run; llama.cpp's users expect the default 512 to work on any
	// model, so only the default gives way to a shorter context.
	limit, err := src.contextLimit()
	if err != nil {
		return err
	}
	if nCtx > limit {
		switch {
		case base != nil:
			return fmt.Errorf("%s was computed with n_ctx %d, beyond this model's context of %d", *klBase, nCtx, limit)
		case cSet:
			return fmt.Errorf("-c %d is beyond the model's context of %d: give -c %d or less", nCtx, limit, limit)
		}
		fmt.Fprintf(stderr, "perplexity: note: the model's context is %d, shorter than the default -c %d: using -c %d (its numbers do not compare with runs at -c %d)\n", limit, nCtx, limit, nCtx)
		nCtx = limit
	}
	bf.ctx = nCtx
	m, err := src.open(bf)
	if err != nil {
		return err
	}
	defer m.Close()
	fmt.Fprintf(stderr, "perplexity: %s: %s, %s, head %s\n", m.path, describe(m.config), m.backend.Name(), m.head)

	var tokens []int32
	bos := int32(-1)
	var plan nn.ChunkPlan
	if base != nil {
		if h := base.Header; h.Vocab != m.config.Vocab {
			return fmt.Errorf("%s was written for a vocabulary of %d tokens, but this model's is %d: compare models that share a tokenizer", *klBase, h.Vocab, m.config.Vocab)
		}
		tokens, plan = base.Tokens, base.Header.Plan() // BOS already in place
		if *chunks > 0 {
			plan.Chunks = min(plan.Chunks, *chunks)
		}
		fmt.Fprintf(stderr, "perplexity: comparing with %s (%s): %d of its %d chunks of %d tokens\n", *klBase, base.Header.Source, plan.Chunks, base.Header.Chunks, nCtx)
	} else {
		tok, err := nn.NewTokenizer(m.file)
		if err != nil {
			return fmt.Errorf("perplexity needs the model's tokenizer: %w", err)
		}
		for _, n := range tok.Notes() {
			fmt.Fprintf(stderr, "perplexity: note: %s\n", n)
		}
		start := time.Now()
		tokens = tok.Encode(string(text), tokenizer.EncodeOptions{})
		if tok.AddsBOS() && tok.BOS() >= 0 {
			bos = tok.BOS()
		}
		fmt.Fprintf(stderr, "perplexity: tokenized %s: %d bytes, %d tokens in %.2f s\n", *file, len(text), len(tokens), time.Since(start).Seconds())
		if plan, err = nn.PlanChunks(len(tokens), nCtx, *chunks); err != nil {
			return fmt.Errorf("%s: %w", *file, err)
		}
	}

	var save *nn.KLBaseWriter
	if base == nil && *klBase != "" {
		evaluated := make([]int32, 0, plan.Chunks*nCtx)
		for c := range plan.Chunks {
			evaluated = append(evaluated, plan.Chunk(tokens, c, bos)...)
		}
		source := fmt.Sprintf("%s (%s), %s, head %s", m.path, describe(m.config), m.backend.Name(), m.head)
		h := nn.KLBaseHeader{Vocab: m.config.Vocab, Ctx: nCtx, Chunks: plan.Chunks, Source: truncateUTF8(source, nn.KLBaseMaxSource)}
		if save, err = nn.CreateKLBase(*klBase, h, evaluated); err != nil {
			return err
		}
		defer save.Abort() // after Commit, nothing
		size := float64(plan.Positions()) * float64(m.config.Vocab) * 4
		fmt.Fprintf(stderr, "perplexity: saving log-probabilities to %s: %d positions × %d = %.1f MB\n", *klBase, plan.Positions(), m.config.Vocab, size/1e6)
	}
	fmt.Fprintf(stderr, "perplexity: %d chunks, n_ctx=%d, batch_size=%d, scoring positions %d…%d of each\n", plan.Chunks, nCtx, min(*batch, nCtx), plan.First(), nCtx-2)

	// The first interrupt stops after the current chunk and reports what
	// was measured; a second one ends the process as usual.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	context.AfterFunc(ctx, stop)

	r := &pplRun{m: m, plan: plan, batch: *batch, base: base, save: save, out: bufio.NewWriter(stdout), stderr: stderr,
		row: make([]float32, m.config.Vocab), baseRow: make([]float32, m.config.Vocab)}
	if base != nil {
		fmt.Fprintln(r.out, "chunk             PPL               ln(PPL(Q)/PPL(base))          KL Divergence              Δp RMS            Same top p")
	}
	start := time.Now()
	done := 0
	for c := range plan.Chunks {
		if ctx.Err() != nil {
			break
		}
		if err := r.chunk(c, plan.Chunk(tokens, c, bos)); err != nil {
			r.out.Flush()
			return err
		}
		done++
	}
	elapsed := time.Since(start)
	fmt.Fprintln(r.out)
	if done == 0 {
		r.out.Flush()
		return errors.New("interrupted before the first chunk was scored")
	}
	if done < plan.Chunks {
		fmt.Fprintf(stderr, "perplexity: interrupted: %d of %d chunks scored\n", done, plan.Chunks)
	}
	if base != nil {
		printKLSummary(r.out, &r.kl)
		if r.kl.N() < 100 {
			fmt.Fprintf(stderr, "perplexity: note: only %d positions compared: the uncertainties and percentiles are rough\n", r.kl.N())
		}
	} else {
		ppl, unc := r.nll.PPL()
		fmt.Fprintf(r.out, "Final estimate: PPL = %.4f +/- %.5f\n", ppl, unc)
	}
	if err := r.out.Flush(); err != nil {
		return err
	}
	evaluated := done * (nCtx - 1)
	fmt.Fprintf(stderr, "perplexity: %d chunks, %d tokens evaluated in %.2f s: %.2f s per pass, %.1f tokens/s\n",
		done, evaluated, elapsed.Seconds(), elapsed.Seconds()/float64(done), float64(evaluated)/elapsed.Seconds())
	if save != nil {
		if done < plan.Chunks {
			fmt.Fprintf(stderr, "perplexity: %s not written: the run was interrupted\n", *klBase)
			return nil
		}
		if err := save.Commit(); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "perplexity: saved the log-probabilities of %d positions to %s\n", plan.Positions(), *klBase)
	}
	return nil
}

// checkKLBaseOutput checks, before the run, that --kl-divergence-base can
// be written: a new file, or an earlier base that this run replaces. Any
// other file there (the text, the model, a typo for either) is refused
// rather than destroyed.
func checkKLBaseOutput(path string, inputs ...string) error {
	if err := checkOutput("--kl-divergence-base", path, inputs...); err != nil {
		return err
	}
	if _, err := os.Stat(path); err != nil {
		return nil // a new file
	}
	old, err := nn.OpenKLBase(path)
	if err != nil {
		return fmt.Errorf("--kl-divergence-base %s exists and is not a KL-divergence base file: this run would replace it; remove it or choose another name", path)
	}
	return old.Close()
}

// pplRun is one perplexity or KL-divergence run in progress.
type pplRun struct {
	m            *model
	plan         nn.ChunkPlan
	batch        int
	base         *nn.KLBaseReader // comparing with it; nil: measuring perplexity
	save         *nn.KLBaseWriter // saving log-probabilities to it, or nil
	out          *bufio.Writer
	stderr       io.Writer
	nll          nn.NLLStats
	kl           nn.KLStats
	row, baseRow []float32 // [vocab]
}

// chunk evaluates and scores chunk c (BOS already in place) and prints the
// running estimate.
func (r *pplRun) chunk(c int, toks []int32) error {
	t0 := time.Now()
	err := nn.EvalScored(r.m.engine, toks, r.plan.First(), r.batch, func(j int, logits []float32) error {
		next := toks[j+1]
		if r.base != nil {
			if err := r.base.ReadRow(r.baseRow); err != nil {
				return err
			}
			nn.LogProbs(r.row, logits)
			r.kl.Add(r.baseRow, r.row, next)
			return nil
		}
		r.nll.Add(nn.NLL(logits, next))
		if r.save != nil {
			nn.LogProbs(r.row, logits)
			return r.save.WriteRow(r.row)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("chunk %d: %w", c+1, err)
	}
	if c == 0 {
		// llama-perplexity's one timing line, with the rate added.
		pass := time.Since(t0).Seconds()
		fmt.Fprintf(r.stderr, "perplexity: %.2f seconds per pass (%.1f tokens/s) - ETA %s\n", pass, float64(len(toks)-1)/pass, eta(pass*float64(r.plan.Chunks)))
	}
	if r.base != nil {
		printKLRow(r.out, c+1, &r.kl)
	} else {
		ppl, _ := r.nll.PPL()
		fmt.Fprintf(r.out, "[%d]%.4f,", c+1, ppl)
	}
	return r.out.Flush()
}

// eta formats llama-perplexity's estimate of the whole run: hours, then
// minutes with two decimals.
func eta(seconds float64) string {
	s := int(seconds)
	if s >= 3600 {
		return fmt.Sprintf("%d hours %.2f minutes", s/3600, float64(s%3600)/60)
	}
	return fmt.Sprintf("%.2f minutes", float64(s)/60)
}

// printKLRow prints the running comparison after a chunk, in
// llama-perplexity's columns.
func printKLRow(w io.Writer, chunk int, s *nn.KLStats) {
	ppl, pplErr := s.Q.PPL()
	lr, lrErr := s.LogRatio()
	kl, klErr := s.MeanKL()
	rms, rmsErr := s.RMSDP()
	top, topErr := s.SameTopP()
	fmt.Fprintf(w, "%4d    %9.4f ± %9.4f    %10.5f ± %10.5f    %10.5f ± %10.5f    %6.3f ± %6.3f %%    %6.3f ± %6.3f %%\n",
		chunk, ppl, pplErr, lr, lrErr, kl, klErr, 100*rms, 100*rmsErr, 100*top, 100*topErr)
}

// printKLSummary prints the comparison's statistics in llama-perplexity's
// layout (Q: this run; base: the run saved in the base file).
func printKLSummary(w io.Writer, s *nn.KLStats) {
	fmt.Fprintln(w, "====== Perplexity statistics ======")
	ppl, pplErr := s.Q.PPL()
	fmt.Fprintf(w, "Mean PPL(Q)                   : %10.6f ± %10.6f\n", ppl, pplErr)
	bppl, bpplErr := s.Base.PPL()
	fmt.Fprintf(w, "Mean PPL(base)                : %10.6f ± %10.6f\n", bppl, bpplErr)
	fmt.Fprintf(w, "Cor(ln(PPL(Q)), ln(PPL(base))): %6.2f%%\n", 100*s.Correlation())
	lr, lrErr := s.LogRatio()
	fmt.Fprintf(w, "Mean ln(PPL(Q)/PPL(base))     : %10.6f ± %10.6f\n", lr, lrErr)
	ratio, ratioErr := s.Ratio()
	fmt.Fprintf(w, "Mean PPL(Q)/PPL(base)         : %10.6f ± %10.6f\n", ratio, ratioErr)
	diff, diffErr := s.Diff()
	fmt.Fprintf(w, "Mean PPL(Q)-PPL(base)         : %10.6f ± %10.6f\n", diff, diffErr)
	fmt.Fprintln(w)

	fmt.Fprintln(w, "====== KL divergence statistics ======")
	kl, klErr := s.MeanKL()
	fmt.Fprintf(w, "Mean    KLD: %10.6f ± %10.6f\n", kl, klErr)
	kls := s.SortedKL()
	for _, p := range []struct {
		label string
		f     float64
	}{{"Maximum", 1}, {"99.9%  ", 0.999}, {"99.0%  ", 0.99}, {"95.0%  ", 0.95}, {"90.0%  ", 0.9}, {"Median ", 0.5},
		{"10.0%  ", 0.1}, {" 5.0%  ", 0.05}, {" 1.0%  ", 0.01}, {" 0.1%  ", 0.001}, {"Minimum", 0}} {
		fmt.Fprintf(w, "%s KLD: %10.6f\n", p.label, nn.Percentile(kls, p.f))
	}
	fmt.Fprintln(w)

	fmt.Fprintln(w, "====== Token probability statistics ======")
	dp, dpErr := s.MeanDP()
	fmt.Fprintf(w, "Mean    Δp: %6.3f ± %5.3f %%\n", 100*dp, 100*dpErr)
	dps := s.SortedDP()
	for _, p := range []struct {
		label string
		f     float64
	}{{"Maximum", 1}, {"99.9%  ", 0.999}, {"99.0%  ", 0.99}, {"95.0%  ", 0.95}, {"90.0%  ", 0.9}, {"75.0%  ", 0.75}, {"Median ", 0.5},
		{"25.0%  ", 0.25}, {"10.0%  ", 0.1}, {" 5.0%  ", 0.05}, {" 1.0%  ", 0.01}, {" 0.1%  ", 0.001}, {"Minimum", 0}} {
		fmt.Fprintf(w, "%s Δp: %6.3f%%\n", p.label, 100*nn.Percentile(dps, p.f))
	}
	rms, rmsErr := s.RMSDP()
	fmt.Fprintf(w, "RMS Δp    : %6.3f ± %5.3f %%\n", 100*rms, 100*rmsErr)
	top, topErr := s.SameTopP()
	fmt.Fprintf(w, "Same top p: %6.3f ± %5.3f %%\n", 100*top, 100*topErr)
}

// contextLimit is the model's maximum context, read without loading the
// model, so that -c is checked (or the default shortened) before the
// backend sizes its cache.
func (ms *modelSource) contextLimit() (int, error) {
	if err := ms.resolve(); err != nil {
		return 0, err
	}
	path := ms.path
	if ms.builtin() {
		p, remove, err := models.Default().WriteTemp("")
		if err != nil {
			return 0, err
		}
		defer remove()
		path = p
	}
	if ms.shape != "" {
		s, ok := synth.Shapes[ms.shape]
		if !ok {
			return 0, fmt.Errorf("unknown shape %q (choose from %s)", ms.shape, strings.Join(synth.ShapeNames(), ", "))
		}
		return s.Context, nil
	}
	f, err := gguf.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	c, err := nn.ParseConfig(f)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return c.Context, nil
}

// truncateUTF8 cuts s to at most n bytes without splitting a character.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// firstInvalidUTF8 is the offset of the first byte of b that starts no
// valid UTF-8 character.
func firstInvalidUTF8(b []byte) int {
	off, _ := tokenizer.InvalidUTF8(b)
	return off
}
