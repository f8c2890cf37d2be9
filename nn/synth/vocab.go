package synth

import (
	"fmt"

	"github.com/bitvk/bitvk/gguf"
	"github.com/bitvk/bitvk/nn"
)

// Vocab is a tokenizer to embed in a synthetic model: the tokenizer.* keys
// of a GGUF file, in file order, and the number of tokens.
type Vocab struct {
	Meta   []gguf.KV
	Tokens int
}

// VocabFromFile takes every tokenizer.* key of a GGUF file (a vocabulary-only
// file such as llama.cpp's ggml-vocab-*.gguf, or a whole model).
func VocabFromFile(path string) (*Vocab, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tokens, err := f.Strings(nn.KeyTokens)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &Vocab{Tokens: len(tokens), Meta: nn.TokenizerMeta(f)}, nil
}

// builtinMerges are a few BPE merges of common English pairs, so the built-in
// vocabulary exercises merging. Ġ is GPT-2's stand-in for a space byte.
var builtinMerges = [][2]string{
	{"Ġ", "t"}, {"h", "e"}, {"Ġ", "a"}, {"i", "n"}, {"r", "e"}, {"o", "n"},
	{"Ġt", "he"}, {"e", "r"}, {"Ġ", "s"}, {"a", "t"}, {"Ġ", "w"}, {"o", "u"},
	{"e", "n"}, {"Ġ", "o"}, {"i", "s"}, {"Ġ", "b"}, {"n", "d"}, {"Ġa", "nd"},
}

// The special tokens of the built-in vocabulary, named as LLaMA-3 names them.
const (
	tokBeginOfText = "<|begin_of_text|>"
	tokEndOfText   = "<|end_of_text|>"
	tokStartHeader = "<|start_header_id|>"
	tokEndHeader   = "<|end_header_id|>"
	tokEOT         = "<|eot_id|>"
)

// BuiltinVocab is a small byte-level BPE vocabulary in LLaMA-3's conventions
// (tokenizer.ggml.model gpt2, pre-tokenizer llama-bpe): the 256 byte tokens in
// GPT-2's byte-to-unicode spelling, a few merges, LLaMA-3's special tokens,
// then reserved tokens up to size (when size is larger).
func BuiltinVocab(size int) *Vocab {
	var tokens []string
	var types []int32
	for b := 0; b < 256; b++ {
		tokens = append(tokens, string(byteToRune(byte(b))))
		types = append(types, nn.TokenNormal)
	}
	merges := make([]string, 0, len(builtinMerges))
	for _, m := range builtinMerges {
		merges = append(merges, m[0]+" "+m[1])
		tokens = append(tokens, m[0]+m[1])
		types = append(types, nn.TokenNormal)
	}
	special := []string{tokBeginOfText, tokEndOfText, tokStartHeader, tokEndHeader, tokEOT}
	first := len(tokens)
	for _, s := range special {
		tokens = append(tokens, s)
		types = append(types, nn.TokenControl)
	}
	for i := 0; len(tokens) < size; i++ {
		tokens = append(tokens, fmt.Sprintf("<|reserved_special_token_%d|>", i))
		types = append(types, nn.TokenControl)
	}
	return &Vocab{
		Tokens: len(tokens),
		Meta: []gguf.KV{
			{Key: nn.KeyTokenizerModel, Value: gguf.Str("gpt2")},
			{Key: nn.KeyTokenizerPre, Value: gguf.Str("llama-bpe")},
			{Key: nn.KeyTokens, Value: gguf.Array(tokens)},
			{Key: nn.KeyTokenType, Value: gguf.Array(types)},
			{Key: nn.KeyMerges, Value: gguf.Array(merges)},
			{Key: nn.KeyBOS, Value: gguf.U32(uint32(first))},
			{Key: nn.KeyEOS, Value: gguf.U32(uint32(first + 1))},
			{Key: nn.KeyEOT, Value: gguf.U32(uint32(first + 4))},
		},
	}
}

// byteToRune is GPT-2's reversible byte-to-unicode map: printable bytes stand
// for themselves, the rest are shifted to U+0100 and up in byte order.
func byteToRune(b byte) rune {
	switch {
	case b >= '!' && b <= '~', b >= 0xA1 && b <= 0xAC, b >= 0xAE:
		return rune(b)
	}
	// Count the unprintable bytes before b: they take U+0100, U+0101, … in order.
	n := 0
	for c := 0; c < int(b); c++ {
		if !(c >= '!' && c <= '~' || c >= 0xA1 && c <= 0xAC || c >= 0xAE) {
			n++
		}
	}
	return rune(256 + n)
}
