// Package nntest is the conformance suite every backend passes against the
// oracle nn/ref: each operation on its own (Ops), and the whole forward pass
// on synthetic models of every ternary storage type (Forward).
//
// Tolerances, and why:
//   - integer ternary sums Σ t·q: exact (integer arithmetic).
//   - Quantize: codes and scale exact (one float32 product and a rounding).
//   - BitLinear, RMSNorm, RoPE: relative error ≤ 1e-5 of the output's
//     largest magnitude (float32 steps, a different summation order).
//   - attention and the output head: ≤ 1e-4 relative (float16 K/V, float32
//     accumulation against the oracle's float64).
//   - whole forward pass, teacher-forced: logits correlation ≥ 0.999 at
//     every position, and argmax equal wherever the oracle's top-2 margin is
//     at least 1.0; greedy streams equal until the oracle's margin drops
//     below 1.0.
package nntest

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/bitvk/bitvk/gguf"
	"github.com/bitvk/bitvk/nn"
	"github.com/bitvk/bitvk/nn/synth"
)

// Model is a synthetic model held in memory (NewModel), or a model file
// opened as the command line opens one (OpenModel).
type Model struct {
	Name    string
	Config  *nn.Config
	Weights *nn.Weights
	File    *gguf.File
}

// Storage is how a test model stores its ternary weights.
type Storage string

const (
	StoreI2S           Storage = "i2_s"             // Microsoft's layout, one scale per tensor
	StoreTQ2           Storage = "tq2_0"            // llama.cpp's 2-bit type, per-block scales (equal)
	StoreTQ1           Storage = "tq1_0"            // llama.cpp's 1.6-bit type
	StoreTQ2BlockScale Storage = "tq2_0-blockscale" // TQ2_0 whose blocks have unequal scales
)

// Storages lists every storage the suite runs.
var Storages = []Storage{StoreI2S, StoreTQ2, StoreTQ1, StoreTQ2BlockScale}

// NewModel writes a synthetic model of the named shape (synth.Shapes) in
// memory, converts its ternary tensors to the storage, and parses it back.
func NewModel(tb testing.TB, shape string, st Storage, seed uint64) *Model {
	return NewModelEmbd(tb, shape, st, gguf.TypeF16, seed)
}

// NewModelEmbd is NewModel with the token embedding (the tied head) stored
// as embd: F16, Q8_0, Q6_K or Q4_0 (see synth.Options.EmbdType).
func NewModelEmbd(tb testing.TB, shape string, st Storage, embd gguf.Type, seed uint64) *Model {
	tb.Helper()
	m, err := newModel(shape, st, embd, seed)
	if err != nil {
		tb.Fatalf("nntest: %s/%s model (%s embedding): %v", shape, st, embd, err)
	}
	return m
}

// OpenModel opens the GGUF file at path (mapped, as the command line
// opens a model), its configuration and weights checked; the file closes
// when the test ends.
func OpenModel(tb testing.TB, path string) *Model {
	tb.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { f.Close() })
	c, err := nn.ParseConfig(f)
	if err != nil {
		tb.Fatalf("nntest: %s: %v", path, err)
	}
	w, err := nn.LoadWeights(f, c)
	if err != nil {
		tb.Fatalf("nntest: %s: %v", path, err)
	}
	return &Model{Name: path, Config: c, Weights: w, File: f}
}

func newModel(shape string, st Storage, embd gguf.Type, seed uint64) (*Model, error) {
	s, ok := synth.Shapes[shape]
	if !ok {
		return nil, fmt.Errorf("no shape %q", shape)
	}
	b, err := synth.Build(synth.Options{Shape: s, Seed: seed, EmbdType: embd})
	if err != nil {
		return nil, err
	}
	f, err := parse(b)
	if err != nil {
		return nil, err
	}
	if st != StoreI2S {
		if b, err = convert(f, st); err != nil {
			return nil, err
		}
		if f, err = parse(b); err != nil {
			return nil, err
		}
	}
	c, err := nn.ParseConfig(f)
	if err != nil {
		return nil, err
	}
	w, err := nn.LoadWeights(f, c)
	if err != nil {
		return nil, err
	}
	name := shape + "/" + string(st)
	if embd != gguf.TypeF16 {
		name += "/embd-" + strings.ToLower(embd.String())
	}
	return &Model{Name: name, Config: c, Weights: w, File: f}, nil
}

func parse(b *gguf.Builder) (*gguf.File, error) {
	var buf bytes.Buffer
	// Grow once to about the file's size: doubling a buffer up to the 2B
	// shape's 1.2 GB costs more than generating it.
	size := 1 << 20
	for _, t := range b.Tensors {
		n := uint64(1)
		for _, d := range t.Dims {
			n *= d
		}
		if s, err := gguf.DataSize(t.Type, n); err == nil {
			size += int(s) + 64
		}
	}
	buf.Grow(size)
	if _, err := b.WriteTo(&buf); err != nil {
		return nil, err
	}
	return gguf.Parse(buf.Bytes())
}

// convert rewrites every I2_S tensor of f in another storage, holding the
// same ternary values (and, for the block-scale variant, a different scale
// for every 256-value block).
func convert(f *gguf.File, st Storage) (*gguf.Builder, error) {
	b := gguf.FromFile(f)
	for i := range b.Tensors {
		spec := &b.Tensors[i]
		if spec.Type != gguf.TypeI2_S {
			continue
		}
		n := 1
		for _, d := range spec.Dims {
			n *= int(d)
		}
		vals := make([]int8, n)
		scale, err := gguf.UnpackI2_S(spec.Data, n, vals)
		if err != nil {
			return nil, err
		}
		x := make([]float32, n)
		for j, v := range vals {
			s := scale
			if st == StoreTQ2BlockScale {
				s *= float32(1 + (j/256)%5) // blocks with scales ×1…×5
			}
			x[j] = float32(v) * s
		}
		switch st {
		case StoreTQ2, StoreTQ2BlockScale:
			spec.Type = gguf.TypeTQ2_0
			spec.Data, err = gguf.EncodeTQ2_0(x)
		case StoreTQ1:
			spec.Type = gguf.TypeTQ1_0
			spec.Data, err = gguf.EncodeTQ1_0(x)
		default:
			return nil, fmt.Errorf("unknown storage %q", st)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", spec.Name, err)
		}
	}
	return b, nil
}
