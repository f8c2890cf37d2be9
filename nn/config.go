package nn

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/bitvk/bitvk/gguf"
)

// Activation is the gate nonlinearity of the feed-forward block.
type Activation int

const (
	ReLUSquared Activation = iota // bitnet-b1.58: relu(g)²
	SiLU                          // bitnet (1bitLLM) and ternary llama: g·sigmoid(g)
)

// MarshalText names the activation in JSON output.
func (a Activation) MarshalText() ([]byte, error) { return []byte(a.String()), nil }

// UnmarshalText reads what MarshalText writes.
func (a *Activation) UnmarshalText(b []byte) error {
	for _, v := range []Activation{ReLUSquared, SiLU} {
		if v.String() == string(b) {
			*a = v
			return nil
		}
	}
	return fmt.Errorf("unknown activation %q", b)
}

func (a Activation) String() string {
	if a == ReLUSquared {
		return "relu²"
	}
	return "silu"
}

// Config is a model's shape and hyperparameters, parsed once from GGUF
// metadata. Nothing else in bitvk reads metadata keys.
type Config struct {
	Arch    string `json:"arch"`     // general.architecture
	Name    string `json:"name"`     // general.name, may be empty
	Layers  int    `json:"layers"`   // transformer blocks
	Embd    int    `json:"embd"`     // residual width
	FFN     int    `json:"ffn"`      // feed-forward width
	Heads   int    `json:"heads"`    // query heads
	KVHeads int    `json:"kv_heads"` // key/value heads; query head h reads KV head h/(Heads/KVHeads)
	HeadDim int    `json:"head_dim"` // Embd / Heads
	RopeDim int    `json:"rope_dim"` // dimensions of each head that RoPE rotates (NEOX pairs i, i+RopeDim/2)
	// RopeInterleaved says RoPE rotates adjacent pairs (2i, 2i+1), as
	// llama.cpp does for the llama architecture (its converter permutes
	// the Q and K rows of Hugging Face checkpoints to match), instead of
	// the NEOX pairs (i, i+RopeDim/2) of bitnet and bitnet-b1.58. The
	// angle of pair i is the same in both: pos·base^(−2i/RopeDim).
	RopeInterleaved bool    `json:"rope_interleaved"`
	RopeBase        float32 `json:"rope_base"`
	Eps             float32 `json:"eps"`     // RMSNorm epsilon
	Context         int     `json:"context"` // trained context length: the most positions a sequence may use
	Vocab           int     `json:"vocab"`   // rows of the token embedding

	Activation Activation `json:"activation"` // gate nonlinearity
	SubNorms   bool       `json:"sub_norms"`  // attn_sub_norm and ffn_sub_norm present (BitNet); absent in ternary llama files
}

// supportedArchs names what bitvk runs, for error messages.
const supportedArchs = ArchBitNetB158 + ", " + ArchBitNet + ", or " + ArchLlama + " with ternary projections"

// ParseConfig reads the configuration of a BitNet-family model from f's
// metadata and tensor table (the family follows from the architecture; the
// vocabulary size from the token embedding). It does not check tensors
// beyond that: LoadWeights with Validate does.
func ParseConfig(f *gguf.File) (*Config, error) {
	if len(f.Tensors) == 0 {
		return nil, errors.New("nn: the file holds no tensors: it is a vocabulary-only GGUF (a tokenizer), not a model")
	}
	arch, err := f.String(KeyArchitecture)
	if err != nil {
		return nil, err
	}
	c := &Config{Arch: arch}
	c.Name, _ = f.String(KeyName)
	switch arch {
	case ArchBitNetB158:
		c.Activation, c.SubNorms = ReLUSquared, true
	case ArchBitNet:
		c.Activation, c.SubNorms = SiLU, true
	case ArchLlama:
		c.Activation, c.SubNorms, c.RopeInterleaved = SiLU, false, true
	default:
		return nil, fmt.Errorf("model architecture %q is not supported: bitvk runs %s", arch, supportedArchs)
	}
	key := func(s string) string { return ArchKey(arch, s) }
	ints := []struct {
		dst      *int
		suffix   string
		required bool
	}{
		{&c.Layers, SuffixBlockCount, true},
		{&c.Embd, SuffixEmbeddingLength, true},
		{&c.FFN, SuffixFeedForward, true},
		{&c.Heads, SuffixHeadCount, true},
		{&c.KVHeads, SuffixHeadCountKV, false},
		{&c.Context, SuffixContextLength, true},
		{&c.RopeDim, SuffixRopeDimCount, false},
	}
	for _, k := range ints {
		v, err := f.Uint(key(k.suffix))
		var ke *gguf.KeyError
		if errors.As(err, &ke) && ke.Msg == "missing" && !k.required {
			continue
		}
		if err != nil {
			return nil, err
		}
		if v == 0 || v > math.MaxInt32 {
			return nil, fmt.Errorf("metadata %s = %d is out of range (1 to %d)", key(k.suffix), v, math.MaxInt32)
		}
		*k.dst = int(v)
	}
	if c.KVHeads == 0 {
		c.KVHeads = c.Heads // no GQA
	}
	eps, err := f.Float(key(SuffixLayerNormRMSEps))
	if err != nil {
		return nil, err
	}
	c.Eps = float32(eps)
	c.RopeBase = 10000 // llama.cpp's default when the key is absent
	if _, ok := f.Get(key(SuffixRopeFreqBase)); ok {
		base, err := f.Float(key(SuffixRopeFreqBase))
		if err != nil {
			return nil, err
		}
		c.RopeBase = float32(base)
	}
	if c.Heads > 0 && c.Embd%c.Heads == 0 {
		c.HeadDim = c.Embd / c.Heads
		if c.RopeDim == 0 {
			c.RopeDim = c.HeadDim
		}
	}
	emb, ok := f.Tensor(TensorTokenEmbd)
	if !ok {
		return nil, fmt.Errorf("tensor %s is missing", TensorTokenEmbd)
	}
	if len(emb.Dims) != 2 || emb.Dims[1] > math.MaxInt32 {
		return nil, fmt.Errorf("tensor %s has shape %v, want [embedding, vocabulary]", TensorTokenEmbd, emb.Dims)
	}
	c.Vocab = int(emb.Dims[1])
	if v, err := f.Uint(key(SuffixVocabSize)); err == nil && v != uint64(c.Vocab) {
		return nil, fmt.Errorf("metadata %s = %d but %s has %d rows", key(SuffixVocabSize), v, TensorTokenEmbd, c.Vocab)
	} else if err != nil && !keyMissing(err) {
		return nil, err
	}
	// More tokens than rows would let the tokenizer produce ids the model
	// cannot embed. Fewer is an embedding padded to a round size (bitvk
	// convert --vocab writes one); the extra rows decode as "".
	if tv, ok := f.Get(KeyTokens); ok && tv.Len() > c.Vocab {
		return nil, fmt.Errorf("metadata %s has %d tokens but %s has %d rows: the tokenizer is not this model's", KeyTokens, tv.Len(), TensorTokenEmbd, c.Vocab)
	}
	return c, c.Validate()
}

// Validate checks the numbers agree with each other; every error says what
// is wrong in words a user can act on.
func (c *Config) Validate() error {
	var errs []string
	bad := func(format string, a ...any) { errs = append(errs, fmt.Sprintf(format, a...)) }
	for _, f := range []struct {
		name string
		v    int
	}{{"layers", c.Layers}, {"embedding width", c.Embd}, {"feed-forward width", c.FFN}, {"heads", c.Heads}, {"KV heads", c.KVHeads}, {"context length", c.Context}, {"vocabulary", c.Vocab}} {
		if f.v <= 0 {
			bad("%s must be positive, got %d", f.name, f.v)
		}
	}
	if c.Heads > 0 && c.Embd%c.Heads != 0 {
		bad("embedding width %d is not a multiple of the %d heads", c.Embd, c.Heads)
	}
	if c.KVHeads > 0 && c.Heads%c.KVHeads != 0 {
		bad("%d heads are not a multiple of the %d KV heads", c.Heads, c.KVHeads)
	}
	if c.Heads > 0 && c.Embd%c.Heads == 0 {
		// Only when the heads divide the width: otherwise there is no head
		// dimension to judge, and the error above says why.
		if c.HeadDim != c.Embd/c.Heads {
			bad("head dimension %d is not the embedding width %d over the %d heads", c.HeadDim, c.Embd, c.Heads)
		} else if c.HeadDim%2 != 0 {
			bad("head dimension %d is odd: RoPE rotates pairs", c.HeadDim)
		}
		if c.RopeDim <= 0 || c.RopeDim > c.HeadDim || c.RopeDim%2 != 0 {
			bad("RoPE dimension %d must be even and at most the head dimension %d", c.RopeDim, c.HeadDim)
		}
	}
	if !(c.Eps > 0) || c.Eps > 1 {
		bad("RMSNorm epsilon %g is not in (0, 1]", c.Eps)
	}
	if !(c.RopeBase > 1) || math.IsInf(float64(c.RopeBase), 0) {
		bad("RoPE base %g must be a finite number above 1", c.RopeBase)
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s model %q: %s", c.Arch, c.Name, strings.Join(errs, "; "))
	}
	return nil
}

// KVDim is the width of one position's keys (or values) across KV heads.
func (c *Config) KVDim() int { return c.KVHeads * c.HeadDim }

// Metadata returns the general.* and architecture keys that describe c in
// a GGUF file, in the order of Microsoft's ggml-model-i2_s.gguf (name,
// vocabulary size, context, widths, layers, RoPE, heads, epsilon, file
// type); the tokenizer keys and general.quantization_version follow them
// there. It is what ParseConfig reads back.
func (c *Config) Metadata(fileType uint32) []gguf.KV {
	key := func(suffix string) string { return ArchKey(c.Arch, suffix) }
	return []gguf.KV{
		{Key: KeyArchitecture, Value: gguf.Str(c.Arch)},
		{Key: KeyName, Value: gguf.Str(c.Name)},
		{Key: key(SuffixVocabSize), Value: gguf.U32(uint32(c.Vocab))},
		{Key: key(SuffixContextLength), Value: gguf.U32(uint32(c.Context))},
		{Key: key(SuffixEmbeddingLength), Value: gguf.U32(uint32(c.Embd))},
		{Key: key(SuffixBlockCount), Value: gguf.U32(uint32(c.Layers))},
		{Key: key(SuffixFeedForward), Value: gguf.U32(uint32(c.FFN))},
		{Key: key(SuffixRopeDimCount), Value: gguf.U32(uint32(c.RopeDim))},
		{Key: key(SuffixHeadCount), Value: gguf.U32(uint32(c.Heads))},
		{Key: key(SuffixHeadCountKV), Value: gguf.U32(uint32(c.KVHeads))},
		{Key: key(SuffixRopeFreqBase), Value: gguf.F32(c.RopeBase)},
		{Key: key(SuffixLayerNormRMSEps), Value: gguf.F32(c.Eps)},
		{Key: KeyFileType, Value: gguf.U32(fileType)},
	}
}
