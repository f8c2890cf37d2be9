package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"time"
	"unicode/utf8"

	"github.com/bitvk/bitvk/nn"
	"github.com/bitvk/bitvk/nn/spec"
	"github.com/bitvk/bitvk/tokenizer"
)

func runMine(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("mine", "[-m MODEL] -f TEXT [-f TEXT]... -o CHAINS.chnb [flags]", stderr)
	var src modelSource
	src.addFlags(fs)
	var files fileList
	fs.Var(&files, "f", "text `file` to mine (UTF-8; repeat -f for more)")
	out := fs.String("o", "", "output CHNB `file` (required)")
	force := fs.Bool("force", false, "replace -o when it exists")
	candidates := fs.Int("candidates", spec.DefaultCandidates, "how many of the most frequent chains the model scores")
	minCount := fs.Int("min-count", spec.DefaultMinCount, "how often a chain must occur in the text to be a candidate")
	show := fs.Int("show", 10, "chains shown in the summary")
	var bf backendFlags
	addBackendFlags(fs, &bf, true)
	fs.Lookup("c").Usage = fmt.Sprintf("positions the model is loaded with (default: %d, BOS and the longest chain)", spec.MaxChain+1)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: bitvk mine [-m MODEL] -f TEXT [-f TEXT]... -o CHAINS.chnb [flags]")
		fmt.Fprintln(stderr)
		fmt.Fprintln(stderr, "Mines a CHNB chain-bucket table for speculative decoding: the chains of 2…8 tokens that")
		fmt.Fprintln(stderr, "occur most often in the texts, scored by how likely the model is to write them, packed")
		fmt.Fprintln(stderr, "into 256 buckets that the last 1…3 tokens select (see docs/FORMATS.md). With no -m the")
		fmt.Fprintln(stderr, "built-in model is mined for. Progress goes to standard error, the summary to standard output.")
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
		return usageError(fs, "unexpected argument %q (name texts with -f)", pos[0])
	case !src.given():
		return usageError(fs, errSources)
	case len(files) == 0:
		return usageError(fs, "give the text to mine with -f FILE")
	case *out == "":
		return usageError(fs, "give the output file with -o CHAINS.chnb")
	case *candidates < 1 || *minCount < 1 || *show < 0:
		return usageError(fs, "--candidates and --min-count must be positive, --show not negative")
	}
	if err := bf.check(fs); err != nil {
		return err
	}
	// Fail before the work when the output cannot or must not be written.
	if err := checkOutput("-o", *out, append([]string{src.path}, files...)...); err != nil {
		return err
	}
	if _, err := os.Stat(*out); err == nil && !*force {
		return fmt.Errorf("%s exists: give --force to replace it", *out)
	}
	texts := make([][]byte, len(files))
	for i, name := range files {
		if texts[i], err = os.ReadFile(name); err != nil {
			return err
		}
		if !utf8.Valid(texts[i]) {
			fmt.Fprintf(stderr, "mine: note: %s is not valid UTF-8 (first invalid byte at offset %d); its bytes are tokenized as they are\n", name, firstInvalidUTF8(texts[i]))
		}
	}

	// A chain is evaluated from an empty cache: BOS and at most MaxChain
	// tokens, so a short cache does (a long one costs memory for nothing).
	limit, err := src.contextLimit()
	if err != nil {
		return err
	}
	if !cSet {
		bf.ctx = min(limit, spec.MaxChain+1)
	}
	m, err := src.open(bf)
	if err != nil {
		return err
	}
	defer m.Close()
	fmt.Fprintf(stderr, "mine: %s: %s, %s\n", m.path, describe(m.config), m.backend.Name())
	tok, err := nn.NewTokenizer(m.file)
	if err != nil {
		return fmt.Errorf("mine needs the model's tokenizer: %w", err)
	}
	bos := int32(-1)
	if tok.AddsBOS() && tok.BOS() >= 0 {
		bos = tok.BOS()
	}
	prefix, after := 0, ""
	if bos >= 0 {
		prefix, after = 1, " after BOS"
	}
	maxLen := min(spec.MaxChain, m.engine.Context()-prefix)
	if maxLen < 2 {
		return fmt.Errorf("a context of %d positions is too short to score chains of 2 tokens%s: give -c %d or more", m.engine.Context(), after, 2+prefix)
	}

	// The texts, one after another, a separator (-1) between them so that
	// no chain runs from one into the next.
	start := time.Now()
	var tokens []int32
	for i, text := range texts {
		t0 := time.Now()
		ids := tok.Encode(string(text), tokenizer.EncodeOptions{NoBOS: true})
		fmt.Fprintf(stderr, "mine: tokenized %s: %d bytes, %d tokens in %.2f s\n", files[i], len(text), len(ids), time.Since(t0).Seconds())
		if i > 0 {
			tokens = append(tokens, -1)
		}
		tokens = append(tokens, ids...)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	sc := &chainScorer{e: m.engine, bos: bos}
	t0, last := time.Now(), time.Now()
	var scored, total int
	progress := func(p spec.MineProgress) {
		now := time.Now()
		switch {
		case p.Stage == "counting" && p.Done == p.Total:
			fmt.Fprintf(stderr, "mine: counted the chains of 2…%d tokens in %d tokens in %.2f s\n", maxLen, len(tokens)-len(texts)+1, now.Sub(t0).Seconds())
			t0, last = now, now
		case p.Stage == "scoring":
			scored, total = p.Done, p.Total
			if now.Sub(last) >= 2*time.Second || p.Done == p.Total {
				el := now.Sub(t0).Seconds()
				fmt.Fprintf(stderr, "mine: scored %d/%d chains with the model (%d tokens evaluated, %.0f tokens/s, %.0f s)\n", p.Done, p.Total, sc.evaluated, float64(sc.evaluated)/el, el)
				last = now
			}
		}
	}
	c, err := spec.Mine(ctx, tokens, sc.score, spec.MineOptions{MaxLen: maxLen, MinCount: *minCount, Candidates: *candidates, Progress: progress})
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return fmt.Errorf("interrupted after %d of %d chains scored: %s not written", scored, total, *out)
		}
		return err
	}
	if err := c.Save(*out); err != nil {
		return err
	}
	info, err := os.Stat(*out)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "mine: done in %.1f s\n", time.Since(start).Seconds())
	printMineSummary(stdout, *out, info.Size(), c, total, tok, *show)
	return nil
}

// printMineSummary says what the table holds and shows its best chains.
func printMineSummary(w io.Writer, path string, size int64, c *spec.Chains, candidates int, tok *tokenizer.Tokenizer, show int) {
	filled, tokens := 0, 0
	var conf float64
	for _, e := range c.Entries {
		if len(e.Tokens) > 0 {
			filled++
			tokens += len(e.Tokens)
			conf += float64(e.Confidence)
		}
	}
	fmt.Fprintf(w, "wrote %s (%s): %d of %d entries filled from %d candidates", path, humanBytes(uint64(size)), filled, spec.Entries, candidates)
	if filled > 0 {
		fmt.Fprintf(w, ", mean chain %.2f tokens, mean confidence %.3g", float64(tokens)/float64(filled), conf/float64(filled))
	}
	fmt.Fprintln(w)
	show = min(show, filled)
	if show == 0 {
		return
	}
	fmt.Fprintf(w, "best %d %s (id, confidence, text):\n", show, plural(show, "chain", "chains"))
	for i, e := range c.Entries[:show] {
		fmt.Fprintf(w, "  %3d  %-9.3g  %q\n", i, e.Confidence, tok.Decode(e.Tokens))
	}
}

// chainScorer is the model's side of mining: the probability of each chain,
// P(c[1:] | BOS c[0]), from teacher-forced logits. Chains come in
// lexicographic order, so it keeps the last one in the cache and evaluates
// only from where the next one differs.
type chainScorer struct {
	e         *nn.Engine
	bos       int32     // evaluated before each chain; -1: nothing
	want      []int32   // scratch: BOS and the chain
	cum       []float64 // cum[j]: ln P of the chain's tokens up to the engine's token j, given what precedes
	evaluated int       // positions evaluated
}

func (s *chainScorer) score(chains [][]int32) ([]float64, error) {
	p := make([]float64, len(chains))
	for i, c := range chains {
		lp, err := s.logProb(c)
		if err != nil {
			return nil, fmt.Errorf("scoring chain %v: %w", c, err)
		}
		p[i] = math.Exp(lp)
	}
	return p, nil
}

func (s *chainScorer) logProb(c []int32) (float64, error) {
	s.want = s.want[:0]
	if s.bos >= 0 {
		s.want = append(s.want, s.bos)
	}
	s.want = append(s.want, c...)
	first := len(s.want) - len(c) // where c[0] is
	held := s.e.Tokens()
	p := 0 // positions the cache already holds
	for p < min(len(held), len(s.want)) && held[p] == s.want[p] {
		p++
	}
	if p == len(s.want) {
		return s.cum[p-1], nil
	}
	// Scoring want[p] needs the logits after want[p-1]: evaluate from
	// there (again: the engine keeps only the last token's logits).
	from := max(p-1, 0)
	s.e.Truncate(from)
	// cum[from] stays: want[from] is in the common prefix, or it is
	// position 0, which is never scored (cum[0] = 0).
	if len(s.cum) == 0 {
		s.cum = append(s.cum, 0)
	}
	s.cum = s.cum[:from+1]
	err := s.e.EvalAll(s.want[from:], len(s.want)-from, func(i int, logits []float32) error {
		j := from + i + 1 // the position these logits predict
		if j == len(s.want) {
			return nil
		}
		lp := 0.0
		if j > first {
			lp = s.cum[j-1] - nn.NLL(logits, s.want[j])
		}
		s.cum = append(s.cum, lp)
		return nil
	})
	s.evaluated += len(s.want) - from
	if err != nil {
		s.e.Reset()
		s.cum = s.cum[:0]
		return 0, err
	}
	return s.cum[len(s.want)-1], nil
}
