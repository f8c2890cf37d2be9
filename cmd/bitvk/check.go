package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/bitvk/bitvk/gpu"
	"github.com/bitvk/bitvk/models"
	"github.com/bitvk/bitvk/nn"
	"github.com/bitvk/bitvk/nn/synth"
	"github.com/bitvk/bitvk/tokenizer"
)

// checkTol are the tolerances of bitvk check.
type checkTol struct {
	rel    float64 // hidden state: largest |Δ| over the CPU state's largest |x|
	corr   float64 // logits: least correlation
	kl     float64 // logits: largest KL divergence, nats
	margin float64 // top-1 must agree where the CPU's top two differ by at least this
}

// check refuses a tolerance that is not a number: NaN compares false both
// ways, so it would pass (or fail) every figure whatever the backends
// computed. A finite tolerance nothing meets (--max-rel -1) is allowed:
// it fails every figure, and says so figure by figure.
func (tol checkTol) check() error {
	for _, t := range []struct {
		flag string
		v    float64
	}{{"--max-rel", tol.rel}, {"--min-corr", tol.corr}, {"--max-kl", tol.kl}, {"--margin", tol.margin}} {
		if math.IsNaN(t.v) || math.IsInf(t.v, 0) {
			return fmt.Errorf("%s %g: want a finite number", t.flag, t.v)
		}
	}
	return nil
}

func runCheck(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("check", "[-m MODEL | -hf ORG/REPO[:FILE] | --shape SHAPE] [-n 64] [-p TEXT | --tokens IDS] [flags]", stderr)
	var src modelSource
	src.addFlags(fs)
	n := fs.Int("n", 64, "greedy tokens generated on both backends and compared")
	text := fs.String("p", "Once upon a time, in a small village by the sea, there lived", "prompt `text`, tokenized with the model's tokenizer")
	tokens := fs.String("tokens", "", "prompt token `ids` instead of -p")
	device := fs.Int("device", -1, "Vulkan device `index` (see bitvk devices; default: the best)")
	threads := fs.Int("t", 0, "CPU threads (default: one per CPU)")
	kernelSet := fs.String("kernels", "", "CPU kernel `set` the GPU is compared with (see bitvk version; default: the fastest this CPU runs; generic: the plain Go twins)")
	head := fs.String("head", "stored", "output head on both backends: stored (the file's type), or converted at load to f16, q8, q8_0, q6_k or q4_0")
	validate := fs.Bool("validate", false, "turn the Khronos validation layer on: any message fails the check")
	var tol checkTol
	fs.Float64Var(&tol.rel, "max-rel", 0.1, "tolerance: largest difference of the hidden state after a block, relative to its largest value")
	fs.Float64Var(&tol.corr, "min-corr", 0.995, "tolerance: least correlation of a position's logits")
	fs.Float64Var(&tol.kl, "max-kl", 0.2, "tolerance: largest KL divergence (nats) of a position's next-token distribution")
	fs.Float64Var(&tol.margin, "margin", 1.0, "top-1 tokens must agree wherever the CPU's top two logits differ by at least this")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) > 0:
		return usageError(fs, "unexpected argument %q", pos[0])
	case countSet(src.path != "", src.hf != "", src.shape != "") > 1:
		return usageError(fs, "give one of -m, -hf and --shape")
	case *n < 0:
		return usageError(fs, "-n must not be negative")
	case *tokens != "" && flagGiven(fs, "p"):
		return usageError(fs, "give the prompt once: -p TEXT or --tokens IDS")
	}
	if err := tol.check(); err != nil {
		return usageError(fs, "%v", err)
	}
	if _, ok := synth.Shapes[src.shape]; src.shape != "" && !ok {
		return usageError(fs, "unknown shape %q (choose from %s)", src.shape, strings.Join(synth.ShapeNames(), ", "))
	}
	if err := src.resolve(); err != nil {
		return err
	}
	path, name := src.path, src.path
	if src.hf != "" {
		name = src.hf
	}
	if src.builtin() {
		d := models.Default()
		fmt.Fprintf(stderr, "bitvk: no -m given: checking the built-in model %s (%s); give -m FILE for another\n", d.Name, d.Summary)
		tmp, remove, err := d.WriteTemp("")
		if err != nil {
			return err
		}
		defer remove()
		path, name = tmp, "built-in "+d.Name
	} else if path == "" {
		fmt.Fprintf(stderr, "writing the synthetic %s model…\n", src.shape)
		tmp, cleanup, err := writeSynth(src.shape)
		if err != nil {
			return err
		}
		defer cleanup()
		path, name = tmp, "synthetic "+src.shape
	}
	cpuFlags := backendFlags{backend: "cpu", threads: *threads, head: *head, kernels: *kernelSet}
	if err := cpuFlags.check(fs); err != nil {
		return err
	}
	cm, err := openModelAs(path, name, cpuFlags)
	if err != nil {
		return err
	}
	defer cm.Close()
	prompt, err := checkPrompt(cm, *text, *tokens)
	if err != nil {
		return usageError(fs, "%v", err)
	}
	ctx := min(len(prompt)+*n, cm.config.Context)
	gm, err := openModelAs(path, name, backendFlags{backend: "vulkan", device: *device, head: *head, ctx: ctx, validate: *validate, needVulkan: true})
	if err != nil {
		return err
	}
	defer gm.Close()
	// The CPU model keeps its whole context: only the Vulkan side was sized.
	fmt.Fprintf(stdout, "check: %s, %d prompt tokens, %d generated\n  reference: %s\n  checked:   %s\n\n", name, len(prompt), *n, cm.backend.Name(), gm.backend.Name())

	var fails []string
	fail := func(format string, a ...any) { fails = append(fails, fmt.Sprintf(format, a...)) }
	if err := checkForward(stdout, cm, gm, prompt, tol, fail); err != nil {
		return err
	}
	if err := checkGreedy(stdout, cm, gm, prompt, *n, tol, fail); err != nil {
		return err
	}
	if gb, ok := gm.backend.(*gpu.Backend); ok && *validate {
		for _, msg := range gb.ValidationMessages() {
			fail("validation layer: %s", msg)
		}
	}
	if len(fails) > 0 {
		fmt.Fprintf(stdout, "\nFAIL: %d figure(s) outside their tolerance\n", len(fails))
		return fmt.Errorf("the Vulkan backend departs from the CPU: %s", fails[0])
	}
	fmt.Fprintln(stdout, "\nPASS: the Vulkan backend computes what the CPU computes")
	return nil
}

// checkPrompt is the prompt: token ids, or the text through the model's
// tokenizer.
func checkPrompt(m *model, text, ids string) ([]int32, error) {
	var prompt []int32
	if ids != "" {
		var err error
		if prompt, err = parseIDs(ids); err != nil {
			return nil, fmt.Errorf("--tokens: %v", err)
		}
	} else {
		tok, err := nn.NewTokenizer(m.file)
		if err != nil {
			return nil, fmt.Errorf("the model has no usable tokenizer (%v): give --tokens", err)
		}
		prompt = tok.Encode(text, tokenizer.EncodeOptions{})
	}
	if len(prompt) == 0 {
		return nil, errors.New("the prompt is empty")
	}
	if len(prompt) > m.config.Context {
		return nil, fmt.Errorf("the prompt is %d tokens, longer than the model's context of %d: give a shorter one", len(prompt), m.config.Context)
	}
	for _, t := range prompt {
		if t < 0 || int(t) >= m.config.Vocab {
			return nil, fmt.Errorf("token %d is outside the vocabulary of %d", t, m.config.Vocab)
		}
	}
	return prompt, nil
}

// checkForward compares the teacher-forced pass over the prompt: the
// hidden state after every block, then every position's logits.
func checkForward(w io.Writer, cm, gm *model, prompt []int32, tol checkTol, fail func(string, ...any)) error {
	ct, cl, err := nn.RunTrace(cm.backend, cm.config, prompt)
	if err != nil {
		return err
	}
	gt, gl, err := nn.RunTrace(gm.backend, gm.config, prompt)
	if err != nil {
		return err
	}
	diffs, err := nn.CompareTraces(ct, gt, cm.config.Embd)
	if err != nil {
		return err
	}
	V := cm.config.Vocab
	fmt.Fprintf(w, "hidden state after each block (largest |Δ|, relative to the largest |x|, tolerance %g)\n", tol.rel)
	fmt.Fprintf(w, "%6s  %-9s  %10s  %10s  %4s\n", "layer", "block", "max |Δ|", "relative", "pos")
	for l := range diffs {
		for s := range 2 {
			maxAbs, rel, at := diffs[l][s].MaxAbs, diffs[l][s].Rel, diffs[l][s].At
			mark := ""
			if !(rel <= tol.rel) {
				mark = "  FAIL"
				fail("layer %d, %s block: hidden state differs by %.3g relative (position %d; tolerance %g)", l, nn.Stage(s), rel, at, tol.rel)
			}
			fmt.Fprintf(w, "%6d  %-9s  %10.3g  %10.3g  %4d%s\n", l, nn.Stage(s), maxAbs, rel, at, mark)
		}
	}
	fmt.Fprintf(w, "\nlogits per position (tolerances: correlation ≥ %g, KL ≤ %g, top-1 equal where the CPU's margin ≥ %g)\n", tol.corr, tol.kl, tol.margin)
	fmt.Fprintf(w, "%4s  %7s  %10s  %9s  %5s  %9s\n", "pos", "token", "max |Δ|", "corr", "top-1", "KL")
	for p := range prompt {
		a, b := cl[p*V:(p+1)*V], gl[p*V:(p+1)*V]
		maxAbs := 0.0
		for i := range a {
			if d := math.Abs(float64(a[i] - b[i])); d > maxAbs || math.IsNaN(d) {
				maxAbs = d
			}
		}
		corr, kl := nn.Correlation(a, b), nn.KLDivergence(a, b)
		ca, margin := nn.Top2(a)
		ga, _ := nn.Top2(b)
		top := "same"
		if ca != ga {
			top = "diff"
		}
		var bad []string
		if !(corr >= tol.corr) {
			bad = append(bad, fmt.Sprintf("correlation %.6f < %g", corr, tol.corr))
		}
		if !(kl <= tol.kl) {
			bad = append(bad, fmt.Sprintf("KL %.3g > %g", kl, tol.kl))
		}
		if ca != ga && margin >= tol.margin {
			bad = append(bad, fmt.Sprintf("top-1 %d, CPU %d (margin %.3g)", ga, ca, margin))
		}
		mark := ""
		if len(bad) > 0 {
			mark = "  FAIL"
			fail("position %d logits: %s", p, strings.Join(bad, ", "))
		}
		fmt.Fprintf(w, "%4d  %7d  %10.3g  %9.6f  %5s  %9.2g%s\n", p, prompt[p], maxAbs, corr, top, kl, mark)
	}
	return nil
}

// checkGreedy generates n tokens greedily on both backends (the Vulkan one
// picking on the device) and compares the streams. A divergence at a near
// tie of the CPU's logits (margin below tol.margin) is reported, not failed.
func checkGreedy(w io.Writer, cm, gm *model, prompt []int32, n int, tol checkTol, fail func(string, ...any)) error {
	if n == 0 {
		return nil
	}
	cm.engine.Reset()
	gm.engine.Reset()
	var cpuToks []int32
	var margins []float64
	logits, err := cm.engine.Eval(prompt)
	for err == nil && len(cpuToks) < n {
		best, margin := nn.Top2(logits)
		cpuToks, margins = append(cpuToks, int32(best)), append(margins, margin)
		if len(cpuToks) < n && cm.engine.Pos() < cm.engine.Context() {
			logits, err = cm.engine.Eval([]int32{int32(best)})
		} else {
			break
		}
	}
	if err != nil {
		return err
	}
	greedy, err := nn.NewSampler(nn.SamplerConfig{})
	if err != nil {
		return err
	}
	var gpuToks []int32
	if _, err := gm.engine.Generate(context.Background(), prompt, nn.GenerateOptions{MaxTokens: len(cpuToks)}, greedy, func(id int32) error {
		gpuToks = append(gpuToks, id)
		return nil
	}); err != nil {
		return err
	}
	for i := range cpuToks {
		if i >= len(gpuToks) || gpuToks[i] != cpuToks[i] {
			got := int32(-1)
			if i < len(gpuToks) {
				got = gpuToks[i]
			}
			if margins[i] >= tol.margin {
				fmt.Fprintf(w, "\ngreedy stream of %d tokens: differs at token %d (Vulkan %d, CPU %d, the CPU's margin %.3g)  FAIL\n", len(cpuToks), i, got, cpuToks[i], margins[i])
				fail("greedy token %d: Vulkan %d, CPU %d (the CPU's top two differ by %.3g)", i, got, cpuToks[i], margins[i])
			} else {
				fmt.Fprintf(w, "\ngreedy stream of %d tokens: identical for %d tokens, then parts at a near tie (CPU's margin %.3g < %g): not counted\n", len(cpuToks), i, margins[i], tol.margin)
			}
			return nil
		}
	}
	fmt.Fprintf(w, "\ngreedy stream of %d tokens: identical\n", len(cpuToks))
	return nil
}
