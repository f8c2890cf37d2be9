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
	// Slots is the number of sequences the K/V cache holds, Context
	// positions each (nn.MultiBackend); ≤ 0: one.
	Slots int
	// Kernels names the kernel set to run (one of KernelNames); "": the
	// fastest this CPU supports.
	Kernels string
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
	// soloDecode: a decode step (one token) runs on the calling thread
	// alone, the helpers idle: the model reads under soloBytes a token.
	soloDecode bool
	ctx        int
	slots      int
	batch      int

	embd    nn.Tensor // token embedding, rows decoded per token
	layers  []layerWeights
	outNorm []float32 // [embd]
	head    *head

	// kCache: [layer][slot][kv head][kctx/16][head_dim][16] float16 bits,
	// the keys of 16 positions at a time with positions innermost
	// (kScores' layout, kBase); vCache: [layer][slot][kv head][ctx]
	// [head_dim] (cacheRow). The keys (values) of one K/V head are
	// contiguous, so attention over a long context reads one stream per
	// head instead of 256 bytes out of every kv_dim·2.
	kCache, vCache [][]uint16
	kctx           int       // ctx rounded up to whole blocks of 16 positions
	invFreq        []float64 // [rope_dim/2] base^(−2i/rope_dim)

	s scratch

	// trace, when set (by ForwardTrace), receives the residual stream
	// after each block.
	trace func(layer int, s nn.Stage, x []float32)
	// prof, when set (by ProfileForward), times the stages of a pass.
	prof *profiler
}

// MaxThreads is the most threads New takes (ggml's limit is 512): each
// is a goroutine that polls for work, so a mistyped count would start
// tens of thousands of them.
const MaxThreads = 1024

// New repacks the weights of a model for the CPU. The tensors' file pages
// are released once copied (see nn.Weights.Release).
func New(c *nn.Config, w *nn.Weights, o Options) (*Backend, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if err := w.Check(c); err != nil {
		return nil, err
	}
	if o.Threads <= 0 {
		o.Threads = runtime.NumCPU()
	}
	if o.Threads > MaxThreads {
		return nil, fmt.Errorf("cpu: %d threads is more than %d (this machine has %d CPUs)", o.Threads, MaxThreads, runtime.NumCPU())
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
	if o.Slots <= 0 {
		o.Slots = 1
	}
	if err := checkCacheSize(c, o); err != nil {
		return nil, err
	}
	k, err := kernelSet(o.Kernels)
	if err != nil {
		return nil, err
	}
	b := &Backend{c: c, k: k, threads: o.Threads, ctx: o.Context, slots: o.Slots, batch: o.Batch, embd: w.TokenEmbd}
	b.pool = newPool(o.Threads)
	if err := b.load(w, o); err != nil {
		b.pool.close()
		return nil, err
	}
	b.soloDecode = b.stepBytes() < soloBytes
	kv := c.KVDim()
	b.kctx = (o.Context + kBlock - 1) / kBlock * kBlock
	// The caches in huge pages too: attention over a long context streams
	// them as a decode step streams the weights.
	caches := new(weightArena)
	for l := 0; l < c.Layers; l++ {
		b.kCache = append(b.kCache, caches.f16(o.Slots*b.kctx*kv))
		b.vCache = append(b.vCache, caches.f16(o.Slots*o.Context*kv))
	}
	// Committed now, as llama.cpp clears its cache at load: a fresh
	// allocation is only promised memory, and the first pass of a slot
	// took its pages one fault at a time (the K cache is laid out by
	// position block, so a slot's first token touches most of its pages).
	// On the Zen 5 VM the first request of a 4-slot server waited 0.4 s
	// for its prompt's pass (0.04 s later) and four requests arriving
	// together up to 1.5 s in the queue while slots 1-3 faulted 1.2 GB in.
	b.pool.run(2*c.Layers, 1, func(_, lo, hi int) {
		for i := lo; i < hi; i++ {
			if i%2 == 0 {
				commit(f16Bytes(b.kCache[i/2]))
			} else {
				commit(f16Bytes(b.vCache[i/2]))
			}
		}
	})
	b.invFreq = ropeFrequencies(c.RopeDim, c.RopeBase)
	b.s = newScratch(c, b.head, o.Batch, o.Context, o.Threads, b.k.kScoresWide != nil)
	return b, nil
}

func (b *Backend) load(w *nn.Weights, o Options) error {
	var err error
	if b.outNorm, err = w.OutputNorm.Floats(); err != nil {
		return err
	}
	arena := new(weightArena)
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
		if l.qkv, err = newTernaryMatrix(b.pool, arena, w, L.AttnQ, L.AttnK, L.AttnV); err != nil {
			return err
		}
		if l.o, err = newTernaryMatrix(b.pool, arena, w, L.AttnOutput); err != nil {
			return err
		}
		if l.gateUp, err = newTernaryMatrix(b.pool, arena, w, L.FFNGate, L.FFNUp); err != nil {
			return err
		}
		if l.down, err = newTernaryMatrix(b.pool, arena, w, L.FFNDown); err != nil {
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
	b.head, err = newHead(b.pool, arena, w, ht, b.k.sixHead)
	return err
}

// unknownMemory bounds what checkCacheSize allows where the machine's
// memory is unknown.
const unknownMemory = 1 << 40

// checkCacheSize refuses a context whose K/V cache and attention scores
// would not fit the machine's memory, before anything is allocated: a
// model's context_length (the default context) can be any 31-bit number,
// and allocating a cache of billions of positions would end the process.
func checkCacheSize(c *nn.Config, o Options) error {
	// K and V: [layer][slot][ctx][kv dim] float16; scores: [worker][group·ctx] float32.
	cache := 2 * 2 * float64(c.Layers) * float64(o.Slots) * float64(o.Context+kBlock) * float64(c.KVDim())
	scores := 4 * float64(o.Threads) * float64(c.Heads/c.KVHeads) * float64(o.Context)
	limit, known := physicalMemory()
	if !known {
		limit = unknownMemory
	}
	if need := cache + scores; need > float64(limit) {
		slots := ""
		if o.Slots > 1 {
			slots = fmt.Sprintf(" in each of %d slots", o.Slots)
		}
		return fmt.Errorf("cpu: a context of %d positions%s needs a K/V cache of %s, more than this machine's %s of memory: lower -c (the model's context_length is %d)",
			o.Context, slots, nn.SizeText(need), nn.SizeText(float64(limit)), c.Context)
	}
	return nil
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

// Context is the number of positions the K/V cache holds per slot.
func (b *Backend) Context() int { return b.ctx }

// Slots is the number of sequences the K/V cache holds.
func (b *Backend) Slots() int { return b.slots }

// Batch is the most positions one pass evaluates.
func (b *Backend) Batch() int { return b.batch }

// Threads is the number of worker threads.
func (b *Backend) Threads() int { return b.threads }

// soloBytes: a model that reads fewer weight bytes a token than this
// decodes on one thread, whatever Options.Threads, and runs its passes of
// several tokens (prompts, verification) on all of them. A decode step of
// such a model is a few hundred microseconds in some 80 jobs; split over
// threads, each job pays a hand-off and each stage reads its input from
// the cache of the core that wrote it. nano-kjv (8.4 MB a token) decoded
// at 4119 tok/s on one thread of the Zen 5 VM and 3166 on two (bitvk bench
// --profile: the norms 17 → 47 µs a step, the head 69 → 80, the ternary
// products 162 → 130); the small synthetic shape (10 MB) at 5861 and 6058;
// the 2B shape (850 MB-1.2 GB) 1.5-1.9× faster on two threads.
const soloBytes = 16 << 20

// stepBytes is the weight bytes a decode step reads: the ternary matrices
// and the output head.
func (b *Backend) stepBytes() int64 {
	n := b.head.bytes()
	for _, l := range b.layers {
		for _, m := range []*ternaryMatrix{l.qkv, l.o, l.gateUp, l.down} {
			n += int64(len(m.data))
		}
	}
	return n
}

// HeadBytes is what one pass over the output head reads: its weights in
// the form the backend holds them (a Q4_0 head in its 4.5 bits a value,
// the other block types as 8-bit codes and float32 scales).
func (b *Backend) HeadBytes() int64 { return b.head.bytes() }

// DecodeThreads is the threads a decode step runs on: Threads, or one for
// a model that reads under soloBytes a token (its prompts take Threads).
func (b *Backend) DecodeThreads() int {
	if b.soloDecode {
		return 1
	}
	return b.threads
}

// Kernels is the name of the kernel set the backend runs.
func (b *Backend) Kernels() string { return b.k.name }

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
		s := &b.s
		for t := range chunk {
			s.seq[t], s.pos[t] = 0, pos+start+t
		}
		if err := b.forwardBatch(chunk, out, first); err != nil {
			return err
		}
	}
	return nil
}

// ForwardMulti implements nn.MultiBackend: the batch is evaluated in
// passes of up to Options.Batch tokens, in its order; within a pass the
// tokens whose logits are wanted go last, so that the head runs on the
// pass's final rows as it does for Forward.
func (b *Backend) ForwardMulti(batch []nn.SeqToken, logits []float32) error {
	if b.pool == nil {
		return errors.New("cpu: backend is closed")
	}
	v, want := b.c.Vocab, 0
	for i, t := range batch {
		switch {
		case t.Seq < 0 || t.Seq >= b.slots:
			return fmt.Errorf("cpu: batch token %d is for slot %d; the cache has %d slots", i, t.Seq, b.slots)
		case t.Pos < 0 || t.Pos >= b.ctx:
			return fmt.Errorf("cpu: batch token %d is at position %d, outside the context of %d", i, t.Pos, b.ctx)
		case t.Token < 0 || int(t.Token) >= v:
			return fmt.Errorf("cpu: batch token %d is %d, outside the vocabulary of %d", i, t.Token, v)
		}
		if t.Logits {
			want++
		}
		// Two tokens at one place would race for its cache row.
		for _, u := range batch[max(i-b.batch+1, 0):i] {
			if u.Seq == t.Seq && u.Pos == t.Pos {
				return fmt.Errorf("cpu: batch token %d is a second token at position %d of slot %d", i, t.Pos, t.Seq)
			}
		}
	}
	if len(logits) != want*v {
		return fmt.Errorf("cpu: logits buffer of %d for %d tokens wanting logits and a vocabulary of %d", len(logits), want, v)
	}
	s := &b.s
	done := 0 // logits rows written
	for start := 0; start < len(batch); start += b.batch {
		chunk := batch[start:min(start+b.batch, len(batch))]
		n, k := 0, 0 // tokens without logits, with
		for _, t := range chunk {
			if t.Logits {
				k++
			}
		}
		first := len(chunk) - k
		n, k = 0, 0
		for _, t := range chunk {
			i := n
			if t.Logits {
				i = first + k
				k++
			} else {
				n++
			}
			s.tok[i], s.seq[i], s.pos[i] = t.Token, t.Seq, t.Pos
		}
		if err := b.forwardBatch(s.tok[:len(chunk)], logits[done*v:(done+k)*v], first); err != nil {
			return err
		}
		done += k
	}
	return nil
}

// CopySeq implements nn.MultiBackend: it copies the keys and values of
// positions 0…n−1 of slot src to slot dst.
func (b *Backend) CopySeq(dst, src, n int) error {
	switch {
	case dst < 0 || dst >= b.slots || src < 0 || src >= b.slots:
		return fmt.Errorf("cpu: copying slot %d to slot %d: the cache has %d slots", src, dst, b.slots)
	case n < 0 || n > b.ctx:
		return fmt.Errorf("cpu: copying %d positions: the context holds %d", n, b.ctx)
	case dst == src || n == 0:
		return nil
	}
	hd := b.c.HeadDim
	nk := (n + kBlock - 1) / kBlock * kBlock * hd // whole blocks of keys
	for l := range b.kCache {
		for h := 0; h < b.c.KVHeads; h++ {
			d, s := b.kBase(dst, h), b.kBase(src, h)
			copy(b.kCache[l][d:d+nk], b.kCache[l][s:s+nk])
			d, s = b.cacheRow(dst, h, 0), b.cacheRow(src, h, 0)
			copy(b.vCache[l][d:d+n*hd], b.vCache[l][s:s+n*hd])
		}
	}
	return nil
}

var _ nn.MultiBackend = (*Backend)(nil)

// cacheRow is the index in a layer's V cache of the head_dim values of
// K/V head h at position pos of slot seq.
func (b *Backend) cacheRow(seq, h, pos int) int {
	return ((seq*b.c.KVHeads+h)*b.ctx + pos) * b.c.HeadDim
}

// kBase is the index in a layer's K cache of the first block of K/V head h
// of slot seq; key d of position p is at kBase + (p/16)·16·head_dim +
// 16·d + p%16.
func (b *Backend) kBase(seq, h int) int {
	return (seq*b.c.KVHeads + h) * b.kctx * b.c.HeadDim
}

// ForwardTrace is Forward that also reports the residual stream after each
// block of each layer (see nn.Tracer).
func (b *Backend) ForwardTrace(tokens []int32, pos int, logits []float32, fn func(int, nn.Stage, []float32)) error {
	b.trace = fn
	defer func() { b.trace = nil }()
	return b.Forward(tokens, pos, logits)
}

var _ nn.Tracer = (*Backend)(nil)
