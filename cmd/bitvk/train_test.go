package main

import (
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func trainText(t *testing.T) string {
	t.Helper()
	var sb strings.Builder
	for i := 0; i < 200; i++ {
		sb.WriteString([]string{"and the lord said unto moses.\n", "and the king went to the city.\n", "and they came to the land.\n"}[i%3])
	}
	path := filepath.Join(t.TempDir(), "text.txt")
	if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestTrainExportRun trains a tiny model for a few steps, exports it, and
// generates from the exported file.
func TestTrainExportRun(t *testing.T) {
	vocab := synthTiny(t)
	text := trainText(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "m.gguf")
	args := []string{"train", "-f", text, "--valid", text, "--vocab", vocab, "--layers", "1", "--embd", "128", "--ffn", "256",
		"--heads", "2", "--kv-heads", "1", "--ctx", "32", "--batch", "4", "--steps", "20", "--warmup", "5", "-t", "2",
		"--eval-every", "10", "--out", out, "--hf-out", filepath.Join(dir, "hf")}
	code, stdout, stderr := bitvk(args...)
	if code != 0 {
		t.Fatalf("train: exit %d: %s", code, stderr)
	}
	if !regexp.MustCompile(`step 20/20  loss \d+\.\d+  val \d+\.\d+`).MatchString(stderr) {
		t.Errorf("no progress line with a validation loss:\n%s", stderr)
	}
	if !regexp.MustCompile(`PPL = \d+\.\d+ \+/- \d+\.\d+`).MatchString(stdout) {
		t.Errorf("no validation perplexity: %q", stdout)
	}
	for _, f := range []string{out, filepath.Join(dir, "hf", "config.json"), filepath.Join(dir, "hf", "model.safetensors"), filepath.Join(dir, "m.ckpt", "checkpoint.bin")} {
		if _, err := os.Stat(f); err != nil {
			t.Error(err)
		}
	}
	if code, _, stderr := bitvk("run", "-m", out, "-p", "and the lord", "-n", "4", "--backend", "cpu"); code != 0 {
		t.Fatalf("run on the trained model: exit %d: %s", code, stderr)
	}
	// The trainer's validation perplexity is bitvk perplexity's on the
	// export (the same method; inference keeps K/V in float16).
	ppl := regexp.MustCompile(`PPL = (\d+\.\d+)`)
	code, pout, perr := bitvk("perplexity", "-m", out, "-f", text, "-c", "32", "--backend", "cpu")
	if code != 0 {
		t.Fatalf("perplexity on the trained model: exit %d: %s", code, perr)
	}
	a, b := ppl.FindStringSubmatch(stdout), ppl.FindStringSubmatch(pout)
	if a == nil || b == nil {
		t.Fatalf("no PPL in %q or %q", stdout, pout)
	}
	pa, _ := strconv.ParseFloat(a[1], 64)
	pb, _ := strconv.ParseFloat(b[1], 64)
	if math.Abs(pa-pb) > 0.01*pb {
		t.Errorf("trainer's validation PPL %v, bitvk perplexity's %v", pa, pb)
	}
	// Training again into the same checkpoint directory without --resume
	// would throw the checkpoint away: refused.
	if code, _, stderr := bitvk(args...); code == 0 || !strings.Contains(stderr, "--resume") {
		t.Errorf("second run over a checkpoint: exit %d: %s", code, stderr)
	}
	// --resume with more steps goes on from step 20.
	more := append(append([]string(nil), args...), "--resume")
	more[slicesIndex(more, "--steps")+1] = "24"
	if code, _, stderr := bitvk(more...); code != 0 || !strings.Contains(stderr, "resumed from") || !strings.Contains(stderr, "step 24/24") {
		t.Errorf("resume: exit %d: %s", code, stderr)
	}
}

func slicesIndex(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

func TestTrainErrors(t *testing.T) {
	vocab := synthTiny(t)
	text := trainText(t)
	bad := filepath.Join(t.TempDir(), "bad.txt")
	os.WriteFile(bad, []byte("abc\xff"), 0o644)
	out := filepath.Join(t.TempDir(), "m.gguf")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--vocab", vocab, "--steps", "1", "--out", out}, "-f FILE"},
		{[]string{"-f", text, "--steps", "1", "--out", out}, "--vocab"},
		{[]string{"-f", text, "--vocab", vocab, "--out", out}, "exactly one of --steps and --tokens"},
		{[]string{"-f", text, "--vocab", vocab, "--steps", "1", "--tokens", "5", "--out", out}, "exactly one"},
		{[]string{"-f", text, "--vocab", vocab, "--steps", "1", "--float", "--out", out}, "leave out --out"},
		{[]string{"-f", bad, "--vocab", vocab, "--steps", "1", "--out", out}, "not UTF-8"},
		{[]string{"-f", text, "--vocab", vocab, "--steps", "1", "--embd", "100", "--out", out}, "multiples of 128"},
		{[]string{"-f", text, "--vocab", vocab, "--steps", "1", "--ctx", "100000", "--out", out}, "fewer than one sequence"},
		{[]string{"-f", text, "--vocab", text, "--steps", "1", "--out", out}, "GGUF"},
	} {
		code, _, stderr := bitvk(append([]string{"train"}, c.args...)...)
		if code == 0 || !strings.Contains(stderr, c.want) {
			t.Errorf("train %v: exit %d, %q; want an error containing %q", c.args, code, stderr, c.want)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a failed run wrote the model")
	}
}
