//go:build cgo

package vk

/*
#include "shim.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	vulkan "github.com/vulkan-go/vulkan"
)

// stagingSize is the size of the host-visible buffer Upload and Download
// move data through, chunk by chunk.
const stagingSize = 32 << 20

// submitTimeout bounds how long one Submit waits for the device: long
// enough for a software device (lavapipe) to run a whole prefill batch of a
// 2B model on two cores under load, short of waiting forever on a hung GPU.
const submitTimeout = 10 * time.Minute

// Device is an opened logical device with one compute queue. It owns every
// buffer, kernel, recording and swapchain made from it and releases them on
// Close.
//
// Its queue is shared by a model and a window drawing on another goroutine:
// Submit holds the queue from submit to completion, and so does a
// swapchain's Present, so that the GPU never runs a window frame during a
// model's step. How long Submit waited for a frame is counted (QueueWaits).
// Creating and releasing buffers, kernels, recordings and swapchains is
// safe from two goroutines; Upload, Download and Fill (one staging buffer,
// one transfer command buffer) belong to one.
type Device struct {
	inst    *Instance
	info    DeviceInfo
	enabled Features
	c       *C.bvk_device
	dev     vulkan.Device
	queue   vulkan.Queue
	pool    vulkan.CommandPool
	fence   vulkan.Fence
	xfer    vulkan.CommandBuffer // for Upload, Download and Fill
	staging *Buffer              // made on first Upload or Download
	surface *Surface             // the window surface the queue presents to (OpenOptions)

	pmu        sync.Mutex   // the command pool: allocating, recording into and freeing its command buffers
	qmu        sync.Mutex   // the queue: held across each submit and its wait, a present, vkDeviceWaitIdle
	waits      atomic.Int64 // Submits that found the queue held by a frame
	waitedNano atomic.Int64 // and how long they waited for it

	mu         sync.Mutex // guards the lists below
	buffers    []*Buffer  // in creation order
	kernels    []*Kernel
	recs       []*Recording
	swapchains []*Swapchain
	closed     bool
}

// Open creates a logical device on the physical device at index, with one
// queue of its compute family and the features bitvk's kernels use enabled
// where present (see Device.Enabled).
func (i *Instance) Open(index int) (*Device, error) { return i.OpenWith(index, OpenOptions{}) }

// OpenWith is Open with options: a device that also presents to a window.
func (i *Instance) OpenWith(index int, o OpenOptions) (*Device, error) {
	if i.closed {
		return nil, errors.New("vulkan: opening a device: the instance is closed")
	}
	if index < 0 || index >= len(i.devs) {
		return nil, fmt.Errorf("vulkan: opening device %d: there are %d devices (see bitvk devices)", index, len(i.devs))
	}
	info := i.devs[index]
	if info.ComputeQueueFamily < 0 {
		return nil, fmt.Errorf("vulkan: opening device %d (%s): it has no compute queue", index, info.Name)
	}
	f := info.Features
	enabled := Features{Storage16: f.Storage16, Storage8: f.Storage8, Int8: f.Int8, Float16: f.Float16, Int64: f.Int64, IntegerDot: f.IntegerDot,
		CooperativeMatrix: info.coopNV, VulkanMemoryModel: info.coopNV && f.VulkanMemoryModel}
	var mask uint32
	for _, x := range []struct {
		on  bool
		bit uint32
	}{
		{enabled.Storage16, C.BVK_F_STORAGE16},
		{enabled.Storage8, C.BVK_F_STORAGE8},
		{enabled.Int8, C.BVK_F_INT8},
		{enabled.Float16, C.BVK_F_FLOAT16},
		{enabled.Int64, C.BVK_F_INT64},
		{enabled.IntegerDot, C.BVK_F_INTEGER_DOT},
		{enabled.CooperativeMatrix, C.BVK_F_COOPMAT_NV},
		{enabled.VulkanMemoryModel, C.BVK_F_VULKAN_MEMORY_MODEL},
	} {
		if x.on {
			mask |= x.bit
		}
	}
	var exts []string
	if o.Surface != nil {
		fam, err := i.presentFamily(index, o.Surface)
		if err != nil {
			return nil, err
		}
		info.ComputeQueueFamily = fam
		info.TimestampBits = info.familyTimestampBits[fam]
		exts = append(exts, "VK_KHR_swapchain")
	}
	d := &Device{inst: i, info: info, enabled: enabled, surface: o.Surface}
	extra, freeExtra := cStrings(exts)
	defer freeExtra()
	if r := C.bvk_create_device(i.gipa, i.handle, i.phys[index], C.uint32_t(i.api), C.uint32_t(info.ComputeQueueFamily), C.uint32_t(mask),
		extra, C.uint32_t(len(exts)), &d.c); r != 0 {
		return nil, fmt.Errorf("vulkan: opening device %d (%s): %s", index, info.Name, resultText(int32(r)))
	}
	d.dev = vulkan.Device(C.bvk_device_handle(d.c))
	d.queue = vulkan.Queue(C.bvk_device_queue(d.c))
	i.dmu.Lock()
	i.open = append(i.open, d)
	i.dmu.Unlock()

	var pool vulkan.CommandPool
	if r := vulkan.CreateCommandPool(d.dev, &vulkan.CommandPoolCreateInfo{
		SType:            vulkan.StructureTypeCommandPoolCreateInfo,
		Flags:            vulkan.CommandPoolCreateFlags(vulkan.CommandPoolCreateResetCommandBufferBit),
		QueueFamilyIndex: uint32(info.ComputeQueueFamily),
	}, nil, &pool); r != vulkan.Success {
		d.Close()
		return nil, d.errorf(r, "creating the command pool")
	}
	d.pool = pool
	var fence vulkan.Fence
	if r := vulkan.CreateFence(d.dev, &vulkan.FenceCreateInfo{SType: vulkan.StructureTypeFenceCreateInfo}, nil, &fence); r != vulkan.Success {
		d.Close()
		return nil, d.errorf(r, "creating the fence")
	}
	d.fence = fence
	cmd, err := d.allocCommandBuffer("transfers")
	if err != nil {
		d.Close()
		return nil, err
	}
	d.xfer = cmd
	return d, nil
}

// errorf formats a failed Vulkan call: "vulkan: <what> on <device>: <result>".
func (d *Device) errorf(r vulkan.Result, format string, args ...any) error {
	return fmt.Errorf("vulkan: %s on %s: %s", fmt.Sprintf(format, args...), d.info.Name, resultText(int32(r)))
}

// Info describes the physical device.
func (d *Device) Info() DeviceInfo { return d.info }

// Enabled reports the features Open enabled: Storage16, Storage8, Int8,
// Float16, Int64 and IntegerDot where the device has them. The others in
// Info().Features are reported only.
func (d *Device) Enabled() Features { return d.enabled }

// allocCommandBuffer allocates one primary command buffer from the pool.
func (d *Device) allocCommandBuffer(what string) (vulkan.CommandBuffer, error) {
	cmds := make([]vulkan.CommandBuffer, 1)
	if r := vulkan.AllocateCommandBuffers(d.dev, &vulkan.CommandBufferAllocateInfo{
		SType:              vulkan.StructureTypeCommandBufferAllocateInfo,
		CommandPool:        d.pool,
		Level:              vulkan.CommandBufferLevelPrimary,
		CommandBufferCount: 1,
	}, cmds); r != vulkan.Success {
		return nil, d.errorf(r, "allocating the command buffer for %s", what)
	}
	return cmds[0], nil
}

// lockQueue takes the queue, counting in waits and waitedNano (when given)
// how long another goroutine kept it.
func (d *Device) lockQueue(waits, waitedNano *atomic.Int64) {
	if d.qmu.TryLock() {
		return
	}
	start := time.Now()
	d.qmu.Lock()
	if waits != nil {
		waits.Add(1)
		waitedNano.Add(int64(time.Since(start)))
	}
}

// waitIdle is vkDeviceWaitIdle, which needs the queue to itself.
func (d *Device) waitIdle() {
	d.lockQueue(nil, nil)
	defer d.qmu.Unlock()
	vulkan.DeviceWaitIdle(d.dev)
}

// QueueWaits says how many Submits found the queue held by another
// goroutine (a window presenting a frame: see Swapchain.Present) and how
// long they waited for it in all: what drawing a window cost a model.
func (d *Device) QueueWaits() (n int, total time.Duration) {
	return int(d.waits.Load()), time.Duration(d.waitedNano.Load())
}

// submit runs cmd on the queue and waits for it; what names the work in
// errors.
func (d *Device) submit(cmd vulkan.CommandBuffer, what string) error {
	d.lockQueue(&d.waits, &d.waitedNano)
	r := C.bvk_submit(d.c, unsafe.Pointer(cmd), unsafe.Pointer(d.fence), C.uint64_t(submitTimeout))
	d.qmu.Unlock()
	switch r {
	case 0:
		return nil
	case 2: // VK_TIMEOUT
		return fmt.Errorf("vulkan: running %s: no result after %v (device hung?)", what, submitTimeout)
	}
	return fmt.Errorf("vulkan: running %s: %s", what, resultText(int32(r)))
}

// transfer records body into the transfer command buffer between a leading
// barrier (earlier compute and transfer writes become visible) and a
// trailing one (transfer writes become visible to the host), then submits
// it and waits.
func (d *Device) transfer(what string, body func(cmd vulkan.CommandBuffer)) error {
	cmd := d.xfer
	if err := d.recordTransfer(cmd, what, body); err != nil {
		return err
	}
	return d.submit(cmd, what)
}

// recordTransfer records transfer's command buffer, holding the pool.
func (d *Device) recordTransfer(cmd vulkan.CommandBuffer, what string, body func(cmd vulkan.CommandBuffer)) error {
	d.pmu.Lock()
	defer d.pmu.Unlock()
	if r := vulkan.ResetCommandBuffer(cmd, 0); r != vulkan.Success {
		return d.errorf(r, "resetting the transfer command buffer for %s", what)
	}
	if r := vulkan.BeginCommandBuffer(cmd, &vulkan.CommandBufferBeginInfo{
		SType: vulkan.StructureTypeCommandBufferBeginInfo,
		Flags: vulkan.CommandBufferUsageFlags(vulkan.CommandBufferUsageOneTimeSubmitBit),
	}); r != vulkan.Success {
		return d.errorf(r, "beginning the command buffer for %s", what)
	}
	leadingBarrier(cmd)
	body(cmd)
	trailingBarrier(cmd)
	if r := vulkan.EndCommandBuffer(cmd); r != vulkan.Success {
		return d.errorf(r, "recording %s", what)
	}
	return nil
}

// stage returns the staging buffer, creating it on first use.
func (d *Device) stage() (*Buffer, error) {
	if d.staging != nil {
		return d.staging, nil
	}
	size := int64(stagingSize)
	if m := d.info.MaxMemoryAllocationSize; m > 0 && uint64(size) > m {
		size = int64(m)
	}
	b, err := d.NewBuffer("staging", size, true)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	d.staging = b
	d.mu.Unlock()
	return b, nil
}

// checkSpan validates off and n against b for the operation op.
func (d *Device) checkSpan(op string, b *Buffer, off, n int64) error {
	if d.closed {
		return fmt.Errorf("vulkan: %s: the device is closed", op)
	}
	if b == nil {
		return fmt.Errorf("vulkan: %s: nil buffer", op)
	}
	if b.dev != d || b.released {
		return fmt.Errorf("vulkan: %s %q: the buffer is released or belongs to another device", op, b.name)
	}
	if off < 0 || n < 0 || off > b.size || n > b.size-off {
		return fmt.Errorf("vulkan: %s %q: bytes [%d, %d) are outside the buffer's %d bytes", op, b.name, off, off+n, b.size)
	}
	return nil
}

// Upload copies data into dst at byte offset off, through the staging
// buffer in chunks, and waits for the copy to finish.
func (d *Device) Upload(dst *Buffer, off int64, data []byte) error {
	if err := d.checkSpan("uploading to", dst, off, int64(len(data))); err != nil {
		return err
	}
	if dst.mapped != nil { // host memory: no copy through the device needed
		copy(dst.mapped[off:], data)
		return nil
	}
	st, err := d.stage()
	if err != nil {
		return err
	}
	for done := int64(0); done < int64(len(data)); {
		n := min(st.size, int64(len(data))-done)
		copy(st.mapped, data[done:done+n])
		at := off + done
		if err := d.transfer(fmt.Sprintf("upload to %q", dst.name), func(cmd vulkan.CommandBuffer) {
			vulkan.CmdCopyBuffer(cmd, st.buf, dst.buf, 1, []vulkan.BufferCopy{{SrcOffset: 0, DstOffset: vulkan.DeviceSize(at), Size: vulkan.DeviceSize(n)}})
		}); err != nil {
			return err
		}
		done += n
	}
	return nil
}

// Download copies len(dst) bytes of src from byte offset off into dst and
// waits for the copy to finish.
func (d *Device) Download(src *Buffer, off int64, dst []byte) error {
	if err := d.checkSpan("downloading from", src, off, int64(len(dst))); err != nil {
		return err
	}
	if src.mapped != nil {
		// Every submission ends with a barrier to HOST reads and is waited
		// for, so the mapped bytes are current.
		copy(dst, src.mapped[off:])
		return nil
	}
	st, err := d.stage()
	if err != nil {
		return err
	}
	for done := int64(0); done < int64(len(dst)); {
		n := min(st.size, int64(len(dst))-done)
		at := off + done
		if err := d.transfer(fmt.Sprintf("download from %q", src.name), func(cmd vulkan.CommandBuffer) {
			vulkan.CmdCopyBuffer(cmd, src.buf, st.buf, 1, []vulkan.BufferCopy{{SrcOffset: vulkan.DeviceSize(at), DstOffset: 0, Size: vulkan.DeviceSize(n)}})
		}); err != nil {
			return err
		}
		copy(dst[done:done+n], st.mapped)
		done += n
	}
	return nil
}

// Fill sets size bytes of dst from byte offset off to the 32-bit value v
// repeated, and waits. off and size must be multiples of 4.
func (d *Device) Fill(dst *Buffer, off, size int64, v uint32) error {
	if err := d.checkSpan("filling", dst, off, size); err != nil {
		return err
	}
	if off%4 != 0 || size%4 != 0 {
		return fmt.Errorf("vulkan: filling %q: offset %d and size %d must be multiples of 4", dst.name, off, size)
	}
	if size == 0 {
		return nil
	}
	return d.transfer(fmt.Sprintf("fill of %q", dst.name), func(cmd vulkan.CommandBuffer) {
		vulkan.CmdFillBuffer(cmd, dst.buf, vulkan.DeviceSize(off), vulkan.DeviceSize(size), v)
	})
}

// Close waits for the device to be idle and releases, in reverse order of
// creation, its swapchains, recordings, kernels, buffers, command pool,
// fence and the device itself. Closing twice is safe.
func (d *Device) Close() {
	if d == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return
	}
	d.closed = true
	if d.dev != nil {
		d.waitIdle()
	}
	for k := len(d.swapchains) - 1; k >= 0; k-- {
		d.swapchains[k].free()
	}
	d.swapchains = nil
	for k := len(d.recs) - 1; k >= 0; k-- {
		d.recs[k].free()
	}
	d.recs = nil
	for k := len(d.kernels) - 1; k >= 0; k-- {
		d.kernels[k].free()
	}
	d.kernels = nil
	for k := len(d.buffers) - 1; k >= 0; k-- {
		d.buffers[k].free()
	}
	d.buffers, d.staging = nil, nil
	if d.fence != nil {
		vulkan.DestroyFence(d.dev, d.fence, nil)
		d.fence = nil
	}
	if d.pool != nil {
		vulkan.DestroyCommandPool(d.dev, d.pool, nil) // frees d.xfer too
		d.pool, d.xfer = nil, nil
	}
	if d.c != nil {
		C.bvk_destroy_device(d.c)
		d.c, d.dev, d.queue = nil, nil, nil
	}
	d.inst.forget(d)
}

// Barrier stage and access masks: compute and transfer work on both sides.
const (
	stagesComputeTransfer = vulkan.PipelineStageFlags(vulkan.PipelineStageComputeShaderBit | vulkan.PipelineStageTransferBit)
	accessWrites          = vulkan.AccessFlags(vulkan.AccessShaderWriteBit | vulkan.AccessTransferWriteBit)
	accessAll             = vulkan.AccessFlags(vulkan.AccessShaderReadBit | vulkan.AccessShaderWriteBit | vulkan.AccessTransferReadBit | vulkan.AccessTransferWriteBit)
)

// memoryBarrier records one global memory barrier.
func memoryBarrier(cmd vulkan.CommandBuffer, src, dst vulkan.PipelineStageFlags, srcAccess, dstAccess vulkan.AccessFlags) {
	vulkan.CmdPipelineBarrier(cmd, src, dst, 0, 1, []vulkan.MemoryBarrier{{
		SType:         vulkan.StructureTypeMemoryBarrier,
		SrcAccessMask: srcAccess,
		DstAccessMask: dstAccess,
	}}, 0, nil, 0, nil)
}

// computeBarrier orders compute and transfer writes before later compute
// and transfer reads and writes.
func computeBarrier(cmd vulkan.CommandBuffer) {
	memoryBarrier(cmd, stagesComputeTransfer, stagesComputeTransfer, accessWrites, accessAll)
}

// leadingBarrier starts every command buffer: writes of earlier submissions
// (compute, transfer, host) become visible to this one.
func leadingBarrier(cmd vulkan.CommandBuffer) {
	memoryBarrier(cmd, stagesComputeTransfer|vulkan.PipelineStageFlags(vulkan.PipelineStageHostBit), stagesComputeTransfer,
		accessWrites|vulkan.AccessFlags(vulkan.AccessHostWriteBit), accessAll)
}

// trailingBarrier ends every command buffer: its writes become visible to
// the host reading mapped buffers.
func trailingBarrier(cmd vulkan.CommandBuffer) {
	memoryBarrier(cmd, stagesComputeTransfer, vulkan.PipelineStageFlags(vulkan.PipelineStageHostBit), accessWrites, vulkan.AccessFlags(vulkan.AccessHostReadBit))
}
