// Package synth writes synthetic BitNet b1.58 models: random ternary weights
// in the real shapes and in exactly the conventions of Microsoft's
// ggml-model-i2_s.gguf for BitNet b1.58 2B4T (architecture bitnet-b1.58, its
// metadata keys, tensor names, ggml dimension order, F16 tied embedding, F32
// norms, I2_S projections with a per-tensor scale). They let every part of
// bitvk run and be measured on a fresh machine, with no download.
//
// The output is a pure function of the options: the same seed gives the same
// bytes, whatever the number of cores.
package synth

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sort"
	"sync"

	"github.com/bitvk/bitvk/gguf"
	"github.com/bitvk/bitvk/nn"
)

// Shape is the size of a model.
type Shape struct {
	Layers   int     // transformer blocks
	Embd     int     // residual width
	FFN      int     // feed-forward width
	Heads    int     // query heads
	KVHeads  int     // key/value heads (GQA)
	Context  int     // trained context length
	Vocab    int     // minimum vocabulary size; 0: the vocabulary's own size
	RopeBase float32 // RoPE frequency base
	Eps      float32 // RMSNorm epsilon
}

// Shapes are the presets of --shape. 2b is BitNet b1.58 2B4T.
var Shapes = map[string]Shape{
	"tiny":  {Layers: 2, Embd: 256, FFN: 768, Heads: 4, KVHeads: 2, Context: 512, RopeBase: 500000, Eps: 1e-5},
	"small": {Layers: 4, Embd: 512, FFN: 1536, Heads: 8, KVHeads: 2, Context: 2048, Vocab: 4096, RopeBase: 500000, Eps: 1e-5},
	"2b":    {Layers: 30, Embd: 2560, FFN: 6912, Heads: 20, KVHeads: 5, Context: 4096, Vocab: 128256, RopeBase: 500000, Eps: 1e-5},
}

// ShapeNames lists the presets in a stable order, for help text.
func ShapeNames() []string {
	names := make([]string, 0, len(Shapes))
	for n := range Shapes {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return Shapes[names[i]].Embd < Shapes[names[j]].Embd })
	return names
}

// Options say what to write.
type Options struct {
	Name  string    // general.name; empty: "bitvk synthetic"
	Shape Shape     //
	Type  gguf.Type // gguf.TypeI2_S (default) or gguf.TypeTQ2_0
	Seed  uint64    //
	Vocab *Vocab    // nil: BuiltinVocab(Shape.Vocab)
	// EmbdType is the type of token_embd (the tied head): gguf.TypeF16 (the
	// default), or Q8_0, Q6_K or Q4_0 as Microsoft's converter writes with
	// --quant-embd. The block types hold the F16 file's values quantized.
	EmbdType gguf.Type
}

// EmbdTypes are the embedding types synth writes.
var EmbdTypes = []gguf.Type{gguf.TypeF16, gguf.TypeQ8_0, gguf.TypeQ6_K, gguf.TypeQ4_0}

// Validate checks that the shape can be stored: positive sizes, heads that
// divide the width into an even head dimension, widths that fit the ternary
// block size.
func (o *Options) Validate() error {
	s := o.Shape
	for _, f := range []struct {
		name string
		v    int
	}{{"layers", s.Layers}, {"embedding width", s.Embd}, {"FFN width", s.FFN}, {"heads", s.Heads}, {"KV heads", s.KVHeads}, {"context", s.Context}} {
		if f.v <= 0 {
			return fmt.Errorf("%s must be positive, got %d", f.name, f.v)
		}
	}
	if s.Vocab < 0 {
		return fmt.Errorf("vocabulary size must not be negative, got %d", s.Vocab)
	}
	if s.Embd%s.Heads != 0 || (s.Embd/s.Heads)%2 != 0 {
		return fmt.Errorf("embedding width %d must split into %d heads of an even size", s.Embd, s.Heads)
	}
	if s.Heads%s.KVHeads != 0 {
		return fmt.Errorf("%d heads are not a multiple of %d KV heads", s.Heads, s.KVHeads)
	}
	t := o.ternaryType()
	if t != gguf.TypeI2_S && t != gguf.TypeTQ2_0 {
		return fmt.Errorf("ternary type must be I2_S or TQ2_0, got %s", t)
	}
	bs := t.BlockSize()
	for _, w := range []struct {
		name string
		v    int
	}{{"embedding width", s.Embd}, {"FFN width", s.FFN}} {
		if w.v%bs != 0 {
			return fmt.Errorf("%s %d is not a multiple of %d, which %s needs", w.name, w.v, bs, t)
		}
	}
	if e := o.embdType(); !slices.Contains(EmbdTypes, e) {
		return fmt.Errorf("embedding type must be F16, Q8_0, Q6_K or Q4_0, got %s", e)
	} else if s.Embd%e.BlockSize() != 0 {
		return fmt.Errorf("embedding width %d is not a multiple of %d, which %s needs", s.Embd, e.BlockSize(), e)
	}
	if !(s.Eps > 0) || !(s.RopeBase > 0) {
		return fmt.Errorf("RMSNorm epsilon and RoPE base must be positive")
	}
	return nil
}

func (o *Options) embdType() gguf.Type {
	if o.EmbdType == 0 {
		return gguf.TypeF16
	}
	return o.EmbdType
}

func (o *Options) ternaryType() gguf.Type {
	if o.Type == 0 {
		return gguf.TypeI2_S
	}
	return o.Type
}

// Build returns the model as a gguf.Builder whose tensors are generated as
// they are written.
func Build(o Options) (*gguf.Builder, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	s := o.Shape
	vocab := o.Vocab
	if vocab == nil {
		vocab = BuiltinVocab(s.Vocab)
	}
	name := o.Name
	if name == "" {
		name = "bitvk synthetic"
	}
	tt := o.ternaryType()
	fileType := uint32(nn.FileTypeI2_S)
	if tt == gguf.TypeTQ2_0 {
		fileType = nn.FileTypeTQ2_0
	}
	headDim := s.Embd / s.Heads
	c := nn.Config{Arch: nn.ArchBitNetB158, Name: name, Vocab: vocab.Tokens, Context: s.Context, Embd: s.Embd,
		Layers: s.Layers, FFN: s.FFN, RopeDim: headDim, Heads: s.Heads, KVHeads: s.KVHeads, RopeBase: s.RopeBase, Eps: s.Eps}
	b := &gguf.Builder{Version: 3, Meta: c.Metadata(fileType)}
	b.Meta = append(b.Meta, vocab.Meta...)
	b.Meta = append(b.Meta, gguf.KV{Key: nn.KeyQuantizationVersion, Value: gguf.U32(2)})

	g := &generator{seed: o.Seed}
	u := func(n int) uint64 { return uint64(n) }
	b.Tensors = append(b.Tensors, g.embedding(nn.TensorTokenEmbd, s.Embd, vocab.Tokens, o.embdType()))
	for l := 0; l < s.Layers; l++ {
		name := func(t nn.LayerTensor) string { return nn.LayerTensorName(l, t) }
		kv := s.KVHeads * headDim
		b.Tensors = append(b.Tensors,
			g.norm(name(nn.AttnNorm), s.Embd),
			g.ternary(name(nn.AttnQ), tt, u(s.Embd), u(s.Embd)),
			g.ternary(name(nn.AttnK), tt, u(s.Embd), u(kv)),
			g.ternary(name(nn.AttnV), tt, u(s.Embd), u(kv)),
			g.ternary(name(nn.AttnOutput), tt, u(s.Embd), u(s.Embd)),
			g.norm(name(nn.AttnSubNorm), s.Embd),
			g.norm(name(nn.FFNNorm), s.Embd),
			g.ternary(name(nn.FFNGate), tt, u(s.Embd), u(s.FFN)),
			g.ternary(name(nn.FFNUp), tt, u(s.Embd), u(s.FFN)),
			g.ternary(name(nn.FFNDown), tt, u(s.FFN), u(s.Embd)),
			g.norm(name(nn.FFNSubNorm), s.FFN),
		)
	}
	b.Tensors = append(b.Tensors, g.norm(nn.TensorOutputNorm, s.Embd))
	return b, nil
}

// generator makes each tensor's values from its own stream, seeded by the
// model seed and the tensor's name, so tensors are independent of the order
// they are made in, and from chunk streams within a tensor, so cores can
// share the work without changing the bytes.
type generator struct {
	seed uint64
}

const chunkBytes = 1 << 20

func (g *generator) rng(name string, chunk int) *rand.Rand {
	h := uint64(14695981039346656037) // FNV-1a of the name
	for i := 0; i < len(name); i++ {
		h = (h ^ uint64(name[i])) * 1099511628211
	}
	return rand.New(rand.NewPCG(g.seed^h, uint64(chunk)*0x9E3779B97F4A7C15+1))
}

// fill writes size bytes produced chunk by chunk by gen, using every core.
func fill(w io.Writer, size int, gen func(chunk int, dst []byte)) error {
	workers := runtime.GOMAXPROCS(0)
	nChunks := (size + chunkBytes - 1) / chunkBytes
	for first := 0; first < nChunks; first += workers {
		last := min(first+workers, nChunks)
		bufs := make2D(last-first, func(i int) int { return min(chunkBytes, size-(first+i)*chunkBytes) })
		var wg sync.WaitGroup
		for i := range bufs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				gen(first+i, bufs[i])
			}()
		}
		wg.Wait()
		for _, buf := range bufs {
			if _, err := w.Write(buf); err != nil {
				return err
			}
		}
	}
	return nil
}

func make2D(n int, size func(int) int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = make([]byte, size(i))
	}
	return out
}

// ternaryBytes is every byte whose four 2-bit I2_S codes are valid (0, 1 or
// 2: −1, 0, +1), so a uniform pick among them gives each weight value a third
// of the time.
var ternaryBytes = func() (t [81]byte) {
	for i := range t {
		a, b, c, d := i%3, i/3%3, i/9%3, i/27
		t[i] = byte(a<<6 | b<<4 | c<<2 | d)
	}
	return t
}()

// ternary makes an out×in ternary weight (ggml dims [in, out]) with a
// per-tensor scale near 1/sqrt(2in/3), which keeps activations near unit size.
// The scale is rounded to F16 so the TQ2_0 variant stores the same weights.
func (g *generator) ternary(name string, t gguf.Type, in, out uint64) gguf.TensorSpec {
	r := g.rng(name, -1)
	scale := gguf.F16ToF32(gguf.F32ToF16(float32((0.8 + 0.4*r.Float64()) / math.Sqrt(2*float64(in)/3))))
	n := int(in * out)
	spec := gguf.TensorSpec{Name: name, Type: t, Dims: []uint64{in, out}}
	i2s := func(w io.Writer) error {
		if err := fill(w, n/4, func(chunk int, dst []byte) {
			r := g.rng(name, chunk)
			for i := 0; i+1 < len(dst); i += 2 {
				x := r.Uint64()
				dst[i] = ternaryBytes[(x&0xFFFFFFFF)*81>>32]
				dst[i+1] = ternaryBytes[(x>>32)*81>>32]
			}
		}); err != nil {
			return err
		}
		var trailer [32]byte
		binary.LittleEndian.PutUint32(trailer[:], math.Float32bits(scale))
		_, err := w.Write(trailer[:])
		return err
	}
	if t == gguf.TypeI2_S {
		spec.Fill = i2s
		return spec
	}
	spec.Fill = func(w io.Writer) error {
		var buf bytes.Buffer
		buf.Grow(n/4 + 32)
		if err := i2s(&buf); err != nil {
			return err
		}
		tq, err := gguf.I2_SToTQ2_0(buf.Bytes(), n)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		_, err = w.Write(tq)
		return err
	}
	return spec
}

// norm makes an F32 norm weight near 1.
func (g *generator) norm(name string, n int) gguf.TensorSpec {
	r := g.rng(name, 0)
	data := make([]byte, 4*n)
	for i := 0; i < n; i++ {
		binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(float32(0.9+0.2*r.Float64())))
	}
	return gguf.TensorSpec{Name: name, Type: gguf.TypeF32, Dims: []uint64{uint64(n)}, Data: data}
}

// embedding makes the token embedding, dims [embd, vocab], values uniform
// in ±0.15 (standard deviation ≈ 0.087), stored as F16 or, for a block
// type, those F16 values quantized row by row.
func (g *generator) embedding(name string, embd, vocab int, t gguf.Type) gguf.TensorSpec {
	f16 := func(w io.Writer) error {
		return fill(w, 2*embd*vocab, func(chunk int, dst []byte) {
			r := g.rng(name, chunk)
			for i := 0; i+1 < len(dst); i += 2 {
				v := float32(0.3 * (r.Float64() - 0.5))
				binary.LittleEndian.PutUint16(dst[i:], gguf.F32ToF16(v))
			}
		})
	}
	spec := gguf.TensorSpec{Name: name, Type: t, Dims: []uint64{uint64(embd), uint64(vocab)}, Fill: f16}
	if t == gguf.TypeF16 {
		return spec
	}
	spec.Fill = func(w io.Writer) error {
		q := &quantizeWriter{w: w, t: t, row: make([]float32, 0, embd), n: embd}
		if err := f16(q); err != nil {
			return err
		}
		if len(q.row) != 0 || q.odd {
			return fmt.Errorf("%s: %d values left over", name, len(q.row))
		}
		return nil
	}
	return spec
}

// quantizeWriter takes float16 bytes, and writes each row of n values
// quantized to t.
type quantizeWriter struct {
	w    io.Writer
	t    gguf.Type
	row  []float32
	n    int
	half byte // the first byte of a value split across writes
	odd  bool
}

func (q *quantizeWriter) Write(p []byte) (int, error) {
	for i := 0; i < len(p); i++ {
		if !q.odd {
			q.half, q.odd = p[i], true
			continue
		}
		q.odd = false
		q.row = append(q.row, gguf.F16ToF32(uint16(q.half)|uint16(p[i])<<8))
		if len(q.row) < q.n {
			continue
		}
		var b []byte
		var err error
		switch q.t {
		case gguf.TypeQ8_0:
			b, err = gguf.EncodeQ8_0(q.row)
		case gguf.TypeQ6_K:
			b, err = gguf.EncodeQ6_K(q.row)
		case gguf.TypeQ4_0:
			b, err = gguf.EncodeQ4_0(q.row)
		default:
			err = fmt.Errorf("no encoder for %s", q.t)
		}
		if err != nil {
			return i, err
		}
		if _, err := q.w.Write(b); err != nil {
			return i, err
		}
		q.row = q.row[:0]
	}
	return len(p), nil
}
