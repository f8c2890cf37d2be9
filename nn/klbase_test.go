package nn

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// writeKLBase writes a small base file (vocab 5, n_ctx 8, 2 chunks: 3
// scored rows each) and returns its path, tokens and rows.
func writeKLBase(t testing.TB, dir string) (string, []int32, [][]float32) {
	t.Helper()
	h := KLBaseHeader{Vocab: 5, Ctx: 8, Chunks: 2, Source: "test model, cpu"}
	tokens := make([]int32, 16)
	for i := range tokens {
		tokens[i] = int32(i % 5)
	}
	path := filepath.Join(dir, "base.kld")
	w, err := CreateKLBase(path, h, tokens)
	if err != nil {
		t.Fatal(err)
	}
	var rows [][]float32
	for i := range 6 {
		r := logprobs(float32(i), 1, 2, -1, 0.5)
		rows = append(rows, r)
		if err := w.WriteRow(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.WriteRow(rows[0]); err == nil {
		t.Error("a seventh row was accepted")
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	return path, tokens, rows
}

func TestKLBaseRoundTrip(t *testing.T) {
	dir := t.TempDir()
	path, tokens, rows := writeKLBase(t, dir)
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("temporary files left behind: %v", ents)
	}
	r, err := OpenKLBase(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if h := r.Header; h.Vocab != 5 || h.Ctx != 8 || h.Chunks != 2 || h.Source != "test model, cpu" || !slices.Equal(r.Tokens, tokens) {
		t.Errorf("header %+v, tokens %v", h, r.Tokens)
	}
	row := make([]float32, 5)
	for i, want := range rows {
		if err := r.ReadRow(row); err != nil || !slices.Equal(row, want) {
			t.Fatalf("row %d = %v, %v; want %v", i, row, err, want)
		}
	}
	if err := r.ReadRow(row); err == nil {
		t.Error("read past the last row")
	}
	st, _ := os.Stat(path)
	if want := int64(32 + 15 + 16*4 + 6*5*4); st.Size() != want {
		t.Errorf("file of %d bytes, want %d", st.Size(), want)
	}
}

// An unfinished or aborted base is never left under its name.
func TestKLBaseWriterAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "b.kld")
	h := KLBaseHeader{Vocab: 3, Ctx: 8, Chunks: 1}
	w, err := CreateKLBase(path, h, make([]int32, 8))
	if err != nil {
		t.Fatal(err)
	}
	w.WriteRow([]float32{0, 0, 0})
	if err := w.Commit(); err == nil || !strings.Contains(err.Error(), "1 of 3 rows") {
		t.Errorf("Commit of a partial file: %v", err)
	}
	w2, _ := CreateKLBase(path, h, make([]int32, 8))
	w2.Abort()
	w2.Abort()
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("files left behind: %v", ents)
	}
	for _, tc := range []struct {
		h      KLBaseHeader
		tokens int
		bad    int32
		msg    string
	}{
		{KLBaseHeader{Vocab: 3, Ctx: 4, Chunks: 1}, 4, 0, "n_ctx of 4"},
		{KLBaseHeader{Vocab: 0, Ctx: 8, Chunks: 1}, 8, 0, "vocabulary of 0"},
		{KLBaseHeader{Vocab: 3, Ctx: 8, Chunks: 0}, 0, 0, "chunk count 0"},
		{KLBaseHeader{Vocab: 3, Ctx: 8, Chunks: 1}, 7, 0, "7 tokens"},
		{KLBaseHeader{Vocab: 3, Ctx: 8, Chunks: 1}, 8, 3, "outside the vocabulary"},
		{KLBaseHeader{Vocab: 3, Ctx: 8, Chunks: 1, Source: strings.Repeat("x", 2000)}, 8, 0, "source description"},
	} {
		toks := make([]int32, tc.tokens)
		if len(toks) > 0 {
			toks[0] = tc.bad
		}
		if _, err := CreateKLBase(path, tc.h, toks); err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%+v: %v, want an error with %q", tc.h, err, tc.msg)
		}
	}
}

func TestKLBaseReaderRejects(t *testing.T) {
	path, _, _ := writeKLBase(t, t.TempDir())
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	edit := func(off int, v uint32) []byte {
		b := slices.Clone(good)
		binary.LittleEndian.PutUint32(b[off:], v)
		return b
	}
	for _, tc := range []struct {
		name string
		data []byte
		msg  string
	}{
		{"empty", nil, "not a bitvk KL-divergence base file"},
		{"text", []byte("hello, this is a text file and not a base"), `starts with "hello, t"`},
		{"llama.cpp", append([]byte("_logits_"), good[8:]...), "llama.cpp's base files"},
		{"short header", good[:20], "shorter than the 32-byte header"},
		{"version", edit(8, 2), "format version 2"},
		{"vocab 0", edit(12, 0), "vocabulary of 0"},
		{"huge vocab", edit(12, 1<<30), "vocabulary size 1073741824 at byte 12"},
		{"n_ctx", edit(16, 6), "n_ctx of 6"},
		{"first", edit(24, 3), "first scored position 3"},
		{"source", edit(28, 5000), "source"},
		{"truncated", good[:len(good)-1], "truncated"},
		{"truncated tokens", good[:60], "truncated"},
		{"extra", append(slices.Clone(good), 0), "1 bytes after"},
		{"more chunks", edit(20, 3), "truncated"},
		{"bad token", edit(32+15+4*3, 5), "token 5 (chunk 0, position 3"},
		{"negative token", edit(32+15, 0xffffffff), "token -1"},
	} {
		_, err := NewKLBaseReader(bytes.NewReader(tc.data), int64(len(tc.data)), "b.kld")
		if err == nil || !strings.Contains(err.Error(), tc.msg) || !strings.HasPrefix(err.Error(), "b.kld: ") {
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.msg)
		}
	}
}

// FuzzKLBaseReader feeds arbitrary bytes to the reader: it must never
// panic, and what it accepts has tokens in range and rows that read.
func FuzzKLBaseReader(f *testing.F) {
	path, _, _ := writeKLBase(f, f.TempDir())
	good, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:40])
	f.Add([]byte(klBaseMagic))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := NewKLBaseReader(bytes.NewReader(data), int64(len(data)), "fuzz")
		if err != nil {
			return
		}
		for _, tok := range r.Tokens {
			if tok < 0 || int(tok) >= r.Header.Vocab {
				t.Fatalf("token %d accepted for a vocabulary of %d", tok, r.Header.Vocab)
			}
		}
		row := make([]float32, r.Header.Vocab)
		for range r.Header.Chunks * r.Header.Plan().Scored() {
			if err := r.ReadRow(row); err != nil {
				t.Fatalf("accepted file fails to read: %v", err)
			}
		}
	})
}
