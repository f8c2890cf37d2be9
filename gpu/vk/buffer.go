//go:build cgo

package vk

import (
	"fmt"
	"unsafe"

	vulkan "github.com/vulkan-go/vulkan"
)

// Memory property bits (VkMemoryPropertyFlagBits).
const (
	memDeviceLocal  = 1
	memHostVisible  = 2
	memHostCoherent = 4
	memHostCached   = 8
)

// Buffer is a storage buffer with its own device memory.
type Buffer struct {
	dev      *Device
	name     string
	size     int64
	host     bool
	buf      vulkan.Buffer
	mem      vulkan.DeviceMemory
	mapped   []byte // host buffers only
	released bool
}

// NewBuffer creates a storage buffer of size bytes usable as a copy source
// and destination. host=false gives device-local memory; host=true gives
// host-visible, coherent (and where possible cached) memory that stays
// mapped: see Mapped. name appears in errors.
func (d *Device) NewBuffer(name string, size int64, host bool) (*Buffer, error) {
	if d.closed {
		return nil, fmt.Errorf("vulkan: allocating %s: the device is closed", name)
	}
	if size <= 0 {
		return nil, fmt.Errorf("vulkan: allocating %s: size %d is not positive", name, size)
	}
	if m := d.info.MaxMemoryAllocationSize; m > 0 && uint64(size) > m {
		return nil, fmt.Errorf("vulkan: allocating %s (%s) on %s: larger than the device's maxMemoryAllocationSize %s (split it)",
			name, formatSize(size), d.info.Name, formatSize(int64(m)))
	}
	what := fmt.Sprintf("allocating %s (%s)", name, formatSize(size))
	b := &Buffer{dev: d, name: name, size: size, host: host}
	var buf vulkan.Buffer
	if r := vulkan.CreateBuffer(d.dev, &vulkan.BufferCreateInfo{
		SType:       vulkan.StructureTypeBufferCreateInfo,
		Size:        vulkan.DeviceSize(size),
		Usage:       vulkan.BufferUsageFlags(vulkan.BufferUsageStorageBufferBit | vulkan.BufferUsageTransferSrcBit | vulkan.BufferUsageTransferDstBit),
		SharingMode: vulkan.SharingModeExclusive,
	}, nil, &buf); r != vulkan.Success {
		return nil, d.errorf(r, "%s", what)
	}
	b.buf = buf
	var req vulkan.MemoryRequirements
	vulkan.GetBufferMemoryRequirements(d.dev, buf, &req)
	req.Deref()
	typ := d.memoryType(req.MemoryTypeBits, host)
	if typ < 0 {
		b.free()
		return nil, fmt.Errorf("vulkan: %s on %s: no suitable memory type (host=%v)", what, d.info.Name, host)
	}
	var mem vulkan.DeviceMemory
	if r := vulkan.AllocateMemory(d.dev, &vulkan.MemoryAllocateInfo{
		SType:           vulkan.StructureTypeMemoryAllocateInfo,
		AllocationSize:  req.Size,
		MemoryTypeIndex: uint32(typ),
	}, nil, &mem); r != vulkan.Success {
		b.free()
		return nil, d.errorf(r, "%s", what)
	}
	b.mem = mem
	if r := vulkan.BindBufferMemory(d.dev, buf, mem, 0); r != vulkan.Success {
		b.free()
		return nil, d.errorf(r, "binding memory of %s", name)
	}
	if host {
		var p unsafe.Pointer
		if r := vulkan.MapMemory(d.dev, mem, 0, vulkan.DeviceSize(size), 0, &p); r != vulkan.Success {
			b.free()
			return nil, d.errorf(r, "mapping %s", name)
		}
		b.mapped = unsafe.Slice((*byte)(p), size)
	}
	d.mu.Lock()
	d.buffers = append(d.buffers, b)
	d.mu.Unlock()
	return b, nil
}

// memoryType picks a memory type index allowed by bits: for host buffers
// HOST_VISIBLE|HOST_COHERENT, preferring HOST_CACHED (fast readback); for
// device buffers DEVICE_LOCAL, else any. It returns -1 when none fits.
func (d *Device) memoryType(bits uint32, host bool) int {
	best, bestScore := -1, -1
	for i, t := range d.info.memTypes {
		if bits&(1<<i) == 0 {
			continue
		}
		score := 0
		if host {
			if t.flags&(memHostVisible|memHostCoherent) != memHostVisible|memHostCoherent {
				continue
			}
			if t.flags&memHostCached != 0 {
				score = 1
			}
		} else if t.flags&memDeviceLocal != 0 {
			score = 1
		}
		if score > bestScore {
			best, bestScore = i, score
		}
	}
	return best
}

// Size returns the buffer's size in bytes.
func (b *Buffer) Size() int64 { return b.size }

// Name returns the name given to NewBuffer.
func (b *Buffer) Name() string { return b.name }

// Mapped returns the mapped bytes of a host buffer (len Size), nil for a
// device buffer. They stay valid until the buffer or its device is released.
func (b *Buffer) Mapped() []byte { return b.mapped }

// Release frees the buffer now instead of at Device.Close. No recording
// that uses it may be submitted afterwards. Releasing twice is safe.
func (b *Buffer) Release() {
	if b == nil || b.released || b.dev.closed {
		return
	}
	b.dev.waitIdle()
	b.free()
	d := b.dev
	d.mu.Lock()
	defer d.mu.Unlock()
	for k, o := range d.buffers {
		if o == b {
			d.buffers = append(d.buffers[:k], d.buffers[k+1:]...)
			break
		}
	}
	if d.staging == b {
		d.staging = nil
	}
}

// free destroys the Vulkan objects.
func (b *Buffer) free() {
	if b.released {
		return
	}
	b.released = true
	d := b.dev.dev
	if b.mapped != nil {
		vulkan.UnmapMemory(d, b.mem)
		b.mapped = nil
	}
	if b.buf != nil {
		vulkan.DestroyBuffer(d, b.buf, nil)
		b.buf = nil
	}
	if b.mem != nil {
		vulkan.FreeMemory(d, b.mem, nil)
		b.mem = nil
	}
}
