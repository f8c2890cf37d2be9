package train

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/bitvk/bitvk/gguf"
	"github.com/bitvk/bitvk/nn"
)

// ternaryCodes is the exported form of a BitLinear weight: the codes
// RoundClip(W/(γ+1e-6), −1, 1) and γ = mean|W|, exactly as ternarize
// computes them during training.
func ternaryCodes(w []float32) ([]int8, float32) {
	gamma := absMean(w)
	inv := 1 / (float64(gamma) + 1e-6)
	t := make([]int8, len(w))
	for i, v := range w {
		t[i] = ternaryOf(float64(v) * inv)
	}
	return t, gamma
}

// VocabMeta returns the tokenizer.* keys of a GGUF file (a vocabulary
// such as `bitvk tokenizer-train` writes, or a whole model), in file order.
func VocabMeta(path string) ([]gguf.KV, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	meta := nn.TokenizerMeta(f)
	if len(meta) == 0 {
		return nil, fmt.Errorf("%s has no tokenizer.* keys: give a vocabulary GGUF (bitvk tokenizer-train writes one)", path)
	}
	return meta, nil
}

// ExportGGUF writes the model in the conventions of Microsoft's
// ggml-model-i2_s.gguf for BitNet b1.58 2B4T: architecture bitnet-b1.58,
// I2_S projections with the per-tensor scale γ, the F16 tied embedding,
// F32 norms, and the vocabulary's tokenizer keys. A --float model has no
// ternary form and cannot be exported.
func ExportGGUF(path, name string, m *Model, vocab []gguf.KV) error {
	if m.Float {
		return fmt.Errorf("a --float model has no ternary weights to write as I2_S; it is trained for comparison only")
	}
	l, s := m.Layout, m.Layout.Shape
	c := nn.Config{Arch: nn.ArchBitNetB158, Name: name, Vocab: s.Vocab, Context: s.Context, Embd: s.Embd,
		Layers: s.Layers, FFN: s.FFN, RopeDim: s.HeadDim(), Heads: s.Heads, KVHeads: s.KVHeads, RopeBase: s.RopeBase, Eps: s.Eps}
	b := &gguf.Builder{Version: 3, Meta: c.Metadata(nn.FileTypeI2_S)}
	b.Meta = append(b.Meta, vocab...)
	b.Meta = append(b.Meta, gguf.KV{Key: nn.KeyQuantizationVersion, Value: gguf.U32(2)})
	for i, t := range l.Tensors {
		w := l.View(m.Params, i)
		spec := gguf.TensorSpec{Name: t.Name, Dims: []uint64{uint64(t.In), uint64(t.Out)}}
		if t.Out == 1 {
			spec.Dims = spec.Dims[:1]
		}
		switch t.Kind {
		case KindNorm:
			spec.Type = gguf.TypeF32
			spec.Data = make([]byte, 4*len(w))
			for j, v := range w {
				binary.LittleEndian.PutUint32(spec.Data[4*j:], math.Float32bits(v))
			}
		case KindEmbedding:
			spec.Type = gguf.TypeF16
			spec.Data = make([]byte, 2*len(w))
			for j, v := range w {
				binary.LittleEndian.PutUint16(spec.Data[2*j:], gguf.F32ToF16(v))
			}
		case KindTernary:
			codes, gamma := ternaryCodes(w)
			data, err := gguf.EncodeI2_S(codes, gamma)
			if err != nil {
				return fmt.Errorf("%s: %w", t.Name, err)
			}
			spec.Type, spec.Data = gguf.TypeI2_S, data
		}
		b.Tensors = append(b.Tensors, spec)
	}
	return b.WriteFile(path)
}

// hfConfig is the config.json of a Hugging Face BitNet checkpoint.
type hfConfig struct {
	Architectures     []string `json:"architectures"`
	ModelType         string   `json:"model_type"`
	VocabSize         int      `json:"vocab_size"`
	HiddenSize        int      `json:"hidden_size"`
	IntermediateSize  int      `json:"intermediate_size"`
	NumHiddenLayers   int      `json:"num_hidden_layers"`
	NumAttentionHeads int      `json:"num_attention_heads"`
	NumKeyValueHeads  int      `json:"num_key_value_heads"`
	MaxPositions      int      `json:"max_position_embeddings"`
	RMSNormEps        float32  `json:"rms_norm_eps"`
	RopeTheta         float32  `json:"rope_theta"`
	HiddenAct         string   `json:"hidden_act"`
	TieWordEmbeddings bool     `json:"tie_word_embeddings"`
	BOSTokenID        int32    `json:"bos_token_id"`
	EOSTokenID        int32    `json:"eos_token_id"`
	TorchDtype        string   `json:"torch_dtype"`
}

// ExportHF writes a Hugging Face-style checkpoint directory: config.json
// (BitNetForCausalLM) and model.safetensors with the HF BitNet tensor
// names, holding the float32 latent weights (shapes [out, in], as
// PyTorch's Linear stores them), so that a converter ternarizing them with
// absmean gets exactly the exported GGUF's codes.
func ExportHF(dir string, m *Model, bos, eos int32) error {
	l, s := m.Layout, m.Layout.Shape
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	cfg := hfConfig{
		Architectures: []string{"BitNetForCausalLM"}, ModelType: "bitnet",
		VocabSize: s.Vocab, HiddenSize: s.Embd, IntermediateSize: s.FFN, NumHiddenLayers: s.Layers,
		NumAttentionHeads: s.Heads, NumKeyValueHeads: s.KVHeads, MaxPositions: s.Context,
		RMSNormEps: s.Eps, RopeTheta: s.RopeBase, HiddenAct: "relu2", TieWordEmbeddings: true,
		BOSTokenID: bos, EOSTokenID: eos, TorchDtype: "float32",
	}
	js, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	if err := writeFileAtomic(filepath.Join(dir, "config.json"), append(js, '\n')); err != nil {
		return err
	}
	// safetensors: u64 header length, JSON header (padded with spaces to 8
	// bytes), then the tensors' bytes at their data_offsets.
	type entry struct {
		Dtype   string   `json:"dtype"`
		Shape   []int    `json:"shape"`
		Offsets [2]int64 `json:"data_offsets"`
	}
	header := map[string]any{"__metadata__": map[string]string{"format": "pt", "producer": "bitvk train"}}
	var off int64
	for _, t := range l.Tensors {
		shape := []int{t.Out, t.In}
		if t.Out == 1 {
			shape = []int{t.In}
		}
		size := int64(4 * t.Size())
		header[t.HFName] = entry{Dtype: "F32", Shape: shape, Offsets: [2]int64{off, off + size}}
		off += size
	}
	hj, err := json.Marshal(header)
	if err != nil {
		return err
	}
	for len(hj)%8 != 0 {
		hj = append(hj, ' ')
	}
	buf := make([]byte, 0, 8+len(hj)+int(off))
	buf = binary.LittleEndian.AppendUint64(buf, uint64(len(hj)))
	buf = append(buf, hj...)
	for i := range l.Tensors {
		for _, v := range l.View(m.Params, i) {
			buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(v))
		}
	}
	return writeFileAtomic(filepath.Join(dir, "model.safetensors"), buf)
}

// writeFileAtomic writes data to a temporary file beside path and renames
// it over path, so path is either its old self or whole.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
