// Package train trains BitNet b1.58 models on the CPU with
// quantization-aware training (QAT), in the style of llm.c's train_gpt2.c:
// one flat parameter buffer (and a gradient and two AdamW moment buffers of
// the same layout), one flat activation buffer, and one forward and one
// backward function per operation, each stating its math.
//
// The architecture is exactly what bitvk runs as bitnet-b1.58: RMSNorm, GQA
// attention with NEOX RoPE, attention and FFN sub-norms, a relu²-gated FFN,
// and a tied embedding head. Every projection is a BitLinear: its weights
// are ternarized with absmean (γ = mean|W|, W_q = RoundClip(W/(γ+1e-6), −1,
// 1)·γ) and its input quantized per token to int8 with absmax (s =
// 127/max|x|), both with the straight-through estimator, over float32
// latent weights. The embedding (and so the head) is used rounded to
// float16, as it is stored. So the training forward pass computes what
// the exported model computes at inference.
package train

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Shape is a model's size and hyperparameters.
type Shape struct {
	Vocab    int     `json:"vocab"`
	Layers   int     `json:"layers"`
	Embd     int     `json:"embd"`
	FFN      int     `json:"ffn"`
	Heads    int     `json:"heads"`
	KVHeads  int     `json:"kv_heads"`
	Context  int     `json:"context"` // the longest sequence trained on and the exported context length
	RopeBase float32 `json:"rope_base"`
	Eps      float32 `json:"eps"`
}

// HeadDim is the width of one attention head.
func (s Shape) HeadDim() int { return s.Embd / s.Heads }

// KVDim is the width of the keys (and values) of one position.
func (s Shape) KVDim() int { return s.KVHeads * s.HeadDim() }

// Validate says whether bitvk can train and run the shape: I2_S stores
// rows in blocks of 128 values, heads split the width into an even head
// dimension, and KV heads divide the heads.
func (s Shape) Validate() error {
	for _, f := range []struct {
		name string
		v    int
	}{{"vocabulary", s.Vocab}, {"layers", s.Layers}, {"embedding width", s.Embd}, {"FFN width", s.FFN},
		{"heads", s.Heads}, {"KV heads", s.KVHeads}, {"context", s.Context}} {
		if f.v <= 0 {
			return fmt.Errorf("%s must be positive, got %d", f.name, f.v)
		}
	}
	if s.Embd%128 != 0 || s.FFN%128 != 0 {
		return fmt.Errorf("embedding width %d and FFN width %d must be multiples of 128, the I2_S block bitvk stores ternary rows in", s.Embd, s.FFN)
	}
	if s.Embd%s.Heads != 0 || s.HeadDim()%2 != 0 {
		return fmt.Errorf("embedding width %d must split into %d heads of an even size", s.Embd, s.Heads)
	}
	if s.Heads%s.KVHeads != 0 {
		return fmt.Errorf("%d heads are not a multiple of %d KV heads", s.Heads, s.KVHeads)
	}
	if s.Context < 2 {
		return fmt.Errorf("context %d is too short to train on (at least 2)", s.Context)
	}
	if !(s.Eps > 0) || !(s.RopeBase > 0) {
		return fmt.Errorf("RMSNorm epsilon and RoPE base must be positive")
	}
	return nil
}

// Kind says how a parameter tensor is used, initialized, decayed and
// exported.
type Kind int

const (
	KindNorm      Kind = iota // RMSNorm weight: starts at 1, no weight decay, F32 in the GGUF
	KindTernary               // BitLinear weight: absmean-ternarized, I2_S in the GGUF
	KindEmbedding             // tied token embedding and head: used rounded to F16
)

// Tensor is one named parameter tensor: a view into the flat buffer, Out
// rows of In values (a vector has Out = 1).
type Tensor struct {
	Name    string // the GGUF tensor name
	HFName  string // the Hugging Face BitNet name
	Kind    Kind
	In, Out int
	Offset  int // into the flat buffer
}

// Size is the number of values.
func (t Tensor) Size() int { return t.In * t.Out }

// Layout is where every tensor lives in the flat buffers, in GGUF order.
type Layout struct {
	Shape   Shape
	Tensors []Tensor
	Size    int // values in the flat buffer

	// indices into Tensors
	embd, outNorm int
	layers        []layerIndex
}

type layerIndex struct {
	attnNorm, q, k, v, o, attnSubNorm, ffnNorm, gate, up, down, ffnSubNorm int
}

// NewLayout lays the tensors of s out in one buffer.
func NewLayout(s Shape) (*Layout, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	l := &Layout{Shape: s}
	add := func(name, hf string, k Kind, in, out int) int {
		l.Tensors = append(l.Tensors, Tensor{Name: name, HFName: hf, Kind: k, In: in, Out: out, Offset: l.Size})
		l.Size += in * out
		return len(l.Tensors) - 1
	}
	c, f, kv := s.Embd, s.FFN, s.KVDim()
	l.embd = add("token_embd.weight", "model.embed_tokens.weight", KindEmbedding, c, s.Vocab)
	for i := 0; i < s.Layers; i++ {
		n := func(t string) string { return fmt.Sprintf("blk.%d.%s.weight", i, t) }
		h := func(t string) string { return fmt.Sprintf("model.layers.%d.%s.weight", i, t) }
		var li layerIndex
		li.attnNorm = add(n("attn_norm"), h("input_layernorm"), KindNorm, c, 1)
		li.q = add(n("attn_q"), h("self_attn.q_proj"), KindTernary, c, c)
		li.k = add(n("attn_k"), h("self_attn.k_proj"), KindTernary, c, kv)
		li.v = add(n("attn_v"), h("self_attn.v_proj"), KindTernary, c, kv)
		li.o = add(n("attn_output"), h("self_attn.o_proj"), KindTernary, c, c)
		li.attnSubNorm = add(n("attn_sub_norm"), h("self_attn.attn_sub_norm"), KindNorm, c, 1)
		li.ffnNorm = add(n("ffn_norm"), h("post_attention_layernorm"), KindNorm, c, 1)
		li.gate = add(n("ffn_gate"), h("mlp.gate_proj"), KindTernary, c, f)
		li.up = add(n("ffn_up"), h("mlp.up_proj"), KindTernary, c, f)
		li.down = add(n("ffn_down"), h("mlp.down_proj"), KindTernary, f, c)
		li.ffnSubNorm = add(n("ffn_sub_norm"), h("mlp.ffn_sub_norm"), KindNorm, f, 1)
		l.layers = append(l.layers, li)
	}
	l.outNorm = add("output_norm.weight", "model.norm.weight", KindNorm, c, 1)
	return l, nil
}

// View returns tensor i's values in buf, a flat buffer of this layout.
func (l *Layout) View(buf []float32, i int) []float32 {
	t := l.Tensors[i]
	return buf[t.Offset : t.Offset+t.Size()]
}

// Params is a view of one flat buffer (parameters, gradients or a quantized
// copy) by tensor.
type Params struct {
	Embd, OutNorm []float32
	Layers        []LayerParams
}

// LayerParams are one transformer block's tensors.
type LayerParams struct {
	AttnNorm, Q, K, V, O, AttnSubNorm, FFNNorm, Gate, Up, Down, FFNSubNorm []float32
}

// Views returns buf's tensors by name.
func (l *Layout) Views(buf []float32) Params {
	p := Params{Embd: l.View(buf, l.embd), OutNorm: l.View(buf, l.outNorm)}
	for _, li := range l.layers {
		v := func(i int) []float32 { return l.View(buf, i) }
		p.Layers = append(p.Layers, LayerParams{
			AttnNorm: v(li.attnNorm), Q: v(li.q), K: v(li.k), V: v(li.v), O: v(li.o),
			AttnSubNorm: v(li.attnSubNorm), FFNNorm: v(li.ffnNorm),
			Gate: v(li.gate), Up: v(li.up), Down: v(li.down), FFNSubNorm: v(li.ffnSubNorm),
		})
	}
	return p
}

// Init fills buf with the starting weights: norms at 1, the embedding and
// projections normal with standard deviation 0.02, the two projections
// that write the residual stream (attention output and FFN down) scaled by
// 1/√(2·layers) as in GPT-2. The values depend on the seed only.
func (l *Layout) Init(buf []float32, seed uint64) {
	std := 0.02
	for i, t := range l.Tensors {
		v := l.View(buf, i)
		if t.Kind == KindNorm {
			for j := range v {
				v[j] = 1
			}
			continue
		}
		s := std
		if isResidualOut(t.Name) {
			s /= math.Sqrt(2 * float64(l.Shape.Layers))
		}
		r := rand.New(rand.NewPCG(seed, uint64(i)+1))
		for j := range v {
			v[j] = float32(r.NormFloat64() * s)
		}
	}
}

func isResidualOut(name string) bool {
	n := len(name)
	return n > 19 && name[n-19:] == ".attn_output.weight" || n > 16 && name[n-16:] == ".ffn_down.weight"
}

// Count returns the number of parameters of each kind.
func (l *Layout) Count() (ternary, other int) {
	for _, t := range l.Tensors {
		if t.Kind == KindTernary {
			ternary += t.Size()
		} else {
			other += t.Size()
		}
	}
	return ternary, other
}
