package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bitvk/bitvk/nn"
)

// bitvk runs one command line in-process and returns exit code, stdout, stderr.
func bitvk(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

func synthTiny(t *testing.T, extra ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tiny.gguf")
	if code, _, stderr := bitvk(append([]string{"synth", "-o", path}, extra...)...); code != 0 {
		t.Fatalf("synth: exit %d: %s", code, stderr)
	}
	return path
}

func TestUsage(t *testing.T) {
	if code, _, stderr := bitvk(); code != 2 || !strings.Contains(stderr, "inspect") {
		t.Errorf("no arguments: exit %d, %q", code, stderr)
	}
	if code, _, _ := bitvk("-h"); code != 0 {
		t.Errorf("-h: exit %d", code)
	}
	if code, _, stderr := bitvk("frobnicate"); code != 2 || !strings.Contains(stderr, `unknown command "frobnicate"`) {
		t.Errorf("unknown command: exit %d, %q", code, stderr)
	}
	for _, cmd := range commands {
		if code, _, stderr := bitvk(cmd.name, "-h"); code != 0 || !strings.Contains(stderr, "usage: bitvk "+cmd.name) {
			t.Errorf("%s -h: exit %d, %q", cmd.name, code, stderr)
		}
	}
}

func TestSynthErrors(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"synth"}, 2, "-o OUT.gguf is required"},
		{[]string{"synth", "-o", filepath.Join(dir, "x.gguf"), "--shape", "huge"}, 2, `unknown shape "huge"`},
		{[]string{"synth", "-o", filepath.Join(dir, "x.gguf"), "--type", "q9"}, 2, "unknown tensor type"},
		{[]string{"synth", "-o", filepath.Join(dir, "x.gguf"), "--embd", "320"}, 1, "not a multiple of 128"},
		{[]string{"synth", "-o", filepath.Join(dir, "x.gguf"), "--vocab", filepath.Join(dir, "none.gguf")}, 1, "no such file"},
		{[]string{"synth", "-o", filepath.Join(dir, "no", "such", "dir.gguf")}, 1, "output directory"},
	} {
		code, _, stderr := bitvk(c.args...)
		if code != c.code || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d saying %q", c.args, code, stderr, c.code, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "x.gguf")); err == nil {
		t.Error("a failed synth left an output file")
	}
}

func TestSynthIsReproducible(t *testing.T) {
	a, _ := os.ReadFile(synthTiny(t, "--seed", "9"))
	b, _ := os.ReadFile(synthTiny(t, "--seed", "9"))
	if len(a) == 0 || !bytes.Equal(a, b) {
		t.Error("the same seed wrote different files")
	}
}

func TestInspect(t *testing.T) {
	path := synthTiny(t)
	code, out, stderr := bitvk("inspect", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"GGUF version 3", `"bitnet-b1.58"`, "bitnet-b1.58.block_count", "blk.1.ffn_down.weight", "I2_S", "768×256", "tensors (24;", "bits per weight", "… 279 elements]",
		"model: bitnet-b1.58, 2 layers, width 256, FFN 768 (relu²), 4 heads (2 KV, head dim 64)"} {
		if !strings.Contains(out, want) {
			t.Errorf("inspect output lacks %q", want)
		}
	}
	if strings.Contains(out, "ternary tensors") {
		t.Error("ternary statistics shown without --ternary")
	}
}

func TestInspectTernary(t *testing.T) {
	for _, typ := range []string{"i2_s", "tq2_0"} {
		path := synthTiny(t, "--type", typ)
		code, out, stderr := bitvk("inspect", path, "--ternary") // flag after the file
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", typ, code, stderr)
		}
		if !strings.Contains(out, "ternary weights: entropy 1.58") {
			t.Errorf("%s: no entropy near 1.58 in\n%s", typ, out)
		}
		code, js, _ := bitvk("inspect", "--ternary", "--json", path)
		if code != 0 {
			t.Fatal(code)
		}
		var r inspectReport
		if err := json.Unmarshal([]byte(js), &r); err != nil {
			t.Fatalf("%s: --json output does not parse: %v", typ, err)
		}
		if len(r.Ternary) != 14 || r.TernaryIn == nil {
			t.Fatalf("%s: %d ternary entries", typ, len(r.Ternary))
		}
		for _, e := range r.Ternary {
			if e.Error != "" || e.Invalid != 0 {
				t.Errorf("%s %s: error %q, %d invalid", typ, e.Name, e.Error, e.Invalid)
			}
			for _, share := range []float64{e.Neg, e.Zero, e.Pos} {
				if math.Abs(share-1.0/3) > 0.03 {
					t.Errorf("%s %s: shares %.3f %.3f %.3f", typ, e.Name, e.Neg, e.Zero, e.Pos)
					break
				}
			}
			if math.Abs(e.Entropy-math.Log2(3)) > 0.01 || e.StorageBits < 2 || e.StorageBits > 2.1 {
				t.Errorf("%s %s: entropy %.3f, storage %.3f", typ, e.Name, e.Entropy, e.StorageBits)
			}
		}
		if r.Model == nil || !r.Model.Valid || r.Model.Config.Layers != 2 || r.Model.Config.Activation != nn.ReLUSquared {
			t.Errorf("%s: model %+v", typ, r.Model)
		}
		if r.Totals.TernaryTensors != 14 || r.Totals.Tensors != 24 {
			t.Errorf("%s: totals %+v", typ, r.Totals)
		}
	}
}

func TestInspectTruncated(t *testing.T) {
	data, _ := os.ReadFile(synthTiny(t))
	dir := t.TempDir()
	for _, c := range []struct {
		cut  int
		want string
	}{
		{len(data) - 100, `tensor "output_norm.weight"`},
		{len(data) / 2, `tensor "blk.`},
		{3000, `metadata key "tokenizer.ggml.tokens"`},
		{10, "header"},
	} {
		path := filepath.Join(dir, "cut.gguf")
		if err := os.WriteFile(path, data[:c.cut], 0o644); err != nil {
			t.Fatal(err)
		}
		code, out, stderr := bitvk("inspect", path)
		if code == 0 || out != "" {
			t.Errorf("cut at %d: exit %d, stdout %q", c.cut, code, out)
		}
		if strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, c.want) {
			t.Errorf("cut at %d: stderr %q, want one line naming %s", c.cut, stderr, c.want)
		}
	}
}

func TestInspectSharedTestdata(t *testing.T) {
	for _, name := range []string{"vocab-llama3-bpe.gguf", "ggml-vocab-llama-spm.gguf"} {
		path := filepath.Join("..", "..", "..", "shared", "testdata", name)
		if _, err := os.Stat(path); err != nil {
			t.Skipf("shared test data absent (%v): this test needs ../shared/testdata beside the repository", err)
		}
		code, out, stderr := bitvk("inspect", "--ternary", path)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", name, code, stderr)
		}
		for _, want := range []string{"tokenizer.ggml.tokens", "array of string", "tensors: none", "not a complete BitNet-family model"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: output lacks %q", name, want)
			}
		}
		code, js, _ := bitvk("inspect", "--json", "--full", path)
		var r inspectReport
		if code != 0 || json.Unmarshal([]byte(js), &r) != nil {
			t.Fatalf("%s: --json failed", name)
		}
		for _, m := range r.Metadata {
			if m.Key == "tokenizer.ggml.tokens" {
				if arr, ok := m.Value.([]any); !ok || len(arr) != m.Length || m.Length < 32000 {
					t.Errorf("%s: --full tokens has %d of %d", name, len(arr), m.Length)
				}
			}
		}
	}
}
