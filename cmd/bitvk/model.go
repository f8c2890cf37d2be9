package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/bitvk/bitvk/cpu"
	"github.com/bitvk/bitvk/gguf"
	"github.com/bitvk/bitvk/gpu"
	"github.com/bitvk/bitvk/gpu/vk"
	"github.com/bitvk/bitvk/models"
	"github.com/bitvk/bitvk/nn"
	"github.com/bitvk/bitvk/nn/synth"
)

// backendFlags are the flags every command that runs a model shares.
type backendFlags struct {
	backend string // auto, cpu or vulkan
	device  int    // Vulkan device index; -1: the best
	threads int
	ctx     int
	head    string
	slots   int       // sequences the backend's K/V cache holds (serve --parallel); 0: one
	notes   io.Writer // where loadModel says which backend auto chose
	// validate turns the Khronos validation layer on for the Vulkan backend.
	validate bool
	// window, when set, opens the Vulkan backend's device so that it also
	// draws this window (bitvk view).
	window *gpu.Window
	// fuse is the Vulkan backend's decode-step fusion (bench --fuse).
	fuse gpu.Fusion
	// kernels is the CPU backend's kernel set (bench --kernels); "": the
	// fastest this CPU runs.
	kernels string
	// needVulkan: the command compares the backends (check), so a Vulkan
	// error does not suggest --backend cpu.
	needVulkan bool
	// tune, when set, shapes the Vulkan kernels (bitvk tune); else
	// BITVK_VK_TUNE, or the tuning file's entry unless noTuneFile.
	tune       *gpu.Tuning
	noTuneFile bool
}

func addBackendFlags(fs *flag.FlagSet, bf *backendFlags, withThreads bool) {
	fs.StringVar(&bf.backend, "backend", "auto", "where the model runs: auto (a Vulkan GPU if there is one, else the CPU), cpu or vulkan")
	fs.IntVar(&bf.device, "device", -1, "Vulkan device `index` (see bitvk devices; default: the best)")
	if withThreads {
		fs.IntVar(&bf.threads, "t", 0, "CPU threads (default: one per CPU)")
		fs.StringVar(&bf.kernels, "kernels", "", "CPU kernel `set` (see bitvk version; default: the fastest this CPU runs)")
	}
	fs.IntVar(&bf.ctx, "c", 0, "context length in positions (default: the model's maximum)")
	fs.StringVar(&bf.head, "head", "stored", "output head: stored (in the file's type: F16, Q8_0, Q6_K or Q4_0), or converted at load to f16, q8 (int8 with per-row scales: half F16's bytes, slightly less exact), q8_0, q6_k or q4_0")
}

// checkKernelSet refuses a CPU kernel set this machine does not run ("" is
// the default).
func checkKernelSet(set string) error {
	if set != "" && !slices.Contains(cpu.KernelNames(), set) {
		return fmt.Errorf("%q is not a kernel set this CPU runs (%s)", set, strings.Join(cpu.KernelNames(), ", "))
	}
	return nil
}

func (bf *backendFlags) check(fs *flag.FlagSet) error {
	switch bf.backend {
	case "auto", "cpu", "vulkan":
	default:
		return usageError(fs, "unknown backend %q (choose auto, cpu or vulkan)", bf.backend)
	}
	if _, err := nn.ParseHeadType(bf.head); err != nil {
		return usageError(fs, "--head: %v", err)
	}
	if bf.ctx < 0 || bf.threads < 0 {
		return usageError(fs, "-c and -t must not be negative")
	}
	if err := checkKernelSet(bf.kernels); err != nil {
		return usageError(fs, "--kernels: %v", err)
	}
	bf.notes = fs.Output()
	return nil
}

// chooseBackend resolves auto: a Vulkan GPU when there is one, else the CPU.
// A software Vulkan device (lavapipe) runs on the same cores as the CPU
// backend, slower, so auto leaves it to --backend vulkan. It says what it
// chose on bf.notes.
func chooseBackend(bf backendFlags) string {
	if bf.backend != "auto" {
		return bf.backend
	}
	say := func(format string, a ...any) {
		if bf.notes != nil {
			fmt.Fprintf(bf.notes, "bitvk: "+format+"\n", a...)
		}
	}
	devs, err := gpu.Devices()
	if err != nil {
		say("no Vulkan device (%v); running on the CPU", err)
		return "cpu"
	}
	i := bf.device
	if i < 0 || i >= len(devs) {
		i = vk.Pick(devs)
	}
	if devs[i].Type == "cpu" {
		say("the only Vulkan device is a software one (%s); running on the CPU backend, which is faster (--backend vulkan to use it)", devs[i].Name)
		return "cpu"
	}
	say("running on Vulkan device %d: %s (--backend cpu for the CPU)", i, devs[i].Name)
	return "vulkan"
}

// model is a model file opened, checked and loaded onto a backend.
type model struct {
	file    *gguf.File
	config  *nn.Config
	weights *nn.Weights
	backend nn.Backend
	engine  *nn.Engine
	load    time.Duration // open to ready
	path    string
	chains  []byte // the built-in model's chain buckets (CHNB); nil for files, whose sit beside them
	cleanup func()
	head    nn.HeadType // how the backend holds the head, "stored" resolved to the file's type
}

// openModel opens a GGUF model and loads it onto the backend bf names.
func openModel(path string, bf backendFlags) (*model, error) {
	return openModelAs(path, path, bf)
}

// openModelAs is openModel for a file that errors call name: the built-in
// and synthetic models live in temporary files the user never named.
func openModelAs(path, name string, bf backendFlags) (*model, error) {
	start := time.Now()
	f, err := gguf.Open(path)
	if err != nil {
		if isCHNBFile(path) {
			return nil, fmt.Errorf("%s is a CHNB chain table (bitvk mine writes them), not a model: give the model with -m and the table with --chains", name)
		}
		return nil, err
	}
	if len(f.Tensors) == 0 {
		f.Close()
		return nil, fmt.Errorf("%s holds no tensors: it is a vocabulary-only GGUF, not a model (tokenize -m, synth --vocab and train --vocab take it)", name)
	}
	m, err := loadModel(f, bf)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	m.path, m.load = path, time.Since(start)
	return m, nil
}

// modelSource is where a command's model comes from: a file (-m), a file
// on the Hugging Face Hub (-hf), or the built-in synthetic model of a shape
// (--shape), exactly one of them.
type modelSource struct {
	path, hf, shape string
	notes           io.Writer // where -hf's download shows its progress
}

func (ms *modelSource) addFlags(fs *flag.FlagSet) {
	fs.StringVar(&ms.path, "m", "", "model `file` (GGUF)")
	addHFFlag(fs, &ms.hf)
	fs.StringVar(&ms.shape, "shape", "", "use the built-in synthetic model of this shape instead of -m: "+strings.Join(synth.ShapeNames(), ", "))
	ms.notes = fs.Output()
}

// addHFFlag adds -hf. Its placeholder avoids the word file, so that shell
// completion offers no local files for it.
func addHFFlag(fs *flag.FlagSet, hf *string) {
	fs.StringVar(hf, "hf", "", "a model on the Hugging Face Hub, `ORG/REPO` (its I2_S GGUF) or ORG/REPO:FILE; pulled into the Hugging Face cache, or found there (see bitvk pull -h)")
}

// given reports whether at most one source was named (with none, the
// embedded trained model runs).
// errSources is the usage error of a command given more than one model source.
const errSources = "give only one of -m FILE, -hf ORG/REPO[:FILE] and --shape (with none, the built-in model runs)"

func (ms *modelSource) given() bool { return countSet(ms.path != "", ms.hf != "", ms.shape != "") <= 1 }

// builtin reports whether no source was named.
func (ms *modelSource) builtin() bool {
	return countSet(ms.path != "", ms.hf != "", ms.shape != "") == 0
}

// resolve turns -hf into a path in the Hugging Face cache, downloading the
// file when the cache lacks it.
func (ms *modelSource) resolve() error {
	if ms.hf == "" || ms.path != "" {
		return nil
	}
	notes := ms.notes
	if notes == nil {
		notes = os.Stderr
	}
	path, err := pullModel(ms.hf, notes)
	if err != nil {
		return err
	}
	ms.path = path
	return nil
}

// open loads the model onto the backend bf names.
func (ms *modelSource) open(bf backendFlags) (*model, error) {
	if err := ms.resolve(); err != nil {
		return nil, err
	}
	switch {
	case ms.path != "":
		return openModel(ms.path, bf)
	case ms.shape != "":
		return synthModel(ms.shape, bf)
	}
	return builtinModel(bf)
}

// builtinModel loads the trained model embedded in the binary (written to
// a temporary file, since models are memory-mapped), and says so on
// bf.notes.
func builtinModel(bf backendFlags) (*model, error) {
	start := time.Now()
	d := models.Default()
	if bf.notes != nil {
		fmt.Fprintf(bf.notes, "bitvk: no -m given: running the built-in model %s (%s); give -m FILE for another\n", d.Name, d.Summary)
	}
	path, remove, err := d.WriteTemp("")
	if err != nil {
		return nil, fmt.Errorf("writing the built-in model: %w", err)
	}
	m, err := openModelAs(path, "built-in "+d.Name, bf)
	if err != nil {
		remove()
		return nil, err
	}
	m.path, m.load, m.cleanup, m.chains = "built-in "+d.Name, time.Since(start), remove, d.Chains
	return m, nil
}

// synthModel writes a synthetic model of the named shape to a temporary
// file and loads it: the built-in model of bench, run and logits.
func synthModel(shape string, bf backendFlags) (*model, error) {
	start := time.Now()
	path, cleanup, err := writeSynth(shape)
	if err != nil {
		return nil, err
	}
	m, err := openModelAs(path, "synthetic "+shape, bf)
	if err != nil {
		cleanup()
		return nil, err
	}
	m.path, m.load, m.cleanup = "synthetic "+shape, time.Since(start), cleanup
	return m, nil
}

// writeSynth writes the synthetic model of a shape (seed 1) to a temporary
// file; cleanup removes it.
func writeSynth(shape string) (path string, cleanup func(), err error) {
	s, ok := synth.Shapes[shape]
	if !ok {
		return "", nil, fmt.Errorf("unknown shape %q (choose from %s)", shape, strings.Join(synth.ShapeNames(), ", "))
	}
	b, err := synth.Build(synth.Options{Shape: s, Seed: 1, Name: "bitvk synthetic " + shape})
	if err != nil {
		return "", nil, err
	}
	tmp, err := os.CreateTemp("", "bitvk-synth-*.gguf")
	if err != nil {
		return "", nil, err
	}
	path = tmp.Name()
	tmp.Close()
	cleanup = func() { os.Remove(path) }
	if err := b.WriteFile(path); err != nil {
		cleanup()
		return "", nil, err
	}
	return path, cleanup, nil
}

func loadModel(f *gguf.File, bf backendFlags) (*model, error) {
	c, err := nn.ParseConfig(f)
	if err != nil {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	w, err := nn.LoadWeights(f, c)
	if err != nil {
		return nil, err
	}
	if bf.ctx > c.Context {
		return nil, fmt.Errorf("context %d is beyond the model's maximum of %d", bf.ctx, c.Context)
	}
	ht, _ := nn.ParseHeadType(bf.head) // checked by check
	ht = ht.For(w.Output.Type)
	var b nn.Backend
	switch chooseBackend(bf) {
	case "cpu", "":
		b, err = cpu.New(c, w, cpu.Options{Threads: bf.threads, Context: bf.ctx, Head: ht, Slots: bf.slots, Kernels: bf.kernels})
	case "vulkan":
		o := gpu.Options{Device: bf.device, Context: bf.ctx, Head: ht, Validation: bf.validate, Window: bf.window, Slots: bf.slots, Fusion: bf.fuse}
		if bf.tune != nil {
			o.Tune = *bf.tune
		}
		if !bf.noTuneFile {
			o.TuneFile = defaultTuneFile()
		}
		b, err = gpu.New(c, w, o)
		if err != nil && !bf.needVulkan {
			err = fmt.Errorf("%w (--backend cpu runs on the CPU)", err)
		}
	default:
		err = fmt.Errorf("unknown backend %q", bf.backend)
	}
	if err != nil {
		return nil, err
	}
	e, err := nn.NewEngine(c, b)
	if err != nil {
		b.Close()
		return nil, err
	}
	return &model{file: f, config: c, weights: w, backend: b, engine: e, head: ht}, nil
}

// Close releases the backend and the file.
func (m *model) Close() error {
	err := errors.Join(m.backend.Close(), m.file.Close())
	if m.cleanup != nil {
		m.cleanup()
	}
	return err
}

// parseIDs reads a comma-separated list of token ids.
func parseIDs(s string) ([]int32, error) {
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("no token ids given")
	}
	var ids []int32
	for i, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			// "1,,2" lost an id somewhere: guessing which would run
			// another prompt than the one meant.
			return nil, fmt.Errorf("%q has an empty entry (entry %d): give ids separated by single commas", s, i+1)
		}
		var v int64
		if _, err := fmt.Sscan(f, &v); err != nil || v < 0 || v > 1<<31-1 || fmt.Sprint(v) != f {
			return nil, fmt.Errorf("%q is not a token id", f)
		}
		ids = append(ids, int32(v))
	}
	if len(ids) == 0 {
		return nil, errors.New("no token ids given")
	}
	return ids, nil
}
