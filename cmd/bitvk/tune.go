package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/bitvk/bitvk/gpu"
	"github.com/bitvk/bitvk/models"
)

// bitvk tune: time the Vulkan kernel shapes (gpu.Tuning) on this device
// for this model shape, keep the fastest in the tuning file, which every
// later command opening a Vulkan backend reads (gpu.Options.TuneFile).
// First the decode shapes, each alone, by a decode test's tokens a second
// (the geometric mean over the context depths of -d, so that attention's
// shapes count where contexts are long);
// then, on the fastest of them, the prompt shapes, by a prompt test's. A
// shape is chosen over the defaults only when it is faster by --margin.
// The two lists' keys are apart (a decode shape that loads 16 bytes at once,
// or runs fewer lanes, does the same in prompts: vec with pvec, lanes with
// plane), so a decode step and a pass of several tokens still give a token
// the same bits and speculative decoding stays lossless.

// tuneDecode and tunePrompt are the shapes timed by default: those the
// H200 profile asked for (docs/KERNELS.md, the Vulkan tuning table), as
// scripts/gpu-session.sh's sweep times them.
const (
	tuneAll    = "vec=4,pvec=4,npass=1,tk=64,vunroll=4,layer=5"
	tuneDecode = "default;warm=2;pre=2;vec=4,pvec=4;npass=1;tk=64;vunroll=4;layer=6;layer=5;" + tuneAll + ";" + tuneAll + ",pre=2;" + tuneAll + ",acomb=2;" +
		tuneAll + ",acomb=2,chunk=64;" + tuneAll + ",acomb=2,warm=2;" + tuneAll + ",warm=2;" +
		tuneAll + ",norm=512;" + tuneAll + ",norm=1024;" + tuneAll + ",lanes=32,plane=32"
	tunePrompt = "default;mmc=2;mm=1;arows=16;arows=32;mmg=1;mmg=1024;mm=64,mmm=64,mmr=4,mmg=1;mm=64,mmm=128,mmr=8,mmt=8,mmg=1;" +
		"mm=128,mmm=128,mmr=8,mmt=8,mmg=1;mm=32,mmm=256,mmr=8,mmt=4,mmg=1"
)

// decodeKeys are the tuning keys of the decode list; the prompt list may
// set none of them.
var decodeKeys = []string{"rows", "lanes", "norm", "chunk", "plane", "vec", "pvec", "npass", "tk", "vunroll", "layer", "warm", "acomb", "pre"}

// tuneTrial is one shape's measurement.
type tuneTrial struct {
	Phase  string  `json:"phase"` // decode or prompt
	Tune   string  `json:"tune"`  // as timed ("": the defaults)
	TokS   float64 `json:"tok_s,omitempty"`
	VsBase float64 `json:"vs_default,omitempty"`
	Err    string  `json:"error,omitempty"`
	// logits: the last test's last logits, compared with the defaults'
	// (checkLogits) so that a shape computing something else (a kernel's
	// bug on this device) is never chosen for being fast.
	logits []float32
}

// checkLogits marks tr failed when its logits are not the defaults' (base):
// beyond 1e-3 of their largest magnitude, or not finite. Shapes that add a
// float sum in another order (npass=1, vec=4 on block-scaled matrices)
// differ in a last bit at most.
func checkLogits(tr *tuneTrial, base []float32) {
	if tr.Err != "" || base == nil || tr.logits == nil {
		return
	}
	scale, worst := 0.0, 0.0
	for _, v := range base {
		scale = max(scale, math.Abs(float64(v)))
	}
	for i, v := range tr.logits {
		d := math.Abs(float64(v) - float64(base[i]))
		if math.IsNaN(d) || math.IsInf(d, 0) {
			d = math.Inf(1)
		}
		worst = max(worst, d)
	}
	if len(tr.logits) != len(base) || !(worst <= 1e-3*scale) {
		tr.Err = fmt.Sprintf("its logits are not the defaults' (largest difference %.3g, the logits' largest magnitude %.3g): not chosen", worst, scale)
	}
}

// tuneReport is bitvk tune --json's output.
type tuneReport struct {
	Key    string        `json:"key"`
	Trials []tuneTrial   `json:"trials"`
	Best   gpu.TuneEntry `json:"best"`
	File   string        `json:"file,omitempty"` // where it was saved
}

func runTune(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("tune", "[-m MODEL | -hf ORG/REPO[:FILE] | --shape tiny|small|2b] [--device N] [-n 32] [-p 512] [-r 2] [--json]", stderr)
	var src modelSource
	src.addFlags(fs)
	device := fs.Int("device", -1, "Vulkan device `index` (see bitvk devices; default: the best)")
	head := fs.String("head", "stored", "output head: stored, f16, q8, q8_0, q6_k or q4_0 (a tuning is saved per head)")
	nGen := fs.Int("n", 32, "decode test: tokens generated")
	nDepth := fs.String("d", "16,2048", "decode test: context depths, comma-separated (a prompt of that many tokens first, untimed); a shape's decode speed is the geometric mean over them")
	nPrompt := fs.Int("p", 512, "prompt test: tokens evaluated at once")
	reps := fs.Int("r", 2, "repetitions of each test (the fastest counts)")
	margin := fs.Float64("margin", 0.03, "how much faster than the defaults (0.03: 3%) a shape must be to be chosen: the rest is noise")
	decode := fs.String("decode", tuneDecode, "decode shapes to time, `BITVK_VK_TUNE` values separated by semicolons (default: the built-in list)")
	prompt := fs.String("prompt", tunePrompt, "prompt shapes to time on the fastest decode shape, separated by semicolons")
	file := fs.String("file", defaultTuneFile(), "the tuning `file` to save the fastest shape in")
	noSave := fs.Bool("no-save", false, "time the shapes, save nothing")
	asJSON := fs.Bool("json", false, "print the trials and the choice as JSON")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) > 0:
		return usageError(fs, "unexpected argument %q", pos[0])
	case !src.given():
		return usageError(fs, "%s", errSources)
	case *nGen < 1 || *nPrompt < 1 || *reps < 1:
		return usageError(fs, "-n, -p and -r must be at least 1")
	case !(*margin >= 0 && *margin < 10):
		return usageError(fs, "--margin %v: want a fraction from 0 (such as 0.03)", *margin)
	case !*noSave && *file == "":
		return usageError(fs, "no user cache directory to keep the tuning in: give --file FILE or --no-save")
	}
	depths, err := intList(*nDepth, 1)
	if err != nil {
		return usageError(fs, "-d: %v", err)
	}
	if _, set := os.LookupEnv(gpu.TuneEnv); set {
		return fmt.Errorf("%s is set: bitvk tune times its own shapes, unset it first (it would override the tuning file anyway)", gpu.TuneEnv)
	}
	bf := backendFlags{backend: "vulkan", device: *device, head: *head, needVulkan: true, noTuneFile: true}
	if err := bf.check(fs); err != nil {
		return err
	}
	decodes, err := tuneList(*decode, nil)
	if err != nil {
		return usageError(fs, "--decode: %v", err)
	}
	prompts, err := tuneList(*prompt, decodeKeys)
	if err != nil {
		return usageError(fs, "--prompt: %v", err)
	}
	path, name, cleanup, err := tuneModelPath(&src)
	if err != nil {
		return err
	}
	defer cleanup()
	maxCtx, err := src.contextLimit()
	if err != nil {
		return err
	}
	var kept []int
	for _, d := range depths {
		if d+*nGen <= maxCtx {
			kept = append(kept, d)
		} else {
			fmt.Fprintf(stderr, "tune: depth %d: with -n %d, beyond the model's context of %d; left out\n", d, *nGen, maxCtx)
		}
	}
	if len(kept) == 0 {
		return fmt.Errorf("no depth of -d fits the model's context of %d with -n %d", maxCtx, *nGen)
	}
	depths = kept
	if *nPrompt > maxCtx {
		fmt.Fprintf(stderr, "tune: a prompt test of %d tokens is beyond the model's context of %d; timing %d\n", *nPrompt, maxCtx, maxCtx)
		*nPrompt = maxCtx
	}
	bf.ctx = min(maxCtx, max(slices.Max(depths)+*nGen, *nPrompt))
	t := tuner{path: path, name: name, bf: bf, nGen: *nGen, nPrompt: *nPrompt, depths: depths, reps: *reps, notes: stderr}
	rep := tuneReport{}

	// A first trial of each phase, not counted: the first backend of a
	// process and the first prompt test ran slower than the same shape
	// timed again (lavapipe: the defaults' decode 326 tok/s first, shapes
	// that change nothing there 383 after).
	t.time("decode", gpu.Tuning{}, gpu.Tuning{})
	// Decode shapes, each alone.
	var baseDecode float64
	var baseLogits []float32
	bestDecode, bestDecodeTS := gpu.Tuning{}, 0.0
	for _, tn := range decodes {
		tr, key := t.time("decode", tn, gpu.Tuning{})
		if rep.Key == "" {
			rep.Key = key
		}
		if tn == (gpu.Tuning{}) && tr.Err != "" {
			return fmt.Errorf("the default shapes: %s", tr.Err)
		}
		if tn == (gpu.Tuning{}) {
			baseDecode, baseLogits = tr.TokS, tr.logits
		}
		checkLogits(&tr, baseLogits)
		rep.Trials = append(rep.Trials, tr)
		if tr.Err == "" && (tn == (gpu.Tuning{}) || tr.TokS > bestDecodeTS && tr.TokS >= (1+*margin)*baseDecode) {
			bestDecode, bestDecodeTS = tn, tr.TokS
		}
	}
	// Prompt shapes over the fastest decode shape.
	t.time("prompt", gpu.Tuning{}, bestDecode)
	var basePrompt float64
	best, bestPromptTS := bestDecode, 0.0
	for _, tn := range prompts {
		tr, _ := t.time("prompt", tn, bestDecode)
		if tn == (gpu.Tuning{}) {
			if tr.Err != "" {
				return fmt.Errorf("the default prompt shapes: %s", tr.Err)
			}
			basePrompt, baseLogits = tr.TokS, tr.logits
		}
		checkLogits(&tr, baseLogits)
		rep.Trials = append(rep.Trials, tr)
		if tr.Err == "" && (tn == (gpu.Tuning{}) || tr.TokS > bestPromptTS && tr.TokS >= (1+*margin)*basePrompt) {
			best, bestPromptTS = merge(bestDecode, tn), tr.TokS
		}
	}
	for i := range rep.Trials {
		tr := &rep.Trials[i]
		base := baseDecode
		if tr.Phase == "prompt" {
			base = basePrompt
		}
		if tr.Err == "" && base > 0 {
			tr.VsBase = tr.TokS / base
		}
	}
	v := probeVersion()
	rep.Best = gpu.TuneEntry{Tune: best.String(), Decode: bestDecodeTS, Prompt: bestPromptTS, DefaultDecode: baseDecode, DefaultPrompt: basePrompt,
		Test: fmt.Sprintf("tg%d @ d%s, pp%d", *nGen, joinInts(depths), *nPrompt), Saved: time.Now().UTC().Format(time.RFC3339), Version: v.Version}
	if !*noSave {
		if err := gpu.SaveTune(*file, rep.Key, rep.Best); err != nil {
			return err
		}
		rep.File = *file
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	tw := tabwriter.NewWriter(stdout, 2, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "test\tshape\ttok/s\tvs default\t\n")
	for _, tr := range rep.Trials {
		name := tr.Tune
		if name == "" {
			name = "default"
		}
		test := fmt.Sprintf("tg%d @ d%s", *nGen, joinInts(depths))
		if tr.Phase == "prompt" {
			test = fmt.Sprintf("pp%d", *nPrompt)
			if d := bestDecode.String(); d != "" {
				name += " (on " + d + ")"
			}
		}
		if tr.Err != "" {
			fmt.Fprintf(tw, "%s\t%s\t-\t-\t\n", test, name)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%.2f\t%.2f×\t\n", test, name, tr.TokS, tr.VsBase)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, tr := range rep.Trials {
		if tr.Err != "" {
			fmt.Fprintf(stdout, "%s %q: %s\n", tr.Phase, tr.Tune, tr.Err)
		}
	}
	fmt.Fprintf(stdout, "%s\n", rep.Key)
	choice := rep.Best.Tune
	if choice == "" {
		choice = "the defaults"
	}
	fmt.Fprintf(stdout, "fastest: %s (tg%d %.2f tok/s, %.2f× the defaults; pp%d %.2f tok/s, %.2f×)\n", choice,
		*nGen, bestDecodeTS, bestDecodeTS/baseDecode, *nPrompt, bestPromptTS, bestPromptTS/basePrompt)
	if rep.File != "" {
		fmt.Fprintf(stdout, "saved in %s: Vulkan runs of this model shape on this device use it (%s=... overrides it; %s= runs the defaults)\n", rep.File, gpu.TuneEnv, gpu.TuneEnv)
	}
	return nil
}

// tuner times shapes on one model file.
type tuner struct {
	path, name    string // the model file, and what errors call it
	bf            backendFlags
	nGen, nPrompt int
	depths        []int // of the decode tests
	reps          int
	notes         io.Writer
}

// time opens the model under base with tn's keys over it and times the
// phase's test; it returns the trial and the tuning file's key of the
// backend.
func (t *tuner) time(phase string, tn, base gpu.Tuning) (tuneTrial, string) {
	tuning := merge(base, tn)
	tr := tuneTrial{Phase: phase, Tune: tn.String()}
	bf := t.bf
	full := tuning.WithDefaults() // never the zero value, which would read the environment
	bf.tune = &full
	fmt.Fprintf(t.notes, "tune: %s %s…\n", phase, orDefault(tr.Tune)) // the warm-ups too
	m, err := openModelAs(t.path, t.name, bf)
	if err != nil {
		tr.Err = err.Error()
		return tr, ""
	}
	defer m.Close()
	b := m.backend.(*gpu.Backend)
	key := gpu.TuneKey(b.Device(), b.Kernels(), m.config, m.head)
	rng := rand.New(rand.NewPCG(1, 2))
	toks := make([]int32, max(slices.Max(t.depths)+t.nGen, t.nPrompt))
	for i := range toks {
		toks[i] = int32(rng.IntN(m.config.Vocab))
	}
	e := m.engine
	var last []float32 // the last Eval's logits
	once := func(depth int) (float64, error) {
		e.Reset()
		var err error
		if phase == "prompt" {
			start := time.Now()
			if last, err = e.Eval(toks[:t.nPrompt]); err != nil {
				return 0, err
			}
			return float64(t.nPrompt) / time.Since(start).Seconds(), nil
		}
		if _, err := e.Eval(toks[:depth]); err != nil {
			return 0, err
		}
		start := time.Now()
		for _, tok := range toks[depth : depth+t.nGen] {
			if last, err = e.Eval([]int32{tok}); err != nil {
				return 0, err
			}
		}
		return float64(t.nGen) / time.Since(start).Seconds(), nil
	}
	depths := t.depths
	if phase == "prompt" {
		depths = []int{0}
	}
	logSum := 0.0
	for _, d := range depths {
		if _, err := once(d); err != nil { // warm-up: pipelines, recordings
			tr.Err = err.Error()
			return tr, key
		}
		best := 0.0
		for range t.reps {
			ts, err := once(d)
			if err != nil {
				tr.Err = err.Error()
				return tr, key
			}
			best = max(best, ts)
		}
		logSum += math.Log(best)
	}
	tr.TokS = math.Exp(logSum / float64(len(depths)))
	tr.logits = append([]float32(nil), last...)
	return tr, key
}

// joinInts writes xs comma-separated.
func joinInts(xs []int) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.Itoa(x)
	}
	return strings.Join(parts, ",")
}

func orDefault(s string) string {
	if s == "" {
		return "default"
	}
	return s
}

// merge is base with the keys set in over.
func merge(base, over gpu.Tuning) gpu.Tuning {
	t, err := gpu.ParseTuning(strings.Trim(base.String()+","+over.String(), ","))
	if err != nil { // both parsed before
		panic(err)
	}
	return t
}

// tuneList parses a list of BITVK_VK_TUNE values separated by semicolons
// ("default" for the defaults), refusing duplicates and the keys of
// banned.
func tuneList(s string, banned []string) ([]gpu.Tuning, error) {
	var out []gpu.Tuning
	seen := map[gpu.Tuning]bool{}
	for _, v := range strings.Split(s, ";") {
		v = strings.TrimSpace(v)
		if v == "default" {
			v = ""
		}
		t, err := gpu.ParseTuning(v)
		if err != nil {
			return nil, err
		}
		for _, kv := range strings.Split(v, ",") {
			k, _, _ := strings.Cut(kv, "=")
			for _, b := range banned {
				if k == b {
					return nil, fmt.Errorf("%q: %s is a decode shape's key (see bitvk tune -h)", v, k)
				}
			}
		}
		if seen[t] {
			return nil, fmt.Errorf("%q is in the list twice", orDefault(v))
		}
		seen[t] = true
		out = append(out, t)
	}
	if len(out) == 0 || out[0] != (gpu.Tuning{}) {
		return nil, fmt.Errorf("the list must begin with default (the shapes are timed against it)")
	}
	return out, nil
}

// tuneModelPath is the model file to time: -m (or -hf's, pulled), or the
// synthetic or built-in model written once to a temporary file; name is
// what errors call it.
func tuneModelPath(src *modelSource) (path, name string, cleanup func(), err error) {
	if err := src.resolve(); err != nil {
		return "", "", nil, err
	}
	switch {
	case src.path != "":
		return src.path, src.path, func() {}, nil
	case src.shape != "":
		path, cleanup, err := writeSynth(src.shape)
		return path, "synthetic " + src.shape, cleanup, err
	}
	d := models.Default()
	path, remove, err := d.WriteTemp("")
	if err != nil {
		return "", "", nil, fmt.Errorf("writing the built-in model: %w", err)
	}
	return path, "built-in " + d.Name, remove, nil
}

// defaultTuneFile is where bitvk keeps tunings: the user's cache
// directory (XDG_CACHE_HOME, else ~/.cache, on Linux); "" when there is
// none.
func defaultTuneFile() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "bitvk", "vulkan-tune.json")
}
