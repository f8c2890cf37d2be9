package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/bitvk/bitvk/gguf"
	"github.com/bitvk/bitvk/nn"
	"github.com/bitvk/bitvk/tokenizer"
)

// fileList is a repeatable flag: -f a.txt -f b.txt.
type fileList []string

func (l *fileList) String() string     { return strings.Join(*l, ",") }
func (l *fileList) Set(s string) error { *l = append(*l, s); return nil }

func runTokenizerTrain(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("tokenizer-train", "-f TEXT [-f TEXT | TEXT]... [--vocab N] -o VOCAB.gguf", stderr)
	var files fileList
	fs.Var(&files, "f", "UTF-8 training text `file` (repeatable; - reads standard input)")
	size := fs.Int("vocab", 4096, "vocabulary size in all: 256 byte tokens, the merged tokens and 5 special tokens")
	out := fs.String("o", "", "output `file`, a vocabulary-only GGUF (required; replaced only once the new file is complete)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: bitvk tokenizer-train -f TEXT [-f TEXT | TEXT]... [--vocab N] -o VOCAB.gguf")
		fmt.Fprintln(stderr)
		fmt.Fprintln(stderr, "Learns a byte-level BPE vocabulary from the texts, as LLaMA-3's was built (the")
		fmt.Fprintln(stderr, "llama-bpe pre-tokenizer, merges by pair frequency, ties to the smallest pair),")
		fmt.Fprintln(stderr, "with LLaMA-3's special tokens and chat template, and writes it as a GGUF file")
		fmt.Fprintln(stderr, "that bitvk tokenize -m, synth --vocab and inspect take. The same texts always")
		fmt.Fprintln(stderr, "give the same file. Progress and a summary go to standard error.")
		fmt.Fprintln(stderr)
		fs.PrintDefaults()
	}
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	files = append(files, pos...) // files named without -f
	if len(files) == 0 {
		return usageError(fs, "no training text: name a file with -f TEXT")
	}
	if *out == "" {
		return usageError(fs, "-o VOCAB.gguf is required")
	}
	if *size < tokenizer.MinTrainVocab {
		return usageError(fs, "--vocab %d is too small: the 256 byte tokens and the special tokens need at least %d", *size, tokenizer.MinTrainVocab)
	}
	// Fail before the work when the output cannot be written.
	if err := checkOutput("-o", *out, files...); err != nil {
		return err
	}

	start := time.Now()
	inputs := make([]tokenizer.TrainInput, 0, len(files))
	var total int64
	for _, name := range files {
		var text []byte
		if name == "-" {
			if text, err = io.ReadAll(stdin); err != nil {
				return fmt.Errorf("reading standard input: %w", err)
			}
			name = "standard input"
		} else if text, err = os.ReadFile(name); err != nil {
			return err
		}
		inputs = append(inputs, tokenizer.TrainInput{Name: name, Text: text})
		total += int64(len(text))
	}
	fmt.Fprintf(stderr, "training a %d-token vocabulary on %s of text (%d %s)…\n", *size, humanBytes(uint64(total)), len(files), plural(len(files), "file", "files"))

	// A line of progress at most every two seconds: a few megabytes train
	// in about a second and print none.
	last := time.Now()
	progress := func(tokens, want int) {
		if now := time.Now(); now.Sub(last) >= 2*time.Second {
			fmt.Fprintf(stderr, "  %d of %d tokens (%.0fs)\n", tokens, want, now.Sub(start).Seconds())
			last = now
		}
	}
	v, st, err := tokenizer.TrainBPE(inputs, tokenizer.TrainOptions{VocabSize: *size, Progress: progress})
	if err != nil {
		return err
	}
	trained := time.Since(start)
	b := &gguf.Builder{Meta: nn.VocabMeta(v)}
	if err := b.WriteFile(*out); err != nil {
		return err
	}
	info, err := os.Stat(*out)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "trained %d tokens (256 bytes, %d merged by %d merges, %d special) in %.2fs: %d words, %d distinct\n",
		len(v.Tokens), len(v.Tokens)-256-specialCount(v), st.Merges, specialCount(v), trained.Seconds(), st.Words, st.UniqueWords)
	fmt.Fprintf(stderr, "the training text is %d tokens once merged: %.2f bytes per token\n", st.Tokens, float64(st.Bytes)/float64(max(st.Tokens, 1)))
	fmt.Fprintf(stderr, "wrote %s (%s)\n", *out, humanBytes(uint64(info.Size())))
	return nil
}

// specialCount counts the control tokens of a trained vocabulary.
func specialCount(v *tokenizer.Vocab) int {
	n := 0
	for _, t := range v.Types {
		if t == int32(tokenizer.TypeControl) {
			n++
		}
	}
	return n
}
