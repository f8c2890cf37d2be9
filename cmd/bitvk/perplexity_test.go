package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/bitvk/bitvk/cpu"
	"github.com/bitvk/bitvk/gguf"
	"github.com/bitvk/bitvk/nn"
	"github.com/bitvk/bitvk/tokenizer"
)

// pplText writes n words of deterministic text and returns its path.
func pplText(t *testing.T, n int) string {
	t.Helper()
	words := strings.Fields("the quick brown fox jumps over a lazy dog while models predict every next token of this text")
	var b strings.Builder
	x := uint32(1)
	for i := range n {
		x = x*1664525 + 1013904223
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(words[(x>>16)%uint32(len(words))])
	}
	path := filepath.Join(t.TempDir(), "text.txt")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// pplOutput is llama-perplexity's standard output: the running estimates
// and the final line.
var pplOutput = regexp.MustCompile(`^((?:\[\d+\]\d+\.\d{4},)+)\nFinal estimate: PPL = (\d+\.\d{4}) \+/- (\d+\.\d{5})\n$`)

// parsePPL returns the running estimates, the final PPL and its uncertainty.
func parsePPL(t *testing.T, out string) (running []float64, ppl, unc float64) {
	t.Helper()
	m := pplOutput.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("output is not llama-perplexity's:\n%s", out)
	}
	for i, f := range strings.Split(strings.TrimSuffix(m[1], ","), ",") {
		n, v, _ := strings.Cut(strings.TrimPrefix(f, "["), "]")
		if n != strconv.Itoa(i+1) {
			t.Fatalf("estimate %d is numbered %q: %s", i+1, n, m[1])
		}
		x, _ := strconv.ParseFloat(v, 64)
		running = append(running, x)
	}
	ppl, _ = strconv.ParseFloat(m[2], 64)
	unc, _ = strconv.ParseFloat(m[3], 64)
	return running, ppl, unc
}

// The command's perplexity is the one computed here from the teacher-forced
// logits of whole chunks: same chunks, BOS first, positions n_ctx/2 …
// n_ctx−2 scored, log-softmax in float64.
func TestPerplexityMatchesDirect(t *testing.T) {
	model, text := synthTiny(t), pplText(t, 300)
	const nCtx, chunks = 64, 5
	code, out, stderr := bitvk("perplexity", "-m", model, "-f", text, "-c", fmt.Sprint(nCtx), "-b", "20", "--chunks", fmt.Sprint(chunks), "--backend", "cpu", "-t", "1")
	if code != 0 {
		t.Fatalf("perplexity: exit %d: %s", code, stderr)
	}
	running, ppl, unc := parsePPL(t, out)
	for _, want := range []string{"seconds per pass", "tokens/s", "5 chunks, n_ctx=64, batch_size=20"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}

	f, err := gguf.Open(model)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c, _ := nn.ParseConfig(f)
	w, err := nn.LoadWeights(f, c)
	if err != nil {
		t.Fatal(err)
	}
	b, err := cpu.New(c, w, cpu.Options{Threads: 1, Context: nCtx})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	e, _ := nn.NewEngine(c, b)
	tok, err := nn.NewTokenizer(f)
	if err != nil {
		t.Fatal(err)
	}
	src, _ := os.ReadFile(text)
	ids := tok.Encode(string(src), tokenizer.EncodeOptions{})
	if !tok.AddsBOS() || ids[0] != tok.BOS() || len(ids) < chunks*nCtx {
		t.Fatalf("the test wants a vocabulary that adds BOS and %d tokens: adds %v, %d tokens", chunks*nCtx, tok.AddsBOS(), len(ids))
	}
	var sum, sum2 float64
	n := 0
	for ch := range chunks {
		chunk := append([]int32(nil), ids[ch*nCtx:(ch+1)*nCtx]...)
		chunk[0] = tok.BOS()
		e.Reset()
		err := e.EvalAll(chunk, nCtx, func(i int, logits []float32) error {
			if i < nCtx/2 || i > nCtx-2 {
				return nil
			}
			m := math.Inf(-1)
			for _, v := range logits {
				m = math.Max(m, float64(v))
			}
			var z float64
			for _, v := range logits {
				z += math.Exp(float64(v) - m)
			}
			nll := -(float64(logits[chunk[i+1]]) - m - math.Log(z))
			sum += nll
			sum2 += nll * nll
			n++
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if want := math.Exp(sum / float64(n)); math.Abs(running[ch]-want) > 1e-4*want {
			t.Errorf("[%d] = %v, direct %v", ch+1, running[ch], want)
		}
	}
	if n != chunks*31 || len(running) != chunks {
		t.Fatalf("%d positions scored directly, %d estimates printed", n, len(running))
	}
	mean := sum / float64(n)
	want, wantUnc := math.Exp(mean), math.Exp(mean)*math.Sqrt((sum2/float64(n)-mean*mean)/float64(n-1))
	if math.Abs(ppl-want) > 1e-4*want || math.Abs(unc-wantUnc) > 1e-3*wantUnc+1e-5 {
		t.Errorf("Final estimate %v +/- %v, direct %v +/- %v", ppl, unc, want, wantUnc)
	}

	// -b changes the passes, not the numbers; all chunks by default.
	code, out2, _ := bitvk("perplexity", "-m", model, "-f", text, "-c", "64", "-b", "1", "--chunks", "5", "--backend", "cpu")
	if _, ppl2, _ := parsePPL(t, out2); code != 0 || math.Abs(ppl2-ppl) > 1e-4*ppl {
		t.Errorf("-b 1: exit %d, PPL %v, want %v", code, ppl2, ppl)
	}
	_, out3, _ := bitvk("perplexity", "-m", model, "-f", text, "-c", "64", "--backend", "cpu")
	if r, _, _ := parsePPL(t, out3); len(r) != len(ids)/nCtx {
		t.Errorf("%d chunks by default, want %d", len(r), len(ids)/nCtx)
	}
}

var (
	klMean     = regexp.MustCompile(`(?m)^Mean    KLD: +(-?\d+\.\d+) ± +(\d+\.\d+)$`)
	klMax      = regexp.MustCompile(`(?m)^Maximum KLD: +(-?\d+\.\d+)$`)
	klMedian   = regexp.MustCompile(`(?m)^Median  KLD: +(-?\d+\.\d+)$`)
	klSameTop  = regexp.MustCompile(`(?m)^Same top p: +(\d+\.\d+) ± +\d+\.\d+ %$`)
	klRatio    = regexp.MustCompile(`(?m)^Mean PPL\(Q\)/PPL\(base\) +: +(\d+\.\d+) ± +\d+\.\d+$`)
	klBasePPL  = regexp.MustCompile(`(?m)^Mean PPL\(base\) +: +(\d+\.\d+) ± +\d+\.\d+$`)
	klChunkRow = regexp.MustCompile(`(?m)^ +\d+ +\d+\.\d{4} ± +\d+\.\d{4} +-?\d+\.\d{5} ± +\d+\.\d{5} +-?\d+\.\d{5} ± +\d+\.\d{5} +\d+\.\d{3} ± +\d+\.\d{3} % +\d+\.\d{3} ± +\d+\.\d{3} %$`)
)

// klResult is what a comparison printed.
type klResult struct {
	mean, max, median, sameTop, ratio, basePPL float64
	rows                                       int
}

func parseKL(t *testing.T, out string) klResult {
	t.Helper()
	num := func(re *regexp.Regexp) float64 {
		m := re.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("no match for %s in:\n%s", re, out)
		}
		v, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	return klResult{mean: num(klMean), max: num(klMax), median: num(klMedian), sameTop: num(klSameTop),
		ratio: num(klRatio), basePPL: num(klBasePPL), rows: len(klChunkRow.FindAllString(out, -1))}
}

func TestPerplexityKLDivergence(t *testing.T) {
	model, text := synthTiny(t), pplText(t, 300)
	base := filepath.Join(t.TempDir(), "base.kld")
	code, out, stderr := bitvk("perplexity", "-m", model, "-f", text, "-c", "64", "--chunks", "4", "--backend", "cpu", "--kl-divergence-base", base)
	if code != 0 {
		t.Fatalf("saving the base: exit %d: %s", code, stderr)
	}
	_, ppl, _ := parsePPL(t, out)
	if !strings.Contains(stderr, "saved the log-probabilities of 124 positions") {
		t.Errorf("stderr does not report the saved base:\n%s", stderr)
	}

	// The same backend and head again: nothing differs.
	code, out, stderr = bitvk("perplexity", "-m", model, "--backend", "cpu", "--kl-divergence-base", base, "--kl-divergence")
	if code != 0 {
		t.Fatalf("comparing: exit %d: %s", code, stderr)
	}
	r := parseKL(t, out)
	if r.mean != 0 || r.max > 1e-6 || r.sameTop != 100 || r.ratio != 1 || r.rows != 4 || math.Abs(r.basePPL-ppl) > 1e-4*ppl {
		t.Errorf("the same run compared: %+v (base PPL %v)\n%s", r, ppl, out)
	}
	if !strings.Contains(stderr, "comparing with "+base) || !strings.Contains(stderr, "head f16") {
		t.Errorf("stderr does not name the base and what wrote it:\n%s", stderr)
	}

	// The q8 head against the f16 one: a small divergence; --chunks reads
	// a prefix of the base; -f is not needed (and not read).
	code, out, stderr = bitvk("perplexity", "-m", model, "--backend", "cpu", "--head", "q8", "--chunks", "2", "-f", "/nonexistent", "--kl-divergence-base", base, "--kl-divergence")
	if code != 0 {
		t.Fatalf("q8 head: exit %d: %s", code, stderr)
	}
	r = parseKL(t, out)
	if r.mean <= 0 || r.mean > 1e-2 || r.max < r.median || r.sameTop < 80 || math.Abs(r.ratio-1) > 0.05 || r.rows != 2 {
		t.Errorf("q8 vs f16 head: %+v\n%s", r, out)
	}
	if !strings.Contains(stderr, "is not read") {
		t.Errorf("-f given with --kl-divergence: no note\n%s", stderr)
	}
}

// On the Vulkan backend the comparison with the CPU's run shows a small,
// positive divergence and the same PPL within a fraction of a percent.
func TestPerplexityKLVulkan(t *testing.T) {
	needVulkan(t)
	model, text := synthTiny(t), pplText(t, 200)
	base := filepath.Join(t.TempDir(), "cpu.kld")
	if code, _, stderr := bitvk("perplexity", "-m", model, "-f", text, "-c", "64", "--chunks", "2", "--backend", "cpu", "--kl-divergence-base", base); code != 0 {
		t.Fatalf("cpu base: exit %d: %s", code, stderr)
	}
	code, out, stderr := bitvk("perplexity", "-m", model, "--backend", "vulkan", "--kl-divergence-base", base, "--kl-divergence")
	if code != 0 {
		t.Fatalf("vulkan comparison: exit %d: %s", code, stderr)
	}
	r := parseKL(t, out)
	if r.mean > 1e-3 || r.max > 1e-2 || r.sameTop < 90 || math.Abs(r.ratio-1) > 0.01 || r.rows != 2 {
		t.Errorf("vulkan vs cpu: %+v\n%s", r, out)
	}
	// Printed with six decimals the mean may round to zero; the maximum
	// shows that the backends differ at all.
	if r.max <= 0 {
		t.Errorf("vulkan and cpu agree exactly at every position, which their float orders make unlikely:\n%s", out)
	}
}

func TestPerplexityErrors(t *testing.T) {
	model, text := synthTiny(t), pplText(t, 300)
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	empty := write("empty.txt", nil)
	short := write("short.txt", []byte("only a few words here"))
	notBase := write("not.kld", []byte("this is a text file, not a base file at all"))
	base := filepath.Join(dir, "base.kld")
	if code, _, stderr := bitvk("perplexity", "-m", model, "-f", text, "-c", "64", "--chunks", "2", "--backend", "cpu", "--kl-divergence-base", base); code != 0 {
		t.Fatalf("base: exit %d: %s", code, stderr)
	}
	good, _ := os.ReadFile(base)
	truncated := write("truncated.kld", good[:len(good)-100])
	// A base from a model with a larger vocabulary.
	model300 := synthTiny(t, "--n-vocab", "300")
	base300 := filepath.Join(dir, "base300.kld")
	if code, _, stderr := bitvk("perplexity", "-m", model300, "-f", text, "-c", "64", "--chunks", "2", "--backend", "cpu", "--kl-divergence-base", base300); code != 0 {
		t.Fatalf("base of the 300-token model: exit %d: %s", code, stderr)
	}
	ppl := func(a ...string) []string { return append([]string{"perplexity", "--backend", "cpu"}, a...) }
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{ppl("-f", text, "-m", model, "--shape", "tiny"), 2, "only one of"},
		{ppl("-m", model), 2, "-f FILE"},
		{ppl("-m", model, "-f", empty), 1, "is empty"},
		{ppl("-m", model, "-f", short, "-c", "64"), 1, "tokenizes to only"},
		{ppl("-m", model, "-f", short), 1, "needs at least 1024"},
		{ppl("-m", model, "-f", text, "-c", "4"), 2, "-c must be at least 8"},
		{ppl("-m", model, "-f", text, "-c", "0"), 2, "-c must be at least 8"},
		{ppl("-m", model, "-f", text, "-c", "1024"), 1, "beyond the model's context of 512"},
		{ppl("-m", model, "-f", text, "--chunks", "0"), 2, "--chunks"},
		{ppl("-m", model, "-f", text, "-b", "0"), 2, "-b must be positive"},
		{ppl("-m", model, "-f", text+".missing"), 1, "no such file"},
		{ppl("-m", model, "--kl-divergence"), 2, "--kl-divergence needs --kl-divergence-base"},
		{ppl("-m", model, "--kl-divergence", "--kl-divergence-base", notBase), 1, "not a bitvk KL-divergence base file"},
		{ppl("-m", model, "--kl-divergence", "--kl-divergence-base", truncated), 1, "truncated"},
		{ppl("-m", model, "--kl-divergence", "--kl-divergence-base", base300), 1, "vocabulary of 300 tokens, but this model's is 279"},
		{ppl("-m", model, "--kl-divergence", "--kl-divergence-base", base, "-c", "128"), 2, "differs from the n_ctx of 64"},
		{ppl("-m", model, "--kl-divergence", "--kl-divergence-base", base+".missing"), 1, "no such file"},
	} {
		code, out, stderr := bitvk(tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.msg) {
			t.Errorf("%v: exit %d, want %d with %q; stderr:\n%s", tc.args[2:], code, tc.code, tc.msg, stderr)
		}
		if code != 0 && strings.Contains(out, "Final estimate") {
			t.Errorf("%v: failed but printed a result:\n%s", tc.args[2:], out)
		}
	}
	// A failed or refused run leaves no base file behind.
	if code, _, _ := bitvk(ppl("-m", model, "-f", short, "-c", "64", "--kl-divergence-base", filepath.Join(dir, "never.kld"))...); code == 0 {
		t.Error("a base was saved from too little text")
	}
	if ents, _ := filepath.Glob(filepath.Join(dir, "*never*")); len(ents) != 0 {
		t.Errorf("files left behind: %v", ents)
	}
}

// Text that is not UTF-8 is scored (the tokenizer takes bytes), with a
// note; a model whose context is shorter than the default -c 512 runs at
// its own, saying so.
func TestPerplexityNotes(t *testing.T) {
	model := synthTiny(t)
	text, _ := os.ReadFile(pplText(t, 300))
	text[10] = 0xff
	bad := filepath.Join(t.TempDir(), "latin1.txt")
	if err := os.WriteFile(bad, text, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := bitvk("perplexity", "-m", model, "-f", bad, "-c", "64", "--chunks", "1", "--backend", "cpu")
	if code != 0 || !strings.Contains(stderr, "not valid UTF-8 (first invalid byte at offset 10)") {
		t.Errorf("non-UTF-8 text: exit %d\n%s", code, stderr)
	}
	parsePPL(t, out)

	short := synthTiny(t, "--ctx", "128")
	code, out, stderr = bitvk("perplexity", "-m", short, "-f", pplText(t, 400), "--chunks", "1", "--backend", "cpu")
	if code != 0 || !strings.Contains(stderr, "using -c 128") || !strings.Contains(stderr, "n_ctx=128") {
		t.Errorf("short-context model: exit %d\n%s", code, stderr)
	}
	parsePPL(t, out)
}
