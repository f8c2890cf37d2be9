package nn

import (
	"fmt"
	"strings"

	"github.com/bitvk/bitvk/gguf"
)

// Tensor is one weight: its type, its shape in ggml order (In is the input
// width, the contiguous dimension; Out the number of rows) and its bytes, a
// view into the model file.
type Tensor struct {
	Name string
	Type gguf.Type
	In   int    // ggml dims[0]
	Out  int    // ggml dims[1]; 1 for vectors
	Data []byte // DataSize(Type, In·Out) bytes
}

// Layer holds the weights of one transformer block. AttnSubNorm and
// FFNSubNorm are empty (nil Data) in families without sub-norms.
type Layer struct {
	AttnNorm, AttnQ, AttnK, AttnV, AttnOutput, AttnSubNorm Tensor
	FFNNorm, FFNGate, FFNUp, FFNDown, FFNSubNorm           Tensor
}

// Weights is the weight table of a model.
type Weights struct {
	TokenEmbd  Tensor // [Embd, Vocab]
	OutputNorm Tensor // [Embd]
	Output     Tensor // [Embd, Vocab]; the same tensor as TokenEmbd when the head is tied
	TiedOutput bool
	Layers     []Layer
}

// ternaryRunnable reports whether bitvk runs projections stored as t.
func ternaryRunnable(t gguf.Type) bool {
	return t == gguf.TypeI2_S || t == gguf.TypeTQ2_0 || t == gguf.TypeTQ1_0
}

// LoadWeights builds the weight table of f for c and checks every tensor:
// present, of the shape c implies, of a type bitvk runs. All problems are
// reported at once.
func LoadWeights(f *gguf.File, c *Config) (*Weights, error) {
	var errs []string
	bad := func(format string, a ...any) { errs = append(errs, fmt.Sprintf(format, a...)) }
	get := func(name string, in, out int, kind string) Tensor {
		ti, ok := f.Tensor(name)
		if !ok {
			bad("tensor %s is missing", name)
			return Tensor{Name: name}
		}
		t := Tensor{Name: name, Type: ti.Type, In: int(ti.Dims[0]), Out: 1, Data: f.TensorData(ti)}
		if len(ti.Dims) > 1 {
			t.Out = int(ti.Dims[1])
		}
		shapeOK := t.In == in && t.Out == out && (len(ti.Dims) == 1 && out == 1 || len(ti.Dims) == 2)
		for _, d := range ti.Dims[min(2, len(ti.Dims)):] {
			shapeOK = shapeOK && d == 1
		}
		if !shapeOK {
			bad("tensor %s has shape %v, want [%d %d]", name, ti.Dims, in, out)
		}
		switch kind {
		case "ternary":
			if !ternaryRunnable(ti.Type) {
				if ti.Type.Ternary() {
					bad("tensor %s is %s, which bitvk cannot run (convert the model to I2_S, TQ2_0 or TQ1_0)", name, ti.Type)
				} else {
					bad("tensor %s is %s, not ternary: bitvk runs BitNet b1.58 models, whose projections are I2_S, TQ2_0 or TQ1_0", name, ti.Type)
				}
			}
		case "float":
			if !ti.Type.CanDecode() || ti.Type.Ternary() {
				bad("tensor %s is %s: bitvk cannot read it (want F32, F16, BF16, Q8_0 or Q6_K)", name, ti.Type)
			}
		}
		return t
	}
	w := &Weights{}
	w.TokenEmbd = get(TensorTokenEmbd, c.Embd, c.Vocab, "float")
	w.OutputNorm = get(TensorOutputNorm, c.Embd, 1, "float")
	if _, ok := f.Tensor(TensorOutput); ok {
		w.Output = get(TensorOutput, c.Embd, c.Vocab, "float")
	} else {
		w.Output, w.TiedOutput = w.TokenEmbd, true
	}
	kv := c.KVDim()
	for l := 0; l < c.Layers; l++ {
		n := func(t LayerTensor) string { return LayerTensorName(l, t) }
		L := Layer{
			AttnNorm:   get(n(AttnNorm), c.Embd, 1, "float"),
			AttnQ:      get(n(AttnQ), c.Embd, c.Embd, "ternary"),
			AttnK:      get(n(AttnK), c.Embd, kv, "ternary"),
			AttnV:      get(n(AttnV), c.Embd, kv, "ternary"),
			AttnOutput: get(n(AttnOutput), c.Embd, c.Embd, "ternary"),
			FFNNorm:    get(n(FFNNorm), c.Embd, 1, "float"),
			FFNGate:    get(n(FFNGate), c.Embd, c.FFN, "ternary"),
			FFNUp:      get(n(FFNUp), c.Embd, c.FFN, "ternary"),
			FFNDown:    get(n(FFNDown), c.FFN, c.Embd, "ternary"),
		}
		if c.SubNorms {
			L.AttnSubNorm = get(n(AttnSubNorm), c.Embd, 1, "float")
			L.FFNSubNorm = get(n(FFNSubNorm), c.FFN, 1, "float")
		} else {
			for _, t := range []LayerTensor{AttnSubNorm, FFNSubNorm} {
				if _, ok := f.Tensor(n(t)); ok {
					bad("tensor %s is present, but %s models have no sub-norms: the file mixes families", n(t), c.Arch)
				}
			}
		}
		w.Layers = append(w.Layers, L)
	}
	// Some converters store BitLinear scales as separate tensors
	// (blk.N.attn_q.scale): running without them would give a wrong answer,
	// so say so instead.
	for i := range f.Tensors {
		if name := f.Tensors[i].Name; strings.HasPrefix(name, "blk.") && strings.HasSuffix(name, ".scale") {
			bad("tensor %s holds a separate weight scale, which bitvk does not apply yet", name)
			break
		}
	}
	if len(errs) > 0 {
		if len(errs) > 8 {
			errs = append(errs[:8], fmt.Sprintf("and %d more", len(errs)-8))
		}
		return nil, fmt.Errorf("%s model: %s", c.Arch, strings.Join(errs, "; "))
	}
	return w, nil
}
