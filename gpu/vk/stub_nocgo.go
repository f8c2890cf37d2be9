//go:build !cgo

package vk

import (
	"fmt"
	"time"
)

// errNoCgo is what every entry point returns in a build without cgo.
var errNoCgo = fmt.Errorf("%w: bitvk was built without cgo (CGO_ENABLED=0); rebuild with cgo for the Vulkan backend", ErrUnavailable)

// Instance is a Vulkan instance; without cgo none can be created.
type Instance struct{}

// LoaderVersion returns an error wrapping ErrUnavailable: built without cgo.
func LoaderVersion() (string, error) { return "", errNoCgo }

// NewInstance returns an error wrapping ErrUnavailable: built without cgo.
func NewInstance(o InstanceOptions) (*Instance, error) { return nil, errNoCgo }

// Shared returns an error wrapping ErrUnavailable: built without cgo.
func Shared(o InstanceOptions) (*Instance, error) { return nil, errNoCgo }

// InstancesCreated returns 0: built without cgo.
func InstancesCreated() int { return 0 }

// Listener receives an instance's validation messages; without cgo there
// are none.
type Listener struct{}

// Listen returns a listener that receives nothing.
func (i *Instance) Listen() *Listener { return &Listener{} }

// Messages returns no messages.
func (l *Listener) Messages() []string { return nil }

// Close does nothing.
func (l *Listener) Close() {}

// Devices returns no devices.
func (i *Instance) Devices() []DeviceInfo { return nil }

// Messages returns no messages.
func (i *Instance) Messages() []string { return nil }

// Open fails: built without cgo.
func (i *Instance) Open(index int) (*Device, error) { return nil, errNoCgo }

// Close does nothing.
func (i *Instance) Close() {}

// Device is an opened logical device; without cgo none exists.
type Device struct{}

// Info returns the zero DeviceInfo.
func (d *Device) Info() DeviceInfo { return DeviceInfo{} }

// Enabled returns no features.
func (d *Device) Enabled() Features { return Features{} }

// NewBuffer fails: built without cgo.
func (d *Device) NewBuffer(name string, size int64, host bool) (*Buffer, error) {
	return nil, errNoCgo
}

// Upload fails: built without cgo.
func (d *Device) Upload(dst *Buffer, off int64, data []byte) error { return errNoCgo }

// Download fails: built without cgo.
func (d *Device) Download(src *Buffer, off int64, dst []byte) error { return errNoCgo }

// Fill fails: built without cgo.
func (d *Device) Fill(dst *Buffer, off, size int64, v uint32) error { return errNoCgo }

// NewKernel fails: built without cgo.
func (d *Device) NewKernel(name string, spirv []byte, buffers int, pushSize int, spec []uint32) (*Kernel, error) {
	return nil, errNoCgo
}

// Record returns a recording whose Finish fails.
func (d *Device) Record(name string) *Recording { return &Recording{name: name} }

// Submit fails: built without cgo.
func (d *Device) Submit(r *Recording) error { return errNoCgo }

// Close does nothing.
func (d *Device) Close() {}

// Buffer is a storage buffer; without cgo none exists.
type Buffer struct{}

// Size returns 0.
func (b *Buffer) Size() int64 { return 0 }

// Name returns "".
func (b *Buffer) Name() string { return "" }

// Mapped returns nil.
func (b *Buffer) Mapped() []byte { return nil }

// Release does nothing.
func (b *Buffer) Release() {}

// Kernel is a compute pipeline; without cgo none exists.
type Kernel struct{}

// Name returns "".
func (k *Kernel) Name() string { return "" }

// Release does nothing.
func (k *Kernel) Release() {}

// Recording is a list of commands; without cgo it cannot be finished.
type Recording struct{ name string }

// Dispatch does nothing.
func (r *Recording) Dispatch(k *Kernel, bufs []Range, push []byte, x, y, z uint32) {}

// Barrier does nothing.
func (r *Recording) Barrier() {}

// Copy does nothing.
func (r *Recording) Copy(src, dst Range) {}

// Fill does nothing.
func (r *Recording) Fill(dst Range, v uint32) {}

// Finish fails: built without cgo.
func (r *Recording) Finish() error { return errNoCgo }

// Name returns the name given to Record.
func (r *Recording) Name() string { return r.name }

// Release does nothing.
func (r *Recording) Release() {}

func (r *Recording) Note(label string, bytes int64) {}

func (r *Recording) Profile() error { return errNoCgo }

func (r *Recording) Timings() ([]Timing, error) { return nil, errNoCgo }

func (r *Recording) Counts() Counts { return Counts{} }

// OpenWith fails: built without cgo.
func (i *Instance) OpenWith(index int, o OpenOptions) (*Device, error) { return nil, errNoCgo }

// VulkanHandle returns nil: built without cgo.
func (i *Instance) VulkanHandle() any { return nil }

// AdoptSurface fails: built without cgo.
func (i *Instance) AdoptSurface(p uintptr) (*Surface, error) { return nil, errNoCgo }

// CanPresent fails: built without cgo.
func (i *Instance) CanPresent(index int, s *Surface) error { return errNoCgo }

// QueueWaits returns nothing.
func (d *Device) QueueWaits() (int, time.Duration) { return 0, 0 }

// NewSwapchain fails: built without cgo.
func (d *Device) NewSwapchain(width, height int, old *Swapchain) (*Swapchain, error) {
	return nil, errNoCgo
}

// Surface is a window surface; without cgo none exists.
type Surface struct{}

// Release does nothing.
func (s *Surface) Release() {}

// Swapchain is a window's swapchain; without cgo none exists.
type Swapchain struct{}

// Info returns the zero SwapchainInfo.
func (s *Swapchain) Info() SwapchainInfo { return SwapchainInfo{} }

// Present fails: built without cgo.
func (s *Swapchain) Present(draw *Recording, pixels, readback *Buffer) error { return errNoCgo }

// QueueWaits returns nothing.
func (s *Swapchain) QueueWaits() (int, time.Duration) { return 0, 0 }

// Release does nothing.
func (s *Swapchain) Release() {}
