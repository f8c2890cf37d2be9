package nn

import "fmt"

// Tensor names: the weight table of a BitNet model, in one place.
const (
	TensorTokenEmbd  = "token_embd.weight"
	TensorOutputNorm = "output_norm.weight"
	TensorOutput     = "output.weight" // absent when the head is tied to token_embd
)

// LayerTensor names one weight of a transformer block.
type LayerTensor string

// The weights of one block, in the order Microsoft's converter writes them.
const (
	AttnNorm    LayerTensor = "attn_norm"
	AttnQ       LayerTensor = "attn_q"
	AttnK       LayerTensor = "attn_k"
	AttnV       LayerTensor = "attn_v"
	AttnOutput  LayerTensor = "attn_output"
	AttnSubNorm LayerTensor = "attn_sub_norm"
	FFNNorm     LayerTensor = "ffn_norm"
	FFNGate     LayerTensor = "ffn_gate"
	FFNUp       LayerTensor = "ffn_up"
	FFNDown     LayerTensor = "ffn_down"
	FFNSubNorm  LayerTensor = "ffn_sub_norm"
)

// BitNetLayerTensors lists every weight of a bitnet-b1.58 block.
var BitNetLayerTensors = []LayerTensor{AttnNorm, AttnQ, AttnK, AttnV, AttnOutput, AttnSubNorm, FFNNorm, FFNGate, FFNUp, FFNDown, FFNSubNorm}

// LayerTensorName returns the GGUF name of weight t of block layer,
// e.g. "blk.3.ffn_up.weight".
func LayerTensorName(layer int, t LayerTensor) string {
	return fmt.Sprintf("blk.%d.%s.weight", layer, t)
}
