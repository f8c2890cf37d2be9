package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/bitvk/bitvk/cpu"
	"github.com/bitvk/bitvk/gpu"
	"github.com/bitvk/bitvk/gpu/vk"
	"github.com/bitvk/bitvk/models"
	"github.com/bitvk/bitvk/nn"
	"github.com/bitvk/bitvk/view"
)

func runView(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("view", "[-m MODEL | -hf ORG/REPO[:FILE] | --shape SHAPE] [-p TEXT] [--backend B] [--check] [--screenshot FILE.png --frames N]", stderr)
	var src modelSource
	src.addFlags(fs)
	text := fs.String("p", "Once upon a time, in a small village by the sea, there lived", "the prompt `text` generated from at the start (editable in the window)")
	n := fs.Int("n", 128, "tokens per generation")
	var bf backendFlags
	addBackendFlags(fs, &bf, true)
	var sf samplerFlags
	addSamplerFlags(fs, &sf)
	check := fs.Bool("check", false, "compare the Vulkan hidden states with the CPU's on the prompt (as bitvk check does) and draw them as a heatmap")
	tol := fs.Float64("max-rel", 0.1, "with --check, the tolerance marked on the heatmap: largest difference after a block, relative to its largest value")
	shot := fs.String("screenshot", "", "write the window as PNG to this `file` and exit (headless: run under xvfb-run)")
	frames := fs.Int("frames", 120, "with --screenshot, frames drawn after the first generation's results are in before the screenshot")
	width := fs.Int("width", 1280, "window width in pixels")
	height := fs.Int("height", 800, "window height in pixels")
	validate := fs.Bool("validate", false, "turn the Khronos validation layer on: any message fails the command")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) > 0:
		return usageError(fs, "unexpected argument %q", pos[0])
	case !src.given():
		return usageError(fs, errSources)
	case *n < 1:
		return usageError(fs, "-n must be positive")
	case *frames < 1:
		return usageError(fs, "--frames must be positive")
	case *width < 320 || *height < 240 || *width > 8192 || *height > 8192:
		return usageError(fs, "the window must be 320×240 to 8192×8192 pixels")
	case *check && bf.backend == "cpu":
		return usageError(fs, "--check compares the Vulkan backend with the CPU: it needs --backend vulkan (or auto)")
	case !(*tol > 0):
		return usageError(fs, "--max-rel must be positive")
	}
	if err := bf.check(fs); err != nil {
		return err
	}
	if *check {
		bf.backend = "vulkan"
	}
	bf.validate = *validate
	s, _, err := sf.sampler()
	if err != nil {
		return usageError(fs, "%v", err)
	}
	if *shot != "" {
		if err := checkOutput("--screenshot", *shot, src.path); err != nil {
			return err
		}
	}
	// The window first: without a display there is nothing to load for.
	win, err := view.OpenWindow("bitvk view", *width, *height)
	if err != nil {
		return err
	}
	defer win.Close() // after the model's device, which holds its surface

	if err := src.resolve(); err != nil {
		return err
	}
	path, name := src.path, src.path
	if src.hf != "" {
		name = src.hf
	}
	switch {
	case src.builtin():
		d := models.Default()
		fmt.Fprintf(stderr, "bitvk: no -m given: showing the built-in model %s (%s); give -m FILE for another\n", d.Name, d.Summary)
		tmp, remove, err := d.WriteTemp("")
		if err != nil {
			return err
		}
		defer remove()
		path, name = tmp, "built-in "+d.Name
	case path == "":
		fmt.Fprintf(stderr, "writing the synthetic %s model…\n", src.shape)
		tmp, cleanup, err := writeSynth(src.shape)
		if err != nil {
			return err
		}
		defer cleanup()
		path, name = tmp, "synthetic "+src.shape
	}
	if chooseBackend(bf) == "vulkan" {
		bf.backend, bf.window = "vulkan", win.GPU()
	} else {
		bf.backend = "cpu"
	}
	m, err := openModelAs(path, name, bf)
	if err != nil {
		return err
	}
	defer m.Close()
	if err := sf.checkVocab(m.config.Vocab); err != nil {
		return err
	}
	tok, err := nn.NewTokenizer(m.file)
	if err != nil {
		return fmt.Errorf("bitvk view shows text and needs the model's tokenizer: %w", err)
	}
	sf.setDRYBreakers(s, tok)
	sess := &view.Session{
		Title:         fmt.Sprintf("bitvk view  %s  |  %s", name, m.backend.Name()),
		Engine:        m.engine,
		Tokenizer:     tok,
		Sampler:       s,
		MaxTokens:     *n,
		Prompt:        *text,
		BytesPerToken: bytesPerToken(m),
		Tolerance:     *tol,
	}
	var dev *vk.Device
	switch b := m.backend.(type) {
	case *gpu.Backend:
		dev = b.Vulkan()
		fmt.Fprintln(stderr, "measuring the device's memory bandwidth…")
		if sess.Bandwidth, err = b.MeasureBandwidth(64<<20, 3); err != nil {
			return err
		}
	case *cpu.Backend:
		if dev, err = win.OpenDevice(bf.device, *validate); err != nil {
			return err
		}
		fmt.Fprintln(stderr, "measuring the CPU's memory bandwidth…")
		if sess.Bandwidth, err = cpu.MeasureBandwidth(b.Threads(), 256<<20, 3); err != nil {
			return err
		}
	default:
		return fmt.Errorf("bitvk view: unexpected backend %s", m.backend.Name())
	}
	if *check {
		ref, err := openModelAs(path, name, backendFlags{backend: "cpu", threads: bf.threads, head: bf.head})
		if err != nil {
			return err
		}
		defer ref.Close()
		sess.Reference = ref.backend
	}
	if err := view.Run(win, dev, sess, view.Options{Screenshot: *shot, Frames: *frames, Log: stderr}); err != nil {
		return err
	}
	var msgs []string
	if gb, ok := m.backend.(*gpu.Backend); ok {
		msgs = gb.ValidationMessages()
	}
	msgs = append(msgs, win.Messages()...)
	if len(msgs) > 0 {
		for _, msg := range msgs {
			fmt.Fprintf(stderr, "validation layer: %s\n", msg)
		}
		return errors.New("the validation layer reported problems (above)")
	}
	return nil
}
