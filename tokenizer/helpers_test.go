package tokenizer

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// Small vocabularies written in code, in the conventions of the real ones
// (package nn tests the real ones from the shared test data).

// toyMerges are byte-level BPE merges in GPT-2 spelling (Ġ is a space).
// "x y" makes "xy", which is not a token: a virtual piece that only "xy z"
// turns into a token.
var toyMerges = [][2]string{
	{"Ġ", "t"}, {"h", "e"}, {"Ġt", "he"}, {"i", "n"}, {"Ġ", "a"}, {"n", "d"}, {"Ġa", "nd"},
	{"e", "r"}, {"Ġ", "s"}, {"o", "u"}, {"b", "c"}, {"a", "b"}, {"x", "y"}, {"xy", "z"},
	{"Ġ", "Ġ"}, {"Ċ", "Ċ"},
}

var toySpecials = []string{"<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"}

// toyBPE returns a LLaMA-3-style byte-level BPE vocabulary: the 256 byte
// tokens, the merge results (but not "xy"), a user-defined token, the
// special tokens.
func toyBPE() *Vocab {
	v := NewVocab()
	v.Model, v.Pre = "gpt2", "llama-bpe"
	for b := 0; b < 256; b++ {
		v.Tokens = append(v.Tokens, string(byteRune[b]))
		v.Types = append(v.Types, int32(TypeNormal))
	}
	for _, m := range toyMerges {
		v.Merges = append(v.Merges, m[0]+" "+m[1])
		if m[0]+m[1] != "xy" {
			v.Tokens = append(v.Tokens, m[0]+m[1])
			v.Types = append(v.Types, int32(TypeNormal))
		}
	}
	v.Tokens = append(v.Tokens, "<tool>")
	v.Types = append(v.Types, int32(TypeUserDefined))
	first := int32(len(v.Tokens))
	for _, s := range toySpecials {
		v.Tokens = append(v.Tokens, s)
		v.Types = append(v.Types, int32(TypeControl))
	}
	v.BOS, v.EOS = first, first+1
	return v
}

// toySPM returns a LLaMA-2-style SentencePiece vocabulary: <unk>, <s>,
// </s>, the 256 byte tokens, then pieces with scores (higher merges first).
func toySPM() *Vocab {
	v := NewVocab()
	v.Model = "llama"
	add := func(s string, ty TokenType, score float32) {
		v.Tokens = append(v.Tokens, s)
		v.Types = append(v.Types, int32(ty))
		v.Scores = append(v.Scores, score)
	}
	add("<unk>", TypeUnknown, 0)
	add("<s>", TypeControl, 0)
	add("</s>", TypeControl, 0)
	for b := 0; b < 256; b++ {
		add(fmt.Sprintf("<0x%02X>", b), TypeByte, 0)
	}
	for i, s := range []string{"▁", "e", "h", "l", "o", "w", "r", "d", "a", "b", "c", "▁▁", "he", "ll", "▁h", "▁he", "llo", "▁hello", "▁w", "or", "▁wor", "ld", "▁world", "ab", "bc", "<tool>"} {
		ty := TypeNormal
		if s == "<tool>" {
			ty = TypeUserDefined
		}
		add(s, ty, -float32(i))
	}
	v.BOS, v.EOS, v.Unknown = 1, 2, 0
	v.AddBOS, v.HasAddBOS = true, true
	return v
}

func mustNew(t testing.TB, v *Vocab) *Tokenizer {
	t.Helper()
	tok, err := New(v)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// toValid is s with every byte that is not part of a valid UTF-8 character
// replaced by U+FFFD, one per byte: what decoding promises for any bytes.
func toValid(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteString("\uFFFD")
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// spell spells ids as vocabulary text, for readable failures.
func spell(tok *Tokenizer, ids []int32) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = tok.Token(id)
	}
	return out
}
