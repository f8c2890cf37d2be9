package tokenizer

import (
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// trainText is a few kilobytes of English prose with digits, punctuation,
// contractions, blank lines and a little non-ASCII: enough for a few hundred
// merges that mean something.
var trainText = func() string {
	para := []string{
		"The miller's daughter walked to the market on the first day of the week, and she carried three baskets of bread.",
		"Her brother didn't come; he'd gone to the river with 12 nets and 345 hooks, and he wasn't back before the evening.",
		"\"How much for the bread?\" asked the baker's wife. \"Two coins a loaf, or five for the basket,\" she answered.",
		"In the evening the wind turned cold, the lamps were lit one by one, and the children ran home along the river road.",
		"Café owners in the old town still write their prices by hand: 3,50 for coffee, 4,20 for tea — naïve, but honest.",
		"They counted 1234567 grains of sand, or so they said; nobody checked the number, and nobody cared to.",
	}
	var b strings.Builder
	for i := 0; i < 6; i++ {
		for j := range para {
			b.WriteString(para[(i+j)%len(para)])
			b.WriteString("\n")
		}
		b.WriteString("\n")
	}
	return b.String()
}()

func trainVocab(t *testing.T, text string, size int) (*Vocab, TrainStats) {
	t.Helper()
	v, st, err := TrainBPE([]TrainInput{{Name: "test", Text: []byte(text)}}, TrainOptions{VocabSize: size})
	if err != nil {
		t.Fatal(err)
	}
	return v, st
}

// mergePairs turns the vocabulary's merges back into pairs of byte strings.
func mergePairs(t *testing.T, v *Vocab) [][2]string {
	t.Helper()
	var out [][2]string
	for _, m := range v.Merges {
		l, r, ok := strings.Cut(m, " ")
		if !ok {
			t.Fatalf("merge %q has no space", m)
		}
		out = append(out, [2]string{string(decodeGPT2(l)), string(decodeGPT2(r))})
	}
	return out
}

// preWords cuts text into its words with the llama-bpe pre-tokenizer.
func preWords(text string) []string {
	_, ends := split(preLlama3, text, nil, nil)
	var words []string
	start := 0
	for _, end := range ends {
		words = append(words, text[start:end])
		start = end
	}
	return words
}

// bruteForceMerges is the obvious trainer, to check the fast one against:
// every word occurrence is kept on its own as a list of symbol strings, and
// each step recounts every adjacent pair, takes the highest count (ties to
// the smallest left, then right, string) and merges it left to right in
// every word. It stops after n merges or when no pair is left, and returns
// the merges and the text's length in symbols at the end.
func bruteForceMerges(text string, n int) ([][2]string, int) {
	var words [][]string
	for _, w := range preWords(text) {
		syms := make([]string, len(w))
		for i := 0; i < len(w); i++ {
			syms[i] = w[i : i+1]
		}
		words = append(words, syms)
	}
	var merges [][2]string
	for len(merges) < n {
		counts := map[[2]string]int{}
		for _, w := range words {
			for i := 1; i < len(w); i++ {
				counts[[2]string{w[i-1], w[i]}]++
			}
		}
		var best [2]string
		bestN := 0
		for p, c := range counts {
			if c > bestN || c == bestN && (p[0] < best[0] || p[0] == best[0] && p[1] < best[1]) {
				best, bestN = p, c
			}
		}
		if bestN == 0 {
			break
		}
		merges = append(merges, best)
		for wi, w := range words {
			var out []string
			for i := 0; i < len(w); i++ {
				if i+1 < len(w) && w[i] == best[0] && w[i+1] == best[1] {
					out = append(out, best[0]+best[1])
					i++
				} else {
					out = append(out, w[i])
				}
			}
			words[wi] = out
		}
	}
	symbols := 0
	for _, w := range words {
		symbols += len(w)
	}
	return merges, symbols
}

func TestTrainBPEFirstMergeIsTheMostFrequentPair(t *testing.T) {
	counts := map[string]int{}
	for _, w := range preWords(trainText) {
		for i := 1; i < len(w); i++ {
			counts[w[i-1:i+1]]++
		}
	}
	best := ""
	for p, c := range counts {
		if c > counts[best] || c == counts[best] && p < best {
			best = p
		}
	}
	v, _ := trainVocab(t, trainText, MinTrainVocab+1)
	got := mergePairs(t, v)
	if len(got) != 1 || got[0][0]+got[0][1] != best || len(got[0][0]) != 1 {
		t.Fatalf("first merge %q; the most frequent pair is %q (%d times)", got, best, counts[best])
	}
	if want := spellGPT2(best); v.Tokens[256] != want {
		t.Errorf("token 256 is %q, want %q", v.Tokens[256], want)
	}
}

// Every merge is the pair with the highest count once the merges before it
// are applied (with the documented tie-break), all the way until no pair is
// left, and asking for one token more says how many the text supports.
func TestTrainBPEMatchesBruteForce(t *testing.T) {
	for _, c := range []struct{ name, text string }{
		{"prose", trainText[:1500]},
		{"ties", "ab ba ab ba abab baba ab\nba aab bba"},
		{"runs", "aaaaaaa aaa aa a aaaa aaaaa\naaaaaaaaa bbbb abababab"},
		{"unicode", "héllo wörld ñandú 你好 你好吗 🙂🙂 🙂 naïve naïve Ωmega"},
		{"digits and space", "1234567 12 123 1234   x  \n\n\n  y\t\tz 99 999 9999"},
	} {
		t.Run(c.name, func(t *testing.T) {
			want, symbols := bruteForceMerges(c.text, 1<<30)
			size := 256 + len(want) + len(trainSpecials)
			v, st := trainVocab(t, c.text, size)
			got := mergePairs(t, v)
			if !reflect.DeepEqual(got, want) {
				for k := range min(len(got), len(want)) {
					if got[k] != want[k] {
						t.Fatalf("merge %d is %q, brute force says %q (of %d merges)", k, got[k], want[k], len(want))
					}
				}
				t.Fatalf("%d merges, brute force found %d", len(got), len(want))
			}
			if len(v.Tokens) != size || st.Merges != len(want) || st.Tokens != int64(symbols) {
				t.Errorf("%d tokens, %d merges, text %d tokens; want %d, %d, %d", len(v.Tokens), st.Merges, st.Tokens, size, len(want), symbols)
			}
			_, _, err := TrainBPE([]TrainInput{{Name: "test", Text: []byte(c.text)}}, TrainOptions{VocabSize: size + 1})
			if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("supports at most %d tokens", size)) {
				t.Errorf("one token more than the text supports: %v", err)
			}
		})
	}
}

// Cutting the text into chunks for the pre-tokenizer finds the same words as
// splitting it whole.
func TestTrainBPEChunksSplitLikeTheWhole(t *testing.T) {
	text := trainText + "x\nA\n\nb \n c\r\nD'\nll 12\n34\n\n\n  \nZ\n\u00e9\nq"
	whole := newTrainer()
	whole.countWords(text, len(text))
	for _, chunk := range []int{1, 2, 7, 64, 1000} {
		tr := newTrainer()
		tr.countWords(text, chunk)
		if tr.nWords != whole.nWords || !reflect.DeepEqual(tr.words, whole.words) {
			t.Errorf("chunks of %d bytes: %d words (%d distinct), whole: %d (%d)", chunk, tr.nWords, len(tr.words), whole.nWords, len(whole.words))
		}
	}
}

func TestTrainBPEVocabulary(t *testing.T) {
	v, st := trainVocab(t, trainText, 450)
	if len(v.Tokens) != 450 || len(v.Types) != 450 || len(v.Merges) != 450-256-5 {
		t.Fatalf("%d tokens, %d types, %d merges", len(v.Tokens), len(v.Types), len(v.Merges))
	}
	for b := 0; b < 256; b++ {
		if v.Tokens[b] != string(byteRune[b]) || v.Types[b] != int32(TypeNormal) {
			t.Fatalf("token %d is %q (type %d), want byte %#x", b, v.Tokens[b], v.Types[b], b)
		}
	}
	for i, m := range v.Merges { // one token per merge, in merge order
		if tok := strings.Replace(m, " ", "", 1); v.Tokens[256+i] != tok {
			t.Fatalf("token %d is %q, merge %d %q", 256+i, v.Tokens[256+i], i, m)
		}
	}
	for i, s := range trainSpecials {
		if id := 445 + i; v.Tokens[id] != s || v.Types[id] != int32(TypeControl) {
			t.Errorf("token %d is %q (type %d), want control token %q", id, v.Tokens[id], v.Types[id], s)
		}
	}
	if v.Model != "gpt2" || v.Pre != "llama-bpe" || v.BOS != 445 || v.EOS != 446 || v.EOT != 449 || !v.AddBOS || !v.HasAddBOS {
		t.Errorf("model %q, pre %q, BOS %d, EOS %d, EOT %d, add BOS %v/%v", v.Model, v.Pre, v.BOS, v.EOS, v.EOT, v.AddBOS, v.HasAddBOS)
	}
	if tmpl, err := DetectTemplate("", v.ChatTemplate); err != nil || tmpl.Name() != "llama3" {
		t.Errorf("chat template detected as %v, %v; want llama3", tmpl, err)
	}
	if st.Bytes != int64(len(trainText)) || st.Words != int64(len(preWords(trainText))) || st.Tokens >= st.Bytes {
		t.Errorf("stats %+v for %d bytes", st, len(trainText))
	}
}

func TestTrainBPERoundTrip(t *testing.T) {
	v, _ := trainVocab(t, trainText, 480)
	tok, err := New(v)
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{
		"",
		"the bread",
		"The miller's daughter didn't come.",
		"bytes never seen: \x00\x01\x7f, \u00ff, 日本語, 🙂, \u200b, tabs\t\tand\r\nCRLF",
		"not UTF-8: \xff\xfe\xc3",
		"<|begin_of_text|>special text<|eot_id|><|end_of_text|>",
		"   leading and trailing spaces   ",
	} {
		ids := tok.Encode(text, EncodeOptions{})
		if len(ids) == 0 || ids[0] != v.BOS {
			t.Errorf("%q: %v does not start with BOS %d", text, ids, v.BOS)
			continue
		}
		var pieces strings.Builder // the bytes, even of text that is not UTF-8
		for _, id := range ids[1:] {
			pieces.WriteString(tok.Piece(id))
		}
		if pieces.String() != text {
			t.Errorf("%q is tokens %v, which spell %q", text, ids, pieces.String())
		}
		if got := tok.Decode(ids[1:]); utf8.ValidString(text) && got != text {
			t.Errorf("%q decodes to %q", text, got)
		}
	}
	// Special-token text is plain text unless asked for.
	s := "<|eot_id|>"
	if plain := tok.Encode(s, EncodeOptions{NoBOS: true}); len(plain) < 2 {
		t.Errorf("%q without ParseSpecial: %v", s, plain)
	}
	if ids := tok.Encode(s, EncodeOptions{NoBOS: true, ParseSpecial: true}); !reflect.DeepEqual(ids, []int32{v.EOT}) || !tok.IsEOG(v.EOT) {
		t.Errorf("%q with ParseSpecial: %v, want [%d] (an end of generation)", s, ids, v.EOT)
	}
	if n := len(tok.Encode(trainText, EncodeOptions{NoBOS: true})); n*2 >= len(trainText) {
		t.Errorf("the training text is %d tokens for %d bytes; want fewer than half", n, len(trainText))
	}
}

func TestTrainBPEIsDeterministic(t *testing.T) {
	a, _ := trainVocab(t, trainText, 400)
	for range 3 {
		if b, _ := trainVocab(t, trainText, 400); !reflect.DeepEqual(a, b) {
			t.Fatal("the same text trained two different vocabularies")
		}
	}
}

func TestTrainBPEErrors(t *testing.T) {
	in := func(name, text string) []TrainInput { return []TrainInput{{Name: name, Text: []byte(text)}} }
	for _, c := range []struct {
		inputs []TrainInput
		size   int
		want   string
	}{
		{nil, 300, "no training text"},
		{in("a.txt", ""), 300, `training text "a.txt" is empty`},
		{append(in("a.txt", "fine"), in("b.txt", "")...), 300, `training text "b.txt" is empty`},
		{in("latin1.txt", "caf\xe9 au lait"), 300, `"latin1.txt" is not UTF-8: byte 0xe9 at offset 3`},
		{in("cut.txt", "ok \xf0\x9f\x99"), 300, `byte 0xf0 at offset 3`},
		{in("a.txt", "hello"), 260, "a vocabulary of 260 tokens is too small"},
		{in("a.txt", "hello"), -1, "need 261"},
		{in("a.txt", "hello"), 300, "supports at most 265 tokens (256 bytes, 4 merged, 5 special)"},
		{in("a.txt", "a"), 262, "supports at most 261 tokens (256 bytes, 0 merged, 5 special)"},
	} {
		_, _, err := TrainBPE(c.inputs, TrainOptions{VocabSize: c.size})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%d inputs, vocabulary %d: error %v, want one saying %q", len(c.inputs), c.size, err, c.want)
		}
	}
	// The smallest vocabulary has no merges, and loads.
	v, _ := trainVocab(t, "a b c", MinTrainVocab)
	if _, err := New(v); err != nil || len(v.Merges) != 0 || v.Merges == nil {
		t.Errorf("a vocabulary with no merges: %v (merges %#v)", err, v.Merges)
	}
}

// BenchmarkTrainBPE trains 4096 tokens on the King James Bible (make corpus
// writes it): go test -run '^$' -bench TrainBPE ./tokenizer
func BenchmarkTrainBPE(b *testing.B) {
	const path = "../build/corpus/kjv-train.txt"
	text, err := os.ReadFile(path)
	if err != nil {
		b.Skipf("%v: run 'make corpus' first", err)
	}
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		if _, _, err := TrainBPE([]TrainInput{{Name: path, Text: text}}, TrainOptions{VocabSize: 4096}); err != nil {
			b.Fatal(err)
		}
	}
}
