package main

import (
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bitvk/bitvk/nn/synth"
)

func TestCompletionScripts(t *testing.T) {
	for _, shell := range shells {
		code, out, stderr := bitvk("completion", shell)
		if code != 0 {
			t.Fatalf("completion %s: exit %d: %s", shell, code, stderr)
		}
		for _, c := range commands {
			if !strings.Contains(out, c.name) {
				t.Errorf("the %s script does not mention the command %s", shell, c.name)
			}
		}
		want := []string{"auto cpu vulkan", "f16 q8", strings.Join(synth.ShapeNames(), " "), "gguf", "backend"}
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("the %s script does not mention %q", shell, w)
			}
		}
		// Each shell checks its own script's syntax, where it is installed.
		path, err := exec.LookPath(shell)
		if err != nil {
			if shell == "bash" {
				t.Errorf("no bash to check the bash script with: %v", err)
			}
			continue
		}
		file := filepath.Join(t.TempDir(), "bitvk."+shell)
		if err := os.WriteFile(file, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		if msg, err := exec.Command(path, "-n", file).CombinedOutput(); err != nil {
			t.Errorf("%s -n rejects the %s script: %v\n%s", shell, shell, err, msg)
		}
	}
}

// TestCompletionBashCompletes runs the bash script's function on a few
// command lines, as bash does on Tab.
func TestCompletionBashCompletes(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	_, script, _ := bitvk("completion", "bash")
	dir := t.TempDir()
	for _, f := range []string{"model.gguf", "notes.txt"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct{ line, want string }{
		{"bitvk ru", "run"},
		{"bitvk run --ba", "--backend"},
		{"bitvk run --backend ", "auto cpu vulkan"},
		{"bitvk run --backend=vu", "vulkan"},
		{"bitvk bench --head ", "stored f16 q8 q8_0 q6_k q4_0"},
		{"bitvk convert --head ", "f16 q8"},
		{"bitvk check --shape ", strings.Join(synth.ShapeNames(), " ")},
		{"bitvk run -m ", "model.gguf"},
		{"bitvk completion ", "bash zsh fish"},
		{"bitvk run -n ", ""},
	} {
		// COMP_WORDS as bash splits the line (at spaces and at =).
		words := strings.Fields(strings.ReplaceAll(c.line, "=", " = "))
		if strings.HasSuffix(c.line, " ") {
			words = append(words, "")
		}
		var quoted []string
		for _, w := range words {
			quoted = append(quoted, shQuote(w))
		}
		prog := script + "\nCOMP_WORDS=(" + strings.Join(quoted, " ") + "); COMP_CWORD=$((${#COMP_WORDS[@]}-1)); _bitvk; echo \"${COMPREPLY[*]}\"\n"
		cmd := exec.Command(bash, "-c", prog)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if got := strings.TrimSpace(string(out)); err != nil || got != c.want {
			t.Errorf("%q completes to %q (%v), want %q", c.line, got, err, c.want)
		}
	}
}

// TestCompletionFlags checks that completion sees every command's flags
// and that the words it offers are the ones the flags' help names.
func TestCompletionFlags(t *testing.T) {
	specs, err := completionSpecs()
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) != len(commands) {
		t.Fatalf("%d command specs for %d commands", len(specs), len(commands))
	}
	kinds := map[string]valueKind{}
	for _, s := range specs {
		for _, f := range s.flags {
			kinds[s.name+" "+f.dashed()] = f.kind
		}
	}
	for flag, want := range map[string]valueKind{
		"run -m": valueGGUF, "run --backend": valueWords, "run -f": valueFile, "run -n": valueOther,
		"bench --shape": valueWords, "inspect --json": valueNone, "run --hf": valueOther, "bench --hf": valueOther, "pull --list": valueNone, "train --checkpoint": valueFile, "version --json": valueNone,
	} {
		if kinds[flag] != want {
			t.Errorf("%s: value kind %d, want %d", flag, kinds[flag], want)
		}
	}
	// A word list that drifts from a flag's help fails here: each command
	// offers the words its flag's help names, and a flag whose help names
	// none of them (renamed values) would offer nothing.
	for _, c := range commands {
		var fc flagCollector
		c.run([]string{"-h"}, io.Discard, &fc)
		fc.sets[0].VisitAll(func(f *flag.Flag) {
			if flagWords[f.Name] == nil {
				return
			}
			if s := classifyFlag(f); len(s.words) == 0 {
				t.Errorf("%s --%s: its help names none of the completion words %v", c.name, f.Name, flagWords[f.Name]())
			}
		})
	}
}

func TestCompletionErrors(t *testing.T) {
	if code, _, stderr := bitvk("completion"); code != 2 || !strings.Contains(stderr, "name one shell") {
		t.Errorf("no shell: exit %d, %q", code, stderr)
	}
	if code, _, stderr := bitvk("completion", "tcsh"); code != 2 || !strings.Contains(stderr, `unknown shell "tcsh"`) {
		t.Errorf("unknown shell: exit %d, %q", code, stderr)
	}
}

func shQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
