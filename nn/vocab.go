package nn

import (
	"errors"
	"fmt"
	"math"

	"github.com/bitvk/bitvk/gguf"
	"github.com/bitvk/bitvk/tokenizer"
)

// Tokenizer keys beyond those in keys.go.
const (
	KeyEOM            = "tokenizer.ggml.eom_token_id"
	KeyUnknownID      = "tokenizer.ggml.unknown_token_id"
	KeyAddEOS         = "tokenizer.ggml.add_eos_token"
	KeyAddSpacePrefix = "tokenizer.ggml.add_space_prefix"
)

// LoadVocab reads the tokenizer.ggml.* metadata of f into a
// tokenizer.Vocab. Missing optional keys are left unset (ids -1); a key of
// the wrong type, or a file with no tokenizer at all, is an error naming the
// key. tokenizer.New checks the vocabulary's consistency.
func LoadVocab(f *gguf.File) (*tokenizer.Vocab, error) {
	v := tokenizer.NewVocab()
	var err error
	if v.Model, err = f.String(KeyTokenizerModel); err != nil {
		if keyMissing(err) {
			return nil, fmt.Errorf("nn: the file has no tokenizer (metadata key %s is missing): it is neither a model nor a vocabulary file", KeyTokenizerModel)
		}
		return nil, err
	}
	if v.Tokens, err = f.Strings(KeyTokens); err != nil {
		return nil, err
	}
	if v.Pre, err = optionalKey(f.String(KeyTokenizerPre)); err != nil {
		return nil, err
	}
	if v.Merges, err = optionalKey(f.Strings(KeyMerges)); err != nil {
		return nil, err
	}
	if v.ChatTemplate, err = optionalKey(f.String(KeyChatTemplate)); err != nil {
		return nil, err
	}
	if v.Types, err = vocabTypes(f); err != nil {
		return nil, err
	}
	if v.Scores, err = vocabScores(f); err != nil {
		return nil, err
	}
	for _, id := range []struct {
		key string
		dst *int32
	}{{KeyBOS, &v.BOS}, {KeyEOS, &v.EOS}, {KeyEOT, &v.EOT}, {KeyEOM, &v.EOM}, {KeyPadding, &v.Pad}, {KeyUnknownID, &v.Unknown}} {
		u, err := f.Uint(id.key)
		if keyMissing(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if u > math.MaxInt32 {
			return nil, fmt.Errorf("nn: metadata key %s: token id %d is out of range", id.key, u)
		}
		*id.dst = int32(u)
	}
	for _, b := range []struct {
		key      string
		dst, has *bool
	}{{KeyAddBOS, &v.AddBOS, &v.HasAddBOS}, {KeyAddEOS, &v.AddEOS, &v.HasAddEOS}, {KeyAddSpacePrefix, &v.AddSpacePrefix, &v.HasAddSpacePrefix}} {
		x, err := f.Bool(b.key)
		if keyMissing(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		*b.dst, *b.has = x, true
	}
	return v, nil
}

// NewTokenizer reads f's vocabulary and builds its tokenizer; errors name
// the file's problem.
func NewTokenizer(f *gguf.File) (*tokenizer.Tokenizer, error) {
	v, err := LoadVocab(f)
	if err != nil {
		return nil, err
	}
	return tokenizer.New(v)
}

// ChatTemplate returns the chat template named by override, or, when it is
// "", the one that fits f's architecture and tokenizer.chat_template.
func ChatTemplate(f *gguf.File, override string) (*tokenizer.Template, error) {
	if override != "" {
		return tokenizer.LookupTemplate(override)
	}
	arch, _ := f.String(KeyArchitecture)
	jinja, err := optionalKey(f.String(KeyChatTemplate))
	if err != nil {
		return nil, err
	}
	return tokenizer.DetectTemplate(arch, jinja)
}

// keyMissing reports whether err says a metadata key is absent.
func keyMissing(err error) bool {
	var ke *gguf.KeyError
	return errors.As(err, &ke) && ke.Msg == "missing"
}

// optionalKey turns a missing key into the zero value.
func optionalKey[T any](v T, err error) (T, error) {
	if keyMissing(err) {
		var zero T
		return zero, nil
	}
	return v, err
}

func vocabTypes(f *gguf.File) ([]int32, error) {
	val, ok := f.Get(KeyTokenType)
	if !ok {
		return nil, nil
	}
	ints, err := val.Ints()
	if err != nil {
		return nil, &gguf.KeyError{Key: KeyTokenType, Msg: err.Error()}
	}
	out := make([]int32, len(ints))
	for i, x := range ints {
		if x < math.MinInt32 || x > math.MaxInt32 {
			return nil, fmt.Errorf("nn: metadata key %s: element %d (%d) is out of range", KeyTokenType, i, x)
		}
		out[i] = int32(x)
	}
	return out, nil
}

// vocabScores reads tokenizer.ggml.scores, float or (as llama.cpp also accepts)
// integer.
func vocabScores(f *gguf.File) ([]float32, error) {
	val, ok := f.Get(KeyScores)
	if !ok {
		return nil, nil
	}
	if fl, err := val.Floats(); err == nil {
		out := make([]float32, len(fl))
		for i, x := range fl {
			out[i] = float32(x)
		}
		return out, nil
	}
	ints, err := val.Ints()
	if err != nil {
		return nil, &gguf.KeyError{Key: KeyScores, Msg: "is a " + val.Describe() + ", not an array of numbers"}
	}
	out := make([]float32, len(ints))
	for i, x := range ints {
		out[i] = float32(x)
	}
	return out, nil
}
