package tokenizer

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// stream feeds ids one at a time and returns the chunks, checking that each
// is valid UTF-8.
func stream(t *testing.T, d *Decoder, ids []int32) []string {
	t.Helper()
	var chunks []string
	for _, id := range ids {
		c := d.Next(id)
		if !utf8.ValidString(c) {
			t.Fatalf("chunk %q for id %d is not valid UTF-8", c, id)
		}
		chunks = append(chunks, c)
	}
	return chunks
}

func byteIDs(tok *Tokenizer, bs ...byte) []int32 {
	ids := make([]int32, len(bs))
	for i, b := range bs {
		ids[i] = tok.byteTok[b]
	}
	return ids
}

func TestDecoderHoldsIncompleteCharacters(t *testing.T) {
	tok := mustNew(t, toySPM())
	hello, _ := tok.ID("▁hello")
	world, _ := tok.ID("▁world")
	emoji := byteIDs(tok, 0xF0, 0x9F, 0xA6, 0x99) // 🦙 as four byte tokens
	ids := append(append([]int32{1, hello}, emoji...), world, 2)
	got := stream(t, tok.NewDecoder(), ids)
	want := []string{"", "hello", "", "", "", "🦙", " world", ""}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("chunks %q, want %q", got, want)
	}
	if s := tok.Decode(ids); s != "hello🦙 world" {
		t.Errorf("Decode = %q", s)
	}
}

func TestDecoderInvalidBytes(t *testing.T) {
	tok := mustNew(t, toySPM())
	a, _ := tok.ID("a")
	for _, c := range []struct {
		name string
		ids  []int32
		want string
	}{
		{"stray continuation byte", byteIDs(tok, 0x80), "\uFFFD"},
		{"byte that starts nothing", byteIDs(tok, 0xFF, 0xFE), "\uFFFD\uFFFD"},
		{"truncated at the end", byteIDs(tok, 0xF0, 0x9F), "\uFFFD\uFFFD"},
		{"interrupted", append(byteIDs(tok, 0xE2, 0x96), a), "\uFFFD\uFFFDa"},
		{"overlong", byteIDs(tok, 0xC0, 0xAF), "\uFFFD\uFFFD"},
	} {
		d := tok.NewDecoder()
		got := strings.Join(stream(t, d, c.ids), "") + d.Flush()
		if got != c.want || tok.Decode(c.ids) != c.want {
			t.Errorf("%s: streamed %q, Decode %q, want %q", c.name, got, tok.Decode(c.ids), c.want)
		}
	}
}

func TestDecoderSpacePrefix(t *testing.T) {
	tok := mustNew(t, toySPM())
	hello, _ := tok.ID("▁hello")
	world, _ := tok.ID("▁world")
	// The prefix space goes from the first text, even after BOS…
	if s := tok.Decode([]int32{1, hello, world}); s != "hello world" {
		t.Errorf("Decode = %q", s)
	}
	// …but not from a continuation of a prompt fed to Prime.
	d := tok.NewDecoder()
	d.Prime([]int32{1, hello})
	if s := d.Next(world); s != " world" {
		t.Errorf("after Prime: %q", s)
	}
	// Byte-level BPE has no prefix to take off.
	bpe := mustNew(t, toyBPE())
	the, _ := bpe.ID("Ġthe")
	if s := bpe.Decode([]int32{the, the}); s != " the the" {
		t.Errorf("BPE Decode = %q", s)
	}
}

func TestPieces(t *testing.T) {
	bpe := mustNew(t, toyBPE())
	spm := mustNew(t, toySPM())
	hello, _ := spm.ID("▁hello")
	the, _ := bpe.ID("Ġthe")
	nl, _ := bpe.ID("ĊĊ")
	tool, _ := bpe.ID("<tool>")
	for _, c := range []struct {
		tok  *Tokenizer
		id   int32
		want string
	}{
		{bpe, the, " the"},
		{bpe, nl, "\n\n"},
		{bpe, 0xA9, "\xa9"}, // half a character: Piece shows the byte
		{bpe, bpe.BOS(), "<|begin_of_text|>"},
		{bpe, tool, "<tool>"},
		{spm, hello, " hello"},
		{spm, spm.byteTok['\n'], "\n"},
		{spm, 2, "</s>"},
		{spm, 0, "<unk>"},
	} {
		if got := c.tok.Piece(c.id); got != c.want {
			t.Errorf("Piece(%d) = %q, want %q", c.id, got, c.want)
		}
	}
	// Control and unknown tokens show in Piece but add nothing to Decode;
	// user-defined tokens are text.
	if s := bpe.Decode([]int32{bpe.BOS(), tool, the, bpe.EOS()}); s != "<tool> the" {
		t.Errorf("Decode = %q", s)
	}
	if s := spm.Decode([]int32{0, hello}); s != "hello" {
		t.Errorf("Decode with <unk> = %q", s)
	}
}

func TestParseByteToken(t *testing.T) {
	for _, c := range []struct {
		s  string
		b  byte
		ok bool
	}{{"<0x0A>", 0x0A, true}, {"<0xff>", 0xFF, true}, {"<0xG0>", 0, false}, {"<0x0A", 0, false}, {"0x0A>>", 0, false}} {
		if b, ok := parseByteToken(c.s); b != c.b || ok != c.ok {
			t.Errorf("parseByteToken(%q) = %#x, %v", c.s, b, ok)
		}
	}
}

// TestContaining: the tokens whose piece holds any of the strings, in id
// order, each once; empty strings match nothing.
func TestContaining(t *testing.T) {
	tok := mustNew(t, toySPM())
	var want []int32
	for id := range int32(tok.Len()) {
		if p := tok.Piece(id); strings.Contains(p, "l") || strings.Contains(p, "w") {
			want = append(want, id)
		}
	}
	if len(want) == 0 {
		t.Fatal("no token holds l or w in the toy vocabulary")
	}
	if got := tok.Containing([]string{"l", "", "w", "l"}); !slices.Equal(got, want) {
		t.Errorf("Containing = %v, want %v", got, want)
	}
	if ids := tok.Containing([]string{""}); len(ids) != 0 {
		t.Errorf("Containing(\"\") = %v", ids)
	}
}
