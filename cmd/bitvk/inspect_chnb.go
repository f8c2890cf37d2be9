package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/bitvk/bitvk/gguf"
	"github.com/bitvk/bitvk/nn"
	"github.com/bitvk/bitvk/nn/spec"
	"github.com/bitvk/bitvk/tokenizer"
)

// chainsReport is what `bitvk inspect` shows of a CHNB table, and exactly
// what --json prints.
type chainsReport struct {
	File     string       `json:"file"`
	Format   string       `json:"format"` // "CHNB"
	Version  int          `json:"version"`
	Size     int          `json:"size"`
	MaxChain int          `json:"max_chain"`
	Filled   int          `json:"filled"`           // entries holding a chain
	Vocab    int          `json:"vocab,omitempty"`  // the -m vocabulary the tokens were checked against
	Model    string       `json:"model,omitempty"`  // the -m file
	Entries  []chainEntry `json:"entries"`          // all 256, by id
	Tokens   int          `json:"tokens,omitempty"` // in all entries
}

type chainEntry struct {
	ID         int     `json:"id"`
	Tokens     []int32 `json:"tokens"`
	Confidence float32 `json:"confidence"`
	Text       *string `json:"text,omitempty"` // decoded, with -m
}

// isCHNBFile reports whether the file at path starts with the CHNB magic.
func isCHNBFile(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var magic [len(spec.CHNBMagic)]byte
	_, err = io.ReadFull(f, magic[:])
	return err == nil && spec.IsCHNB(magic[:])
}

// inspectChains prints a CHNB table; with a model (or vocabulary) file, it
// checks the token ids against its vocabulary and decodes the chains.
func inspectChains(path, modelPath string, asJSON bool, stdout io.Writer) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var tok *tokenizer.Tokenizer
	if modelPath != "" {
		f, err := gguf.Open(modelPath)
		if err != nil {
			return err
		}
		tok, err = nn.NewTokenizer(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", modelPath, err)
		}
	}
	vocab := 0
	if tok != nil {
		vocab = tok.Len()
	}
	c, err := spec.ParseChains(data, vocab)
	if err != nil {
		if modelPath != "" {
			return fmt.Errorf("%s (checked against %s): %w", path, modelPath, err)
		}
		return fmt.Errorf("%s: %w", path, err)
	}
	r := &chainsReport{File: path, Format: spec.CHNBMagic, Version: spec.CHNBVersion, Size: len(data), MaxChain: spec.MaxChain,
		Filled: c.Filled(), Vocab: vocab, Model: modelPath, Entries: make([]chainEntry, spec.Entries)}
	for i, e := range c.Entries {
		ce := chainEntry{ID: i, Tokens: e.Tokens, Confidence: e.Confidence}
		if ce.Tokens == nil {
			ce.Tokens = []int32{}
		}
		if tok != nil {
			text := tok.Decode(e.Tokens)
			ce.Text = &text
		}
		r.Tokens += len(e.Tokens)
		r.Entries[i] = ce
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	r.print(stdout)
	return nil
}

func (r *chainsReport) print(w io.Writer) {
	fmt.Fprintf(w, "%s: CHNB version %d, %s: %d chain buckets, %d filled (%d tokens), chains of at most %d tokens\n",
		r.File, r.Version, humanBytes(uint64(r.Size)), len(r.Entries), r.Filled, r.Tokens, r.MaxChain)
	if r.Model != "" {
		fmt.Fprintf(w, "token ids checked against the vocabulary of %s (%d tokens)\n", r.Model, r.Vocab)
	}
	if r.Filled == 0 {
		return
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	header := "  id\tcount\tconfidence\ttokens"
	if r.Model != "" {
		header += "\ttext"
	}
	fmt.Fprintln(tw, header)
	var empty []int
	for _, e := range r.Entries {
		if len(e.Tokens) == 0 {
			empty = append(empty, e.ID)
			continue
		}
		ids := make([]string, len(e.Tokens))
		for j, t := range e.Tokens {
			ids[j] = fmt.Sprint(t)
		}
		line := fmt.Sprintf("  %d\t%d\t%.4g\t%s", e.ID, len(e.Tokens), e.Confidence, strings.Join(ids, " "))
		if e.Text != nil {
			line += fmt.Sprintf("\t%q", *e.Text)
		}
		fmt.Fprintln(tw, line)
	}
	tw.Flush()
	if len(empty) > 0 {
		fmt.Fprintf(w, "\n%d empty %s: %s\n", len(empty), plural(len(empty), "entry", "entries"), idRanges(empty))
	}
}

// idRanges writes ascending ids as ranges: "3, 7…9".
func idRanges(ids []int) string {
	var parts []string
	for i := 0; i < len(ids); {
		j := i
		for j+1 < len(ids) && ids[j+1] == ids[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, fmt.Sprint(ids[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d…%d", ids[i], ids[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
}
