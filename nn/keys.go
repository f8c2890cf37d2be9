package nn

// The GGUF metadata keys bitvk reads and writes. They appear here and nowhere
// else: every other package asks nn for them.

// Architectures of the BitNet b1.58 family, as general.architecture names them.
const (
	ArchBitNetB158 = "bitnet-b1.58" // Microsoft BitNet b1.58 2B4T
	ArchBitNet     = "bitnet"       // 1bitLLM bitnet_b1_58 models
	ArchLlama      = "llama"        // Falcon3/Falcon-E/Llama3-8B-1.58 with ternary tensors
)

// File-wide keys.
const (
	KeyArchitecture        = "general.architecture"
	KeyName                = "general.name"
	KeyFileType            = "general.file_type"
	KeyQuantizationVersion = "general.quantization_version"
	KeyAlignment           = "general.alignment"
)

// Per-architecture keys: the full key is the architecture name, a dot, and
// the suffix (ArchKey).
const (
	SuffixContextLength   = "context_length"
	SuffixEmbeddingLength = "embedding_length"
	SuffixBlockCount      = "block_count"
	SuffixFeedForward     = "feed_forward_length"
	SuffixRopeDimCount    = "rope.dimension_count"
	SuffixRopeFreqBase    = "rope.freq_base"
	SuffixHeadCount       = "attention.head_count"
	SuffixHeadCountKV     = "attention.head_count_kv"
	SuffixLayerNormRMSEps = "attention.layer_norm_rms_epsilon"
	SuffixVocabSize       = "vocab_size"
)

// ArchKey returns the key arch.suffix, e.g. "bitnet-b1.58.block_count".
func ArchKey(arch, suffix string) string { return arch + "." + suffix }

// Tokenizer keys (tokenizer.ggml.*).
const (
	KeyTokenizerPrefix = "tokenizer."
	KeyTokenizerModel  = "tokenizer.ggml.model"
	KeyTokenizerPre    = "tokenizer.ggml.pre"
	KeyTokens          = "tokenizer.ggml.tokens"
	KeyTokenType       = "tokenizer.ggml.token_type"
	KeyMerges          = "tokenizer.ggml.merges"
	KeyScores          = "tokenizer.ggml.scores"
	KeyBOS             = "tokenizer.ggml.bos_token_id"
	KeyEOS             = "tokenizer.ggml.eos_token_id"
	KeyEOT             = "tokenizer.ggml.eot_token_id"
	KeyPadding         = "tokenizer.ggml.padding_token_id"
	KeyAddBOS          = "tokenizer.ggml.add_bos_token"
	KeyChatTemplate    = "tokenizer.chat_template"
)

// Token types of tokenizer.ggml.token_type, as llama.cpp numbers them.
const (
	TokenNormal      = 1
	TokenUnknown     = 2
	TokenControl     = 3
	TokenUserDefined = 4
	TokenUnused      = 5
	TokenByte        = 6
)

// File types (general.file_type) of ternary models, as llama.cpp and
// Microsoft's fork number them.
const (
	FileTypeTQ1_0 = 36
	FileTypeTQ2_0 = 37
	FileTypeTL1   = 38
	FileTypeTL2   = 39
	FileTypeI2_S  = 40
)
