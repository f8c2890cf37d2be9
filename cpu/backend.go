package cpu

import (
	"errors"
	"fmt"
	"math"
	"runtime"

	"github.com/bitvk/bitvk/nn"
)

// Options configure the CPU backend.
type Options struct {
	Threads int // worker threads; ≤ 0: one per CPU
	Context int // positions of the K/V cache; ≤ 0: the model's maximum
	// HeadQ8 quantizes the output head to int8 with one scale per row,
	// halving the bytes the float16 head reads per token (the head is more
	// than half of them in BitNet b1.58 2B4T) at a small cost in accuracy.
	HeadQ8 bool
	// Head is how the output head is held (see nn.HeadType); the zero
	// value is nn.HeadStored, the file's own type. HeadQ8 overrides it.
	Head  nn.HeadType
	Batch int // most positions evaluated in one pass; ≤ 0: DefaultBatch
}

// DefaultBatch is how many prompt positions one pass evaluates: each
// weight row is unpacked once for all of them.
const DefaultBatch = 128

// layerWeights is one block in the kernel layout.
type layerWeights struct {
	attnNorm, attnSubNorm []float32 // [embd]; attnSubNorm nil when absent
	ffnNorm, ffnSubNorm   []float32 // [embd], [ffn]; ffnSubNorm nil when absent
	qkv                   *ternaryMatrix
	o                     *ternaryMatrix
	gateUp                *ternaryMatrix
	down                  *ternaryMatrix
}

// Backend runs a model on the CPU. It implements nn.Backend.
type Backend struct {
	c       *nn.Config
	k       kernels // the kernel set chosen at New
	pool    *pool
	threads int
	ctx     int
	batch   int

	embd    nn.Tensor // token embedding, rows decoded per token
	layers  []layerWeights
	outNorm []float32 // [embd]
	head    *head

	// kCache, vCache: [layer][ctx][kv_dim] float16 bits
	kCache, vCache [][]uint16
	invFreq        []float64 // [rope_dim/2] base^(−2i/rope_dim)

	s scratch

	// trace, when set (by ForwardTrace), receives the residual stream
	// after each block.
	trace func(layer int, s nn.Stage, x []float32)
}

// New repacks the weights of a model for the CPU. The tensors' file pages
// are released once copied (see nn.Weights.Release).
func New(c *nn.Config, w *nn.Weights, o Options) (*Backend, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if c.HeadDim > maxHeadDim {
		return nil, fmt.Errorf("cpu: head dimension %d is beyond the %d the CPU backend's attention takes", c.HeadDim, maxHeadDim)
	}
	if o.Threads <= 0 {
		o.Threads = runtime.NumCPU()
	}
	if o.Context <= 0 {
		o.Context = c.Context
	}
	if o.Context > c.Context {
		return nil, fmt.Errorf("cpu: context %d is beyond the model's maximum of %d", o.Context, c.Context)
	}
	if o.Batch <= 0 {
		o.Batch = DefaultBatch
	}
	b := &Backend{c: c, k: active, threads: o.Threads, ctx: o.Context, batch: o.Batch, embd: w.TokenEmbd}
	b.pool = newPool(o.Threads)
	if err := b.load(w, o); err != nil {
		b.pool.close()
		return nil, err
	}
	kv := c.KVDim()
	for l := 0; l < c.Layers; l++ {
		b.kCache = append(b.kCache, make([]uint16, o.Context*kv))
		b.vCache = append(b.vCache, make([]uint16, o.Context*kv))
	}
	b.invFreq = ropeFrequencies(c.RopeDim, c.RopeBase)
	b.s = newScratch(c, b.head, o.Batch, o.Context, o.Threads)
	return b, nil
}

func (b *Backend) load(w *nn.Weights, o Options) error {
	var err error
	if b.outNorm, err = w.OutputNorm.Floats(); err != nil {
		return err
	}
	for li, L := range w.Layers {
		var l layerWeights
		for _, p := range []struct {
			dst *[]float32
			t   nn.Tensor
		}{{&l.attnNorm, L.AttnNorm}, {&l.ffnNorm, L.FFNNorm}, {&l.attnSubNorm, L.AttnSubNorm}, {&l.ffnSubNorm, L.FFNSubNorm}} {
			if p.t.Data == nil {
				continue // no sub-norms in this family
			}
			if *p.dst, err = p.t.Floats(); err != nil {
				return err
			}
		}
		if l.qkv, err = newTernaryMatrix(b.pool, w, L.AttnQ, L.AttnK, L.AttnV); err != nil {
			return err
		}
		if l.o, err = newTernaryMatrix(b.pool, w, L.AttnOutput); err != nil {
			return err
		}
		if l.gateUp, err = newTernaryMatrix(b.pool, w, L.FFNGate, L.FFNUp); err != nil {
			return err
		}
		if l.down, err = newTernaryMatrix(b.pool, w, L.FFNDown); err != nil {
			return err
		}
		if l.qkv.n != b.c.Embd || l.down.n != b.c.FFN {
			return fmt.Errorf("cpu: layer %d: projection widths do not match the configuration", li)
		}
		b.layers = append(b.layers, l)
	}
	ht := o.Head
	if o.HeadQ8 {
		ht = nn.HeadQ8
	}
	b.head, err = newHead(b.pool, w, ht)
	return err
}

// ropeFrequencies returns θ_i = base^(−2i/dim) for i < dim/2, computed as
// nn/ref computes them.
func ropeFrequencies(dim int, base float32) []float64 {
	f := make([]float64, dim/2)
	for i := range f {
		f[i] = math.Pow(float64(base), -2*float64(i)/float64(dim))
	}
	return f
}

// Name says what runs the model.
func (b *Backend) Name() string {
	return fmt.Sprintf("cpu (%s, %d threads)", b.k.name, b.threads)
}

// Context is the number of positions the K/V cache holds.
func (b *Backend) Context() int { return b.ctx }

// Threads is the number of worker threads.
func (b *Backend) Threads() int { return b.threads }

// Close stops the worker pool.
func (b *Backend) Close() error {
	if b.pool != nil {
		b.pool.close()
		b.pool = nil
	}
	return nil
}

// Forward implements nn.Backend: it evaluates tokens at positions pos… in
// batches of up to Options.Batch positions.
func (b *Backend) Forward(tokens []int32, pos int, logits []float32) error {
	if b.pool == nil {
		return errors.New("cpu: backend is closed")
	}
	v := b.c.Vocab
	switch {
	case len(tokens) == 0:
		return nil
	case pos < 0 || pos+len(tokens) > b.ctx:
		return fmt.Errorf("cpu: positions %d..%d are outside the context of %d", pos, pos+len(tokens)-1, b.ctx)
	case len(logits) != 0 && len(logits) != v && len(logits) != len(tokens)*v:
		return fmt.Errorf("cpu: logits buffer of %d for %d tokens and a vocabulary of %d", len(logits), len(tokens), v)
	}
	for _, t := range tokens {
		if t < 0 || int(t) >= v {
			return fmt.Errorf("cpu: token %d is outside the vocabulary of %d", t, v)
		}
	}
	for start := 0; start < len(tokens); start += b.batch {
		chunk := tokens[start:min(start+b.batch, len(tokens))]
		var out []float32
		first := 0 // first token of chunk whose logits are wanted
		switch {
		case len(logits) == len(tokens)*v:
			out = logits[start*v : (start+len(chunk))*v]
		case len(logits) == v && start+len(chunk) == len(tokens):
			out, first = logits, len(chunk)-1
		default:
			first = len(chunk)
		}
		if err := b.forwardBatch(chunk, pos+start, out, first); err != nil {
			return err
		}
	}
	return nil
}

// ForwardTrace is Forward that also reports the residual stream after each
// block of each layer (see nn.Tracer).
func (b *Backend) ForwardTrace(tokens []int32, pos int, logits []float32, fn func(int, nn.Stage, []float32)) error {
	b.trace = fn
	defer func() { b.trace = nil }()
	return b.Forward(tokens, pos, logits)
}

var _ nn.Tracer = (*Backend)(nil)
