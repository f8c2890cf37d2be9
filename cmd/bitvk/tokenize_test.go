package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bitvk/bitvk/gguf"
	"github.com/bitvk/bitvk/models"
	"github.com/bitvk/bitvk/nn"
	"github.com/bitvk/bitvk/tokenizer"
)

// withStdin runs f with the command's standard input reading text.
func withStdin(t *testing.T, text string, f func()) {
	t.Helper()
	old := stdin
	stdin = strings.NewReader(text)
	defer func() { stdin = old }()
	f()
}

// tokenizeIDs runs tokenize --ids and parses the array it prints.
func tokenizeIDs(t *testing.T, args ...string) []int32 {
	t.Helper()
	code, out, stderr := bitvk(append([]string{"tokenize", "--ids"}, args...)...)
	if code != 0 {
		t.Fatalf("%v: exit %d: %s", args, code, stderr)
	}
	if strings.Count(out, "\n") != 1 {
		t.Fatalf("--ids printed %q, want one line", out)
	}
	var ids []int32
	if err := json.Unmarshal([]byte(out), &ids); err != nil {
		t.Fatalf("--ids output %q is not a JSON array: %v", out, err)
	}
	return ids
}

func openTokenizer(t *testing.T, path string) *tokenizer.Tokenizer {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tok, err := nn.NewTokenizer(f)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestTokenizeSynthetic(t *testing.T) {
	path := synthTiny(t)
	tok := openTokenizer(t, path)
	text := "in the sand and the sea"

	code, out, stderr := bitvk("tokenize", "-m", path, text)
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	want := tok.Encode(text, tokenizer.EncodeOptions{})
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != len(want) {
		t.Fatalf("%d lines for %d tokens:\n%s", len(lines), len(want), out)
	}
	the, _ := tok.ID("Ġthe")
	if lines[0] != fmt.Sprintf("%d\t'<|begin_of_text|>'", tok.BOS()) || !slices.Contains(lines, fmt.Sprintf("%d\t' the'", the)) {
		t.Errorf("output:\n%s", out)
	}

	if ids := tokenizeIDs(t, "-m", path, text); !slices.Equal(ids, want) {
		t.Errorf("--ids %v, want %v", ids, want)
	}
	if ids := tokenizeIDs(t, "-m", path, "--no-bos", text); !slices.Equal(ids, want[1:]) {
		t.Errorf("--no-bos %v, want %v", ids, want[1:])
	}
	// Flags may follow the text; -- ends the flags.
	if ids := tokenizeIDs(t, "-m", path, "--", "--no-bos"); ids[0] != tok.BOS() || len(ids) < 3 {
		t.Errorf("-- then text: %v", ids)
	}

	eot, _ := tok.ID("<|eot_id|>")
	if ids := tokenizeIDs(t, "-m", path, "--no-bos", "--special", "<|eot_id|>"); !slices.Equal(ids, []int32{eot}) {
		t.Errorf("--special: %v, want [%d]", ids, eot)
	}
	if ids := tokenizeIDs(t, "-m", path, "--no-bos", "<|eot_id|>"); len(ids) < 3 || slices.Contains(ids, eot) {
		t.Errorf("without --special the text is plain: %v", ids)
	}
}

func TestTokenizeStdin(t *testing.T) {
	path := synthTiny(t)
	text := "line one\nline two\n\tand\xf0\x9f\xa6\x99 more\n"
	want := openTokenizer(t, path).Encode(text, tokenizer.EncodeOptions{})
	for _, args := range [][]string{{"-m", path}, {"-m", path, "-"}} {
		withStdin(t, text, func() {
			if ids := tokenizeIDs(t, args...); !slices.Equal(ids, want) {
				t.Errorf("%v: %v, want %v", args, ids, want)
			}
		})
	}
	withStdin(t, text, func() {
		code, out, _ := bitvk("tokenize", "-m", path)
		// The emoji's four bytes span tokens: pieces show bytes as \xNN, and
		// newlines and tabs escaped, one token per line.
		if code != 0 || !strings.Contains(out, `'\n'`) || !strings.Contains(out, `\x`) || strings.Count(out, "\n") != len(want) {
			t.Errorf("exit %d, output:\n%s", code, out)
		}
	})
}

func TestTokenizeErrors(t *testing.T) {
	dir := t.TempDir()
	notGGUF := filepath.Join(dir, "notes.txt")
	os.WriteFile(notGGUF, []byte("just some text, long enough to hold a header"), 0o644)
	noVocab := filepath.Join(dir, "novocab.gguf")
	b := &gguf.Builder{Meta: []gguf.KV{{Key: nn.KeyArchitecture, Value: gguf.Str("bitnet-b1.58")}}}
	if err := b.WriteFile(noVocab); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"tokenize", "-m", noVocab, "a", "b"}, 2, "at most one TEXT argument"},
		{[]string{"tokenize", "-m", filepath.Join(dir, "none.gguf"), "hi"}, 1, "no such file"},
		{[]string{"tokenize", "-m", notGGUF, "hi"}, 1, "not a GGUF file"},
		{[]string{"tokenize", "-m", noVocab, "hi"}, 1, "has no tokenizer"},
		{[]string{"tokenize", "--frob"}, 2, "flag provided but not defined"},
	} {
		code, out, stderr := bitvk(c.args...)
		if code != c.code || out != "" || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit %d saying %q", c.args, code, out, stderr, c.code, c.want)
		}
	}
}

// Without -m, tokenize uses the built-in model's tokenizer, as run does.
func TestTokenizeBuiltin(t *testing.T) {
	d := models.Default()
	f, err := gguf.Parse(d.Data)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := nn.NewTokenizer(f)
	if err != nil {
		t.Fatal(err)
	}
	const text = "And it came to pass"
	want := tok.Encode(text, tokenizer.EncodeOptions{})
	if got := tokenizeIDs(t, text); !slices.Equal(got, want) {
		t.Errorf("tokenize %q without -m: %v; want %s's %v", text, got, d.Name, want)
	}
}

// The real vocabularies, when the shared test data is beside the repository:
// vocabulary-only files work, and the ids are llama.cpp's.
func TestTokenizeSharedTestdata(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "shared", "testdata")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("shared test data absent (%v): this test needs ../shared/testdata beside the repository", err)
	}
	llama3 := filepath.Join(dir, "vocab-llama3-bpe.gguf")
	if ids := tokenizeIDs(t, "-m", llama3, "Hello world"); !slices.Equal(ids, []int32{128000, 9906, 1917}) {
		t.Errorf("llama3: %v", ids)
	}
	if ids := tokenizeIDs(t, "-m", llama3, "--special", "--no-bos", "<|begin_of_text|>Hi<|eot_id|>"); !slices.Equal(ids, []int32{128000, 13347, 128009}) {
		t.Errorf("llama3 --special: %v", ids)
	}
	spm := filepath.Join(dir, "ggml-vocab-llama-spm.gguf")
	code, out, stderr := bitvk("tokenize", "-m", spm, " Hello world")
	if want := "1\t'<s>'\n29871\t' '\n15043\t' Hello'\n3186\t' world'\n"; code != 0 || out != want {
		t.Errorf("spm: exit %d, %s\n%q\nwant %q", code, stderr, out, want)
	}
}

func TestDisplayPiece(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{" Hello", " Hello"},
		{"\n\n", `\n\n`},
		{"\t\r", `\t\r`},
		{`a\b`, `a\\b`},
		{"\xf0\x9f", `\xf0\x9f`},
		{"🦙", "🦙"},
		{"it's", "it's"},
		{"\x00\x1b", `\x00\x1b`},
		{"\u00a0\u200d", `\u00a0\u200d`},
	} {
		if got := displayPiece(c.in); got != c.want {
			t.Errorf("displayPiece(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
