package view

import (
	"encoding/binary"

	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"

	"github.com/bitvk/bitvk/gpu/vk"
	"github.com/bitvk/bitvk/spirv"
)

// drawPush is the push-constant block of shaders/view_draw.comp, field for
// field (TestDrawPushLayout holds the two to each other).
type drawPush struct{ Width, Height, Layer uint32 }

func (p drawPush) bytes() []byte {
	b := make([]byte, 0, 12)
	for _, v := range []uint32{p.Width, p.Height, p.Layer} {
		b = binary.LittleEndian.AppendUint32(b, v)
	}
	return b
}

const (
	drawWorkgroup = 64  // invocations per item
	drawGroups    = 256 // workgroups sharing a layer's items
)

// renderer draws canvases into a window's swapchain on a device: the
// view_draw kernel writes a buffer of pixels, which the swapchain copies
// into its image.
type renderer struct {
	dev      *vk.Device
	font     *vk.Buffer // host: the glyph bitmaps
	items    *vk.Buffer // host: the frame's items, rewritten each frame
	pixels   *vk.Buffer // device: w×h pixels
	readback *vk.Buffer // host: a screenshot, made on demand
	kernel   *vk.Kernel // for the swapchain's byte order
	bgra     bool
	sc       *vk.Swapchain
	rec      *vk.Recording
}

func newRenderer(dev *vk.Device) (*renderer, error) {
	words, err := parseFont(fontSource)
	if err != nil {
		return nil, err
	}
	r := &renderer{dev: dev}
	if r.font, err = dev.NewBuffer("view font", int64(4*len(words)), true); err != nil {
		return nil, err
	}
	putWords(r.font.Mapped(), words)
	if r.items, err = dev.NewBuffer("view items", itemsBytes, true); err != nil {
		return nil, err
	}
	return r, nil
}

func putWords(dst []byte, words []uint32) {
	for i, w := range words {
		binary.LittleEndian.PutUint32(dst[4*i:], w)
	}
}

// size is the swapchain's, 0×0 before the first.
func (r *renderer) size() (int, int) {
	if r.sc == nil {
		return 0, 0
	}
	i := r.sc.Info()
	return i.Width, i.Height
}

// resize makes the swapchain (and what depends on its size) for a window
// of w×h pixels. It returns vk.ErrOutOfDate for a minimized window.
func (r *renderer) resize(w, h int) error {
	sc, err := r.dev.NewSwapchain(w, h, r.sc)
	if err != nil {
		return err
	}
	r.sc.Release() // the old one, if any
	r.sc = sc
	info := sc.Info()
	if r.kernel == nil || r.bgra != info.BGRA {
		code, err := spirv.Code(spirv.ViewDraw)
		if err != nil {
			return err
		}
		r.kernel.Release()
		bgra := uint32(0)
		if info.BGRA {
			bgra = 1
		}
		if r.kernel, err = r.dev.NewKernel(string(spirv.ViewDraw), code, 3, 12, []uint32{drawWorkgroup, bgra}); err != nil {
			return err
		}
		r.bgra = info.BGRA
	}
	need := int64(4 * info.Width * info.Height)
	if r.pixels == nil || r.pixels.Size() != need {
		r.rec.Release()
		r.rec = nil
		r.pixels.Release()
		if r.pixels, err = r.dev.NewBuffer("view pixels", need, false); err != nil {
			return err
		}
		r.readback.Release()
		r.readback = nil
	}
	r.rec.Release()
	r.rec = r.dev.Record("view frame")
	bufs := []vk.Range{{Buf: r.pixels}, {Buf: r.items}, {Buf: r.font}}
	for l := range layerCount {
		if l > 0 {
			r.rec.Barrier()
		}
		r.rec.Dispatch(r.kernel, bufs, drawPush{uint32(info.Width), uint32(info.Height), uint32(l)}.bytes(), drawGroups, 1, 1)
	}
	return r.rec.Finish()
}

// frame draws c and shows it; with shot, it also reads the shown image
// back and returns it.
func (r *renderer) frame(c *canvas, shot bool) (*image.RGBA, error) {
	w, h := r.size()
	if c.w != w || c.h != h {
		return nil, vk.ErrOutOfDate
	}
	putWords(r.items.Mapped(), c.words())
	var rb *vk.Buffer
	if shot {
		if r.readback == nil {
			var err error
			if r.readback, err = r.dev.NewBuffer("view screenshot", int64(4*w*h), true); err != nil {
				return nil, err
			}
		}
		rb = r.readback
	}
	if err := r.sc.Present(r.rec, r.pixels, rb); err != nil {
		return nil, err
	}
	if !shot {
		return nil, nil
	}
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	copy(img.Pix, rb.Mapped()[:4*w*h])
	for i := 0; i < len(img.Pix); i += 4 {
		if r.bgra {
			img.Pix[i], img.Pix[i+2] = img.Pix[i+2], img.Pix[i]
		}
		img.Pix[i+3] = 0xff // the window is opaque
	}
	return img, nil
}

// release frees what the renderer made (the device would at Close).
func (r *renderer) release() {
	r.rec.Release()
	r.sc.Release()
	r.kernel.Release()
	for _, b := range []*vk.Buffer{r.readback, r.pixels, r.items, r.font} {
		b.Release()
	}
}

// writePNG writes img to path.
func writePNG(path string, img image.Image) (err error) {
	// A temporary file renamed into place: a failed encode never leaves
	// a partial PNG where an earlier screenshot was.
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("view: writing the screenshot: %w", err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err := png.Encode(f, img); err != nil {
		return fmt.Errorf("view: encoding the screenshot %s: %w", path, err)
	}
	if err := f.Chmod(0o644); err != nil {
		return fmt.Errorf("view: writing the screenshot: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("view: writing the screenshot: %w", err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("view: writing the screenshot: %w", err)
	}
	return nil
}
