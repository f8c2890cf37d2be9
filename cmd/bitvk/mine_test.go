package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bitvk/bitvk/gguf"
	"github.com/bitvk/bitvk/models"
	"github.com/bitvk/bitvk/nn"
	"github.com/bitvk/bitvk/nn/spec"
	"github.com/bitvk/bitvk/tokenizer"
)

// mineText writes a text with a phrase repeated among pseudo-random words.
func mineText(t *testing.T) string {
	t.Helper()
	words := strings.Fields("the quick brown fox jumps over a lazy dog while models predict every next token")
	var b strings.Builder
	x := uint32(7)
	for i := range 400 {
		if i%9 == 0 {
			b.WriteString("and it came to pass ")
		}
		x = x*1664525 + 1013904223
		b.WriteString(words[(x>>16)%uint32(len(words))] + " ")
	}
	path := filepath.Join(t.TempDir(), "text.txt")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestMineCommand(t *testing.T) {
	model, text := synthTiny(t), mineText(t)
	out := filepath.Join(t.TempDir(), "chains.chnb")
	code, stdout, stderr := bitvk("mine", "-m", model, "-f", text, "-f", text, "-o", out, "--backend", "cpu", "-t", "1", "--show", "3")
	if code != 0 {
		t.Fatalf("mine: exit %d: %s", code, stderr)
	}
	for _, want := range []string{"tokenized " + text, "counted the chains of 2…8 tokens", "scored", "/"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("progress lacks %q:\n%s", want, stderr)
		}
	}
	for _, want := range []string{"wrote " + out, "of 256 entries filled from", "mean chain", "best 3 chains"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("summary lacks %q:\n%s", want, stdout)
		}
	}
	tok := openTokenizer(t, model)
	c, err := spec.LoadChains(out, tok.Len())
	if err != nil {
		t.Fatal(err)
	}
	if c.Filled() == 0 {
		t.Fatal("no chains mined")
	}
	// The repeated phrase is drafted after its first word.
	phrase := tok.Encode(" and it came to pass", tokenizer.EncodeOptions{NoBOS: true})
	if got := c.Draft(nil, phrase[:1], spec.MaxChain); len(got) == 0 || got[0] != phrase[1] {
		t.Errorf("after %q the table drafts %q, want it to go on with %q", tok.Decode(phrase[:1]), tok.Decode(got), tok.Decode(phrase[1:]))
	}

	// The same text gives the same file; an existing one is kept unless
	// --force.
	first, _ := os.ReadFile(out)
	if code, _, stderr := bitvk("mine", "-m", model, "-f", text, "-f", text, "-o", out, "--backend", "cpu", "-t", "1"); code != 1 || !strings.Contains(stderr, out+" exists: give --force to replace it") {
		t.Errorf("mine over an existing file: exit %d: %s", code, stderr)
	}
	if code, _, stderr := bitvk("mine", "-m", model, "-f", text, "-f", text, "-o", out, "--backend", "cpu", "-t", "2", "--force"); code != 0 {
		t.Fatalf("mine --force: exit %d: %s", code, stderr)
	}
	if again, _ := os.ReadFile(out); !bytes.Equal(again, first) {
		t.Error("mining the same text again (on 2 threads) wrote a different table")
	}
}

func TestMineErrors(t *testing.T) {
	model, text := synthTiny(t), mineText(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "out.chnb")
	existing := filepath.Join(dir, "existing.chnb")
	if err := os.WriteFile(existing, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty.txt")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"mine", "-m", model, "-o", out}, 2, "give the text to mine with -f FILE"},
		{[]string{"mine", "-m", model, "-f", text}, 2, "give the output file with -o"},
		{[]string{"mine", "-m", model, "-f", text, "-o", out, "extra"}, 2, `unexpected argument "extra"`},
		{[]string{"mine", "-m", model, "-f", text, "-o", out, "--candidates", "0"}, 2, "--candidates and --min-count must be positive"},
		{[]string{"mine", "-m", model, "-hf", "a/b", "-f", text, "-o", out}, 2, "give only one of -m FILE"},
		{[]string{"mine", "-m", model, "-f", filepath.Join(dir, "none.txt"), "-o", out}, 1, "no such file"},
		{[]string{"mine", "-m", model, "-f", dir, "-o", out}, 1, "is a directory"},
		{[]string{"mine", "-m", model, "-f", text, "-o", existing}, 1, "existing.chnb exists: give --force"},
		{[]string{"mine", "-m", model, "-f", text, "-o", filepath.Join(dir, "no", "such", "x.chnb")}, 1, "output directory"},
		{[]string{"mine", "-m", model, "-f", empty, "-o", out, "--backend", "cpu"}, 1, "the corpus is empty"},
		{[]string{"mine", "-m", filepath.Join(dir, "none.gguf"), "-f", text, "-o", out}, 1, "no such file"},
		{[]string{"mine", "-m", model, "-f", text, "-o", out, "--backend", "cpu", "-c", "2"}, 1, "too short to score chains"},
	} {
		code, _, stderr := bitvk(c.args...)
		if code != c.code || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d saying %q", c.args[1:], code, stderr, c.code, c.want)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a failed mine left an output file")
	}
	if b, _ := os.ReadFile(existing); string(b) != "keep" {
		t.Error("a refused mine changed the existing file")
	}
}

// The scorer, keeping shared prefixes in the cache, gives each chain the
// probability a fresh evaluation of BOS and the chain gives.
func TestChainScorerMatchesDirect(t *testing.T) {
	m, err := openModel(synthTiny(t), backendFlags{backend: "cpu", threads: 1, ctx: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	chains := [][]int32{{5, 6}, {5, 6, 7, 8}, {5, 6, 7}, {5, 9, 1}, {2, 3, 4, 5, 6, 7, 8, 9}, {2, 3}, {5, 6, 7, 8}, {7, 7, 7}}
	for _, bos := range []int32{-1, 1} {
		s := &chainScorer{e: m.engine, bos: bos}
		got, err := s.score(chains)
		if err != nil {
			t.Fatal(err)
		}
		for i, c := range chains {
			seq := c
			if bos >= 0 {
				seq = append([]int32{bos}, c...)
			}
			m.engine.Reset()
			lp := 0.0
			first := len(seq) - len(c)
			if err := m.engine.EvalAll(seq, 1, func(j int, logits []float32) error {
				if j >= first && j+1 < len(seq) {
					lp -= nn.NLL(logits, seq[j+1])
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if want := math.Exp(lp); math.Abs(got[i]-want) > 1e-6*want {
				t.Errorf("BOS %d, chain %v: scored %g, a fresh evaluation gives %g", bos, c, got[i], want)
			}
		}
		// Fewer positions than fresh evaluations: prefixes were kept.
		full := 0
		for _, c := range chains {
			full += len(c) + countSet(bos >= 0)
		}
		if s.evaluated >= full {
			t.Errorf("BOS %d: %d positions evaluated, no fewer than the %d of fresh evaluations", bos, s.evaluated, full)
		}
	}
	// A chain beyond the context is an error, and the scorer recovers.
	s := &chainScorer{e: m.engine, bos: -1}
	if _, err := s.score([][]int32{make([]int32, 17)}); err == nil || !strings.Contains(err.Error(), "context is full") {
		t.Errorf("a chain beyond the context: %v", err)
	}
	if p, err := s.score([][]int32{{5, 6}}); err != nil || !(p[0] > 0 && p[0] <= 1) {
		t.Errorf("after an error: %v, %v", p, err)
	}
}

// inspectTable writes a small CHNB table and returns its path.
func inspectTable(t *testing.T) string {
	t.Helper()
	c := new(spec.Chains)
	c.Entries[0] = spec.Chain{Tokens: []int32{72, 105, 33}, Confidence: 0.5}
	c.Entries[1] = spec.Chain{Tokens: []int32{5000}, Confidence: 0.25}
	c.Entries[3] = spec.Chain{Tokens: []int32{104, 105}, Confidence: 1}
	path := filepath.Join(t.TempDir(), "t.chnb")
	if err := c.Save(path); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestInspectCHNB(t *testing.T) {
	path := inspectTable(t)
	code, out, stderr := bitvk("inspect", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"CHNB version 1", "256 chain buckets, 3 filled (6 tokens), chains of at most 8 tokens",
		"id", "confidence", "72 105 33", "5000", "104 105", "253 empty entries: 2, 4…255"} {
		if !strings.Contains(out, want) {
			t.Errorf("inspect output lacks %q:\n%s", want, out)
		}
	}

	// --json: every entry, and with -m (after the file) the decoded text.
	code, out, stderr = bitvk("inspect", path, "--json")
	if code != 0 {
		t.Fatalf("--json: exit %d: %s", code, stderr)
	}
	var r chainsReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("--json output does not parse: %v\n%s", err, out)
	}
	if r.Format != "CHNB" || r.Version != 1 || r.Filled != 3 || len(r.Entries) != 256 || r.Entries[2].Tokens == nil ||
		fmt.Sprint(r.Entries[0].Tokens) != "[72 105 33]" || r.Entries[0].Confidence != 0.5 || r.Entries[0].Text != nil || r.Entries[255].ID != 255 {
		t.Errorf("--json report is not the table: %+v", r)
	}

	model := synthTiny(t, "--n-vocab", "6000")
	code, out, stderr = bitvk("inspect", path, "--json", "-m", model)
	if code != 0 {
		t.Fatalf("--json -m: exit %d: %s", code, stderr)
	}
	r = chainsReport{}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	tok := openTokenizer(t, model)
	if r.Entries[0].Text == nil || *r.Entries[0].Text != tok.Decode([]int32{72, 105, 33}) || r.Vocab != 6000 || r.Entries[2].Text == nil || *r.Entries[2].Text != "" {
		t.Errorf("--json -m does not decode the chains: %+v", r.Entries[:3])
	}
	code, out, _ = bitvk("inspect", "-m", model, path)
	if want := fmt.Sprintf("%q", tok.Decode([]int32{104, 105})); code != 0 || !strings.Contains(out, want) || !strings.Contains(out, "checked against the vocabulary") {
		t.Errorf("inspect -m: exit %d; want the text %s:\n%s", code, want, out)
	}
}

func TestInspectCHNBErrors(t *testing.T) {
	path, model := inspectTable(t), synthTiny(t)
	damaged := filepath.Join(t.TempDir(), "damaged.chnb")
	b, _ := os.ReadFile(path)
	b[len(b)-1] ^= 0xff
	if err := os.WriteFile(damaged, b, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"inspect", path, "-m", model}, 1, "checked against " + model + "): chnb: byte"}, // 5000 is beyond the tiny vocabulary
		{[]string{"inspect", damaged}, 1, "damaged.chnb: chnb: CRC-32 mismatch"},
		{[]string{"inspect", path, "--ternary"}, 2, "--ternary and --full are for GGUF files"},
		{[]string{"inspect", model, "-m", model}, 2, "-m decodes the chains of a CHNB table"},
		{[]string{"inspect", path, "-m", filepath.Join(t.TempDir(), "none.gguf")}, 1, "no such file"},
	} {
		code, _, stderr := bitvk(c.args...)
		if code != c.code || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d saying %q", c.args[1:], code, stderr, c.code, c.want)
		}
	}
}

// The built-in model's chain table reads with its vocabulary and drafts
// the corpus's commonest phrases.
func TestBuiltinChains(t *testing.T) {
	d := models.Default()
	path, remove, err := d.WriteTemp(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer remove()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cfg, err := nn.ParseConfig(f)
	if err != nil {
		t.Fatal(err)
	}
	c, err := spec.ParseChains(d.Chains, cfg.Vocab)
	if err != nil {
		t.Fatal(err)
	}
	if c.Filled() != spec.Entries {
		t.Errorf("%d of %d entries filled", c.Filled(), spec.Entries)
	}
	tok, err := nn.NewTokenizer(f)
	if err != nil {
		t.Fatal(err)
	}
	seq := tok.Encode("Then spake Moses.\nAnd the LORD", tokenizer.EncodeOptions{NoBOS: true})
	if got := tok.Decode(c.Draft(nil, seq, spec.MaxChain)); got != " said unto Moses," {
		t.Errorf("after %q the table drafts %q, want \" said unto Moses,\"", tok.Decode(seq), got)
	}
}
