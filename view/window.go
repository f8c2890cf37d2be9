//go:build cgo

package view

import (
	"bytes"
	"errors"
	"fmt"
	"log"
	"os"
	"runtime"
	"strings"

	"github.com/go-gl/glfw/v3.3/glfw"

	"github.com/bitvk/bitvk/gpu"
	"github.com/bitvk/bitvk/gpu/vk"
)

// GLFW must be called from the process's main thread (macOS insists; X11
// wants one thread throughout): the main goroutine stays on it.
func init() { runtime.LockOSThread() }

// Window is a GLFW window without a GL context, drawn through a Vulkan
// swapchain. Its methods must be called from the main goroutine.
type Window struct {
	win   *glfw.Window
	exts  []string
	input []key // typed since the last frame, from GLFW's callbacks

	inst *vk.Instance // made by OpenDevice (model on the CPU)
	dev  *vk.Device
}

// key is one input event: a rune typed, or a special key.
type key struct {
	r       rune
	special int
}

const (
	keyNone = iota
	keyEnter
	keyEscape
	keyBackspace
	keyReset // Ctrl-R
)

// OpenWindow opens a w×h window titled title. It fails, saying how to run
// headless, when there is no display.
func OpenWindow(title string, w, h int) (win *Window, err error) {
	if os.Getenv("DISPLAY") == "" && os.Getenv("WAYLAND_DISPLAY") == "" {
		return nil, errors.New("no display: DISPLAY is not set, so there is no window system to open a window on; " +
			"to run headless, render into a file under Xvfb: xvfb-run bitvk view --screenshot view.png --frames 120")
	}
	// go-gl/glfw logs platform errors and panics on the errors that follow
	// from them: catch both and turn them into an error.
	var logged bytes.Buffer
	prevOut, prevFlags := log.Writer(), log.Flags()
	log.SetOutput(&logged)
	log.SetFlags(0)
	defer func() {
		log.SetOutput(prevOut)
		log.SetFlags(prevFlags)
		if p := recover(); p != nil {
			why := strings.TrimSpace(logged.String())
			if why == "" {
				why = fmt.Sprint(p)
			}
			err = fmt.Errorf("cannot open a window on display %q: %s (to run headless, render into a file under Xvfb: xvfb-run bitvk view --screenshot view.png --frames 120)", os.Getenv("DISPLAY"), why)
			win = nil
		}
	}()
	if err := glfw.Init(); err != nil {
		return nil, fmt.Errorf("initialising GLFW: %v", err)
	}
	if !glfw.VulkanSupported() {
		if why := strings.TrimSpace(logged.String()); why != "" {
			panic(why) // the display failed to open
		}
		glfw.Terminate()
		return nil, errors.New("GLFW found no Vulkan loader (install libvulkan1 and a Vulkan driver)")
	}
	glfw.WindowHint(glfw.ClientAPI, glfw.NoAPI)
	glfw.WindowHint(glfw.Resizable, glfw.True)
	gw, err := glfw.CreateWindow(w, h, title, nil, nil)
	if err != nil {
		glfw.Terminate()
		return nil, fmt.Errorf("creating the window: %v", err)
	}
	win = &Window{win: gw, exts: gw.GetRequiredInstanceExtensions()}
	if len(win.exts) == 0 {
		win.Close()
		return nil, errors.New("the window system offers no Vulkan surface extensions (GLFW found none): Vulkan cannot draw into its windows")
	}
	gw.SetCharCallback(func(_ *glfw.Window, r rune) { win.input = append(win.input, key{r: r}) })
	gw.SetKeyCallback(func(_ *glfw.Window, k glfw.Key, _ int, a glfw.Action, mods glfw.ModifierKey) {
		if a == glfw.Release {
			return
		}
		switch {
		case k == glfw.KeyEnter || k == glfw.KeyKPEnter:
			win.input = append(win.input, key{special: keyEnter})
		case k == glfw.KeyEscape:
			win.input = append(win.input, key{special: keyEscape})
		case k == glfw.KeyBackspace:
			win.input = append(win.input, key{special: keyBackspace})
		case k == glfw.KeyR && mods&glfw.ModControl != 0:
			win.input = append(win.input, key{special: keyReset})
		}
	})
	return win, nil
}

// GPU is what gpu.New needs to open the model's device so that it also
// draws this window (gpu.Options.Window).
func (w *Window) GPU() *gpu.Window {
	return &gpu.Window{Extensions: w.exts, Surface: w.surface}
}

// surface makes the window's Vulkan surface on inst.
func (w *Window) surface(inst *vk.Instance) (*vk.Surface, error) {
	p, err := w.win.CreateWindowSurface(inst.VulkanHandle(), nil)
	if err != nil {
		return nil, fmt.Errorf("making the window's Vulkan surface: %v", err)
	}
	return inst.AdoptSurface(p)
}

// OpenDevice opens a Vulkan device of its own to draw the window with,
// for a model that runs on the CPU: device index, or the best that can
// present when index < 0. Close closes it.
func (w *Window) OpenDevice(index int, validate bool) (*vk.Device, error) {
	inst, err := vk.NewInstance(vk.InstanceOptions{Validation: validate, SyncValidation: validate, Extensions: w.exts})
	if err != nil {
		return nil, fmt.Errorf("the window is drawn with Vulkan: %w", err)
	}
	s, err := w.surface(inst)
	if err != nil {
		inst.Close()
		return nil, err
	}
	devs := inst.Devices()
	if len(devs) == 0 {
		inst.Close()
		return nil, errors.New("the window is drawn with Vulkan, and the loader found no device (lavapipe: mesa-vulkan-drivers)")
	}
	pick := index
	if pick < 0 || pick >= len(devs) {
		var ok []vk.DeviceInfo
		for _, d := range devs {
			if inst.CanPresent(d.Index, s) == nil {
				ok = append(ok, d)
			}
		}
		if len(ok) == 0 {
			err := inst.CanPresent(vk.Pick(devs), s)
			inst.Close()
			return nil, err
		}
		pick = ok[vk.Pick(ok)].Index
	}
	dev, err := inst.OpenWith(pick, vk.OpenOptions{Surface: s})
	if err != nil {
		inst.Close()
		return nil, err
	}
	w.inst, w.dev = inst, dev
	return dev, nil
}

// Messages returns what the validation layer said on OpenDevice's
// instance.
func (w *Window) Messages() []string {
	if w.inst == nil {
		return nil
	}
	return w.inst.Messages()
}

// Close closes OpenDevice's device and instance (a model's device, with its
// surface, must be closed before), then the window.
func (w *Window) Close() {
	if w == nil || w.win == nil {
		return
	}
	if w.inst != nil {
		w.inst.Close() // the device, the surface, the instance
		w.inst, w.dev = nil, nil
	}
	w.win.Destroy()
	w.win = nil
	glfw.Terminate()
}
