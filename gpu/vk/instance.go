//go:build cgo

package vk

/*
#cgo CFLAGS: -I${SRCDIR}/../../third_party/vulkan-headers/include
#cgo LDFLAGS: -ldl -lpthread
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

	vulkan "github.com/vulkan-go/vulkan"
)

// validationLayer is the layer InstanceOptions.Validation enables.
const validationLayer = "VK_LAYER_KHRONOS_validation"

// loader is the process's Vulkan loader, opened once: vulkan-go keeps its
// function pointers in C globals, so there is only ever one.
var loader struct {
	once sync.Once
	gipa unsafe.Pointer // vkGetInstanceProcAddr
	err  error
}

// loaderNames are the Vulkan loaders tried, in order: libvulkan.so.1 is what
// the loader's runtime package (Debian's libvulkan1) installs, libvulkan.so
// only its development package.
var loaderNames = []string{"libvulkan.so.1", "libvulkan.so"}

func loadVulkan() (unsafe.Pointer, error) {
	loader.once.Do(func() {
		gipa, err := openLoader(loaderNames)
		if err != nil {
			loader.err = err
			return
		}
		// vulkan-go uses the same vkGetInstanceProcAddr as the shim, so both
		// talk to one loader (its own default wants the libvulkan.so dev link).
		vulkan.SetGetInstanceProcAddr(gipa)
		if err := vulkan.Init(); err != nil {
			loader.err = fmt.Errorf("%w: initialising the Vulkan loader: %v", ErrUnavailable, err)
			return
		}
		loader.gipa = gipa
	})
	return loader.gipa, loader.err
}

// openLoader dlopens the first of names that opens and returns its
// vkGetInstanceProcAddr. Its error wraps ErrUnavailable and quotes dlerror
// for the first name, the one a working system has.
func openLoader(names []string) (unsafe.Pointer, error) {
	var first string
	for _, name := range names {
		cname := C.CString(name)
		var cerr *C.char
		gipa := C.bvk_load(cname, &cerr)
		C.free(unsafe.Pointer(cname))
		if gipa != nil {
			return gipa, nil
		}
		if first == "" {
			first = name + ": no reason given"
			if cerr != nil {
				first = C.GoString(cerr)
			}
		}
	}
	return nil, fmt.Errorf("%w: no Vulkan loader: %s; install libvulkan1 (Debian/Ubuntu) or your GPU driver's Vulkan runtime", ErrUnavailable, first)
}

// LoaderVersion opens the Vulkan loader and returns the instance-level API
// version it supports ("1.3.239"), or an error wrapping ErrUnavailable when
// there is none.
func LoaderVersion() (string, error) {
	gipa, err := loadVulkan()
	if err != nil {
		return "", err
	}
	return apiVersionString(uint32(C.bvk_instance_version(gipa))), nil
}

// Instance is a Vulkan instance with its physical devices enumerated.
type Instance struct {
	gipa      unsafe.Pointer
	handle    unsafe.Pointer // VkInstance
	api       uint32         // the API version the instance was created for
	msgs      *C.bvk_msgs    // nil without validation
	messenger unsafe.Pointer // VkDebugUtilsMessengerEXT
	phys      []unsafe.Pointer
	devs      []DeviceInfo
	shared    bool // made by Shared: Close does nothing

	dmu      sync.Mutex // guards open and surfaces (a shared instance's users open and close devices from any goroutine)
	open     []*Device  // devices not closed yet, closed by Close
	surfaces []*Surface // window surfaces not released yet, destroyed by Close after the devices

	mu        sync.Mutex  // guards msgs, listeners and closed
	listeners []*Listener // where drained messages go (see Listener)
	orphans   []string    // drained while no listener was open, for the next
	own       *Listener   // Messages' listener; nil on a shared instance
	closed    bool
}

// created counts the VkInstances this process has created.
var created atomic.Int64

// InstancesCreated returns how many VkInstances this process has created
// (NewInstance and Shared), destroyed or not: some drivers refuse to create
// more than a few in one process (see Shared).
func InstancesCreated() int { return int(created.Load()) }

// NewInstance creates a Vulkan instance, requesting API version 1.3 when the
// loader supports it and 1.1 otherwise, and enumerates the devices. Close
// destroys it. A program that opens devices again and again should take
// the process's shared instance instead (Shared).
func NewInstance(o InstanceOptions) (*Instance, error) { return createInstance(o, true) }

// createInstance is NewInstance; own makes the listener Messages reads.
func createInstance(o InstanceOptions, own bool) (*Instance, error) {
	gipa, err := loadVulkan()
	if err != nil {
		return nil, err
	}
	loaderAPI := uint32(C.bvk_instance_version(gipa))
	const v11, v13 = 1<<22 | 1<<12, 1<<22 | 3<<12
	if loaderAPI>>12 < v11>>12 {
		return nil, fmt.Errorf("%w: the Vulkan loader supports only %s; bitvk needs 1.1 (update libvulkan1)", ErrUnavailable, apiVersionString(loaderAPI))
	}
	api := uint32(v11)
	if loaderAPI>>12 >= v13>>12 {
		api = v13
	}
	inst := &Instance{gipa: gipa, api: api}
	if o.Validation {
		cname := C.CString(validationLayer)
		ok := C.bvk_has_layer(gipa, cname) != 0
		C.free(unsafe.Pointer(cname))
		if !ok {
			return nil, fmt.Errorf("vulkan: validation layer %s is not installed (install vulkan-validationlayers)", validationLayer)
		}
		cname = C.CString("VK_EXT_debug_utils")
		ok = C.bvk_has_instance_extension(gipa, cname) != 0
		C.free(unsafe.Pointer(cname))
		if !ok {
			return nil, fmt.Errorf("vulkan: validation needs the instance extension VK_EXT_debug_utils, which the loader does not offer")
		}
		inst.msgs = C.bvk_msgs_new()
		if inst.msgs == nil {
			return nil, fmt.Errorf("vulkan: creating the validation message queue: out of host memory")
		}
	}
	var sync C.int
	if o.Validation && o.SyncValidation {
		sync = 1
	}
	if len(o.Extensions) > C.BVK_MAX_EXTRA {
		C.bvk_msgs_free(inst.msgs)
		return nil, fmt.Errorf("vulkan: %d extra instance extensions asked for, at most %d", len(o.Extensions), C.BVK_MAX_EXTRA)
	}
	for _, name := range o.Extensions {
		cname := C.CString(name)
		ok := C.bvk_has_instance_extension(gipa, cname) != 0
		C.free(unsafe.Pointer(cname))
		if !ok {
			C.bvk_msgs_free(inst.msgs)
			return nil, fmt.Errorf("vulkan: the loader does not offer the instance extension %s, which drawing into a window needs (is the Vulkan driver's window-system support installed?)", name)
		}
	}
	extra, freeExtra := cStrings(o.Extensions)
	defer freeExtra()
	var handle unsafe.Pointer
	if r := C.bvk_create_instance(gipa, C.uint32_t(api), inst.msgs, sync, extra, C.uint32_t(len(o.Extensions)), &handle); r != 0 {
		C.bvk_msgs_free(inst.msgs)
		if r == -9 { // VK_ERROR_INCOMPATIBLE_DRIVER
			return nil, fmt.Errorf("%w: creating a Vulkan %s instance: no compatible Vulkan driver (install mesa-vulkan-drivers or your GPU's driver)", ErrUnavailable, apiVersionString(api))
		}
		return nil, fmt.Errorf("vulkan: creating a Vulkan %s instance: %s", apiVersionString(api), resultText(int32(r)))
	}
	created.Add(1)
	inst.handle = handle
	if own {
		inst.own = inst.Listen()
	}
	if err := vulkan.InitInstance(vulkan.Instance(handle)); err != nil {
		inst.Close()
		return nil, fmt.Errorf("vulkan: loading instance functions: %v", err)
	}
	if inst.msgs != nil {
		if r := C.bvk_create_messenger(gipa, handle, inst.msgs, &inst.messenger); r != 0 {
			inst.Close()
			return nil, fmt.Errorf("vulkan: creating the debug-utils messenger: %s", resultText(int32(r)))
		}
	}
	if err := inst.enumerate(); err != nil {
		inst.Close()
		return nil, err
	}
	return inst, nil
}

// cStrings copies names into C strings and returns a pointer to the first of
// them (nil for none) and a function freeing them. The pointer array lives
// in Go memory, which may hold C pointers.
func cStrings(names []string) (**C.char, func()) {
	if len(names) == 0 {
		return nil, func() {}
	}
	ptrs := make([]*C.char, len(names))
	for k, n := range names {
		ptrs[k] = C.CString(n)
	}
	return &ptrs[0], func() {
		for _, p := range ptrs {
			C.free(unsafe.Pointer(p))
		}
	}
}

// enumerate fills phys and devs.
func (i *Instance) enumerate() error {
	var n uint32
	h := vulkan.Instance(i.handle)
	if r := vulkan.EnumeratePhysicalDevices(h, &n, nil); r != vulkan.Success {
		return fmt.Errorf("vulkan: enumerating devices: %s", resultText(int32(r)))
	}
	list := make([]vulkan.PhysicalDevice, n)
	if n > 0 {
		if r := vulkan.EnumeratePhysicalDevices(h, &n, list); r != vulkan.Success && r != vulkan.Incomplete {
			return fmt.Errorf("vulkan: enumerating devices: %s", resultText(int32(r)))
		}
	}
	for idx, pd := range list[:n] {
		p := unsafe.Pointer(pd)
		var ci C.bvk_device_info
		if r := C.bvk_query_device(i.gipa, i.handle, p, C.uint32_t(i.api), &ci); r != 0 {
			return fmt.Errorf("vulkan: querying device %d: %s", idx, resultText(int32(r)))
		}
		i.phys = append(i.phys, p)
		i.devs = append(i.devs, deviceInfo(idx, &ci))
	}
	return nil
}

// deviceInfo converts the shim's description into a DeviceInfo.
func deviceInfo(idx int, c *C.bvk_device_info) DeviceInfo {
	d := DeviceInfo{
		Index:                           idx,
		Name:                            C.GoString(&c.name[0]),
		Type:                            deviceTypeName(uint32(c.device_type)),
		VendorID:                        uint32(c.vendor_id),
		DeviceID:                        uint32(c.device_id),
		DriverVersion:                   driverVersionString(uint32(c.vendor_id), uint32(c.driver_version)),
		APIVersion:                      apiVersionString(uint32(c.api_version)),
		MaxStorageBufferRange:           uint64(c.max_storage_buffer_range),
		MaxMemoryAllocationSize:         uint64(c.max_memory_allocation_size),
		MinStorageBufferOffsetAlignment: uint64(c.min_storage_buffer_offset_alignment),
		MaxComputeWorkGroupInvocations:  uint32(c.max_wg_invocations),
		MaxComputeSharedMemorySize:      uint32(c.max_shared),
		MaxPushConstantsSize:            uint32(c.max_push),
		MaxStorageBuffers:               uint32(c.max_storage_buffers),
		SubgroupSize:                    uint32(c.subgroup_size),
		apiRaw:                          uint32(c.api_version),
	}
	for k := range 3 {
		d.MaxComputeWorkGroupCount[k] = uint32(c.max_wg_count[k])
	}
	d.Driver = d.DriverVersion
	if c.has_driver_props != 0 {
		d.Driver = C.GoString(&c.driver_name[0]) + " " + C.GoString(&c.driver_info[0])
	}
	for k := range int(c.heap_count) {
		d.Heaps = append(d.Heaps, Heap{Size: uint64(c.heap_size[k]), DeviceLocal: c.heap_flags[k]&1 != 0})
	}
	for k := range int(c.type_count) {
		d.memTypes = append(d.memTypes, memType{flags: uint32(c.type_flags[k]), heap: uint32(c.type_heap[k])})
	}
	const computeStage = 0x20 // VK_SHADER_STAGE_COMPUTE_BIT
	if c.subgroup_stages&computeStage != 0 {
		d.SubgroupOps = subgroupOps(uint32(c.subgroup_ops))
	}
	fams := make([]uint32, int(c.family_count))
	for k := range fams {
		fams[k] = uint32(c.family_flags[k])
	}
	d.familyFlags = fams
	for k := range fams {
		d.familyTimestampBits = append(d.familyTimestampBits, uint32(c.family_timestamp_bits[k]))
	}
	d.ComputeQueueFamily = pickQueueFamily(fams)
	if f := d.ComputeQueueFamily; f >= 0 {
		d.TimestampBits = uint32(c.family_timestamp_bits[f])
	}
	d.TimestampPeriod = float32(c.timestamp_period)
	d.coopNV = uint32(c.features)&C.BVK_F_COOPMAT_NV != 0
	for k := range int(c.coopmat_count) {
		s := c.coopmat[k]
		d.CoopMat = append(d.CoopMat, CoopMatShape{M: uint32(s[0]), N: uint32(s[1]), K: uint32(s[2]),
			A: componentTypeName(uint32(s[3])), B: componentTypeName(uint32(s[4])), C: componentTypeName(uint32(s[5])), D: componentTypeName(uint32(s[6])),
			Scope: scopeName(uint32(s[7]))})
	}
	f := uint32(c.features)
	d.Features = Features{
		Storage16:             f&C.BVK_F_STORAGE16 != 0,
		Storage8:              f&C.BVK_F_STORAGE8 != 0,
		Int8:                  f&C.BVK_F_INT8 != 0,
		Float16:               f&C.BVK_F_FLOAT16 != 0,
		Int64:                 f&C.BVK_F_INT64 != 0,
		IntegerDot:            f&C.BVK_F_INTEGER_DOT != 0,
		IntegerDotAccelerated: f&C.BVK_F_INTEGER_DOT_ACCEL != 0,
		SubgroupArithmetic:    d.hasSubgroupOp("arithmetic"),
		SubgroupSizeControl:   f&C.BVK_F_SUBGROUP_SIZE_CONTROL != 0,
		CooperativeMatrix:     uint32(c.extensions)&(C.BVK_EXT_COOPMAT_KHR|C.BVK_EXT_COOPMAT_NV) != 0,
		VulkanMemoryModel:     f&C.BVK_F_VULKAN_MEMORY_MODEL != 0,
	}
	return d
}

// Devices returns every physical device, in enumeration order.
func (i *Instance) Devices() []DeviceInfo {
	out := make([]DeviceInfo, len(i.devs))
	copy(out, i.devs)
	return out
}

// Messages returns the validation messages received since the last call
// and forgets them. It is safe to call from any goroutine, also after Close.
// A shared instance (Shared) returns none: each of its users reads its own
// Listener.
func (i *Instance) Messages() []string {
	if i.own == nil {
		return nil
	}
	return i.own.Messages()
}

// drainLocked pops every message queued in C and hands it to every open
// listener (with none open, to the next one made); i.mu must be held.
func (i *Instance) drainLocked() {
	if i.msgs == nil {
		return
	}
	for {
		s := C.bvk_msgs_pop(i.msgs)
		if s == nil {
			return
		}
		m := C.GoString(s)
		C.free(unsafe.Pointer(s))
		if len(i.listeners) == 0 {
			i.orphans = append(i.orphans, m)
		}
		for _, l := range i.listeners {
			l.pending = append(l.pending, m)
		}
	}
}

// Close closes the devices still open, then destroys the messenger and the
// instance. Messages received until then stay readable through Messages.
// Closing twice is safe. On a shared instance (Shared) Close does nothing:
// it lives as long as the process.
func (i *Instance) Close() {
	if i == nil || i.shared {
		return
	}
	i.dmu.Lock()
	open, surfaces := slices.Clone(i.open), slices.Clone(i.surfaces)
	i.dmu.Unlock()
	for k := len(open) - 1; k >= 0; k-- {
		open[k].Close()
	}
	for k := len(surfaces) - 1; k >= 0; k-- {
		surfaces[k].Release()
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.closed {
		return
	}
	i.closed = true
	if i.messenger != nil {
		C.bvk_destroy_messenger(i.gipa, i.handle, i.messenger)
		i.messenger = nil
	}
	if i.handle != nil {
		C.bvk_destroy_instance(i.gipa, i.handle)
		i.handle = nil
	}
	if i.msgs != nil {
		i.drainLocked()
		C.bvk_msgs_free(i.msgs)
		i.msgs = nil
	}
}

// forget removes a closed device from the open list.
func (i *Instance) forget(d *Device) {
	i.dmu.Lock()
	defer i.dmu.Unlock()
	for k, o := range i.open {
		if o == d {
			i.open = append(i.open[:k], i.open[k+1:]...)
			return
		}
	}
}
