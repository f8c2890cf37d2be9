package tokenizer

import (
	"slices"
	"testing"
)

func words(kind preKind, text string) []string {
	_, ends := split(kind, text, nil, nil)
	var out []string
	start := 0
	for _, e := range ends {
		out = append(out, text[start:e])
		start = e
	}
	return out
}

// The splits each regex alternative produces, worked out by hand from the
// regexes (llama.cpp's vectors in package nn check them against real ids).
func TestSplitLlama3(t *testing.T) {
	for _, c := range []struct {
		text string
		want []string
	}{
		{"", nil},
		{"Hello world", []string{"Hello", " world"}},
		{"it's", []string{"it", "'s"}},
		{"IT'S THEY'RE we'LL I'd", []string{"IT", "'S", " THEY", "'RE", " we", "'LL", " I", "'d"}},
		{"'x", []string{"'x"}},
		{"123456", []string{"123", "456"}},
		{"1234 5", []string{"123", "4", " ", "5"}},
		{"  hi", []string{" ", " hi"}},
		{"hi   ", []string{"hi", "   "}},
		{"a\n\nb", []string{"a", "\n\n", "b"}},
		{"x  \n  y", []string{"x", "  \n", " ", " y"}},
		{"!!!\n\nx", []string{"!!!\n\n", "x"}},
		{" (", []string{" ("}},
		{"\t\n", []string{"\t\n"}},
		{"a,b", []string{"a", ",b"}},
		{"\tword", []string{"\tword"}},
		{"😀😀 ok", []string{"😀😀", " ok"}},
		{"é\u0301x", []string{"é", "\u0301x"}},
		{"x\xffy\xfe", []string{"x", "\xffy", "\xfe"}},
		{"\u00a0\u3000a", []string{"\u00a0", "\u3000a"}},
		{"3½", []string{"3½"}},
		{" ", []string{" "}},
		{"a ", []string{"a", " "}},
	} {
		if got := words(preLlama3, c.text); !slices.Equal(got, c.want) {
			t.Errorf("llama3 %q: got %q, want %q", c.text, got, c.want)
		}
	}
}

func TestSplitGPT2(t *testing.T) {
	for _, c := range []struct {
		text string
		want []string
	}{
		{"it's", []string{"it", "'s"}},
		{"IT'S", []string{"IT", "'", "S"}},
		{" 123456 x", []string{" 123456", " x"}},
		{"a,b", []string{"a", ",", "b"}},
		{"hi  there", []string{"hi", " ", " there"}},
		{"hi\n\nthere", []string{"hi", "\n", "\n", "there"}}, // only a space may lead letters
		{"x !!", []string{"x", " !!"}},
		{"end  ", []string{"end", "  "}},
	} {
		if got := words(preGPT2, c.text); !slices.Equal(got, c.want) {
			t.Errorf("gpt2 %q: got %q, want %q", c.text, got, c.want)
		}
	}
}

func TestSplitDefault(t *testing.T) {
	for _, c := range []struct {
		text string
		want []string
	}{
		{"it's", []string{"it", "'", "s"}},
		{"12345", []string{"123", "45"}},
		{" 12345 x", []string{" ", "123", "45", " x"}},
		{"a+b", []string{"a", "+", "b"}},
		{"hello, world!", []string{"hello", ",", " world", "!"}},
		{"x`y", []string{"x", "`", "y"}},
		{"a1234567b", []string{"a", "123", "456", "7", "b"}},
		{"٣٤٥٦", []string{"٣٤٥٦"}}, // \p{N} but not [0-9]: no triples
	} {
		if got := words(preDefault, c.text); !slices.Equal(got, c.want) {
			t.Errorf("default %q: got %q, want %q", c.text, got, c.want)
		}
	}
}
