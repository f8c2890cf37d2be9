//go:build cgo

package vk

/*
#include "shim.h"
*/
import "C"

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"unsafe"

	vulkan "github.com/vulkan-go/vulkan"
)

// Kernel is one compute pipeline: a SPIR-V module's "main" with its
// specialization constants applied, descriptor set 0 holding storage
// buffers at bindings 0..buffers-1, and an optional push-constant block.
type Kernel struct {
	dev      *Device
	name     string
	buffers  int
	pushSize int
	setLay   vulkan.DescriptorSetLayout
	layout   vulkan.PipelineLayout
	pipeline vulkan.Pipeline
	released bool
}

// NewKernel creates the pipeline for spirv (a SPIR-V binary, little-endian
// words). buffers is the number of storage-buffer bindings, pushSize the
// push-constant block size in bytes (0: none), and spec[i] the value of the
// specialization constant with constant_id i (4 bytes each).
func (d *Device) NewKernel(name string, spirv []byte, buffers int, pushSize int, spec []uint32) (*Kernel, error) {
	if d.closed {
		return nil, fmt.Errorf("vulkan: kernel %s: the device is closed", name)
	}
	switch {
	case len(spirv) == 0 || len(spirv)%4 != 0:
		return nil, fmt.Errorf("vulkan: kernel %s: SPIR-V is %d bytes, not a positive multiple of 4", name, len(spirv))
	case binary.LittleEndian.Uint32(spirv) != 0x07230203:
		return nil, fmt.Errorf("vulkan: kernel %s: not SPIR-V (magic %#08x, want 0x07230203 little-endian)", name, binary.LittleEndian.Uint32(spirv))
	case buffers < 0 || buffers > C.BVK_MAX_BINDINGS:
		return nil, fmt.Errorf("vulkan: kernel %s: %d buffers, want 0 to %d", name, buffers, C.BVK_MAX_BINDINGS)
	case pushSize < 0 || pushSize%4 != 0 || uint32(pushSize) > d.info.MaxPushConstantsSize:
		return nil, fmt.Errorf("vulkan: kernel %s: push-constant size %d must be a multiple of 4 within the device's %d bytes", name, pushSize, d.info.MaxPushConstantsSize)
	}
	words := make([]uint32, len(spirv)/4)
	for i := range words {
		words[i] = binary.LittleEndian.Uint32(spirv[4*i:])
	}
	k := &Kernel{dev: d, name: name, buffers: buffers, pushSize: pushSize}

	var module vulkan.ShaderModule
	if r := vulkan.CreateShaderModule(d.dev, &vulkan.ShaderModuleCreateInfo{
		SType:    vulkan.StructureTypeShaderModuleCreateInfo,
		CodeSize: uint(len(spirv)),
		PCode:    words,
	}, nil, &module); r != vulkan.Success {
		return nil, d.errorf(r, "creating the shader module of kernel %s", name)
	}
	// vulkan-go hands the driver a pointer into words itself: keep it
	// reachable until the call has returned.
	runtime.KeepAlive(words)
	defer vulkan.DestroyShaderModule(d.dev, module, nil)

	bindings := make([]vulkan.DescriptorSetLayoutBinding, buffers)
	for i := range bindings {
		bindings[i] = vulkan.DescriptorSetLayoutBinding{
			Binding:         uint32(i),
			DescriptorType:  vulkan.DescriptorTypeStorageBuffer,
			DescriptorCount: 1,
			StageFlags:      vulkan.ShaderStageFlags(vulkan.ShaderStageComputeBit),
		}
	}
	var setLay vulkan.DescriptorSetLayout
	if r := vulkan.CreateDescriptorSetLayout(d.dev, &vulkan.DescriptorSetLayoutCreateInfo{
		SType:        vulkan.StructureTypeDescriptorSetLayoutCreateInfo,
		BindingCount: uint32(buffers),
		PBindings:    bindings,
	}, nil, &setLay); r != vulkan.Success {
		return nil, d.errorf(r, "creating the descriptor set layout of kernel %s", name)
	}
	k.setLay = setLay

	layoutInfo := vulkan.PipelineLayoutCreateInfo{
		SType:          vulkan.StructureTypePipelineLayoutCreateInfo,
		SetLayoutCount: 1,
		PSetLayouts:    []vulkan.DescriptorSetLayout{setLay},
	}
	if pushSize > 0 {
		layoutInfo.PushConstantRangeCount = 1
		layoutInfo.PPushConstantRanges = []vulkan.PushConstantRange{{
			StageFlags: vulkan.ShaderStageFlags(vulkan.ShaderStageComputeBit),
			Offset:     0,
			Size:       uint32(pushSize),
		}}
	}
	var layout vulkan.PipelineLayout
	if r := vulkan.CreatePipelineLayout(d.dev, &layoutInfo, nil, &layout); r != vulkan.Success {
		k.free()
		return nil, d.errorf(r, "creating the pipeline layout of kernel %s", name)
	}
	k.layout = layout

	// The pipeline is created in the shim, with every structure on the C
	// stack (see bvk_create_compute_pipeline for why not vulkan-go).
	if len(spec) > C.BVK_MAX_SPEC {
		k.free()
		return nil, fmt.Errorf("vk: kernel %s: %d specialization constants, at most %d", name, len(spec), C.BVK_MAX_SPEC)
	}
	var specPtr *C.uint32_t
	if len(spec) > 0 {
		specPtr = (*C.uint32_t)(unsafe.Pointer(&spec[0]))
	}
	var pipe unsafe.Pointer
	if r := C.bvk_create_compute_pipeline(d.c, unsafe.Pointer(module), unsafe.Pointer(layout), specPtr, C.uint32_t(len(spec)), &pipe); r != 0 {
		k.free()
		return nil, d.errorf(vulkan.Result(r), "creating the pipeline of kernel %s", name)
	}
	k.pipeline = vulkan.Pipeline(pipe)
	d.mu.Lock()
	d.kernels = append(d.kernels, k)
	d.mu.Unlock()
	return k, nil
}

// Name returns the name given to NewKernel.
func (k *Kernel) Name() string { return k.name }

// Release frees the kernel now instead of at Device.Close. No recording
// that uses it may be submitted afterwards. Releasing twice is safe.
func (k *Kernel) Release() {
	if k == nil || k.released || k.dev.closed {
		return
	}
	k.dev.waitIdle()
	k.free()
	d := k.dev
	d.mu.Lock()
	defer d.mu.Unlock()
	for i, o := range d.kernels {
		if o == k {
			d.kernels = append(d.kernels[:i], d.kernels[i+1:]...)
			break
		}
	}
}

// free destroys the Vulkan objects.
func (k *Kernel) free() {
	if k.released {
		return
	}
	k.released = true
	d := k.dev.dev
	if k.pipeline != nil {
		vulkan.DestroyPipeline(d, k.pipeline, nil)
	}
	if k.layout != nil {
		vulkan.DestroyPipelineLayout(d, k.layout, nil)
	}
	if k.setLay != nil {
		vulkan.DestroyDescriptorSetLayout(d, k.setLay, nil)
	}
}
