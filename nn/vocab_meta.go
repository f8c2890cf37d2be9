package nn

import (
	"strings"

	"github.com/bitvk/bitvk/gguf"
	"github.com/bitvk/bitvk/tokenizer"
)

// VocabMeta is the inverse of LoadVocab: the tokenizer.* metadata that
// describes v, for a vocabulary-only GGUF file or a model's. Keys come in
// llama.cpp's order; what v leaves unset (ids of -1, a nil array, an empty
// string, a flag it does not say) is left out, so LoadVocab reads back an
// equal Vocab.
func VocabMeta(v *tokenizer.Vocab) []gguf.KV {
	meta := []gguf.KV{{Key: KeyTokenizerModel, Value: gguf.Str(v.Model)}}
	if v.Pre != "" {
		meta = append(meta, gguf.KV{Key: KeyTokenizerPre, Value: gguf.Str(v.Pre)})
	}
	meta = append(meta, gguf.KV{Key: KeyTokens, Value: gguf.Array(v.Tokens)})
	if v.Scores != nil {
		meta = append(meta, gguf.KV{Key: KeyScores, Value: gguf.Array(v.Scores)})
	}
	if v.Types != nil {
		meta = append(meta, gguf.KV{Key: KeyTokenType, Value: gguf.Array(v.Types)})
	}
	if v.Merges != nil {
		meta = append(meta, gguf.KV{Key: KeyMerges, Value: gguf.Array(v.Merges)})
	}
	for _, id := range []struct {
		key string
		id  int32
	}{{KeyBOS, v.BOS}, {KeyEOS, v.EOS}, {KeyEOT, v.EOT}, {KeyEOM, v.EOM}, {KeyUnknownID, v.Unknown}, {KeyPadding, v.Pad}} {
		if id.id >= 0 {
			meta = append(meta, gguf.KV{Key: id.key, Value: gguf.U32(uint32(id.id))})
		}
	}
	for _, b := range []struct {
		key      string
		val, has bool
	}{{KeyAddBOS, v.AddBOS, v.HasAddBOS}, {KeyAddEOS, v.AddEOS, v.HasAddEOS}, {KeyAddSpacePrefix, v.AddSpacePrefix, v.HasAddSpacePrefix}} {
		if b.has {
			meta = append(meta, gguf.KV{Key: b.key, Value: gguf.Bool(b.val)})
		}
	}
	if v.ChatTemplate != "" {
		meta = append(meta, gguf.KV{Key: KeyChatTemplate, Value: gguf.Str(v.ChatTemplate)})
	}
	return meta
}

// TokenizerMeta returns every tokenizer.* key of f in file order: a
// vocabulary (as bitvk tokenizer-train writes it, or a whole model's) to
// embed, as it is, in another GGUF file.
func TokenizerMeta(f *gguf.File) []gguf.KV {
	var meta []gguf.KV
	for _, kv := range f.Meta {
		if strings.HasPrefix(kv.Key, KeyTokenizerPrefix) {
			meta = append(meta, kv)
		}
	}
	return meta
}
