package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/bitvk/bitvk/nn"
	"github.com/bitvk/bitvk/nn/spec"
)

// draftFlags are speculative decoding's flags, shared by run, chat, serve
// and bench.
type draftFlags struct {
	mode      string
	max       int
	chains    string
	threshold float64
}

// draftModes are --draft's values.
var draftModes = []string{"off", "lookup", "chains", "auto"}

func addDraftFlags(fs *flag.FlagSet, df *draftFlags) {
	fs.StringVar(&df.mode, "draft", "auto", "speculative decoding: off, lookup (drafts copied from the context), chains (a CHNB chain-bucket file), auto (lookup, plus chains when there is a file); lossless: the output is plain decoding's")
	fs.IntVar(&df.max, "draft-max", nn.DefaultDraftMax, fmt.Sprintf("most tokens drafted per pass (1..%d)", nn.MaxDraft))
	fs.StringVar(&df.chains, "chains", "", "chain buckets (CHNB `file`, made by bitvk mine); default: MODEL.chnb beside the model, or the built-in model's")
	fs.Float64Var(&df.threshold, "draft-threshold", 0, "LOSSY: keep drafted tokens while the model gives them at least this probability, without sampling (0: off, the lossless rule)")
}

func (df *draftFlags) check(fs *flag.FlagSet) error {
	switch {
	case !slices.Contains(draftModes, df.mode):
		return usageError(fs, "--draft %q: want one of %s", df.mode, strings.Join(draftModes, ", "))
	case df.max < 1 || df.max > nn.MaxDraft:
		return usageError(fs, "--draft-max %d: want 1..%d", df.max, nn.MaxDraft)
	case !(df.threshold >= 0 && df.threshold < 1):
		return usageError(fs, "--draft-threshold %v: want 0 (off) or a probability below 1", df.threshold)
	case df.chains != "" && (df.mode == "off" || df.mode == "lookup"):
		return usageError(fs, "--chains is used by --draft chains or auto, not --draft %s", df.mode)
	}
	return nil
}

// drafter builds the drafter the flags name for model m, and says what it
// is ("" when off).
func (df *draftFlags) drafter(m *model) (nn.Drafter, string, error) {
	if df.mode == "off" {
		return nil, "", nil
	}
	var chains nn.Drafter
	var from string
	if df.mode == "chains" || df.mode == "auto" {
		c, where, err := loadChains(m, df.chains)
		if err != nil {
			return nil, "", err
		}
		if c == nil && df.mode == "chains" {
			return nil, "", fmt.Errorf("--draft chains needs chain buckets: give --chains FILE (made by bitvk mine) or put %s beside the model", chainsBeside(m.path))
		}
		if c != nil {
			chains, from = c, where
		}
	}
	switch {
	case df.mode == "lookup":
		return spec.Lookup{}, "prompt lookup", nil
	case df.mode == "chains":
		return chains, "chain buckets (" + from + ")", nil
	case chains != nil:
		return spec.Auto(chains), "prompt lookup + chain buckets (" + from + ")", nil
	}
	return spec.Auto(nil), "prompt lookup", nil
}

// announce says on w what drafts ("" for none), with a note (""
// for none) after it.
func (df *draftFlags) announce(w io.Writer, what, note string) {
	if what == "" {
		return
	}
	if note != "" {
		note = ", " + note
	}
	fmt.Fprintf(w, "drafting: %s, up to %d tokens per pass%s\n", what, df.max, note)
}

// options fills o's drafting fields.
func (df *draftFlags) options(o *nn.GenerateOptions, d nn.Drafter) {
	o.Draft, o.DraftMax, o.DraftThreshold = d, df.max, float32(df.threshold)
}

// chainsBeside is where a model's chain buckets sit: its path with .chnb
// for .gguf.
func chainsBeside(path string) string {
	return strings.TrimSuffix(path, ".gguf") + ".chnb"
}

// loadChains reads the chain buckets named by --chains, else those beside
// the model file, else the built-in model's; nil when there are none.
func loadChains(m *model, path string) (nn.Drafter, string, error) {
	vocab := m.config.Vocab
	if path != "" {
		c, err := spec.LoadChains(path, vocab)
		return c, path, err
	}
	if m.chains != nil {
		c, err := spec.ParseChains(m.chains, vocab)
		if err != nil {
			return nil, "", fmt.Errorf("the built-in chain buckets: %w", err)
		}
		return c, "built-in", nil
	}
	if m.path == "" || !strings.HasSuffix(m.path, ".gguf") {
		return nil, "", nil
	}
	beside := chainsBeside(m.path)
	if _, err := os.Stat(beside); err != nil {
		return nil, "", nil
	}
	c, err := spec.LoadChains(beside, vocab)
	return c, beside, err
}

// printDraftStats is the drafting part of a summary ("" when nothing was
// drafted).
func printDraftStats(w io.Writer, st nn.Stats) {
	d := st.Draft
	if d.Passes == 0 && d.Declined == 0 {
		return
	}
	fmt.Fprintf(w, "drafted:   %8d tokens in %d passes, %d kept (%.1f%%), %.2f per pass; %d passes saved, %d drafts declined\n",
		d.Drafted, d.Passes, d.Accepted, 100*d.AcceptRate(), d.MeanAccepted(), st.PassesSaved(), d.Declined)
	fmt.Fprintf(w, "kept/pass: %s\n", draftHistogram(d))
}

// draftHistogram writes the accepted lengths as "0:3 1:5 2:9 …", up to the
// longest seen.
func draftHistogram(d nn.DraftStats) string { return lengthsText(histogramLengths(d)) }

// histogramLengths is d.Lengths up to the longest kept length seen.
func histogramLengths(d nn.DraftStats) []int {
	last := 0
	for n, c := range d.Lengths {
		if c > 0 {
			last = n
		}
	}
	return append([]int(nil), d.Lengths[:last+1]...)
}

// lengthsText writes counts as "0:3 1:5 …", the index before each.
func lengthsText(ls []int) string {
	var b strings.Builder
	for k, c := range ls {
		if k > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%d:%d", k, c)
	}
	return b.String()
}
