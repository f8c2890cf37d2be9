package main

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// TestBuiltinModelWritesKJVEnglish runs the embedded model with no -m: it
// says so, and its greedy text is made of the corpus's words (at least
// 95% of them, the demo model's promise).
func TestBuiltinModelWritesKJVEnglish(t *testing.T) {
	code, stdout, stderr := bitvk("run", "-p", "And God said", "-n", "48", "--temp", "0", "--backend", "cpu")
	if code != 0 {
		t.Fatalf("run with no -m: exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "built-in model nano-kjv") {
		t.Errorf("run with no -m does not say it runs the built-in model: %s", stderr)
	}
	bible, err := exec.LookPath("bible")
	if err != nil {
		t.Skip("the bible command (Debian's bible-kjv, installed by scripts/deps.sh) is absent: cannot check the text's words against the corpus")
	}
	out, err := exec.Command(bible, "-f", "Gen1:1-Rev22:21").Output()
	if err != nil {
		t.Fatal(err)
	}
	word := regexp.MustCompile(`[A-Za-z]+`)
	known := map[string]bool{}
	for _, w := range word.FindAllString(string(out), -1) {
		known[strings.ToLower(w)] = true
	}
	words := word.FindAllString(stdout, -1)
	if len(words) < 20 {
		t.Fatalf("only %d words generated: %q", len(words), stdout)
	}
	in := 0
	for _, w := range words {
		if known[strings.ToLower(w)] {
			in++
		}
	}
	if frac := float64(in) / float64(len(words)); frac < 0.95 {
		t.Errorf("%.0f%% of the generated words are corpus words, want ≥ 95%%: %q", 100*frac, stdout)
	}
}
