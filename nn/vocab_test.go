package nn_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/bitvk/bitvk/gguf"
	"github.com/bitvk/bitvk/nn"
	"github.com/bitvk/bitvk/nn/synth"
	"github.com/bitvk/bitvk/tokenizer"
)

// The shared test data (see its SOURCES.md): real vocabularies and
// llama.cpp's tokenizer vectors for them. It lives outside the repository.
var vocabTestdata = filepath.Join("..", "..", "shared", "testdata")

const (
	llama3VocabFile = "vocab-llama3-bpe.gguf"
	spmVocabFile    = "ggml-vocab-llama-spm.gguf"
)

// openVocabFile opens a shared test vocabulary, skipping the test when the
// shared test data is not there.
func openVocabFile(t testing.TB, name string) *gguf.File {
	t.Helper()
	path := filepath.Join(vocabTestdata, name)
	if _, err := os.Stat(path); err != nil {
		t.Skipf("shared test data not present (%s): %v", path, err)
	}
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func loadTestTokenizer(t testing.TB, name string) *tokenizer.Tokenizer {
	t.Helper()
	tok, err := nn.NewTokenizer(openVocabFile(t, name))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return tok
}

type vectorCase struct {
	Text string  `json:"text"`
	IDs  []int32 `json:"ids"`
}

func TestTokenizerVectors(t *testing.T) {
	for _, c := range []struct{ vocab, vectors string }{
		{llama3VocabFile, "tokenizer-llama3-bpe.json"},
		{spmVocabFile, "tokenizer-llama-spm.json"},
	} {
		t.Run(c.vocab, func(t *testing.T) {
			tok := loadTestTokenizer(t, c.vocab)
			data, err := os.ReadFile(filepath.Join(vocabTestdata, c.vectors))
			if err != nil {
				t.Fatal(err)
			}
			var vec struct{ Cases []vectorCase }
			if err := json.Unmarshal(data, &vec); err != nil {
				t.Fatal(err)
			}
			if len(vec.Cases) < 40 {
				t.Fatalf("only %d cases in %s", len(vec.Cases), c.vectors)
			}
			// The vectors have no BOS and special-token text not parsed.
			for _, vc := range vec.Cases {
				got := tok.Encode(vc.Text, tokenizer.EncodeOptions{NoBOS: true})
				if !slices.Equal(got, vc.IDs) && !(len(got) == 0 && len(vc.IDs) == 0) {
					t.Errorf("Encode(%q)\n got %v\nwant %v", vc.Text, got, vc.IDs)
				}
				if back := tok.Decode(vc.IDs); back != vc.Text {
					t.Errorf("Decode(%v) = %q, want %q", vc.IDs, back, vc.Text)
				}
			}
		})
	}
}

// variedText builds a long text that exercises every branch of the
// tokenizers: many scripts, emoji sequences, whitespace runs of every kind,
// code, digits, contractions in both cases, combining marks.
func variedText(seed uint64, pieces int) string {
	parts := []string{
		"The quick brown fox jumps over the lazy dog. ", "It's 2024, and we'll see; they've DONE it, I'M sure, you'D agree. ",
		"Führer Straße café naïve résumé ", "нещо на Български и Русский язык ", "Ελληνικά γράμματα ", "العربية نص ", "עברית טקסט ",
		"हिन्दी में लिखा पाठ ", "ภาษาไทย ", "កាន់តែពិសេសអាចខលចេញ ", "我想在apple工作1314151天～ ", "日本語のテキスト、カタカナ ", "한국어 텍스트 ",
		"🦙.cpp 🚀 😶\u200d🌫️ 👍🏽 🇫🇷 👨\u200d👩\u200d👧 ✅ ", "e\u0301 a\u0308 n\u0303 ", "\t\t", "\n\n\n", "\r\n", "    ", "\u00a0\u3000", " \n \t ",
		"func main() {\n\tfmt.Println(\"hi\")\n}\n", "for (int i = 0; i < n; ++i) { x[i] += y[i] * 2; }\n", "if x != nil && y == nil { return err }",
		"3.14159 2,718 1000000 42 7 123456789 ", "½ ¾ ² ³ Ⅻ ", "!!!!!! ??? ... --- *** ", "' era ' s 'll ", "Hello, y'all! How are you 😁 ?",
		"<html><body class=\"x\">&amp;</body></html> ", "$100 + 5% = <x> ^ ~ | ` @ # ", "ÀÉÎÕÜ àéîõü ", "\x7f\x01\x1b[0m ",
	}
	r := rand.New(rand.NewPCG(seed, 1))
	var b strings.Builder
	for i := 0; i < pieces; i++ {
		b.WriteString(parts[r.IntN(len(parts))])
	}
	return b.String()
}

// checkStreaming decodes ids one at a time and checks that every chunk is
// valid UTF-8 and that the chunks join to Decode(ids).
func checkStreaming(t *testing.T, tok *tokenizer.Tokenizer, ids []int32) {
	t.Helper()
	d := tok.NewDecoder()
	var b strings.Builder
	for i, id := range ids {
		chunk := d.Next(id)
		if !utf8.ValidString(chunk) {
			t.Fatalf("chunk %d (id %d) is not valid UTF-8: %q", i, id, chunk)
		}
		b.WriteString(chunk)
	}
	b.WriteString(d.Flush())
	if got, want := b.String(), tok.Decode(ids); got != want {
		t.Fatalf("streamed text differs from Decode:\n got %q\nwant %q", got, want)
	}
}

func TestTokenizerRoundTripReal(t *testing.T) {
	for _, name := range []string{llama3VocabFile, spmVocabFile} {
		t.Run(name, func(t *testing.T) {
			tok := loadTestTokenizer(t, name)
			for seed := uint64(1); seed <= 5; seed++ {
				text := variedText(seed, 400)
				for _, o := range []tokenizer.EncodeOptions{{}, {NoBOS: true}} {
					ids := tok.Encode(text, o)
					if back := tok.Decode(ids); back != text {
						t.Fatalf("seed %d %+v: round trip differs at byte %d", seed, o, firstDiff(back, text))
					}
					checkStreaming(t, tok, ids)
				}
			}
		})
	}
}

func firstDiff(a, b string) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func TestTokenizerSpecialTokens(t *testing.T) {
	tok := loadTestTokenizer(t, llama3VocabFile)
	text := "<|begin_of_text|>Hi<|eot_id|>"
	plain := tok.Encode(text, tokenizer.EncodeOptions{NoBOS: true})
	if slices.Contains(plain, 128009) || slices.Contains(plain, 128000) {
		t.Errorf("special text became special ids without ParseSpecial: %v", plain)
	}
	if got := tok.Decode(plain); got != text {
		t.Errorf("Decode(plain) = %q", got)
	}
	parsed := tok.Encode(text, tokenizer.EncodeOptions{ParseSpecial: true})
	if want := []int32{128000, 128000, 13347, 128009}; !slices.Equal(parsed, want) {
		t.Errorf("ParseSpecial: %v, want %v", parsed, want)
	}
	if got := tok.Decode(parsed); got != "Hi" {
		t.Errorf("Decode leaves control tokens out: got %q", got)
	}
	if tok.Piece(128009) != "<|eot_id|>" || tok.Piece(9906) != "Hello" || tok.Piece(22691) != " Hello" {
		t.Errorf("pieces: %q %q %q", tok.Piece(128009), tok.Piece(9906), tok.Piece(22691))
	}
	if !tok.IsEOG(128009) || !tok.IsEOG(128001) || tok.IsEOG(128000) || tok.IsEOG(9906) {
		t.Errorf("EOG set %v", tok.EOG())
	}
	if tok.BOS() != 128000 || tok.EOS() != 128001 || tok.EOT() != 128009 || !tok.AddsBOS() {
		t.Errorf("BOS %d EOS %d EOT %d adds BOS %v", tok.BOS(), tok.EOS(), tok.EOT(), tok.AddsBOS())
	}

	spm := loadTestTokenizer(t, spmVocabFile)
	if got := spm.Encode("Hello</s>", tokenizer.EncodeOptions{ParseSpecial: true}); !slices.Equal(got, []int32{1, 15043, 2}) {
		t.Errorf("SPM with specials: %v", got)
	}
	if !spm.IsEOG(2) || spm.IsEOG(1) || !spm.AddsBOS() {
		t.Errorf("SPM EOG %v, adds BOS %v", spm.EOG(), spm.AddsBOS())
	}
	if got := spm.Encode("Hello", tokenizer.EncodeOptions{}); !slices.Equal(got, []int32{1, 15043}) {
		t.Errorf("SPM Encode(Hello) = %v, want BOS then ▁Hello", got)
	}
}

// Microsoft's BitNet b1.58 2B4T file has no tokenizer.ggml.pre: the
// LLaMA-3 vocabulary must still split "'s" as LLaMA-3 does, and say so.
func TestTokenizerMissingPre(t *testing.T) {
	f := openVocabFile(t, llama3VocabFile)
	v, err := nn.LoadVocab(f)
	if err != nil {
		t.Fatal(err)
	}
	want, err := tokenizer.New(v)
	if err != nil {
		t.Fatal(err)
	}
	v.Pre = ""
	tok, err := tokenizer.New(v)
	if err != nil {
		t.Fatal(err)
	}
	if tok.Pre() != "llama-bpe" || len(tok.Notes()) != 1 || !strings.Contains(tok.Notes()[0], "LLaMA-3") {
		t.Errorf("pre %q, notes %q", tok.Pre(), tok.Notes())
	}
	if len(want.Notes()) != 0 {
		t.Errorf("a file naming its pre-tokenizer got notes %q", want.Notes())
	}
	s, _ := tok.ID("'s")
	for _, text := range []string{"it's 2024", variedText(9, 200)} {
		got := tok.Encode(text, tokenizer.EncodeOptions{})
		if !slices.Equal(got, want.Encode(text, tokenizer.EncodeOptions{})) {
			t.Errorf("%.40q: ids differ from llama-bpe's", text)
		}
		if text == "it's 2024" && !slices.Contains(got, s) {
			t.Errorf("%q: 's is not one token: %v", text, got)
		}
	}
	// Any other vocabulary without a pre-tokenizer falls back to llama.cpp's
	// default, which splits the apostrophe off.
	v.Tokens = slices.Clone(v.Tokens)
	v.Tokens[128000] = "<|not_llama3|>"
	other, err := tokenizer.New(v)
	if err != nil {
		t.Fatal(err)
	}
	if other.Pre() != "default" || len(other.Notes()) != 1 {
		t.Errorf("pre %q, notes %q", other.Pre(), other.Notes())
	}
	if got := other.Encode("it's", tokenizer.EncodeOptions{NoBOS: true}); slices.Contains(got, s) {
		t.Errorf("default pre-tokenizer kept 's whole: %v", got)
	}
}

// vocabBuilder returns a synthetic model's builder (its vocabulary is
// synth's built-in one) and a function that parses it after edits.
func vocabBuilder(t *testing.T) (*gguf.Builder, func() *gguf.File) {
	t.Helper()
	b, err := synth.Build(synth.Options{Shape: synth.Shapes["tiny"], Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	return b, func() *gguf.File {
		t.Helper()
		var buf bytes.Buffer
		if _, err := b.WriteTo(&buf); err != nil {
			t.Fatal(err)
		}
		f, err := gguf.Parse(buf.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
}

func TestTokenizerSynthVocab(t *testing.T) {
	_, parse := vocabBuilder(t)
	f := parse()
	tok, err := nn.NewTokenizer(f)
	if err != nil {
		t.Fatal(err)
	}
	bv := synth.BuiltinVocab(0)
	if tok.Len() != bv.Tokens || tok.Pre() != "llama-bpe" || tok.Model() != "gpt2" || len(tok.Notes()) != 0 {
		t.Errorf("len %d (want %d), pre %q, model %q, notes %q", tok.Len(), bv.Tokens, tok.Pre(), tok.Model(), tok.Notes())
	}
	the, _ := tok.ID("Ġthe")
	and, _ := tok.ID("Ġand")
	ids := tok.Encode("in the sand and the sea", tokenizer.EncodeOptions{})
	if ids[0] != tok.BOS() || !slices.Contains(ids, the) || !slices.Contains(ids, and) {
		t.Errorf("Encode = %v: want BOS first and the merged tokens Ġthe (%d), Ġand (%d)", ids, the, and)
	}
	eot, _ := tok.ID("<|eot_id|>")
	end, _ := tok.ID("<|end_of_text|>")
	if !tok.IsEOG(eot) || !tok.IsEOG(end) || tok.EOT() != eot {
		t.Errorf("EOG %v, EOT %d", tok.EOG(), tok.EOT())
	}
	text := variedText(3, 300)
	ids = tok.Encode(text, tokenizer.EncodeOptions{})
	if got := tok.Decode(ids); got != text {
		t.Errorf("round trip differs at byte %d", firstDiff(got, text))
	}
	checkStreaming(t, tok, ids)
	tmpl, err := nn.ChatTemplate(f, "")
	if err != nil || tmpl.Name() != "bitnet" {
		t.Errorf("chat template: %v, %v", tmpl, err)
	}
	if tmpl, err := nn.ChatTemplate(f, "chatml"); err != nil || tmpl.Name() != "chatml" {
		t.Errorf("override: %v, %v", tmpl, err)
	}
	if _, err := nn.ChatTemplate(f, "nope"); err == nil || !strings.Contains(err.Error(), "unknown chat template") {
		t.Errorf("unknown override: %v", err)
	}
}

// setVocabMeta replaces (or, with a zero Value, removes) a metadata key.
func setVocabMeta(b *gguf.Builder, key string, v gguf.Value) {
	for i, kv := range b.Meta {
		if kv.Key == key {
			if v.Type() == 0 && v.Any() == nil {
				b.Meta = slices.Delete(b.Meta, i, i+1)
			} else {
				b.Meta[i].Value = v
			}
			return
		}
	}
	if v.Any() != nil {
		b.Meta = append(b.Meta, gguf.KV{Key: key, Value: v})
	}
}

func TestLoadVocabErrors(t *testing.T) {
	n := synth.BuiltinVocab(0).Tokens
	for _, c := range []struct {
		name string
		key  string
		val  gguf.Value
		want string
	}{
		{"no tokenizer", nn.KeyTokenizerModel, gguf.Value{}, "has no tokenizer"},
		{"model type", nn.KeyTokenizerModel, gguf.U32(1), `"tokenizer.ggml.model"`},
		{"unknown model", nn.KeyTokenizerModel, gguf.Str("wordpiece"), `unknown tokenizer model "wordpiece"`},
		{"unknown pre", nn.KeyTokenizerPre, gguf.Str("qwen9"), `unknown pre-tokenizer "qwen9"`},
		{"no tokens", nn.KeyTokens, gguf.Value{}, `"tokenizer.ggml.tokens": missing`},
		{"types length", nn.KeyTokenType, gguf.Array([]int32{1, 1}), fmt.Sprintf("2 token types for %d tokens", n)},
		{"types type", nn.KeyTokenType, gguf.Array([]string{"x"}), `"tokenizer.ggml.token_type"`},
		{"bad type", nn.KeyTokenType, gguf.Array(slices.Repeat([]int32{9}, n)), "has type 9"},
		{"scores length", nn.KeyScores, gguf.Array([]float32{0}), fmt.Sprintf("1 scores for %d tokens", n)},
		{"bos range", nn.KeyBOS, gguf.U32(uint32(n)), fmt.Sprintf("BOS token id %d is out of range", n)},
		{"eos type", nn.KeyEOS, gguf.Str("x"), `"tokenizer.ggml.eos_token_id"`},
		{"merge", nn.KeyMerges, gguf.Array([]string{"Ġ t", "a b c"}), `merge 1 "a b c" is not two tokens`},
		{"no merges", nn.KeyMerges, gguf.Value{}, "has no merges"},
		{"add bos type", nn.KeyAddBOS, gguf.U8(1), `"tokenizer.ggml.add_bos_token"`},
		{"duplicate", nn.KeyTokens, gguf.Array(slices.Repeat([]string{"a"}, n)), `token "a" appears twice`},
	} {
		b, parse := vocabBuilder(t)
		setVocabMeta(b, c.key, c.val)
		_, err := nn.NewTokenizer(parse())
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one saying %q", c.name, err, c.want)
		}
	}
}

// englishText is about n bytes of English-like prose.
func englishText(n int) string {
	words := strings.Fields("the of and to in is was that for it with as his on be at by had are but from or have an they which one you were all her she there would their we him been has when who will no more if out so said what up its about than into them can only other time new some could these two may first then do any like my now over such our man me even most made after also did many before must through back years where much your way well down should because each just those people how too little state good very make world still see own men work long here get both between life being under never day same another know while last might us great old year off come since against go came right used take three")
	r := rand.New(rand.NewPCG(7, 7))
	var b strings.Builder
	for b.Len() < n {
		sentence := 5 + r.IntN(15)
		for i := 0; i < sentence; i++ {
			w := words[r.IntN(len(words))]
			if i == 0 {
				w = strings.ToUpper(w[:1]) + w[1:]
			}
			b.WriteString(w)
			switch {
			case i == sentence-1:
				b.WriteString(". ")
			case r.IntN(12) == 0:
				b.WriteString(", ")
			default:
				b.WriteString(" ")
			}
		}
		if r.IntN(8) == 0 {
			b.WriteString("\n\n")
		}
	}
	return b.String()
}

// BenchmarkEncode tokenizes 1 MB of English-like text with the real
// vocabularies; the bytes/s figure is the throughput.
func BenchmarkEncode(b *testing.B) {
	text := englishText(1 << 20)
	for _, name := range []string{llama3VocabFile, spmVocabFile} {
		b.Run(name, func(b *testing.B) {
			tok := loadTestTokenizer(b, name)
			b.SetBytes(int64(len(text)))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				tok.Encode(text, tokenizer.EncodeOptions{})
			}
		})
	}
}

func BenchmarkDecode(b *testing.B) {
	text := englishText(1 << 20)
	tok := loadTestTokenizer(b, llama3VocabFile)
	ids := tok.Encode(text, tokenizer.EncodeOptions{})
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tok.Decode(ids)
	}
}
