package view

import "testing"

// The embedded font parses: every printable ASCII character, seven rows of
// five cells; the space is empty, every other glyph has ink, and no two
// glyphs are the same bitmap.
func TestFont(t *testing.T) {
	words, err := parseFont(fontSource)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[uint64]rune{}
	for g := range glyphCount {
		bits := uint64(words[2*g]) | uint64(words[2*g+1])<<32
		r := rune(' ' + g)
		if g == boxGlyph {
			r = '□'
		}
		if (bits == 0) != (r == ' ') {
			t.Errorf("glyph %q: ink %#x", r, bits)
		}
		if o, ok := seen[bits]; ok {
			t.Errorf("glyphs %q and %q are the same bitmap", o, r)
		}
		seen[bits] = r
	}
	if glyphIndex('A') != 'A'-' ' || glyphIndex('é') != boxGlyph || glyphIndex('\t') != boxGlyph {
		t.Error("glyphIndex maps wrongly")
	}
	if _, err := parseFont("A ....."); err == nil {
		t.Error("a truncated font parsed")
	}
}
