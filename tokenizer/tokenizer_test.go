package tokenizer

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestBPEEncode(t *testing.T) {
	tok := mustNew(t, toyBPE())
	for _, c := range []struct {
		text    string
		special bool
		want    []string
	}{
		{"", false, nil},
		{"the", false, []string{"t", "he"}},
		{" the and", false, []string{"Ġthe", "Ġand"}},
		{"abc", false, []string{"a", "bc"}},         // "b c" ranks before "a b"
		{"xyzx", false, []string{"xyz", "x"}},       // through the virtual piece "xy"
		{"xyx", false, []string{"x", "y", "x"}},     // a virtual piece left over splits into bytes
		{"in\n\n", false, []string{"in", "ĊĊ"}},     // \s*[\r\n]+ is one word
		{"é", false, []string{"Ã", "©"}},            // one token per byte, GPT-2 spelled
		{"<tool>x", false, []string{"<tool>", "x"}}, // user-defined: always whole
		{"a<|eot_id|>", true, []string{"a", "<|eot_id|>"}},
		{"<|eot_id|><|eot_id|>", true, []string{"<|eot_id|>", "<|eot_id|>"}},
	} {
		got := spell(tok, tok.Encode(c.text, EncodeOptions{NoBOS: true, ParseSpecial: c.special}))
		if !slices.Equal(got, c.want) {
			t.Errorf("Encode(%q, special %v) = %q, want %q", c.text, c.special, got, c.want)
		}
	}
	// Without ParseSpecial, control-token text is plain text.
	plain := tok.Encode("a<|eot_id|>", EncodeOptions{NoBOS: true})
	if eot, _ := tok.ID("<|eot_id|>"); slices.Contains(plain, eot) || tok.Decode(plain) != "a<|eot_id|>" {
		t.Errorf("control token matched without ParseSpecial: %q", spell(tok, plain))
	}
}

func TestBPEAddBOS(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(v *Vocab)
		bos  bool
	}{
		{"llama-bpe adds BOS by default", func(v *Vocab) {}, true},
		{"the file says no", func(v *Vocab) { v.AddBOS, v.HasAddBOS = false, true }, false},
		{"default pre-tokenizer does not", func(v *Vocab) { v.Pre = "default" }, false},
		{"the file says yes", func(v *Vocab) { v.Pre, v.AddBOS, v.HasAddBOS = "default", true, true }, true},
		{"no BOS id", func(v *Vocab) { v.BOS = -1 }, false},
	} {
		v := toyBPE()
		c.edit(v)
		tok := mustNew(t, v)
		ids := tok.Encode("hi", EncodeOptions{})
		if got := len(ids) > 0 && ids[0] == v.BOS && v.BOS >= 0; got != c.bos || tok.AddsBOS() != c.bos {
			t.Errorf("%s: BOS added %v (AddsBOS %v), want %v", c.name, got, tok.AddsBOS(), c.bos)
		}
		if ids := tok.Encode("hi", EncodeOptions{NoBOS: true}); ids[0] == v.BOS {
			t.Errorf("%s: NoBOS still added BOS", c.name)
		}
	}
	v := toyBPE()
	v.AddEOS, v.HasAddEOS = true, true
	if ids := mustNew(t, v).Encode("hi", EncodeOptions{}); ids[len(ids)-1] != v.EOS {
		t.Errorf("add_eos_token: %v does not end with EOS", ids)
	}
}

func TestSpecialIDs(t *testing.T) {
	v := toyBPE()
	tok := mustNew(t, v)
	eot, _ := tok.ID("<|eot_id|>")
	if tok.EOT() != eot || tok.BOS() != v.BOS || tok.EOS() != v.EOS {
		t.Errorf("BOS %d EOS %d EOT %d", tok.BOS(), tok.EOS(), tok.EOT())
	}
	if want := []int32{v.EOS, eot}; !slices.Equal(tok.EOG(), want) {
		t.Errorf("EOG %v, want %v", tok.EOG(), want)
	}
	if !tok.IsEOG(eot) || tok.IsEOG(v.BOS) || tok.IsEOG(-1) || tok.IsEOG(1<<30) {
		t.Error("IsEOG")
	}
	if !tok.IsControl(v.BOS) || tok.IsControl(0) || tok.Type(-5) != TypeUndefined || tok.Token(1<<30) != "" || tok.Piece(-1) != "" {
		t.Error("accessors on odd ids")
	}
	// A token named like an end of turn is one, whatever its type says.
	v = toyBPE()
	v.Tokens = append(v.Tokens, "<|im_end|>")
	v.Types = append(v.Types, int32(TypeNormal))
	tok = mustNew(t, v)
	imEnd := int32(len(v.Tokens) - 1)
	if !tok.IsEOG(imEnd) || !tok.IsControl(imEnd) {
		t.Errorf("<|im_end|>: EOG %v, control %v", tok.IsEOG(imEnd), tok.IsControl(imEnd))
	}
}

func TestNewErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		v    func() *Vocab
		edit func(v *Vocab)
		want string
	}{
		{"no tokens", toyBPE, func(v *Vocab) { v.Tokens, v.Types = nil, nil }, "no tokens"},
		{"model", toyBPE, func(v *Vocab) { v.Model = "bert" }, `unknown tokenizer model "bert"`},
		{"pre", toyBPE, func(v *Vocab) { v.Pre = "qwen2" }, `unknown pre-tokenizer "qwen2"`},
		{"types", toyBPE, func(v *Vocab) { v.Types = v.Types[:3] }, "3 token types for"},
		{"type value", toyBPE, func(v *Vocab) { v.Types[7] = -2 }, "has type -2"},
		{"scores", toySPM, func(v *Vocab) { v.Scores = v.Scores[1:] }, "scores for"},
		{"duplicate", toyBPE, func(v *Vocab) { v.Tokens[270] = v.Tokens[3] }, "appears twice"},
		{"bos", toyBPE, func(v *Vocab) { v.BOS = int32(len(v.Tokens)) }, "BOS token id"},
		{"negative", toyBPE, func(v *Vocab) { v.EOT = -7 }, "EOT token id -7 is out of range"},
		{"no merges", toyBPE, func(v *Vocab) { v.Merges = nil }, "has no merges"},
		{"merge no space", toyBPE, func(v *Vocab) { v.Merges[2] = "abc" }, `merge 2 "abc" is not two tokens`},
		{"merge three", toyBPE, func(v *Vocab) { v.Merges[4] = "a b c" }, `merge 4 "a b c" is not two tokens`},
		{"merge trailing space", toyBPE, func(v *Vocab) { v.Merges[0] = "a " }, `merge 0 "a "`},
		{"add bos without bos", toyBPE, func(v *Vocab) { v.BOS, v.AddBOS, v.HasAddBOS = -1, true, true }, "asks for a BOS token"},
		{"add eos without eos", toyBPE, func(v *Vocab) { v.EOS, v.AddEOS, v.HasAddEOS = -1, true, true }, "asks for an EOS token"},
	} {
		v := c.v()
		c.edit(v)
		_, err := New(v)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one saying %q", c.name, err, c.want)
		}
	}
	if _, err := New(nil); err == nil {
		t.Error("New(nil) succeeded")
	}
}

func TestMissingByteTokens(t *testing.T) {
	v := toyBPE()
	v.Tokens[0xC3] = "no-byte" // the token of byte 0xC3 (Ã) is gone
	tok := mustNew(t, v)
	if len(tok.Notes()) != 1 || !strings.Contains(tok.Notes()[0], "lacks 1 of the 256 byte tokens") {
		t.Errorf("notes %q", tok.Notes())
	}
	if got := spell(tok, tok.Encode("é", EncodeOptions{NoBOS: true})); !slices.Equal(got, []string{"©"}) {
		t.Errorf("Encode(é) = %q: the byte without a token should be dropped", got)
	}
}

func TestSPMEncode(t *testing.T) {
	tok := mustNew(t, toySPM())
	for _, c := range []struct {
		text    string
		special bool
		want    []string
	}{
		{"", false, nil},
		{"hello", false, []string{"▁hello"}},
		{"hello world", false, []string{"▁hello", "▁world"}},
		{" hello", false, []string{"▁▁", "he", "llo"}},
		{"hi", false, []string{"▁h", "<0x69>"}},         // byte fallback
		{"é", false, []string{"▁", "<0xC3>", "<0xA9>"}}, // a character with no token
		{"abc", false, []string{"▁", "ab", "c"}},        // "ab" scores above "bc"
		{"<s>hello</s>", true, []string{"<s>", "▁hello", "</s>"}},
		{"hello<tool>hello", false, []string{"▁hello", "<tool>", "▁hello"}}, // a space prefix after a special, as llama.cpp
	} {
		got := spell(tok, tok.Encode(c.text, EncodeOptions{NoBOS: true, ParseSpecial: c.special}))
		if !slices.Equal(got, c.want) {
			t.Errorf("Encode(%q) = %q, want %q", c.text, got, c.want)
		}
	}
	if ids := tok.Encode("hello", EncodeOptions{}); ids[0] != 1 {
		t.Errorf("no BOS: %v", ids)
	}
	v := toySPM()
	v.AddSpacePrefix, v.HasAddSpacePrefix = false, true
	if got := spell(mustNew(t, v), mustNew(t, v).Encode("hello", EncodeOptions{NoBOS: true})); slices.Contains(got, "▁hello") {
		t.Errorf("add_space_prefix false: %q", got)
	}
}

// SentencePiece defaults: BOS 1, EOS 2, unknown 0 when the file is silent.
func TestSPMDefaults(t *testing.T) {
	v := toySPM()
	v.BOS, v.EOS, v.Unknown, v.HasAddBOS = -1, -1, -1, false
	tok := mustNew(t, v)
	if tok.BOS() != 1 || tok.EOS() != 2 || !tok.AddsBOS() || !tok.IsEOG(2) {
		t.Errorf("BOS %d EOS %d adds BOS %v", tok.BOS(), tok.EOS(), tok.AddsBOS())
	}
}

// Merging an SPM text word by word must give what merging it whole gives.
func TestSPMWordByWord(t *testing.T) {
	whole := mustNew(t, toySPM())
	whole.spmWordSafe = false
	words := mustNew(t, toySPM())
	if !words.spmWordSafe {
		t.Fatal("the toy vocabulary should be word-safe")
	}
	v := toySPM()
	v.Tokens[len(v.Tokens)-2] = "a▁b"
	if mustNew(t, v).spmWordSafe {
		t.Error(`a vocabulary with "a▁b" is not word-safe`)
	}
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"h", "e", "l", "o", " ", "w", "r", "d", "a", "b", "c", "é", "\xff", "  "}
	for i := 0; i < 300; i++ {
		var b strings.Builder
		for j := r.IntN(40); j > 0; j-- {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		text := b.String()
		if a, b := whole.Encode(text, EncodeOptions{}), words.Encode(text, EncodeOptions{}); !slices.Equal(a, b) {
			t.Fatalf("%q: whole %q, word by word %q", text, spell(whole, a), spell(words, b))
		}
	}
}

func TestPreTokenizerNames(t *testing.T) {
	for _, name := range PreTokenizers() {
		v := toyBPE()
		v.Pre = name
		if tok := mustNew(t, v); tok.Pre() != name || len(tok.Notes()) != 0 {
			t.Errorf("%s: pre %q, notes %q", name, tok.Pre(), tok.Notes())
		}
	}
	v := toyBPE()
	v.Pre = ""
	if tok := mustNew(t, v); tok.Pre() != "default" || len(tok.Notes()) != 1 {
		t.Errorf("no pre: %q, notes %q", tok.Pre(), tok.Notes())
	}
}

// englishLike is about n bytes of English-like prose.
func englishLike(n int) string {
	words := strings.Fields("the of and to in is was that for it with as his on be at by had are but from or have an they which one you were all her she there would their we him been has when who will more if out so said what up its about than into them can only other time new some could these two may first then do any like my now over such our man me even most made after also did many before must through back years where much your way well down should because each just those people how too little state good very make world still see own men work long")
	r := rand.New(rand.NewPCG(3, 4))
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(words[r.IntN(len(words))])
		if r.IntN(10) == 0 {
			b.WriteString(". ")
		} else {
			b.WriteString(" ")
		}
	}
	return b.String()
}

// BenchmarkEncodeBPE runs the merge path on every word (the toy vocabulary
// has few whole words); package nn benchmarks the real vocabularies.
func BenchmarkEncodeBPE(b *testing.B) {
	text := englishLike(1 << 20)
	tok := mustNew(b, toyBPE())
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tok.Encode(text, EncodeOptions{})
	}
}
