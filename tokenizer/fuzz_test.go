package tokenizer

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzEncode checks, for any bytes, on both kinds of vocabulary: no panic,
// ids in range, Decode(Encode(s)) is s (with invalid UTF-8 as U+FFFD), the
// streaming decoder agrees with Decode in valid UTF-8 chunks, and the
// pre-tokenizers cover the text with words in order.
func FuzzEncode(f *testing.F) {
	for _, s := range []string{
		"", " ", "Hello world", "it's 2024!", "  \n\n\t x", "🦙.cpp 😶\u200d🌫️", "\xff\xfe", "\xf0\x9f", "a<|eot_id|>b<tool>",
		"123456789", "Führer ½ нещо", "xyzxy abc", "<s>hi</s>", "the and sand\r\n", "\xc0 ",
	} {
		f.Add(s)
	}
	bpe := mustNew(f, toyBPE())
	spm := mustNew(f, toySPM())
	f.Fuzz(func(t *testing.T, s string) {
		for _, c := range []struct {
			tok *Tokenizer
			// SentencePiece cannot round-trip ▁ (it is its space) nor text
			// after a user-defined token (it gets a space prefix there).
			exact bool
		}{
			{bpe, true},
			{spm, !strings.Contains(s, spaceMark) && !strings.Contains(s, "<tool>")},
		} {
			ids := c.tok.Encode(s, EncodeOptions{NoBOS: true})
			for _, id := range ids {
				if id < 0 || int(id) >= c.tok.Len() {
					t.Fatalf("%s: id %d out of range", c.tok.Model(), id)
				}
			}
			got := c.tok.Decode(ids)
			if c.exact && got != toValid(s) {
				t.Fatalf("%s: Decode(Encode(%q)) = %q", c.tok.Model(), s, got)
			}
			d := c.tok.NewDecoder()
			var b strings.Builder
			for _, id := range ids {
				chunk := d.Next(id)
				if !utf8.ValidString(chunk) {
					t.Fatalf("%s: invalid chunk %q", c.tok.Model(), chunk)
				}
				b.WriteString(chunk)
			}
			if b.WriteString(d.Flush()); b.String() != got {
				t.Fatalf("%s: streamed %q, Decode %q", c.tok.Model(), b.String(), got)
			}
			c.tok.Encode(s, EncodeOptions{ParseSpecial: true})
		}
		for _, kind := range []preKind{preLlama3, preGPT2, preDefault} {
			_, ends := split(kind, s, nil, nil)
			prev := 0
			for _, e := range ends {
				if e <= prev || e > len(s) {
					t.Fatalf("pre-tokenizer %d: ends %v for %q", kind, ends, s)
				}
				prev = e
			}
			if prev != len(s) {
				t.Fatalf("pre-tokenizer %d: ends %v do not cover %q", kind, ends, s)
			}
		}
	})
}
