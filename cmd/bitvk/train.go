package main

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/bitvk/bitvk/cpu"
	"github.com/bitvk/bitvk/gguf"
	"github.com/bitvk/bitvk/nn"
	"github.com/bitvk/bitvk/train"
)

func runTrain(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("train", "-f TEXT... --vocab VOCAB.gguf [flags] --out MODEL.gguf", stderr)
	var files fileList
	fs.Var(&files, "f", "training text `file` (UTF-8; repeat -f for more)")
	valid := fs.String("valid", "", "validation text `file`: its loss is printed every --eval-every steps and its perplexity at the end")
	vocab := fs.String("vocab", "", "vocabulary GGUF `file` (bitvk tokenizer-train writes one)")
	d := train.DefaultHyper()
	layers := fs.Int("layers", 4, "transformer blocks")
	embd := fs.Int("embd", 256, "residual width (a multiple of 128)")
	ffn := fs.Int("ffn", 768, "feed-forward width (a multiple of 128)")
	heads := fs.Int("heads", 4, "attention heads")
	kvHeads := fs.Int("kv-heads", 2, "key/value heads (GQA)")
	ctx := fs.Int("ctx", 256, "sequence length trained on, and the model's context")
	batch := fs.Int("batch", 8, "sequences per step")
	fs.Float64Var(&d.LR, "lr", d.LR, "peak learning rate")
	fs.IntVar(&d.Warmup, "warmup", d.Warmup, "warmup steps")
	steps := fs.Int("steps", 0, "optimizer steps (or give --tokens)")
	tokens := fs.Int64("tokens", 0, "training tokens, rounded up to whole steps of batch×ctx")
	fs.Float64Var(&d.WeightDecay, "wd", d.WeightDecay, "AdamW weight decay (projections and embedding)")
	fs.Float64Var(&d.Clip, "clip", d.Clip, "clip the gradient's global norm to this (0: no clipping)")
	fs.BoolVar(&d.TwoStage, "two-stage", false, "BitNet b1.58's two-stage schedule: the learning rate drops at the midpoint and weight decay stops")
	float := fs.Bool("float", false, "train the same shape without quantization (for comparison; cannot be exported as I2_S)")
	seed := fs.Uint64("seed", 1, "random seed: initial weights and batches (the same seed gives the same weights on any thread count)")
	threads := fs.Int("t", runtime.NumCPU(), "threads")
	out := fs.String("out", "", "write the trained model to this GGUF `file` (I2_S, bitnet-b1.58)")
	hfOut := fs.String("hf-out", "", "also write a Hugging Face-style checkpoint `dir` (config.json, model.safetensors)")
	name := fs.String("name", "bitvk trained model", "general.name of the exported model")
	ckpt := fs.String("checkpoint", "", "checkpoint `dir` (default: OUT without .gguf, plus .ckpt)")
	ckptEvery := fs.Int("checkpoint-every", 100, "steps between checkpoints (0: only at the end and on Ctrl-C)")
	resume := fs.Bool("resume", false, "go on from the checkpoint in --checkpoint")
	evalEvery := fs.Int("eval-every", 100, "steps between validation losses (0: only at the end)")
	evalWindows := fs.Int("eval-windows", 0, "validation sequences per evaluation (0: all)")
	logEvery := fs.Int("log-every", 10, "steps between progress lines")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) > 0:
		return usageError(fs, "unexpected argument %q", pos[0])
	case len(files) == 0:
		return usageError(fs, "give the training text with -f FILE")
	case *vocab == "":
		return usageError(fs, "give the vocabulary with --vocab FILE (bitvk tokenizer-train writes one)")
	case *out == "" && !*float:
		return usageError(fs, "give --out MODEL.gguf")
	case *out != "" && *float:
		return usageError(fs, "a --float model has no ternary form to write as I2_S: leave out --out (its validation perplexity is printed; --hf-out writes its weights)")
	case *steps < 0 || *tokens < 0:
		return usageError(fs, "--steps and --tokens must be positive")
	case (*steps > 0) == (*tokens > 0):
		return usageError(fs, "give exactly one of --steps and --tokens")
	case *batch <= 0 || *ctx <= 1 || *threads <= 0:
		return usageError(fs, "--batch and -t must be positive and --ctx at least 2")
	}
	if *ckpt == "" {
		base := *out
		if base == "" {
			base = "float-model.gguf"
		}
		*ckpt = strings.TrimSuffix(base, ".gguf") + ".ckpt"
	}
	// Fail before training, not after it, when an output cannot be written.
	if *out != "" {
		if err := checkOutput("--out", *out, append([]string{*vocab, *valid}, files...)...); err != nil {
			return err
		}
	}
	if *hfOut != "" {
		if err := checkOutputDir("--hf-out", *hfOut); err != nil {
			return err
		}
	}
	d.Steps = *steps
	if *tokens > 0 {
		per := int64(*batch * *ctx)
		d.Steps = int((*tokens + per - 1) / per)
	}

	vf, err := gguf.Open(*vocab)
	if err != nil {
		return err
	}
	tok, err := nn.NewTokenizer(vf)
	vf.Close()
	if err != nil {
		return fmt.Errorf("%s: %w", *vocab, err)
	}
	vocabMeta, err := train.VocabMeta(*vocab)
	if err != nil {
		return err
	}
	vocabBytes, err := os.ReadFile(*vocab)
	if err != nil {
		return err
	}
	read := func(paths []string) (*train.Data, error) {
		var texts []train.Text
		for _, p := range paths {
			b, err := os.ReadFile(p)
			if err != nil {
				return nil, err
			}
			texts = append(texts, train.Text{Name: p, Body: b})
		}
		return train.Tokenize(tok, texts)
	}
	t0 := time.Now()
	trainData, err := read(files)
	if err != nil {
		return err
	}
	var validData *train.Data
	if *valid != "" {
		if validData, err = read([]string{*valid}); err != nil {
			return err
		}
	}
	fmt.Fprintf(stderr, "train: %d training tokens", len(trainData.Tokens))
	if validData != nil {
		fmt.Fprintf(stderr, ", %d validation tokens", len(validData.Tokens))
	}
	fmt.Fprintf(stderr, " (tokenized in %s)\n", time.Since(t0).Round(time.Millisecond))

	opts := train.Options{
		Shape: train.Shape{Vocab: tok.Len(), Layers: *layers, Embd: *embd, FFN: *ffn, Heads: *heads, KVHeads: *kvHeads,
			Context: *ctx, RopeBase: 500000, Eps: 1e-5},
		Hyper: d, Float: *float, Batch: *batch, Seed: *seed, Threads: *threads,
		EvalEvery: *evalEvery, EvalWindows: *evalWindows, LogEvery: *logEvery,
		CheckpointDir: *ckpt, CheckpointEvery: *ckptEvery,
		VocabSHA: fmt.Sprintf("%x", sha256.Sum256(vocabBytes)),
	}
	tr, err := train.New(opts, trainData, validData, stderr)
	if err != nil {
		return err
	}
	if *resume {
		if err := tr.Resume(); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "train: resumed from %s at step %d\n", *ckpt, tr.Step)
	} else if _, err := os.Stat(train.CheckpointFile(*ckpt)); err == nil {
		return fmt.Errorf("%s already holds a checkpoint: add --resume to go on from it, or remove it to start over", *ckpt)
	}
	// The share of the machine's float32 FMA peak the progress reports:
	// one core's peak, measured now, times the threads.
	tr.PeakGFLOPS = cpu.FMAPeak(200*time.Millisecond) * float64(min(*threads, runtime.NumCPU()))
	tern, other := tr.Model.Layout.Count()
	fmt.Fprintf(stderr, "train: %s model, %d layers × %d wide (FFN %d, %d heads, %d KV heads), %.2fM ternary + %.2fM other parameters; %d steps of %d×%d tokens (%.1fM tokens), %.2f GFLOP per step, %d threads (float32 FMA peak %.0f GFLOP/s)\n",
		map[bool]string{true: "float", false: "ternary (QAT)"}[*float], *layers, *embd, *ffn, *heads, *kvHeads,
		float64(tern)/1e6, float64(other)/1e6, d.Steps, *batch, *ctx, float64(d.Steps)*float64(*batch**ctx)/1e6,
		tr.FlopsPerStep()/1e9, *threads, tr.PeakGFLOPS)

	sigCtx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	if err := tr.Run(sigCtx); err != nil {
		if errors.Is(err, train.ErrInterrupted) {
			return fmt.Errorf("interrupted at step %d; go on with the same flags and --resume", tr.Step)
		}
		return err
	}
	el := time.Since(start)
	fmt.Fprintf(stderr, "train: done in %s (%.0f tokens/s)\n", el.Round(time.Second), float64(tr.Tokens)/el.Seconds())
	if validData != nil {
		ppl, se, chunks, err := tr.Model.Perplexity(validData, *ctx, *batch)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "validation perplexity (llama-perplexity method, -c %d, %d chunks): PPL = %.4f +/- %.4f\n", *ctx, chunks, ppl, se)
	}
	if *out != "" && !*float {
		if err := train.ExportGGUF(*out, *name, tr.Model, vocabMeta); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "train: wrote %s\n", *out)
	}
	if *hfOut != "" {
		if err := train.ExportHF(*hfOut, tr.Model, tok.BOS(), tok.EOS()); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "train: wrote %s\n", *hfOut)
	}
	return nil
}
