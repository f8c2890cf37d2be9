package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/bitvk/bitvk/gguf"
	"github.com/bitvk/bitvk/nn"
	"github.com/bitvk/bitvk/tokenizer"
)

// trainingText is a few kilobytes of varied English: sentences built from
// word lists by a fixed walk, with numbers, punctuation and blank lines.
func trainingText() string {
	subjects := []string{"The farmer", "A traveller", "Her sister", "The old king", "Every child", "The baker's son"}
	verbs := []string{"carried", "found", "sold", "counted", "painted", "forgot", "wanted"}
	objects := []string{"three apples", "the silver key", "a basket of bread", "seven stones", "the river map", "his brother's coat"}
	places := []string{"by the gate", "in the market", "under the bridge", "at the mill", "near the harbour"}
	var b strings.Builder
	for i := range 90 {
		fmt.Fprintf(&b, "%s %s %s %s, and %d people saw it happen.\n",
			subjects[i%len(subjects)], verbs[(i*3)%len(verbs)], objects[(i*5)%len(objects)], places[(i*7)%len(places)], 10+i*37)
		if i%9 == 8 {
			b.WriteString("\n")
		}
	}
	return b.String()
}

func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// trainVocabFile runs tokenizer-train and returns the file it wrote.
func trainVocabFile(t *testing.T, args ...string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "vocab.gguf")
	code, stdout, stderr := bitvk(append([]string{"tokenizer-train", "-o", out}, args...)...)
	if code != 0 {
		t.Fatalf("tokenizer-train %v: exit %d: %s", args, code, stderr)
	}
	if stdout != "" {
		t.Errorf("tokenizer-train printed %q on standard output; its report belongs on standard error", stdout)
	}
	return out
}

func TestTokenizerTrain(t *testing.T) {
	text := trainingText()
	input := writeFile(t, t.TempDir(), "text.txt", text)
	out := filepath.Join(t.TempDir(), "vocab.gguf")
	code, _, stderr := bitvk("tokenizer-train", "-f", input, "--vocab", "400", "-o", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"trained 400 tokens (256 bytes, 139 merged by 139 merges, 5 special)", "bytes per token", "wrote " + out} {
		if !strings.Contains(stderr, want) {
			t.Errorf("the report %q does not say %q", stderr, want)
		}
	}

	// The file holds exactly what the trainer made.
	want, _, err := tokenizer.TrainBPE([]tokenizer.TrainInput{{Name: input, Text: []byte(text)}}, tokenizer.TrainOptions{VocabSize: 400})
	if err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if len(f.Tensors) != 0 {
		t.Errorf("a vocabulary file with %d tensors", len(f.Tensors))
	}
	got, err := nn.LoadVocab(f)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the file's vocabulary differs from the trainer's:\n got %+v\nwant %+v", got, want)
	}
	if tmpl, err := nn.ChatTemplate(f, ""); err != nil || tmpl.Name() != "llama3" {
		t.Errorf("chat template: %v, %v; want llama3", tmpl, err)
	}

	// bitvk's tokenizer loads it and round-trips any text.
	tok := openTokenizer(t, out)
	if tok.Len() != 400 || tok.Pre() != "llama-bpe" || !tok.AddsBOS() || tok.Token(tok.BOS()) != "<|begin_of_text|>" ||
		tok.Token(tok.EOS()) != "<|end_of_text|>" || tok.Token(tok.EOT()) != "<|eot_id|>" {
		t.Errorf("%d tokens, pre %q, adds BOS %v, BOS %q, EOS %q, EOT %q", tok.Len(), tok.Pre(), tok.AddsBOS(), tok.Token(tok.BOS()), tok.Token(tok.EOS()), tok.Token(tok.EOT()))
	}
	for _, s := range []string{
		"The farmer sold the silver key.",
		"never seen: zebra Ωμέγα 東京 🙂 \x00\x1f\x7f é",
		"<|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>",
	} {
		ids := tok.Encode(s, tokenizer.EncodeOptions{NoBOS: true})
		if dec := tok.Decode(ids); dec != s {
			t.Errorf("%q: %v decodes to %q", s, ids, dec)
		}
	}
	chat := tok.Encode("<|start_header_id|>user<|end_header_id|>", tokenizer.EncodeOptions{NoBOS: true, ParseSpecial: true})
	if n := len(chat); n < 3 || tok.Token(chat[0]) != "<|start_header_id|>" || tok.Token(chat[n-1]) != "<|end_header_id|>" || tok.Decode(chat[1:n-1]) != "user" {
		t.Errorf("a chat header with ParseSpecial is tokens %v", chat)
	}
	if n := len(tok.Encode(text, tokenizer.EncodeOptions{NoBOS: true})); n*3 >= len(text) {
		t.Errorf("the training text is %d tokens for %d bytes; want fewer than a third", n, len(text))
	}

	// The other commands read it.
	if got := tokenizeIDs(t, "-m", out, "--no-bos", "The farmer"); len(got) == 0 || len(got) >= len("The farmer") {
		t.Errorf("tokenize: %v", got)
	}
	if code, stdout, stderr := bitvk("inspect", out); code != 0 || !strings.Contains(stdout, "a vocabulary-only file") || !strings.Contains(stdout, "llama-bpe") {
		t.Errorf("inspect: exit %d, %q, %q", code, stdout, stderr)
	}
}

func TestTokenizerTrainIsDeterministic(t *testing.T) {
	dir := t.TempDir()
	a := writeFile(t, dir, "a.txt", trainingText())
	b := writeFile(t, dir, "b.txt", "A second file, with other words: quince, yarrow, juniper.\n")
	first, _ := os.ReadFile(trainVocabFile(t, "-f", a, "-f", b, "--vocab", "350"))
	again, _ := os.ReadFile(trainVocabFile(t, "-f", a, "-f", b, "--vocab", "350"))
	positional, _ := os.ReadFile(trainVocabFile(t, "--vocab", "350", "-f", a, b))
	var piped []byte
	withStdin(t, trainingText(), func() {
		piped, _ = os.ReadFile(trainVocabFile(t, "-f", "-", "-f", b, "--vocab", "350"))
	})
	if len(first) == 0 || !bytes.Equal(first, again) || !bytes.Equal(first, positional) || !bytes.Equal(first, piped) {
		t.Error("the same texts wrote different files")
	}
}

func TestTokenizerTrainErrors(t *testing.T) {
	dir := t.TempDir()
	text := writeFile(t, dir, "text.txt", "hello hello world\n")
	empty := writeFile(t, dir, "empty.txt", "")
	latin1 := writeFile(t, dir, "latin1.txt", "caf\xe9 au lait")
	out := writeFile(t, dir, "out.gguf", "an older file")
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"-o", out}, 2, "no training text: name a file with -f TEXT"},
		{[]string{"-f", text}, 2, "-o VOCAB.gguf is required"},
		{[]string{"-f", text, "-o", out, "--vocab", "100"}, 2, "--vocab 100 is too small"},
		{[]string{"-f", text, "-o", out, "--vocab", "lots"}, 2, "invalid value"},
		{[]string{"-f", filepath.Join(dir, "none.txt"), "-o", out}, 1, "no such file"},
		{[]string{"-f", text, "-f", empty, "-o", out}, 1, fmt.Sprintf("training text %q is empty", empty)},
		{[]string{"-f", latin1, "-o", out}, 1, fmt.Sprintf("training text %q is not UTF-8: byte 0xe9 at offset 3", latin1)},
		{[]string{"-f", text, "-o", out}, 1, "the training text supports at most 271 tokens (256 bytes, 10 merged, 5 special)"},
		{[]string{"-f", text, "-o", filepath.Join(dir, "no", "such", "dir.gguf"), "--vocab", "270"}, 1, "output directory"},
	} {
		code, _, stderr := bitvk(append([]string{"tokenizer-train"}, c.args...)...)
		if code != c.code || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d saying %q", c.args, code, stderr, c.code, c.want)
		}
	}
	if b, _ := os.ReadFile(out); string(b) != "an older file" {
		t.Errorf("failed runs changed the existing output to %q", b)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) > 0 {
		t.Errorf("failed runs left %v", left)
	}
}

// scripts/corpus.sh writes the KJV with Ruth, Jonah and Jude held out.
func TestCorpusScript(t *testing.T) {
	if _, err := exec.LookPath("bible"); err != nil {
		t.Skip("the 'bible' command is missing (Debian's bible-kjv, which scripts/deps.sh installs): not checking scripts/corpus.sh")
	}
	dir := t.TempDir()
	cmd := exec.Command("../../scripts/corpus.sh", dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("corpus.sh: %v\n%s", err, out)
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	train, valid := read("kjv-train.txt"), read("kjv-valid.txt")
	verses := func(s string) int { return len(regexp.MustCompile(`(?m)^.+$`).FindAllString(s, -1)) }
	if verses(train) != 30944 || verses(valid) != 158 {
		t.Errorf("%d training and %d validation verses, want 30944 and 158", verses(train), verses(valid))
	}
	for _, held := range []string{
		"Now it came to pass in the days when the judges ruled, that there was a famine in the land.", // Ruth 1:1
		"whither thou goest, I will go",                                       // Ruth 1:16
		"And Jonah was in the belly of the fish three days and three nights.", // Jonah 1:17
		"Now unto him that is able to keep you from falling",                  // Jude 1:24
	} {
		if !strings.Contains(valid, held) || strings.Contains(train, held) {
			t.Errorf("%q: in validation %v, in training %v", held, strings.Contains(valid, held), strings.Contains(train, held))
		}
	}
	if !strings.HasPrefix(train, "In the beginning God created the heaven and the earth.\nAnd the earth was without form") ||
		!strings.HasPrefix(valid, "Now it came to pass in the days when the judges ruled") ||
		!strings.HasSuffix(valid, "Amen.\n") {
		t.Error("the texts do not start with Genesis 1:1 and Ruth 1:1, or the validation text does not end with Jude")
	}
	// Chapters open after one blank line, books after two; no references.
	for name, s := range map[string]string{"train": train, "valid": valid} {
		if strings.Contains(s, "\n\n\n\n") || strings.HasPrefix(s, "\n") || regexp.MustCompile(`(?m)^[1-3]?[A-Za-z]+[0-9]+:[0-9]+ `).MatchString(s) || strings.Contains(s, "  ") {
			t.Errorf("%s: more than two blank lines, a leading blank line, a verse reference or a double space", name)
		}
	}
	if n := strings.Count(valid, "\n\n\n"); n != 2 {
		t.Errorf("the validation text has %d book breaks, want 2", n)
	}
	if n := strings.Count(valid, "\n\n") - 2; n != 4+4+1-3 { // Ruth 4 chapters, Jonah 4, Jude 1
		t.Errorf("the validation text has %d chapter breaks, want 6", n)
	}
}
