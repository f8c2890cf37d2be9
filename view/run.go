//go:build cgo

package view

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/go-gl/glfw/v3.3/glfw"

	"github.com/bitvk/bitvk/gpu/vk"
)

// Options say how Run ends and where it reports.
type Options struct {
	// Screenshot, when set, makes Run write the shown frame there as PNG
	// and return, Frames frames after the first generation's results (its
	// text, speed, timeline and check) are in.
	Screenshot string
	Frames     int
	Log        io.Writer // the summary at the end; nil: none
}

// Run shows s at work in w, drawing on dev (the model's own device on the
// Vulkan backend, so that the window and the model share it; else one from
// w.OpenDevice), until the window is closed or the screenshot is written.
// The model generates on another goroutine; closing the window stops it.
func Run(w *Window, dev *vk.Device, s *Session, o Options) (err error) {
	st := &state{title: s.Title, prompt: []rune(s.Prompt), check: s.Reference != nil, tolerance: s.Tolerance,
		bandwidth: s.Bandwidth, perToken: s.BytesPerToken, drawDevice: dev.Info().Name,
		profileNote: "the first generation's decode step is timed when it ends", checkNote: "comparing the Vulkan hidden states with the CPU's…"}
	if s.BytesPerToken > 0 {
		st.roofline = s.Bandwidth / float64(s.BytesPerToken)
	}
	r, err := newRenderer(dev)
	if err != nil {
		return err
	}
	defer r.release()
	run := startRunner(s)
	defer run.close() // before the renderer: a generation may still submit
	st.vulkan = run.gpu != nil
	st.sharedQueue = run.gpu != nil && run.gpu.Vulkan() == dev
	if s.Prompt != "" {
		run.generate(s.Prompt)
	}
	generations, after := 0, 0
	stale := false
	for !w.win.ShouldClose() {
		if o.Screenshot != "" {
			glfw.PollEvents()
		} else {
			glfw.WaitEventsTimeout(1.0 / 60)
		}
		for _, k := range w.input {
			switch k.special {
			case keyNone:
				if k.r >= ' ' {
					st.prompt = append(st.prompt, k.r)
				}
			case keyBackspace:
				if len(st.prompt) > 0 {
					st.prompt = st.prompt[:len(st.prompt)-1]
				}
			case keyEnter:
				run.generate(string(st.prompt))
			case keyEscape:
				run.stop()
			case keyReset:
				run.stop()
				st.shown, st.text, st.rates, st.status = "", "", nil, "reset: Enter generates from the prompt"
			}
		}
		w.input = w.input[:0]
	drain:
		for {
			select {
			case ev := <-run.events:
				st.apply(ev)
				if ev.kind == evDone {
					generations++
				}
			default:
				break drain
			}
		}
		if st.sharedQueue {
			st.modelWaits, st.modelWaited = dev.QueueWaits()
		}
		fw, fh := w.win.GetFramebufferSize()
		if fw == 0 || fh == 0 {
			continue // minimized: nothing to draw into
		}
		if cw, ch := r.size(); stale || cw != fw || ch != fh {
			if err := r.resize(fw, fh); err != nil {
				if errors.Is(err, vk.ErrOutOfDate) {
					time.Sleep(10 * time.Millisecond)
					continue
				}
				return err
			}
			stale = false
		}
		ready := generations > 0 && !st.running && (!st.vulkan || st.profiled) && (!st.check || st.checked)
		shot := o.Screenshot != "" && ready && after+1 >= o.Frames
		c := newCanvas(r.size())
		draw(c, st)
		img, err := r.frame(c, shot)
		if errors.Is(err, vk.ErrOutOfDate) {
			stale = true
			continue
		}
		if err != nil {
			return err
		}
		st.frames++
		if r.sc != nil {
			st.frameWaits, st.frameWait = r.sc.QueueWaits()
		}
		if ready {
			after++
		}
		if shot {
			if err := writePNG(o.Screenshot, img); err != nil {
				return err
			}
			break
		}
	}
	if o.Log != nil {
		fmt.Fprintf(o.Log, "view: %d frames drawn on %s\n", st.frames, st.drawDevice)
		if st.sharedQueue {
			fmt.Fprintf(o.Log, "view: one queue for the model and the window: model steps waited for frames %d times (%.1f ms in all), frames for model steps %d times (%.1f ms)\n",
				st.modelWaits, ms(st.modelWaited), st.frameWaits, ms(st.frameWait))
		}
		if o.Screenshot != "" {
			fmt.Fprintf(o.Log, "view: wrote %s\n", o.Screenshot)
		}
	}
	return nil
}
