package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bitvk/bitvk/nn"
	"github.com/bitvk/bitvk/tokenizer"
)

// samplerFlags are llama.cpp's sampling flags, with its defaults.
type samplerFlags struct {
	temp, topP, minP, repeatPenalty  float64
	topK, repeatLastN                int
	seed                             int64
	typical, mirostatLR, mirostatEnt float64
	mirostat                         int
	xtcProbability, xtcThreshold     float64
	dryMultiplier, dryBase           float64
	dryAllowedLength, dryLastN       int
	dryBreakers                      stringList
	logitBias                        logitBiasFlag
}

// logitBiasFlag is llama.cpp's --logit-bias TOKEN_ID(+|-)BIAS, which may be
// given many times: 15043+1 raises token 15043 by 1, 15043-inf bans it.
type logitBiasFlag struct{ m map[int32]float32 }

func (f *logitBiasFlag) String() string {
	var parts []string
	for id, b := range f.m {
		parts = append(parts, fmt.Sprintf("%d%+g", id, b))
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

func (f *logitBiasFlag) Set(v string) error {
	i := strings.IndexAny(v[min(1, len(v)):], "+-") + 1
	if i <= 0 {
		return fmt.Errorf("%q is not TOKEN_ID+BIAS or TOKEN_ID-BIAS (15043+1, 15043-inf)", v)
	}
	id, err := strconv.ParseInt(v[:i], 10, 32)
	if err != nil || id < 0 {
		return fmt.Errorf("%q: %q is not a token id", v, v[:i])
	}
	b, err := strconv.ParseFloat(v[i:], 32)
	if err != nil || b != b || math.IsInf(b, 1) {
		return fmt.Errorf("%q: %q is not a bias (a number, or -inf to ban the token)", v, v[i:])
	}
	if f.m == nil {
		f.m = map[int32]float32{}
	}
	f.m[int32(id)] = float32(b)
	return nil
}

// checkVocab refuses a --logit-bias token outside a vocabulary of vocab.
func (sf *samplerFlags) checkVocab(vocab int) error {
	for id := range sf.logitBias.m {
		if int(id) >= vocab {
			return fmt.Errorf("--logit-bias: token %d is outside the model's vocabulary of %d", id, vocab)
		}
	}
	return nil
}

// stringList is a flag that may be given many times.
type stringList struct {
	set  bool
	vals []string
}

func (l *stringList) String() string { return strings.Join(l.vals, ",") }

func (l *stringList) Set(v string) error {
	if !l.set {
		l.set, l.vals = true, nil
	}
	l.vals = append(l.vals, v)
	return nil
}

// defaultDRYBreakers are llama.cpp's DRY sequence breakers.
var defaultDRYBreakers = []string{"\n", ":", "\"", "*"}

// dryBreakerStrings returns the DRY sequence breakers the flags name: llama.cpp's
// unless --dry-sequence-breaker is given; "none" alone means none.
func (sf *samplerFlags) dryBreakerStrings() []string {
	switch {
	case !sf.dryBreakers.set:
		return defaultDRYBreakers
	case len(sf.dryBreakers.vals) == 1 && sf.dryBreakers.vals[0] == "none":
		return nil
	}
	return sf.dryBreakers.vals
}

// setDRYBreakers gives s the ids of tok's tokens that hold a sequence
// breaker, when DRY is on.
func (sf *samplerFlags) setDRYBreakers(s *nn.Sampler, tok *tokenizer.Tokenizer) {
	if sf.dryMultiplier > 0 && sf.dryLastN != 0 {
		s.SetDRYBreakers(tok.Containing(sf.dryBreakerStrings()))
	}
}

func addSamplerFlags(fs *flag.FlagSet, sf *samplerFlags) {
	fs.Float64Var(&sf.temp, "temp", 0.8, "temperature; 0 picks the most likely token (greedy)")
	fs.IntVar(&sf.topK, "top-k", 40, "keep the K most likely tokens (0: off)")
	fs.Float64Var(&sf.topP, "top-p", 0.95, "keep the most likely tokens whose probabilities sum to P (1: off)")
	fs.Float64Var(&sf.minP, "min-p", 0.05, "drop tokens less likely than P times the most likely one (0: off)")
	fs.Float64Var(&sf.repeatPenalty, "repeat-penalty", 1.0, "penalize tokens seen in the last --repeat-last-n (1: off)")
	fs.IntVar(&sf.repeatLastN, "repeat-last-n", 64, "how many recent tokens the penalty looks at (-1: all)")
	fs.Int64Var(&sf.seed, "seed", -1, "random seed; the same seed and flags give the same text (-1: a fresh seed)")
	fs.Float64Var(&sf.typical, "typical", 1.0, "locally typical sampling: keep the tokens whose surprise is closest to the entropy, up to probability P (1: off)")
	fs.IntVar(&sf.mirostat, "mirostat", 0, "Mirostat sampling in place of top-k, typical, top-p and min-p: 1 (Mirostat), 2 (Mirostat 2.0); 0: off")
	fs.Float64Var(&sf.mirostatLR, "mirostat-lr", 0.1, "Mirostat's learning rate (eta; 0: 0.1)")
	fs.Float64Var(&sf.mirostatEnt, "mirostat-ent", 5.0, "Mirostat's target surprise (tau), in bits (0: 5)")
	fs.Float64Var(&sf.xtcProbability, "xtc-probability", 0, "XTC: how often to drop the likeliest tokens, all but the least likely of those above --xtc-threshold (0: off)")
	fs.Float64Var(&sf.xtcThreshold, "xtc-threshold", 0.1, "XTC: the probability a token needs to be dropped (above 0.5: off)")
	fs.Float64Var(&sf.dryMultiplier, "dry-multiplier", 0, "DRY: penalize tokens that would extend a repeated sequence by M·base^(length − allowed) (0: off)")
	fs.Float64Var(&sf.dryBase, "dry-base", 1.75, "DRY: the base of the penalty's growth with the repeat's length")
	fs.IntVar(&sf.dryAllowedLength, "dry-allowed-length", 2, "DRY: repeats this long go unpenalized")
	fs.IntVar(&sf.dryLastN, "dry-penalty-last-n", -1, "DRY: how many recent tokens it looks at (-1: the context, 0: off)")
	fs.Var(&sf.logitBias, "logit-bias", "add BIAS to a token's logit, as `TOKEN_ID+BIAS` or TOKEN_ID-BIAS (-inf bans it); may be given again")
	fs.Var(&sf.dryBreakers, "dry-sequence-breaker", "DRY: a `string` that ends a repeat (may be given again; default: newline, :, \", *; \"none\" for none)")
}

func (sf *samplerFlags) sampler() (*nn.Sampler, uint64, error) {
	c, _ := sf.config()
	s, err := nn.NewSampler(c)
	return s, c.Seed, err
}

func runRun(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("run", "-m MODEL (-p TEXT | -f FILE | --tokens ID,ID,...) [flags]", stderr)
	var src modelSource
	src.addFlags(fs)
	text := fs.String("p", "", "the prompt `text`")
	file := fs.String("f", "", "read the prompt text from this `file`")
	tokens := fs.String("tokens", "", "the prompt as comma-separated token `ids`; the output is ids too")
	chat := fs.Bool("chat", false, "wrap the prompt in the model's chat template as one user turn")
	system := fs.String("system", "", "with --chat, a system message before the prompt")
	tmpl := fs.String("chat-template", "", "with --chat, use this template instead of the model's: "+strings.Join(tokenizer.TemplateNames(), ", "))
	special := fs.Bool("special", false, "turn control-token text in the prompt (such as <|eot_id|>) into those tokens (with --chat, in the messages too: the template's own are always read)")
	n := fs.Int("n", 128, "tokens to generate (-1: until the model ends its turn or the context is full)")
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
	// Given, not non-empty: -p "" is an empty prompt (generation from BOS,
	// as an empty -f file), not a missing one.
	textGiven, fileGiven, tokensGiven := flagGiven(fs, "p"), flagGiven(fs, "f"), flagGiven(fs, "tokens")
	switch {
	case len(pos) > 0:
		return usageError(fs, "unexpected argument %q", pos[0])
	case !src.given():
		return usageError(fs, errSources)
	case countSet(textGiven, fileGiven, tokensGiven) == 0:
		return usageError(fs, "give the prompt: -p TEXT, -f FILE or --tokens ID,ID,...")
	case countSet(textGiven, fileGiven, tokensGiven) > 1:
		return usageError(fs, "give the prompt once: -p TEXT, -f FILE or --tokens ID,ID,..., not two of them")
	case fileGiven && *file == "":
		return usageError(fs, "-f needs a file name")
	case tokensGiven && *chat:
		return usageError(fs, "--chat wraps text; it cannot be used with --tokens")
	case !*chat && (*system != "" || *tmpl != ""):
		return usageError(fs, "--system and --chat-template need --chat")
	case *n == 0 || *n < -1:
		return usageError(fs, "-n must be positive or -1")
	}
	if err := bf.check(fs); err != nil {
		return err
	}
	if err := df.check(fs); err != nil {
		return err
	}
	var prompt []int32
	if tokensGiven {
		if prompt, err = parseIDs(*tokens); err != nil {
			return usageError(fs, "--tokens: %v", err)
		}
	}
	if *file != "" {
		b, err := os.ReadFile(*file)
		if err != nil {
			return err
		}
		*text = string(b)
	}
	s, seed, err := sf.sampler()
	if err != nil {
		return usageError(fs, "%v", err)
	}
	m, err := src.open(bf)
	if err != nil {
		return err
	}
	defer m.Close()
	if err := sf.checkVocab(m.config.Vocab); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "%s: %s, %s, context %d, seed %d\n", m.path, describe(m.config), m.backend.Name(), m.engine.Context(), seed)
	drafter, what, err := df.drafter(m)
	if err != nil {
		return err
	}
	df.announce(stderr, what, "")
	tok, err := nn.NewTokenizer(m.file)
	if err != nil && prompt == nil {
		return fmt.Errorf("text prompts need the model's tokenizer: %w", err)
	}
	if tok != nil {
		for _, n := range tok.Notes() {
			fmt.Fprintf(stderr, "note: %s\n", n)
		}
		sf.setDRYBreakers(s, tok)
	}
	if prompt == nil {
		var plain []tokenizer.Range
		if *chat {
			t, err := nn.ChatTemplate(m.file, *tmpl)
			if err != nil {
				return err
			}
			var msgs []tokenizer.Message
			if *system != "" {
				msgs = append(msgs, tokenizer.Message{Role: "system", Content: *system})
			}
			rendered, ranges := t.ApplyRanges(append(msgs, tokenizer.Message{Role: "user", Content: *text}), true)
			if !*special {
				plain = ranges // control-token text in the messages stays text
			}
			*text, *special = rendered, true // the template's own control tokens
		}
		if prompt = tok.Encode(*text, tokenizer.EncodeOptions{ParseSpecial: *special, Plain: plain}); len(prompt) == 0 {
			return errors.New("the prompt is empty")
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	opts := nn.GenerateOptions{MaxTokens: max(*n, 0)}
	df.options(&opts, drafter)
	var emit func(int32) error
	var dec *tokenizer.Decoder
	if tok != nil {
		opts.IsEOG = tok.IsEOG
	}
	if *tokens != "" { // ids in, ids out
		first := true
		emit = func(id int32) error {
			sep := ","
			if first {
				sep, first = "", false
			}
			_, err := fmt.Fprintf(stdout, "%s%d", sep, id)
			return err
		}
	} else {
		dec = tok.NewDecoder()
		dec.Prime(prompt)
		emit = func(id int32) error {
			if tok.IsEOG(id) {
				return nil // the end of the turn is not text
			}
			_, err := io.WriteString(stdout, dec.Next(id))
			return err
		}
	}
	if c := m.engine.Context(); len(prompt) > c {
		// Refused before any output: there is nothing to report.
		return &nn.ContextError{Have: 0, Add: len(prompt), Context: c, Max: m.config.Context}
	}
	st, err := m.engine.Generate(ctx, prompt, opts, s, emit)
	if dec != nil {
		io.WriteString(stdout, dec.Flush())
	}
	fmt.Fprintln(stdout)
	printSummary(stderr, m.load, st)
	return err
}

// countSet counts the true values.
func countSet(bs ...bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

// describe names a model's family and size.
func describe(c *nn.Config) string {
	return fmt.Sprintf("%s, %d layers, width %d, vocabulary %d", c.Arch, c.Layers, c.Embd, c.Vocab)
}

// printSummary is the timing summary that ends a generation.
func printSummary(w io.Writer, load time.Duration, st nn.Stats) {
	fmt.Fprintf(w, "\nload:      %8.2f s\n", load.Seconds())
	fmt.Fprintf(w, "prompt:    %8d tokens in %.2f s, %.1f tok/s\n", st.PromptTokens, st.PromptTime.Seconds(), st.PromptRate())
	fmt.Fprintf(w, "generated: %8d tokens in %.2f s, %.1f tok/s", st.GenTokens, st.GenTime.Seconds(), st.GenRate())
	if st.Stop != "" {
		fmt.Fprintf(w, " (stopped: %s)", st.Stop)
	}
	fmt.Fprintln(w)
	printDraftStats(w, st)
}
