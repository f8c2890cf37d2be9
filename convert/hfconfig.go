package convert

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/bitvk/bitvk/nn"
)

// hfConfig is the part of a transformers config.json that bitvk reads.
type hfConfig struct {
	Architectures     []string        `json:"architectures"`
	ModelType         string          `json:"model_type"`
	VocabSize         int             `json:"vocab_size"`
	HiddenSize        int             `json:"hidden_size"`
	IntermediateSize  int             `json:"intermediate_size"`
	NumHiddenLayers   int             `json:"num_hidden_layers"`
	NumAttentionHeads int             `json:"num_attention_heads"`
	NumKeyValueHeads  int             `json:"num_key_value_heads"`
	HeadDim           int             `json:"head_dim"`
	MaxPositions      int             `json:"max_position_embeddings"`
	RMSNormEps        float32         `json:"rms_norm_eps"`
	RopeTheta         *float32        `json:"rope_theta"`
	RopeScaling       json.RawMessage `json:"rope_scaling"`
	HiddenAct         string          `json:"hidden_act"`
	TieWordEmbeddings *bool           `json:"tie_word_embeddings"`
	AttentionBias     bool            `json:"attention_bias"`
	MLPBias           bool            `json:"mlp_bias"`
	BOSTokenID        json.RawMessage `json:"bos_token_id"`
	EOSTokenID        json.RawMessage `json:"eos_token_id"`
	Quantization      *struct {
		QuantMethod      string `json:"quant_method"`
		LinearClass      string `json:"linear_class"`
		QuantizationMode string `json:"quantization_mode"`
		UseRMSNorm       bool   `json:"use_rms_norm"`
	} `json:"quantization_config"`
}

// modelInfo is what config.json says about a model, checked.
type modelInfo struct {
	Class  string     // architectures[0]
	Config *nn.Config // Name is left for the caller
	Tied   *bool      // tie_word_embeddings; nil when the file does not say

	// Ternary says the model was trained ternary (a BitNet family, or a
	// llama with quantization_config bitnet); otherwise its float weights
	// can only be quantized after training (--ptq absmean).
	Ternary bool
	// ScaleDivides says how a packed matrix's weight_scale is read (see
	// scaleFromHF).
	ScaleDivides bool
	BOS, EOS     int32 // bos_token_id, eos_token_id; -1 when absent
}

// activations the families use, as config.json's hidden_act names them.
var familyActivation = map[string]struct {
	act   nn.Activation
	names []string
}{
	nn.ArchBitNetB158: {nn.ReLUSquared, []string{"relu2"}},
	nn.ArchBitNet:     {nn.SiLU, []string{"silu", "swish"}},
	nn.ArchLlama:      {nn.SiLU, []string{"silu", "swish"}},
}

// readConfig reads and checks dir/config.json.
func readConfig(dir string) (*modelInfo, error) {
	path := filepath.Join(dir, "config.json")
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the model configuration: %w", err)
	}
	var hc hfConfig
	if err := json.Unmarshal(raw, &hc); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%s: %s", path, fmt.Sprintf(format, a...))
	}
	if len(hc.Architectures) != 1 {
		return nil, bad("architectures lists %d model classes, want one (BitNetForCausalLM, BitnetForCausalLM or LlamaForCausalLM)", len(hc.Architectures))
	}
	info := &modelInfo{Class: hc.Architectures[0], Tied: hc.TieWordEmbeddings, ScaleDivides: true}
	arch, err := nn.HFArch(info.Class)
	if err != nil {
		return nil, bad("%v", err)
	}
	fam := familyActivation[arch]
	if !containsFold(fam.names, hc.HiddenAct) {
		return nil, bad("hidden_act %q: a %s model uses %s", hc.HiddenAct, info.Class, strings.Join(fam.names, " or "))
	}
	c := &nn.Config{Arch: arch, Activation: fam.act, SubNorms: arch != nn.ArchLlama,
		Layers: hc.NumHiddenLayers, Embd: hc.HiddenSize, FFN: hc.IntermediateSize, Heads: hc.NumAttentionHeads,
		KVHeads: hc.NumKeyValueHeads, Context: hc.MaxPositions, Vocab: hc.VocabSize, Eps: hc.RMSNormEps, RopeBase: 10000}
	if c.KVHeads == 0 {
		c.KVHeads = c.Heads // transformers' default: no GQA
	}
	if hc.RopeTheta != nil {
		c.RopeBase = *hc.RopeTheta
	}
	if c.Heads > 0 && c.Embd%c.Heads == 0 {
		c.HeadDim = c.Embd / c.Heads
		c.RopeDim = c.HeadDim
	}
	if hc.HeadDim != 0 && hc.HeadDim != c.HeadDim {
		return nil, bad("head_dim %d differs from hidden_size/num_attention_heads = %d; bitvk runs only models where they agree", hc.HeadDim, c.HeadDim)
	}
	if s := bytes.TrimSpace(hc.RopeScaling); len(s) > 0 && string(s) != "null" {
		return nil, bad("rope_scaling %s: bitvk runs plain RoPE only", compact(s))
	}
	if hc.AttentionBias || hc.MLPBias {
		return nil, bad("attention_bias or mlp_bias is set: bitvk's models have no biases")
	}
	if err := c.Validate(); err != nil {
		return nil, bad("%v", err)
	}
	info.Config = c
	info.Ternary = arch != nn.ArchLlama
	if q := hc.Quantization; q != nil {
		if q.QuantMethod != "bitnet" {
			return nil, bad("quantization_config.quant_method %q: bitvk converts BitNet (ternary) checkpoints only", q.QuantMethod)
		}
		if q.UseRMSNorm {
			return nil, bad("quantization_config.use_rms_norm adds a norm before every BitLinear, which bitvk's models do not have")
		}
		switch q.LinearClass {
		case "", "bitlinear":
		case "autobitlinear":
			info.ScaleDivides = false
		default:
			return nil, bad("quantization_config.linear_class %q is unknown (transformers has bitlinear and autobitlinear)", q.LinearClass)
		}
		info.Ternary = true
	}
	if info.BOS, err = tokenIDField(hc.BOSTokenID); err != nil {
		return nil, bad("bos_token_id: %v", err)
	}
	if info.EOS, err = tokenIDField(hc.EOSTokenID); err != nil {
		return nil, bad("eos_token_id: %v", err)
	}
	return info, nil
}

// tokenIDField reads a token id that may be absent, null, a number or a
// list of numbers (the first is taken); -1 when absent.
func tokenIDField(raw json.RawMessage) (int32, error) {
	s := bytes.TrimSpace(raw)
	if len(s) == 0 || string(s) == "null" {
		return -1, nil
	}
	var id int32
	if err := json.Unmarshal(s, &id); err == nil {
		return id, nil
	}
	var ids []int32
	if err := json.Unmarshal(s, &ids); err != nil {
		return -1, fmt.Errorf("%s is neither a token id nor a list of them", s)
	}
	if len(ids) == 0 {
		return -1, nil
	}
	return ids[0], nil
}

func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}
