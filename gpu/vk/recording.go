//go:build cgo

package vk

/*
#include "shim.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"unsafe"

	vulkan "github.com/vulkan-go/vulkan"
)

// commandKind says what a recorded command does.
type commandKind int

const (
	cmdDispatch commandKind = iota
	cmdBarrier
	cmdCopy
	cmdFill
)

// command is one recorded command, with its ranges already resolved to
// absolute offsets and sizes.
type command struct {
	kind    commandKind
	kernel  *Kernel
	bufs    []span // dispatch: one per binding
	push    []byte
	x, y, z uint32
	src     span // copy
	dst     span // copy, fill
	value   uint32
	label   string // from Note: what the command is for, in profiles
	bytes   int64  // from Note: the memory traffic it needs, in profiles
}

// span is a resolved Range.
type span struct {
	buf       *Buffer
	off, size int64
}

// Recording is a list of dispatches, copies, fills and barriers. Finish
// turns it into a command buffer once; Device.Submit replays it as often as
// wanted, so buffers are read at each submit, never baked in.
type Recording struct {
	dev      *Device
	name     string
	cmds     []command
	err      error // the first error met while recording
	finished bool
	released bool
	cmd      vulkan.CommandBuffer
	pool     vulkan.DescriptorPool

	note    *command // label and bytes for the next command, from Note
	profile bool     // Finish adds timestamps (see Profile)
	queries vulkan.QueryPool
	nquery  uint32
}

// Record starts a recording; name appears in errors.
func (d *Device) Record(name string) *Recording {
	r := &Recording{dev: d, name: name}
	if d.closed {
		r.err = fmt.Errorf("vulkan: recording %s: the device is closed", name)
		return r
	}
	d.mu.Lock()
	d.recs = append(d.recs, r)
	d.mu.Unlock()
	return r
}

// fail keeps the first error, naming the command by index.
func (r *Recording) fail(what string, format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("vulkan: recording %s: command %d (%s): %s", r.name, len(r.cmds), what, fmt.Sprintf(format, args...))
	}
}

// usable reports whether commands may still be added.
func (r *Recording) usable(what string) bool {
	switch {
	case r.err != nil:
		return false
	case r.released:
		r.fail(what, "the recording is released")
		return false
	case r.finished:
		r.fail(what, "the recording is already finished")
		return false
	}
	return true
}

// resolve checks rg against its buffer and returns its absolute span; Size 0
// means to the end of the buffer.
func (r *Recording) resolve(rg Range) (span, error) {
	b := rg.Buf
	switch {
	case b == nil:
		return span{}, errors.New("nil buffer")
	case b.dev != r.dev:
		return span{}, fmt.Errorf("buffer %q belongs to another device", b.name)
	case b.released:
		return span{}, fmt.Errorf("buffer %q is released", b.name)
	case rg.Off < 0 || rg.Size < 0 || rg.Off > b.size:
		return span{}, fmt.Errorf("range [offset %d, size %d] is outside buffer %q of %d bytes", rg.Off, rg.Size, b.name, b.size)
	}
	size := rg.Size
	if size == 0 {
		size = b.size - rg.Off
	}
	if size > b.size-rg.Off {
		return span{}, fmt.Errorf("range [offset %d, size %d] is outside buffer %q of %d bytes", rg.Off, rg.Size, b.name, b.size)
	}
	if size == 0 {
		return span{}, fmt.Errorf("range at offset %d of buffer %q is empty", rg.Off, b.name)
	}
	return span{buf: b, off: rg.Off, size: size}, nil
}

// Dispatch records k over x×y×z workgroups with bufs bound to bindings
// 0..len(bufs)-1 and push as its push constants. A zero group count skips
// the dispatch. Errors surface at Finish.
func (r *Recording) Dispatch(k *Kernel, bufs []Range, push []byte, x, y, z uint32) {
	what := "dispatch"
	if k != nil {
		what = "dispatch " + k.name
	}
	if !r.usable(what) {
		return
	}
	info := r.dev.info
	switch {
	case k == nil:
		r.fail(what, "nil kernel")
		return
	case k.dev != r.dev || k.released:
		r.fail(what, "the kernel is released or belongs to another device")
		return
	case len(bufs) != k.buffers:
		r.fail(what, "%d buffers given, the kernel binds %d", len(bufs), k.buffers)
		return
	case len(push) != k.pushSize:
		r.fail(what, "%d bytes of push constants given, the kernel takes %d", len(push), k.pushSize)
		return
	}
	c := command{kind: cmdDispatch, kernel: k, x: x, y: y, z: z}
	for i, rg := range bufs {
		s, err := r.resolve(rg)
		if err != nil {
			r.fail(what, "binding %d: %v", i, err)
			return
		}
		if a := info.MinStorageBufferOffsetAlignment; a > 0 && uint64(s.off)%a != 0 {
			r.fail(what, "binding %d: offset %d in buffer %q is not a multiple of the device's minStorageBufferOffsetAlignment %d", i, s.off, s.buf.name, a)
			return
		}
		if uint64(s.size) > info.MaxStorageBufferRange {
			r.fail(what, "binding %d: %d bytes of buffer %q exceed the device's maxStorageBufferRange %d (split it)", i, s.size, s.buf.name, info.MaxStorageBufferRange)
			return
		}
		c.bufs = append(c.bufs, s)
	}
	for i, n := range [3]uint32{x, y, z} {
		if n > info.MaxComputeWorkGroupCount[i] {
			r.fail(what, "group count %d×%d×%d exceeds the device's maximum %v", x, y, z, info.MaxComputeWorkGroupCount)
			return
		}
	}
	if x == 0 || y == 0 || z == 0 {
		r.note = nil
		return
	}
	c.push = append([]byte(nil), push...)
	r.add(c)
}

// add appends c with the pending note, if any.
func (r *Recording) add(c command) {
	if r.note != nil {
		c.label, c.bytes = r.note.label, r.note.bytes
		r.note = nil
	}
	r.cmds = append(r.cmds, c)
}

// Note labels the next dispatch, copy or fill for profiles: label says what
// it is for (e.g. "ffn down"), bytes the memory traffic it needs at least
// (weights, activations and cache read, results written).
func (r *Recording) Note(label string, bytes int64) {
	if r.usable("note") {
		r.note = &command{label: label, bytes: bytes}
	}
}

// Barrier records a global memory barrier: compute-shader and transfer
// writes before it are visible to compute-shader and transfer reads and
// writes after it.
func (r *Recording) Barrier() {
	if r.usable("barrier") {
		r.cmds = append(r.cmds, command{kind: cmdBarrier})
	}
}

// Copy records a buffer-to-buffer copy. Size 0 on src means to its end; dst
// Size 0 then takes the source's size, otherwise the sizes must match.
func (r *Recording) Copy(src, dst Range) {
	const what = "copy"
	if !r.usable(what) {
		return
	}
	s, err := r.resolve(src)
	if err != nil {
		r.fail(what, "source: %v", err)
		return
	}
	if dst.Size == 0 {
		dst.Size = s.size
	}
	t, err := r.resolve(dst)
	if err != nil {
		r.fail(what, "destination: %v", err)
		return
	}
	if t.size != s.size {
		r.fail(what, "source is %d bytes, destination %d", s.size, t.size)
		return
	}
	if s.buf == t.buf && s.off < t.off+t.size && t.off < s.off+s.size {
		r.fail(what, "source and destination overlap in buffer %q", s.buf.name)
		return
	}
	r.add(command{kind: cmdCopy, src: s, dst: t})
}

// Fill records setting dst to the 32-bit value v repeated. Offset and size
// must be multiples of 4 (Size 0: to the end, rounded down to 4 bytes).
func (r *Recording) Fill(dst Range, v uint32) {
	const what = "fill"
	if !r.usable(what) {
		return
	}
	t, err := r.resolve(dst)
	if err != nil {
		r.fail(what, "%v", err)
		return
	}
	if dst.Size == 0 {
		t.size &^= 3
	}
	if t.off%4 != 0 || t.size%4 != 0 || t.size == 0 {
		r.fail(what, "offset %d and size %d in buffer %q must be positive multiples of 4", t.off, t.size, t.buf.name)
		return
	}
	r.add(command{kind: cmdFill, dst: t, value: v})
}

// Finish translates the recorded commands into a command buffer: one
// descriptor pool sized for the recording, one descriptor set per dispatch,
// and a barrier at each end (see leadingBarrier, trailingBarrier). It
// returns the first error met while recording. Finishing twice is a no-op.
func (r *Recording) Finish() error {
	if r.err != nil {
		return r.err
	}
	if r.released {
		return fmt.Errorf("vulkan: finishing %s: the recording is released", r.name)
	}
	if r.finished {
		return nil
	}
	if err := r.build(); err != nil {
		r.destroy()
		r.err = err
		return err
	}
	r.finished = true
	return nil
}

// build creates the descriptor pool and sets and records the command buffer.
func (r *Recording) build() error {
	d := r.dev
	d.pmu.Lock()
	defer d.pmu.Unlock()
	nsets, ndesc := 0, 0
	for _, c := range r.cmds {
		if c.kind == cmdDispatch && len(c.bufs) > 0 {
			nsets++
			ndesc += len(c.bufs)
		}
	}
	sets := make([]vulkan.DescriptorSet, len(r.cmds))
	if nsets > 0 {
		var p unsafe.Pointer
		if res := C.bvk_descriptor_pool(d.c, C.uint32_t(nsets), C.uint32_t(ndesc), &p); res != 0 {
			return d.errorf(vulkan.Result(res), "creating the descriptor pool of %s (%d sets)", r.name, nsets)
		}
		pool := vulkan.DescriptorPool(p)
		r.pool = pool
		for i, c := range r.cmds {
			if c.kind != cmdDispatch || len(c.bufs) == 0 {
				continue
			}
			// Allocated and written in the shim, every structure on the C
			// stack (see bvk_descriptor_set for why not vulkan-go).
			var bufs, offs, sizes [C.BVK_MAX_BINDINGS]C.uint64_t
			for j, s := range c.bufs {
				bufs[j] = C.uint64_t(uintptr(unsafe.Pointer(s.buf.buf)))
				offs[j], sizes[j] = C.uint64_t(s.off), C.uint64_t(s.size)
			}
			var set unsafe.Pointer
			if res := C.bvk_descriptor_set(d.c, unsafe.Pointer(pool), unsafe.Pointer(c.kernel.setLay), &bufs[0], &offs[0], &sizes[0], C.uint32_t(len(c.bufs)), &set); res != 0 {
				return d.errorf(vulkan.Result(res), "allocating the descriptor set of %s command %d (%s)", r.name, i, c.kernel.name)
			}
			sets[i] = vulkan.DescriptorSet(set)
		}
	}
	cmd, err := d.allocCommandBuffer(r.name)
	if err != nil {
		return err
	}
	r.cmd = cmd
	// No ONE_TIME_SUBMIT: the buffer is replayed by every Submit.
	if res := vulkan.BeginCommandBuffer(cmd, &vulkan.CommandBufferBeginInfo{SType: vulkan.StructureTypeCommandBufferBeginInfo}); res != vulkan.Success {
		return d.errorf(res, "beginning the command buffer of %s", r.name)
	}
	if r.profile {
		if err := r.makeQueries(); err != nil {
			return err
		}
		vulkan.CmdResetQueryPool(cmd, r.queries, 0, r.nquery)
	}
	leadingBarrier(cmd)
	query := uint32(0)
	stamp := func() {
		if r.profile {
			vulkan.CmdWriteTimestamp(cmd, vulkan.PipelineStageBottomOfPipeBit, r.queries, query)
			query++
		}
	}
	stamp()
	for i, c := range r.cmds {
		switch c.kind {
		case cmdDispatch:
			k := c.kernel
			vulkan.CmdBindPipeline(cmd, vulkan.PipelineBindPointCompute, k.pipeline)
			if len(c.bufs) > 0 {
				vulkan.CmdBindDescriptorSets(cmd, vulkan.PipelineBindPointCompute, k.layout, 0, 1, sets[i:i+1], 0, nil)
			}
			if len(c.push) > 0 {
				vulkan.CmdPushConstants(cmd, k.layout, vulkan.ShaderStageFlags(vulkan.ShaderStageComputeBit), 0, uint32(len(c.push)), unsafe.Pointer(&c.push[0]))
			}
			vulkan.CmdDispatch(cmd, c.x, c.y, c.z)
		case cmdBarrier:
			computeBarrier(cmd)
		case cmdCopy:
			vulkan.CmdCopyBuffer(cmd, c.src.buf.buf, c.dst.buf.buf, 1, []vulkan.BufferCopy{{
				SrcOffset: vulkan.DeviceSize(c.src.off), DstOffset: vulkan.DeviceSize(c.dst.off), Size: vulkan.DeviceSize(c.src.size),
			}})
		case cmdFill:
			vulkan.CmdFillBuffer(cmd, c.dst.buf.buf, vulkan.DeviceSize(c.dst.off), vulkan.DeviceSize(c.dst.size), c.value)
		}
		if c.kind != cmdBarrier {
			stamp()
		}
	}
	trailingBarrier(cmd)
	if res := vulkan.EndCommandBuffer(cmd); res != vulkan.Success {
		return d.errorf(res, "recording the command buffer of %s", r.name)
	}
	return nil
}

// Submit runs a finished recording on the queue and waits for it to
// complete (up to a minute). It may be called any number of times, not
// concurrently.
func (d *Device) Submit(r *Recording) error {
	switch {
	case r == nil:
		return errors.New("vulkan: submitting a nil recording")
	case d.closed:
		return fmt.Errorf("vulkan: running %s: the device is closed", r.name)
	case r.dev != d:
		return fmt.Errorf("vulkan: running %s: the recording belongs to another device", r.name)
	case r.released:
		return fmt.Errorf("vulkan: running %s: the recording is released", r.name)
	case !r.finished:
		return fmt.Errorf("vulkan: running %s: the recording is not finished (call Finish)", r.name)
	}
	return d.submit(r.cmd, r.name)
}

// Name returns the name given to Record.
func (r *Recording) Name() string { return r.name }

// Release frees the recording's command buffer and descriptor pool.
// Releasing twice is safe.
func (r *Recording) Release() {
	if r == nil || r.released {
		return
	}
	// A submit that timed out may still be running on the device: its
	// command buffer and descriptor sets must outlive it.
	if d := r.dev; d.dev != nil && !d.closed {
		d.waitIdle()
	}
	r.free()
	d := r.dev
	d.mu.Lock()
	defer d.mu.Unlock()
	for i, o := range d.recs {
		if o == r {
			d.recs = append(d.recs[:i], d.recs[i+1:]...)
			break
		}
	}
}

// free destroys the Vulkan objects and marks the recording released.
func (r *Recording) free() {
	if r.released {
		return
	}
	r.released = true
	r.finished = false
	r.destroy()
}

// destroy destroys the command buffer and descriptor pool, if made.
func (r *Recording) destroy() {
	d := r.dev
	if d.closed && d.dev == nil {
		return // the device (and its pools) are gone already
	}
	if r.cmd != nil {
		d.pmu.Lock()
		vulkan.FreeCommandBuffers(d.dev, d.pool, 1, []vulkan.CommandBuffer{r.cmd})
		d.pmu.Unlock()
		r.cmd = nil
	}
	if r.pool != nil {
		vulkan.DestroyDescriptorPool(d.dev, r.pool, nil)
		r.pool = nil
	}
	if r.queries != nil {
		vulkan.DestroyQueryPool(d.dev, r.queries, nil)
		r.queries = nil
	}
}
