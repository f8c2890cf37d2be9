package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/bitvk/bitvk/gguf"
	"github.com/bitvk/bitvk/nn/synth"
)

func runSynth(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("synth", "[flags] -o OUT.gguf", stderr)
	out := fs.String("o", "", "output `file` (required; replaced only once the new file is complete)")
	shape := fs.String("shape", "tiny", "size preset: "+strings.Join(synth.ShapeNames(), ", ")+" (2b = BitNet b1.58 2B4T)")
	typ := fs.String("type", "i2_s", "ternary tensor type: i2_s or tq2_0")
	embdType := fs.String("embd-type", "f16", "token embedding (tied head) type: f16, q8_0, q6_k or q4_0 (as Microsoft's converter's --quant-embd writes)")
	seed := fs.Uint64("seed", 1, "random seed; the same seed writes the same bytes")
	vocab := fs.String("vocab", "", "take the tokenizer from this GGUF `file` (default: a small built-in byte-level BPE vocabulary)")
	name := fs.String("name", "", "general.name (default: \"bitvk synthetic SHAPE\")")
	layers := fs.Int("layers", 0, "override the preset's number of layers")
	embd := fs.Int("embd", 0, "override the embedding width")
	ffn := fs.Int("ffn", 0, "override the feed-forward width")
	heads := fs.Int("heads", 0, "override the number of attention heads")
	kvHeads := fs.Int("kv-heads", 0, "override the number of key/value heads")
	ctx := fs.Int("ctx", 0, "override the context length")
	nVocab := fs.Int("n-vocab", 0, "pad the built-in vocabulary to this many tokens")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError(fs, "unexpected argument %q", pos[0])
	}
	if *out == "" {
		return usageError(fs, "-o OUT.gguf is required")
	}
	if err := checkOutput("-o", *out, *vocab); err != nil {
		return err
	}
	s, ok := synth.Shapes[*shape]
	if !ok {
		return usageError(fs, "unknown shape %q (choose from %s)", *shape, strings.Join(synth.ShapeNames(), ", "))
	}
	for _, o := range []struct {
		dst *int
		v   int
	}{{&s.Layers, *layers}, {&s.Embd, *embd}, {&s.FFN, *ffn}, {&s.Heads, *heads}, {&s.KVHeads, *kvHeads}, {&s.Context, *ctx}, {&s.Vocab, *nVocab}} {
		if o.v != 0 {
			*o.dst = o.v
		}
	}
	t, err := gguf.ParseType(*typ)
	if err != nil {
		return usageError(fs, "%v", err)
	}
	et, err := gguf.ParseType(*embdType)
	if err != nil {
		return usageError(fs, "--embd-type: %v", err)
	}
	opts := synth.Options{Shape: s, Type: t, Seed: *seed, Name: *name, EmbdType: et}
	if opts.Name == "" {
		opts.Name = "bitvk synthetic " + *shape
	}
	if *vocab != "" {
		if *nVocab != 0 {
			return usageError(fs, "--n-vocab pads the built-in vocabulary; it cannot be used with --vocab")
		}
		if opts.Vocab, err = synth.VocabFromFile(*vocab); err != nil {
			return err
		}
	}
	b, err := synth.Build(opts)
	if err != nil {
		return err
	}
	// A few flags multiply into terabytes: check the size before writing
	// for minutes into a file the disk cannot hold.
	size, err := builderDataSize(b)
	if err != nil {
		return err
	}
	if err := checkFits("-o", *out, size); err != nil {
		return fmt.Errorf("%w: choose a smaller shape (--layers, --embd, --ffn, --n-vocab) or another disk", err)
	}
	// Catch the signals before saying the write begins: an interrupt from
	// then on removes the partial file.
	sig, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	fmt.Fprintf(stderr, "writing %s (%s shape, %d layers, width %d, %s, %s embedding, %s)…\n", *out, *shape, s.Layers, s.Embd, t, et, humanBytes(size))
	if err := b.WriteFileContext(sig, *out); err != nil {
		if sig.Err() != nil {
			return fmt.Errorf("interrupted: %s not written", *out)
		}
		return err
	}
	st, err := os.Stat(*out)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s: %d tensors, %.1f MB in %.1fs\n", *out, len(b.Tensors), float64(st.Size())/1e6, time.Since(start).Seconds())
	return nil
}

// builderDataSize is the bytes of tensor data b will write: the bulk of
// the file (the metadata and the padding are a rounding error beside it).
func builderDataSize(b *gguf.Builder) (uint64, error) {
	var total uint64
	for _, t := range b.Tensors {
		n := uint64(1)
		for _, d := range t.Dims {
			if d != 0 && n > math.MaxUint64/d {
				return 0, fmt.Errorf("tensor %s: %v elements overflow", t.Name, t.Dims)
			}
			n *= d
		}
		size, err := gguf.DataSize(t.Type, n)
		if err != nil {
			return 0, fmt.Errorf("tensor %s: %w", t.Name, err)
		}
		if total+size < total {
			return 0, fmt.Errorf("the model's size overflows")
		}
		total += size
	}
	return total, nil
}
