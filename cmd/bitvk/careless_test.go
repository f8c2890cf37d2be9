package main

import (
	"bytes"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/bitvk/bitvk/gguf"
)

// What a careless command line gets: an exit status and a message that
// names the mistake, before any work is done.

// TestOutputMistakes: an output that is an input, a directory, or in a
// directory that does not exist is refused before the work, and the file
// that was there is left as it was.
func TestOutputMistakes(t *testing.T) {
	dir := t.TempDir()
	text := writeFile(t, dir, "text.txt", strings.Repeat("In the beginning God created the heaven and the earth.\n", 20))
	vocab := writeFile(t, dir, "vocab.gguf", "GGUF stand-in: these commands refuse before reading it")
	model := writeFile(t, dir, "model.gguf", "GGUF stand-in")
	ckpt := filepath.Join(dir, "ckpt")
	for _, name := range []string{"config.json", "model.safetensors"} {
		if err := os.MkdirAll(ckpt, 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, ckpt, name, "{}")
	}
	missing := filepath.Join(dir, "no-such-dir", "out")
	trainArgs := func(out string) []string {
		return []string{"train", "-f", text, "--vocab", vocab, "--steps", "1", "--out", out}
	}
	for _, tc := range []struct {
		name  string
		args  []string
		want  string
		input string // a file that must come through unchanged
	}{
		{"synth over its vocabulary", []string{"synth", "--vocab", vocab, "-o", vocab}, "is also an input", vocab},
		{"synth into a directory", []string{"synth", "-o", dir}, "is a directory", ""},
		{"synth into a missing directory", []string{"synth", "-o", missing}, "does not exist", ""},
		{"mine over its text", []string{"mine", "-f", text, "-o", text, "--force"}, "is also an input", text},
		{"mine into a directory", []string{"mine", "-f", text, "-o", dir, "--force"}, "is a directory", ""},
		{"mine over its model", []string{"mine", "-m", model, "-f", text, "-o", model, "--force"}, "is also an input", model},
		{"tokenizer-train over its text", []string{"tokenizer-train", "-f", text, "-o", text}, "is also an input", text},
		{"tokenizer-train into a directory", []string{"tokenizer-train", "-f", text, "-o", dir}, "is a directory", ""},
		{"train over its text", trainArgs(text), "is also an input", text},
		{"train over its vocabulary", trainArgs(vocab), "is also an input", vocab},
		{"train into a directory", trainArgs(dir), "is a directory", ""},
		{"train into a missing directory", trainArgs(missing), "does not exist", ""},
		{"train --hf-out on a file", append(trainArgs(filepath.Join(dir, "new.gguf")), "--hf-out", text), "not a directory", text},
		{"convert over its weights", []string{"convert", ckpt, "-o", filepath.Join(ckpt, "model.safetensors")}, "is also an input", filepath.Join(ckpt, "model.safetensors")},
		{"convert over its vocabulary", []string{"convert", ckpt, "--vocab", vocab, "-o", vocab}, "is also an input", vocab},
		{"convert into a directory", []string{"convert", ckpt, "-o", ckpt}, "is a directory", ""},
		{"convert into a missing directory", []string{"convert", ckpt, "-o", missing}, "does not exist", ""},
		{"perplexity base over its text", []string{"perplexity", "-f", text, "--kl-divergence-base", text}, "is also an input", text},
		{"perplexity base over another file", []string{"perplexity", "-f", text, "--kl-divergence-base", model}, "not a KL-divergence base file", model},
		{"perplexity base into a directory", []string{"perplexity", "-f", text, "--kl-divergence-base", dir}, "is a directory", ""},
		{"perplexity base read from a directory", []string{"perplexity", "--kl-divergence", "--kl-divergence-base", dir}, "is a directory", ""},
		{"view screenshot into a directory", []string{"view", "--screenshot", dir}, "is a directory", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before []byte
			if tc.input != "" {
				before = readAll(t, tc.input)
			}
			code, _, stderr := bitvk(tc.args...)
			if code == 0 || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, want an error with %q:\n%s", code, tc.want, stderr)
			}
			if tc.input != "" && !bytes.Equal(readAll(t, tc.input), before) {
				t.Errorf("%s was changed", tc.input)
			}
			if strings.Contains(stderr, ".tmp") {
				t.Errorf("the error names a temporary file:\n%s", stderr)
			}
		})
	}
	// Nothing half-written is left behind.
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp") || strings.HasSuffix(e.Name(), ".ckpt") {
			t.Errorf("left behind: %s", e.Name())
		}
	}
}

func readAll(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestNotAModel: files that are GGUF-adjacent but not models are named for
// what they are, and the built-in model's errors do not name the temporary
// file it is loaded from.
func TestNotAModel(t *testing.T) {
	dir := t.TempDir()
	chnb := writeFile(t, dir, "chains.chnb", "CHNB\x01\x00\x00\x00 and the rest of a chain table")
	vocab := filepath.Join(dir, "vocab.gguf")
	b := &gguf.Builder{Meta: []gguf.KV{{Key: "general.architecture", Value: gguf.Str("llama")}}}
	if err := b.WriteFile(vocab); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "-m", chnb, "-p", "hi"}, "is a CHNB chain table"},
		{[]string{"logits", "-m", chnb, "--tokens", "1"}, "--chains"},
		{[]string{"run", "-m", vocab, "-p", "hi"}, "vocabulary-only GGUF"},
		{[]string{"run", "-c", "99999", "-p", "hi"}, "built-in nano-kjv: context 99999"},
		{[]string{"run", "--shape", "tiny", "-c", "99999", "-p", "hi"}, "synthetic tiny: context 99999"},
	} {
		code, _, stderr := bitvk(tc.args...)
		if code != 1 || !strings.Contains(stderr, tc.want) || strings.Contains(stderr, "bitvk-nano-kjv-") || strings.Contains(stderr, "bitvk-synth-") {
			t.Errorf("%v: exit %d, want exit 1 with %q and no temporary path:\n%s", tc.args, code, tc.want, stderr)
		}
	}
}

// TestCarelessFlags: flag values that cannot mean anything are usage
// errors (exit 2) that say which flag and why.
func TestCarelessFlags(t *testing.T) {
	long := strings.TrimSuffix(strings.Repeat("1,", 300), ",")
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"run", "--tokens", "1,,2"}, 2, "empty entry"},
		{[]string{"run", "--tokens", "1,2,"}, 2, "empty entry"},
		{[]string{"logits", "--tokens", ","}, 2, "empty entry"},
		{[]string{"run", "-n", "3"}, 2, "give the prompt:"},
		{[]string{"run", "-p", "a", "-f", "b"}, 2, "give the prompt once"},
		{[]string{"run", "-f", ""}, 2, "-f needs a file name"},
		{[]string{"check", "-p", "a", "--tokens", "1"}, 2, "give the prompt once"},
		{[]string{"check", "--max-kl", "NaN"}, 2, "--max-kl NaN: want a finite number"},
		{[]string{"check", "--max-rel", "NaN"}, 2, "--max-rel NaN"},
		{[]string{"check", "--min-corr", "-Inf"}, 2, "--min-corr -Inf"},
		{[]string{"check", "--margin", "NaN"}, 2, "--margin NaN"},
		{[]string{"check", "--shape", "bogus"}, 2, "unknown shape"},
		{[]string{"check", "--tokens", long}, 2, "longer than the model's context"},
		{[]string{"bench", "-p", "0", "-n", "0"}, 2, "nothing to time"},
		{[]string{"bench", "--shape", "bogus"}, 2, "unknown shape"},
		{[]string{"bench", "--serve", "localhost"}, 2, "not an http(s) URL"},
		{[]string{"bench", "--shape", "tiny", "--backend", "cpu", "-p", "99999", "-n", "0"}, 1, "needs a context of 99999"},
		{[]string{"train", "-f", "x", "--vocab", "v", "--out", "o", "--steps", "-2"}, 2, "must be positive"},
	} {
		code, _, stderr := bitvk(tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, want %d with %q:\n%s", tc.args, code, tc.code, tc.want, stderr)
		}
	}
}

// TestEmptyPrompt: -p "" is an empty prompt, as an empty -f file is: the
// model starts from BOS.
func TestEmptyPrompt(t *testing.T) {
	path := synthTiny(t)
	empty := writeFile(t, t.TempDir(), "empty.txt", "")
	for _, args := range [][]string{{"-p", ""}, {"-f", empty}} {
		code, _, stderr := bitvk(append([]string{"run", "-m", path, "-n", "2", "--temp", "0"}, args...)...)
		if code != 0 || !strings.Contains(stderr, "1 tokens") {
			t.Errorf("run %v: exit %d, want a one-token (BOS) prompt:\n%s", args, code, stderr)
		}
	}
}

// TestSynthSize: the size synth checks against the free space is the
// file's, less only the metadata, and a size no disk has is refused.
func TestSynthSize(t *testing.T) {
	path := synthTiny(t)
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	size, err := builderDataSize(gguf.FromFile(f))
	if err != nil {
		t.Fatal(err)
	}
	if size == 0 || size > uint64(f.Size) || uint64(f.Size)-size > 1<<20 {
		t.Errorf("tensor data of %d bytes in a file of %d", size, f.Size)
	}
	if runtime.GOOS != "linux" {
		t.Skip("free space is checked on Linux only")
	}
	if err := checkFits("-o", path, math.MaxUint64/2); err == nil || !strings.Contains(err.Error(), "free there") {
		t.Errorf("an exabyte output: %v", err)
	}
	if err := checkFits("-o", path, 1); err != nil {
		t.Errorf("a one-byte output: %v", err)
	}
}

// TestWriteInterrupted: Ctrl-C (SIGINT) or SIGTERM while synth writes a
// file of a gigabyte stops it at once, removes the partial file and keeps
// the file it would have replaced.
func TestWriteInterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("builds bitvk and writes up to a gigabyte")
	}
	bin := buildBitvk(t)
	for _, sig := range []os.Signal{os.Interrupt, syscall.SIGTERM} {
		dir := t.TempDir()
		out := writeFile(t, dir, "model.gguf", "precious")
		cmd := exec.Command(bin, "synth", "--shape", "2b", "-o", out)
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Signal once the write has begun (the line before it), a write
		// that takes seconds.
		var log bytes.Buffer
		buf := make([]byte, 4096)
		for !strings.Contains(log.String(), "writing ") {
			n, err := stderr.Read(buf)
			log.Write(buf[:n])
			if err != nil {
				t.Fatalf("synth ended before writing: %v\n%s", err, log.String())
			}
		}
		if err := cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		rest, _ := io.ReadAll(stderr)
		log.Write(rest)
		err = cmd.Wait()
		if code := cmd.ProcessState.ExitCode(); code != 1 || !strings.Contains(log.String(), "interrupted: "+out+" not written") {
			t.Errorf("%v during the write: exit %d (%v), stderr:\n%s\nwant exit 1 and \"interrupted\"", sig, code, err, log.String())
		}
		if got, _ := os.ReadFile(out); string(got) != "precious" {
			t.Errorf("%v: the file at -o is now %d bytes, not the one that was there", sig, len(got))
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 1 {
			names := []string{}
			for _, e := range entries {
				names = append(names, e.Name())
			}
			t.Errorf("%v: the directory holds %q; want the old file alone", sig, names)
		}
	}
}
