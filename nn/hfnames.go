package nn

import "fmt"

// The Hugging Face side of the weight table: which tensor of a transformers
// checkpoint becomes which GGUF tensor, in one place. PyTorch stores a
// Linear weight as [out, in] row-major, which is ggml's [in, out] with the
// same bytes, so no matrix is transposed; only the rows of llama's Q and K
// are reordered (Permute).

// HFRole says how a checkpoint tensor is converted.
type HFRole int

const (
	HFEmbedding  HFRole = iota // token embedding, [vocab, embd]: F16 (the head too when tied)
	HFNorm                     // RMSNorm weight, [n]: F32
	HFProjection               // BitLinear weight, [out, in]: ternary
	HFOutput                   // untied output head, [vocab, embd]: F16 or Q8_0
)

// HFTensor is one tensor of a Hugging Face checkpoint and its GGUF name.
type HFTensor struct {
	HF   string // e.g. "model.layers.3.mlp.up_proj.weight"
	GGUF string // e.g. "blk.3.ffn_up.weight"
	Role HFRole
	In   int // values per row; a vector's length
	Out  int // rows; 1 for a vector

	// PermuteHeads, when positive, says the rows are in Hugging Face's
	// LLaMA order, where RoPE rotates the pairs (i, i+d/2) of each head
	// (rotate_half), and GGUF's llama files hold them in interleaved order,
	// pairs (2i, 2i+1): GGUF row h·d + 2i + j is HF row h·d + j·d/2 + i
	// for head h < PermuteHeads, i < d/2, j ∈ {0, 1}. llama.cpp's converter
	// reorders the same way for llama; the BitNet families keep HF's order.
	PermuteHeads int
}

// hfLayerNames are the transformers names of one block's weights under
// model.layers.N., by GGUF weight. The sub-norms differ between families.
var hfLayerNames = map[LayerTensor]string{
	AttnNorm:   "input_layernorm",
	AttnQ:      "self_attn.q_proj",
	AttnK:      "self_attn.k_proj",
	AttnV:      "self_attn.v_proj",
	AttnOutput: "self_attn.o_proj",
	FFNNorm:    "post_attention_layernorm",
	FFNGate:    "mlp.gate_proj",
	FFNUp:      "mlp.up_proj",
	FFNDown:    "mlp.down_proj",
}

// hfSubNormNames are the sub-norm names of the families that have them:
// Microsoft's BitNetForCausalLM (transformers' BitNet model) and 1bitLLM's
// BitnetForCausalLM (its own modeling code).
var hfSubNormNames = map[string][2]string{
	ArchBitNetB158: {"self_attn.attn_sub_norm", "mlp.ffn_sub_norm"},
	ArchBitNet:     {"self_attn.inner_attn_ln", "mlp.ffn_layernorm"},
}

// Names of the checkpoint's embedding, final norm and head.
const (
	HFTokenEmbd  = "model.embed_tokens.weight"
	HFOutputNorm = "model.norm.weight"
	HFLMHead     = "lm_head.weight"
)

// HFWeightScaleSuffix ends the name of the scale tensor that a packed
// ternary projection carries beside its weight ("….q_proj.weight_scale").
const HFWeightScaleSuffix = "_scale"

// hfArchitectures maps config.json's architectures[0] to the GGUF
// architecture. LlamaForCausalLM is ternary only when its
// quantization_config says bitnet (or a float one is quantized on request).
var hfArchitectures = map[string]string{
	"BitNetForCausalLM": ArchBitNetB158, // Microsoft BitNet b1.58 2B4T, transformers' BitNet model
	"BitnetForCausalLM": ArchBitNet,     // 1bitLLM bitnet_b1_58-*
	"LlamaForCausalLM":  ArchLlama,      // Falcon3-*-1.58bit, Llama3-8B-1.58, float LLaMA with PTQ
}

// HFArch returns the GGUF architecture of a transformers model class.
func HFArch(class string) (string, error) {
	if a, ok := hfArchitectures[class]; ok {
		return a, nil
	}
	return "", fmt.Errorf("nn: model class %q is not one bitvk converts (BitNetForCausalLM, BitnetForCausalLM or LlamaForCausalLM)", class)
}

// HFTensors returns the weight table of a model of configuration c in the
// order of the GGUF files Microsoft's converter writes (the embedding, each
// block, the final norm), then the untied head when tied is false.
func HFTensors(c *Config, tied bool) ([]HFTensor, error) {
	sub, hasSub := hfSubNormNames[c.Arch]
	switch {
	case c.Arch != ArchLlama && !hasSub:
		return nil, fmt.Errorf("nn: no Hugging Face tensor names for architecture %q (bitvk converts %s)", c.Arch, supportedArchs)
	case c.SubNorms != hasSub:
		return nil, fmt.Errorf("nn: architecture %s has sub-norms: %v, the configuration says %v", c.Arch, hasSub, c.SubNorms)
	}
	kv := c.KVDim()
	out := []HFTensor{{HF: HFTokenEmbd, GGUF: TensorTokenEmbd, Role: HFEmbedding, In: c.Embd, Out: c.Vocab}}
	for l := 0; l < c.Layers; l++ {
		for _, t := range BitNetLayerTensors {
			name, ok := hfLayerNames[t]
			switch {
			case t == AttnSubNorm && hasSub:
				name, ok = sub[0], true
			case t == FFNSubNorm && hasSub:
				name, ok = sub[1], true
			}
			if !ok {
				continue // a sub-norm of a family without them
			}
			e := HFTensor{HF: fmt.Sprintf("model.layers.%d.%s.weight", l, name), GGUF: LayerTensorName(l, t), Role: HFProjection}
			switch t {
			case AttnNorm, AttnSubNorm, FFNNorm:
				e.Role, e.In, e.Out = HFNorm, c.Embd, 1
			case FFNSubNorm:
				e.Role, e.In, e.Out = HFNorm, c.FFN, 1
			case AttnQ, AttnOutput:
				e.In, e.Out = c.Embd, c.Embd
			case AttnK, AttnV:
				e.In, e.Out = c.Embd, kv
			case FFNGate, FFNUp:
				e.In, e.Out = c.Embd, c.FFN
			case FFNDown:
				e.In, e.Out = c.FFN, c.Embd
			}
			if c.Arch == ArchLlama && t == AttnQ {
				e.PermuteHeads = c.Heads
			}
			if c.Arch == ArchLlama && t == AttnK {
				e.PermuteHeads = c.KVHeads
			}
			out = append(out, e)
		}
	}
	out = append(out, HFTensor{HF: HFOutputNorm, GGUF: TensorOutputNorm, Role: HFNorm, In: c.Embd, Out: 1})
	if !tied {
		out = append(out, HFTensor{HF: HFLMHead, GGUF: TensorOutput, Role: HFOutput, In: c.Embd, Out: c.Vocab})
	}
	return out, nil
}
