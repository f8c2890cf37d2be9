//go:build cgo

package vk

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"
	"unsafe"

	vulkan "github.com/vulkan-go/vulkan"
)

// acquireTimeout bounds the wait for a swapchain image; FIFO hands one out
// at the next vertical blank, so this is only reached by a stuck display.
const acquireTimeout = 5 * time.Second

// Surface is a window's VkSurfaceKHR on an instance. The instance destroys
// it at Close, after its devices and their swapchains; Release does sooner,
// and is the only way on a shared instance (see Shared), which never closes.
type Surface struct {
	inst     *Instance
	h        unsafe.Pointer // VkSurfaceKHR
	released bool
}

// VulkanHandle returns the VkInstance as vulkan-go's typed handle, for
// window libraries that take it as an interface{} (go-gl/glfw's
// Window.CreateWindowSurface).
func (i *Instance) VulkanHandle() any { return vulkan.Instance(i.handle) }

// AdoptSurface takes ownership of a surface made for this instance by
// go-gl/glfw: p is what its Window.CreateWindowSurface returns (the address
// of the VkSurfaceKHR, as vulkan-go's SurfaceFromPointer reads it).
func (i *Instance) AdoptSurface(p uintptr) (*Surface, error) {
	if i.closed {
		return nil, errors.New("vulkan: adopting a surface: the instance is closed")
	}
	if p == 0 {
		return nil, errors.New("vulkan: adopting a surface: no surface given")
	}
	h := unsafe.Pointer(vulkan.SurfaceFromPointer(p))
	if h == nil {
		return nil, errors.New("vulkan: adopting a surface: the window library returned a null surface")
	}
	s := &Surface{inst: i, h: h}
	i.dmu.Lock()
	i.surfaces = append(i.surfaces, s)
	i.dmu.Unlock()
	return s, nil
}

// Release destroys the surface now. Devices presenting to it must be
// closed first. Releasing twice is safe.
func (s *Surface) Release() {
	if s == nil || s.released {
		return
	}
	s.released = true
	i := s.inst
	if !i.closed && i.handle != nil {
		C.bvk_destroy_surface(i.gipa, i.handle, s.h)
	}
	i.dmu.Lock()
	defer i.dmu.Unlock()
	for k, o := range i.surfaces {
		if o == s {
			i.surfaces = append(i.surfaces[:k], i.surfaces[k+1:]...)
			break
		}
	}
}

// presentFamily is the first queue family of device index with compute
// that can present to s, or an error saying that the device cannot.
func (i *Instance) presentFamily(index int, s *Surface) (int, error) {
	name := i.devs[index].Name
	if s == nil || s.inst != i || s.released {
		return 0, fmt.Errorf("vulkan: opening device %d (%s): the window surface is released or belongs to another instance", index, name)
	}
	ext := C.CString("VK_KHR_swapchain")
	has := C.bvk_has_device_extension(i.gipa, i.handle, i.phys[index], ext) != 0
	C.free(unsafe.Pointer(ext))
	if !has {
		return 0, fmt.Errorf("vulkan: device %d (%s) cannot present to a window: it lacks VK_KHR_swapchain (choose another with --device; see bitvk devices)", index, name)
	}
	var fam C.int32_t
	if r := C.bvk_present_family(i.gipa, i.handle, i.phys[index], s.h, &fam); r != 0 {
		return 0, fmt.Errorf("vulkan: asking device %d (%s) whether it presents to the window: %s", index, name, resultText(int32(r)))
	}
	if fam < 0 {
		return 0, fmt.Errorf("vulkan: device %d (%s) cannot present to this window: none of its queue families with compute supports the window's surface (choose another with --device; see bitvk devices)", index, name)
	}
	return int(fam), nil
}

// CanPresent reports whether device index has a queue family with compute
// that presents to s, and if not, why.
func (i *Instance) CanPresent(index int, s *Surface) error {
	if index < 0 || index >= len(i.devs) {
		return fmt.Errorf("vulkan: no device %d (there are %d; see bitvk devices)", index, len(i.devs))
	}
	_, err := i.presentFamily(index, s)
	return err
}

// Swapchain is a FIFO (vsync-paced) swapchain on a device's window
// surface. A frame is drawn by a recording into a buffer of pixels, which
// Present copies into the next image and shows.
type Swapchain struct {
	dev        *Device
	c          *C.bvk_swapchain
	info       SwapchainInfo
	waits      atomic.Int64 // Presents that found the queue held by a model's step
	waitedNano atomic.Int64
	released   bool
}

// NewSwapchain makes a swapchain of the window's size (width×height where
// the window system leaves the size to the swapchain), replacing old when
// given (release old afterwards). It returns ErrOutOfDate for a window of
// no size (minimized), and a clear error when the surface cannot take
// copies of 8-bit RGBA pixels.
func (d *Device) NewSwapchain(width, height int, old *Swapchain) (*Swapchain, error) {
	if d.closed {
		return nil, errors.New("vulkan: making a swapchain: the device is closed")
	}
	if d.surface == nil {
		return nil, fmt.Errorf("vulkan: making a swapchain on %s: the device was opened without a window surface (OpenOptions.Surface)", d.info.Name)
	}
	if width <= 0 || height <= 0 {
		return nil, ErrOutOfDate
	}
	i := d.inst
	var oldC *C.bvk_swapchain
	if old != nil && !old.released {
		oldC = old.c
	}
	var ci C.bvk_swapchain_info
	var c *C.bvk_swapchain
	r := C.bvk_create_swapchain(i.gipa, i.handle, i.phys[d.info.Index], d.c, d.surface.h, C.uint32_t(width), C.uint32_t(height), oldC, &ci, &c)
	switch r {
	case 0:
	case C.BVK_NO_TRANSFER_DST:
		return nil, fmt.Errorf("vulkan: the window surface on %s does not let images be copied into (supported usage %#x lacks TRANSFER_DST), which bitvk's drawing needs", d.info.Name, uint32(ci.usage))
	case C.BVK_NO_FORMAT:
		return nil, fmt.Errorf("vulkan: the window surface on %s offers no 8-bit RGBA or BGRA format, which bitvk's drawing needs", d.info.Name)
	case -1000001004: // VK_ERROR_OUT_OF_DATE_KHR
		return nil, ErrOutOfDate
	default:
		return nil, d.errorf(vulkan.Result(r), "making a %d×%d swapchain", width, height)
	}
	s := &Swapchain{dev: d, c: c, info: SwapchainInfo{
		Width: int(ci.width), Height: int(ci.height), Images: int(ci.images), Format: uint32(ci.format),
		BGRA: ci.bgra != 0, Readable: ci.readable != 0,
	}}
	d.mu.Lock()
	d.swapchains = append(d.swapchains, s)
	d.mu.Unlock()
	return s, nil
}

// Info describes the swapchain.
func (s *Swapchain) Info() SwapchainInfo { return s.info }

// Present shows one frame: it acquires the next image, then, holding the
// queue (a model's step never runs beside it), submits draw (a finished
// recording that writes pixels; nil: none) and a copy of pixels (Width×Height
// 32-bit pixels in the swapchain's byte order, rows packed) into the image,
// and, when readback is not nil, a copy of the image into readback (a host
// buffer: a screenshot of what is shown, readable when Present returns),
// waits for them and presents the image. ErrOutOfDate asks for a new
// swapchain; the frame is then lost.
func (s *Swapchain) Present(draw *Recording, pixels, readback *Buffer) error {
	d := s.dev
	need := int64(4 * s.info.Width * s.info.Height)
	switch {
	case s.released || d.closed:
		return errors.New("vulkan: presenting: the swapchain or its device is released")
	case draw != nil && (!draw.finished || draw.released || draw.dev != d):
		return fmt.Errorf("vulkan: presenting: the drawing %s is not a finished recording of this device", draw.name)
	case pixels == nil || pixels.dev != d || pixels.released || pixels.size < need:
		return fmt.Errorf("vulkan: presenting: the pixel buffer must be a live buffer of this device of at least %d bytes (%d×%d)", need, s.info.Width, s.info.Height)
	case readback != nil && (readback.dev != d || readback.released || readback.mapped == nil || readback.size < need):
		return fmt.Errorf("vulkan: presenting: the readback buffer must be a live host buffer of this device of at least %d bytes", need)
	case readback != nil && !s.info.Readable:
		return fmt.Errorf("vulkan: the window surface on %s does not let its images be copied from (no TRANSFER_SRC usage): no screenshot can be read back", d.info.Name)
	}
	var idx C.uint32_t
	switch r := C.bvk_swapchain_acquire(s.c, C.uint64_t(acquireTimeout), &idx); r {
	case 0, 1000001003: // VK_SUCCESS, VK_SUBOPTIMAL_KHR (shown anyway; the next frame makes a new swapchain)
	case -1000001004: // VK_ERROR_OUT_OF_DATE_KHR
		return ErrOutOfDate
	case 2, 1: // VK_TIMEOUT, VK_NOT_READY
		return fmt.Errorf("vulkan: no swapchain image became free within %v (is the display stuck?)", acquireTimeout)
	default:
		return d.errorf(vulkan.Result(r), "acquiring a swapchain image")
	}
	var drawCmd, rb unsafe.Pointer
	if draw != nil {
		drawCmd = unsafe.Pointer(draw.cmd)
	}
	if readback != nil {
		rb = unsafe.Pointer(readback.buf)
	}
	d.lockQueue(&s.waits, &s.waitedNano)
	r := C.bvk_swapchain_present(s.c, idx, drawCmd, unsafe.Pointer(pixels.buf), rb, C.uint64_t(submitTimeout))
	d.qmu.Unlock()
	switch r {
	case 0:
		return nil
	case 1000001003, -1000001004: // VK_SUBOPTIMAL_KHR, VK_ERROR_OUT_OF_DATE_KHR
		return ErrOutOfDate
	case 2:
		return fmt.Errorf("vulkan: drawing a frame: no result after %v (device hung?)", submitTimeout)
	}
	return d.errorf(vulkan.Result(r), "presenting a frame")
}

// QueueWaits says how many Presents found the queue held by a model's step
// and how long they waited for it in all.
func (s *Swapchain) QueueWaits() (n int, total time.Duration) {
	return int(s.waits.Load()), time.Duration(s.waitedNano.Load())
}

// Release destroys the swapchain, waiting for the device first. Releasing
// twice is safe.
func (s *Swapchain) Release() {
	if s == nil || s.released || s.dev.closed {
		return
	}
	s.dev.waitIdle()
	s.free()
	d := s.dev
	d.mu.Lock()
	defer d.mu.Unlock()
	for k, o := range d.swapchains {
		if o == s {
			d.swapchains = append(d.swapchains[:k], d.swapchains[k+1:]...)
			break
		}
	}
}

func (s *Swapchain) free() {
	if s.released {
		return
	}
	s.released = true
	C.bvk_destroy_swapchain(s.c)
	s.c = nil
}
