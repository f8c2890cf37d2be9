package gguf

import (
	"bytes"
	"testing"
)

// FuzzParse feeds arbitrary bytes to the parser. It must never panic, and
// whatever it accepts must write out and read back to the same bytes.
func FuzzParse(f *testing.F) {
	small := smallFile(f)
	f.Add(small)
	f.Add(small[:len(small)/2])
	f.Add(writeBytes(f, &Builder{Meta: []KV{{"general.alignment", U32(64)}, {"x", Array([]string{"a", "b"})}}}))
	f.Add(writeBytes(f, &Builder{}))
	f.Add([]byte("GGUF\x03\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse(data)
		if err != nil {
			if _, ok := err.(*FormatError); !ok {
				t.Fatalf("error is a %T, not a *FormatError: %v", err, err)
			}
			return
		}
		var once bytes.Buffer
		if _, err := FromFile(file).WriteTo(&once); err != nil {
			t.Fatalf("a parsed file does not write back: %v", err)
		}
		again, err := Parse(once.Bytes())
		if err != nil {
			t.Fatalf("a rewritten file does not parse: %v", err)
		}
		var twice bytes.Buffer
		if _, err := FromFile(again).WriteTo(&twice); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(once.Bytes(), twice.Bytes()) {
			t.Fatal("writing is not stable: rewrite of a rewrite differs")
		}
	})
}
