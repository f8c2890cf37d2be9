package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/bitvk/bitvk/convert"
	"github.com/bitvk/bitvk/gguf"
)

func runConvert(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("convert", "DIR -o OUT.gguf [flags]", stderr)
	out := fs.String("o", "", "output `file` (required; replaced only once the new file is complete)")
	typ := fs.String("type", "i2_s", "ternary tensor type: i2_s, tq2_0 or tq1_0")
	head := fs.String("head", "f16", "output head (the embedding when tied): f16, or q8 to store it as Q8_0")
	ptq := fs.String("ptq", "", "absmean: quantize a float model that was not trained ternary (post-training quantization: lossy)")
	vocab := fs.String("vocab", "", "take the tokenizer from this GGUF `file` instead of DIR/tokenizer.json (bitvk tokenizer-train writes one)")
	name := fs.String("name", "", "general.name (default: the directory's name)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, `usage: bitvk convert DIR -o OUT.gguf [flags]

Converts a Hugging Face checkpoint directory (config.json, model.safetensors
or a sharded model.safetensors.index.json, tokenizer.json and
tokenizer_config.json) to a GGUF file bitvk runs:

  BitNetForCausalLM (microsoft/bitnet-b1.58-2B-4T: U8-packed ternary weights
  with a weight_scale per matrix; its -bf16 repository and bitvk train
  --hf-out: float master weights, ternarized with absmean), 1bitLLM's
  BitnetForCausalLM, and ternary LlamaForCausalLM (quantization_config
  bitnet). A float LlamaForCausalLM needs --ptq absmean.

`)
		fs.PrintDefaults()
	}
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) == 0:
		return usageError(fs, "give the checkpoint directory DIR")
	case len(pos) > 1:
		return usageError(fs, "unexpected argument %q (one directory is converted at a time)", pos[1])
	case *out == "":
		return usageError(fs, "-o OUT.gguf is required")
	case *ptq != "" && *ptq != "absmean":
		return usageError(fs, "--ptq %q: the one post-training quantization is absmean", *ptq)
	}
	o := convert.Options{PTQ: *ptq != "", Vocab: *vocab, Name: *name, Log: stderr}
	types := map[string]gguf.Type{"i2_s": gguf.TypeI2_S, "tq2_0": gguf.TypeTQ2_0, "tq1_0": gguf.TypeTQ1_0}
	var ok bool
	if o.Type, ok = types[*typ]; !ok {
		return usageError(fs, "--type %q: choose i2_s, tq2_0 or tq1_0", *typ)
	}
	heads := map[string]gguf.Type{"f16": gguf.TypeF16, "q8": gguf.TypeQ8_0, "q8_0": gguf.TypeQ8_0}
	if o.Head, ok = heads[*head]; !ok {
		return usageError(fs, "--head %q: choose f16 or q8 (Q8_0)", *head)
	}
	if st, err := os.Stat(pos[0]); err != nil {
		return err
	} else if !st.IsDir() {
		return fmt.Errorf("%s is not a directory: give the Hugging Face checkpoint directory (config.json, safetensors, tokenizer.json)", pos[0])
	}
	// The checkpoint's files are the inputs -o must not replace.
	inputs := []string{*vocab}
	for _, pattern := range []string{"*.json", "*.safetensors"} {
		m, _ := filepath.Glob(filepath.Join(pos[0], pattern))
		inputs = append(inputs, m...)
	}
	if err := checkOutput("-o", *out, inputs...); err != nil {
		return err
	}
	start := time.Now()
	step := 0
	o.Progress = func(done, total int) {
		// A line at every tenth of the tensors: big checkpoints take a while.
		if tenth := done * 10 / total; tenth > step || done == total {
			step = tenth
			fmt.Fprintf(stderr, "converted %d/%d tensors (%.0fs)\n", done, total, time.Since(start).Seconds())
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Fprintf(stderr, "converting %s to %s (%s)…\n", pos[0], *out, o.Type)
	o.Context = ctx
	sum, err := convert.Convert(pos[0], *out, o)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("interrupted: %s not written", *out)
		}
		return err
	}
	st, err := os.Stat(*out)
	if err != nil {
		return err
	}
	how := fmt.Sprintf("%d packed ternary projections", sum.Packed)
	if sum.Ternarized > 0 {
		how = fmt.Sprintf("%d projections ternarized with absmean", sum.Ternarized)
	}
	if sum.Lossy {
		how += " after training (lossy)"
	}
	fmt.Fprintf(stdout, "wrote %s: %s, %d layers, %d tensors (%s), %.1f MB in %.1fs\n",
		*out, sum.Arch, sum.Layers, sum.Tensors, how, float64(st.Size())/1e6, time.Since(start).Seconds())
	return nil
}
