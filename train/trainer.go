package train

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"time"
)

// Options say what to train and how.
type Options struct {
	Shape   Shape
	Hyper   Hyper
	Float   bool // train without quantizers, for comparison
	Batch   int  // sequences per step
	Seed    uint64
	Threads int

	EvalEvery       int // steps between validation losses; 0: only at the end
	EvalWindows     int // validation sequences per evaluation; 0: all
	LogEvery        int // steps between progress lines
	CheckpointDir   string
	CheckpointEvery int // steps between checkpoints; 0: only at the end and on interrupt
	VocabSHA        string
}

// Validate checks the options before any work.
func (o *Options) Validate() error {
	if err := o.Shape.Validate(); err != nil {
		return err
	}
	if err := o.Hyper.Validate(); err != nil {
		return err
	}
	if o.Batch <= 0 {
		return fmt.Errorf("batch must be positive, got %d", o.Batch)
	}
	if o.EvalEvery < 0 || o.EvalWindows < 0 || o.LogEvery < 0 || o.CheckpointEvery < 0 {
		return fmt.Errorf("intervals must not be negative")
	}
	return nil
}

// Trainer runs the training loop.
type Trainer struct {
	Opt          Options
	Model        *Model
	Adam         *AdamW
	Train, Valid *Data
	Step         int   // steps done
	Tokens       int64 // training tokens seen
	Log          io.Writer
	// PeakGFLOPS is the machine's float32 FMA peak over the threads used
	// (measured by the caller); 0 leaves the share out of the progress.
	PeakGFLOPS float64

	tokens, targets []int32
}

// ErrInterrupted is returned by Run when its context is cancelled; the
// checkpoint has been saved (when there is a directory for it).
var ErrInterrupted = errors.New("training interrupted")

// New prepares a run from scratch: the layout, the initial weights from
// the seed, zero optimizer moments.
func New(o Options, trainData, valid *Data, log io.Writer) (*Trainer, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if trainData == nil || len(trainData.Tokens) < o.Shape.Context {
		n := 0
		if trainData != nil {
			n = len(trainData.Tokens)
		}
		return nil, fmt.Errorf("the training text has %d tokens, fewer than one sequence of --ctx %d", n, o.Shape.Context)
	}
	for _, t := range trainData.Tokens {
		if int(t) >= o.Shape.Vocab {
			return nil, fmt.Errorf("token %d of the training text is outside the vocabulary of %d", t, o.Shape.Vocab)
		}
	}
	l, err := NewLayout(o.Shape)
	if err != nil {
		return nil, err
	}
	m := NewModel(l, o.Float, o.Threads)
	l.Init(m.Params, o.Seed)
	n := o.Batch * o.Shape.Context
	return &Trainer{Opt: o, Model: m, Adam: NewAdamW(l.Size), Train: trainData, Valid: valid, Log: log,
		tokens: make([]int32, n), targets: make([]int32, n)}, nil
}

// header describes the run for a checkpoint.
func (t *Trainer) header() CheckpointHeader {
	return CheckpointHeader{Shape: t.Opt.Shape, Hyper: t.Opt.Hyper, Float: t.Opt.Float, Seed: t.Opt.Seed,
		Batch: t.Opt.Batch, Step: t.Step, Tokens: t.Tokens, DataHash: t.Train.Hash(), VocabSHA: t.Opt.VocabSHA}
}

// Resume loads the checkpoint in Opt.CheckpointDir. It must come from the
// same shape, float mode, seed, batch, data and vocabulary; the number of
// steps may grow.
func (t *Trainer) Resume() error {
	dir := t.Opt.CheckpointDir
	h, err := ReadCheckpointHeader(dir)
	if err != nil {
		return err
	}
	want := t.header()
	switch {
	case h.Shape != want.Shape:
		return fmt.Errorf("checkpoint in %s is of shape %+v; the flags ask for %+v", dir, h.Shape, want.Shape)
	case h.Float != want.Float || h.Seed != want.Seed || h.Batch != want.Batch:
		return fmt.Errorf("checkpoint in %s was made with float=%v seed=%d batch=%d; the flags ask for float=%v seed=%d batch=%d",
			dir, h.Float, h.Seed, h.Batch, want.Float, want.Seed, want.Batch)
	case h.DataHash != want.DataHash:
		return fmt.Errorf("checkpoint in %s was trained on other text (token stream hash differs)", dir)
	case h.VocabSHA != want.VocabSHA:
		return fmt.Errorf("checkpoint in %s was trained with another vocabulary", dir)
	case h.Step > t.Opt.Hyper.Steps:
		return fmt.Errorf("checkpoint in %s is at step %d, past --steps %d", dir, h.Step, t.Opt.Hyper.Steps)
	}
	hy := h.Hyper
	hy.Steps = t.Opt.Hyper.Steps
	if hy != t.Opt.Hyper {
		return fmt.Errorf("checkpoint in %s was made with other optimizer settings %+v (the flags give %+v)", dir, h.Hyper, t.Opt.Hyper)
	}
	if _, err := LoadCheckpoint(dir, t.Model, t.Adam); err != nil {
		return err
	}
	t.Step, t.Tokens = h.Step, h.Tokens
	return nil
}

// Save writes a checkpoint (when there is a directory for it).
func (t *Trainer) Save() error {
	if t.Opt.CheckpointDir == "" {
		return nil
	}
	return SaveCheckpoint(t.Opt.CheckpointDir, t.header(), t.Model, t.Adam)
}

// TrainStep runs one step: a batch, forward, backward, AdamW. It returns
// the loss and the gradient norm before clipping.
func (t *Trainer) TrainStep() (loss, gnorm float64, err error) {
	o := t.Opt
	if err := t.Train.Batch(t.tokens, t.targets, o.Batch, o.Shape.Context, o.Seed, t.Step); err != nil {
		return 0, 0, err
	}
	loss, err = t.Model.Forward(t.tokens, t.targets, o.Batch, o.Shape.Context)
	if err != nil {
		return 0, 0, err
	}
	if math.IsNaN(loss) || math.IsInf(loss, 0) {
		return 0, 0, fmt.Errorf("step %d: the loss is %v (lower --lr?)", t.Step+1, loss)
	}
	if err := t.Model.Backward(); err != nil {
		return 0, 0, err
	}
	gnorm = t.Adam.Step(t.Model, o.Hyper, t.Step)
	t.Step++
	t.Tokens += int64(o.Batch * o.Shape.Context)
	return loss, gnorm, nil
}

// ValidLoss is the mean cross-entropy over the validation windows.
func (t *Trainer) ValidLoss() (float64, error) {
	if t.Valid == nil {
		return math.NaN(), nil
	}
	ctx := t.Opt.Shape.Context
	tokens, targets, n := t.Valid.Windows(ctx, t.Opt.EvalWindows)
	if n == 0 {
		return 0, fmt.Errorf("the validation text has %d tokens, fewer than one sequence of %d", len(t.Valid.Tokens), ctx)
	}
	var sum float64
	for i := 0; i < n; i += t.Opt.Batch {
		b := min(t.Opt.Batch, n-i)
		l, err := t.Model.Forward(tokens[i*ctx:(i+b)*ctx], targets[i*ctx:(i+b)*ctx], b, ctx)
		if err != nil {
			return 0, err
		}
		sum += l * float64(b)
	}
	return sum / float64(n), nil
}

// FlopsPerStep counts the multiply-adds (×2) of one step: the matrix
// products of the projections and the head, and attention's two products
// over the causal triangle, forward once and backward twice.
func (t *Trainer) FlopsPerStep() float64 {
	s, n := t.Opt.Shape, float64(t.Opt.Batch*t.Opt.Shape.Context)
	c, f, kv, v := float64(s.Embd), float64(s.FFN), float64(s.KVDim()), float64(s.Vocab)
	proj := float64(s.Layers)*(2*c*c+2*c*kv+3*c*f) + v*c
	T := float64(s.Context)
	attn := float64(s.Layers) * float64(t.Opt.Batch) * float64(s.Heads) * T * (T + 1) / 2 * float64(s.HeadDim()) * 2
	return 3 * 2 * (n*proj + attn)
}

// Run trains until Hyper.Steps, printing progress, evaluating and
// checkpointing as the options say. When ctx is cancelled it saves a
// checkpoint after the step in flight and returns ErrInterrupted.
func (t *Trainer) Run(ctx context.Context) error {
	o := t.Opt
	start, startStep := time.Now(), t.Step
	flops := t.FlopsPerStep()
	for t.Step < o.Hyper.Steps {
		if ctx.Err() != nil {
			if err := t.Save(); err != nil {
				return err
			}
			fmt.Fprintf(t.Log, "interrupted at step %d; checkpoint saved in %s\n", t.Step, o.CheckpointDir)
			return ErrInterrupted
		}
		loss, gnorm, err := t.TrainStep()
		if err != nil {
			return err
		}
		last := t.Step == o.Hyper.Steps
		val := math.NaN()
		if (o.EvalEvery > 0 && t.Step%o.EvalEvery == 0) || last {
			if val, err = t.ValidLoss(); err != nil {
				return err
			}
		}
		if (o.LogEvery > 0 && t.Step%o.LogEvery == 0) || last || !math.IsNaN(val) {
			el := time.Since(start).Seconds()
			done := t.Step - startStep
			perStep := el / float64(done)
			lr, _ := o.Hyper.Schedule(t.Step - 1)
			line := fmt.Sprintf("step %d/%d  loss %.4f", t.Step, o.Hyper.Steps, loss)
			if !math.IsNaN(val) {
				line += fmt.Sprintf("  val %.4f (ppl %.2f)", val, math.Exp(val))
			}
			gf := flops / perStep / 1e9
			line += fmt.Sprintf("  lr %.2e  |g| %.2f  %.0f tok/s  %.1f GFLOP/s", lr, gnorm,
				float64(o.Batch*o.Shape.Context)/perStep, gf)
			if t.PeakGFLOPS > 0 {
				line += fmt.Sprintf(" (%.0f%% of peak)", 100*gf/t.PeakGFLOPS)
			}
			line += fmt.Sprintf("  ETA %s", (time.Duration(perStep*float64(o.Hyper.Steps-t.Step)) * time.Second).Round(time.Second))
			fmt.Fprintln(t.Log, line)
		}
		if o.CheckpointEvery > 0 && t.Step%o.CheckpointEvery == 0 && !last {
			if err := t.Save(); err != nil {
				return err
			}
		}
	}
	return t.Save()
}
