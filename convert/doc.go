// Package convert turns a Hugging Face checkpoint directory (config.json,
// safetensors weights, tokenizer.json and tokenizer_config.json) into a
// GGUF file bitvk runs: BitNet b1.58 models whose ternary weights come
// either packed four to a byte with a scale per matrix (Microsoft's
// bitnet-b1.58-2B-4T, as transformers' BitNet integration stores them) or
// as float master weights ternarized with absmean, exactly as training
// does; and, on request, ordinary float LLaMA-shaped models quantized the
// same way after training (lossy).
//
// It reads safetensors itself with a small strict parser (safetensors.go)
// and takes every tensor name and metadata key from package nn.
package convert
