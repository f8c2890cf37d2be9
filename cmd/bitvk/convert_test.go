package main

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bitvk/bitvk/train"
)

// trainerCheckpoint writes an untrained tiny model as the trainer's
// --hf-out does, with the built-in vocabulary in a GGUF for --vocab.
func trainerCheckpoint(t *testing.T) (dir, vocab string) {
	t.Helper()
	vocab = synthTiny(t)
	tok := openTokenizer(t, vocab)
	d, err := train.Tokenize(tok, []train.Text{{Name: "t", Body: []byte(strings.Repeat("the king said unto the people. ", 8))}})
	if err != nil {
		t.Fatal(err)
	}
	s := train.Shape{Vocab: tok.Len(), Layers: 1, Embd: 128, FFN: 256, Heads: 2, KVHeads: 1, Context: 16, RopeBase: 10000, Eps: 1e-5}
	tr, err := train.New(train.Options{Shape: s, Hyper: train.DefaultHyper(), Batch: 1, Seed: 1, Threads: 1}, d, d, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	dir = filepath.Join(t.TempDir(), "hf")
	if err := train.ExportHF(dir, tr.Model, tok.BOS(), tok.EOS()); err != nil {
		t.Fatal(err)
	}
	return dir, vocab
}

func TestConvertCommand(t *testing.T) {
	dir, vocab := trainerCheckpoint(t)
	out := filepath.Join(t.TempDir(), "m.gguf")
	code, stdout, stderr := bitvk("convert", dir, "-o", out, "--vocab", vocab, "--head", "q8")
	if code != 0 {
		t.Fatalf("convert: exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "wrote "+out+": bitnet-b1.58, 1 layers, 13 tensors (7 projections ternarized with absmean)") ||
		!strings.Contains(stderr, "converted 13/13 tensors") {
		t.Errorf("output:\n%s\n%s", stdout, stderr)
	}
	code, js, stderr := bitvk("inspect", "--json", out)
	if code != 0 {
		t.Fatalf("inspect: exit %d: %s", code, stderr)
	}
	var r struct {
		Model struct {
			Valid   bool   `json:"valid"`
			Problem string `json:"problem"`
		} `json:"model"`
	}
	if err := json.Unmarshal([]byte(js), &r); err != nil || !r.Model.Valid {
		t.Errorf("inspect: the converted file is not a complete model: %v %q", err, r.Model.Problem)
	}
	code, stdout, stderr = bitvk("run", "-m", out, "-p", "the king", "-n", "4", "--temp", "0", "-t", "1")
	if code != 0 || !strings.Contains(stderr, "generated:") {
		t.Errorf("run on the converted model: exit %d: %s%s", code, stdout, stderr)
	}
}

func TestConvertErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "o.gguf")
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"convert"}, 2, "give the checkpoint directory DIR"},
		{[]string{"convert", dir}, 2, "-o OUT.gguf is required"},
		{[]string{"convert", dir, dir, "-o", out}, 2, "unexpected argument"},
		{[]string{"convert", dir, "-o", out, "--type", "q4_0"}, 2, `--type "q4_0": choose i2_s, tq2_0 or tq1_0`},
		{[]string{"convert", dir, "-o", out, "--head", "f32"}, 2, `--head "f32"`},
		{[]string{"convert", dir, "-o", out, "--ptq", "gptq"}, 2, `--ptq "gptq"`},
		{[]string{"convert", filepath.Join(dir, "none"), "-o", out}, 1, "no such file or directory"},
		{[]string{"convert", file, "-o", out}, 1, "is not a directory"},
		{[]string{"convert", dir, "-o", out}, 1, "bitvk convert: reading the model configuration"},
	} {
		code, _, stderr := bitvk(c.args...)
		if code != c.code || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, %q; want exit %d and %q", c.args, code, stderr, c.code, c.want)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a failed conversion wrote its output")
	}
}
