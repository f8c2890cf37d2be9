package vk

import (
	"errors"
	"fmt"
	"slices"
)

// ErrUnavailable reports that Vulkan cannot be used at all: bitvk was built
// without cgo, or no Vulkan loader is installed. Errors of NewInstance wrap
// it in those cases, so callers can fall back to the CPU.
var ErrUnavailable = errors.New("vulkan unavailable")

// InstanceOptions configures NewInstance.
type InstanceOptions struct {
	// Validation enables VK_LAYER_KHRONOS_validation and a VK_EXT_debug_utils
	// messenger collecting warnings and errors (see Instance.Messages).
	// NewInstance fails, naming the layer, when it is not installed.
	Validation bool
	// SyncValidation, with Validation, also turns on the layer's
	// synchronization validation (missing or wrong barriers are reported as
	// SYNC-HAZARD-* messages). It slows every command down; meant for tests.
	SyncValidation bool
	// Extensions are instance extensions to enable besides those above: a
	// window system's (VK_KHR_surface and its platform's, as GLFW lists
	// them), for a device that also presents (see OpenOptions). NewInstance
	// fails, naming the first the loader lacks.
	Extensions []string
}

// DeviceInfo describes one physical device.
type DeviceInfo struct {
	Index         int    // position in Instance.Devices
	Name          string // deviceName
	Type          string // "discrete", "integrated", "virtual", "cpu" or "other"
	VendorID      uint32
	DeviceID      uint32
	Driver        string // driverName + " " + driverInfo where known, else the vendor-decoded driverVersion
	DriverVersion string // driverVersion decoded (NVIDIA's 10.8.8.6 scheme for vendor 0x10de, else major.minor.patch)
	APIVersion    string // "1.3.230"
	Heaps         []Heap

	MaxStorageBufferRange           uint64
	MaxMemoryAllocationSize         uint64
	MinStorageBufferOffsetAlignment uint64
	MaxComputeWorkGroupInvocations  uint32
	MaxComputeSharedMemorySize      uint32
	MaxPushConstantsSize            uint32
	MaxComputeWorkGroupCount        [3]uint32
	// MaxStorageBuffers is maxPerStageDescriptorStorageBuffers: the most
	// storage buffers one kernel binds.
	MaxStorageBuffers uint32

	// CoopMat lists the cooperative matrix shapes the device multiplies
	// (VK_NV_cooperative_matrix's properties; none without it).
	CoopMat []CoopMatShape

	SubgroupSize uint32
	// SubgroupOps lists the subgroup operations supported in the compute
	// stage, of "basic", "vote", "arithmetic", "ballot", "shuffle",
	// "shuffle_relative", "clustered", "quad".
	SubgroupOps []string

	// ComputeQueueFamily is a queue family with COMPUTE, preferring one
	// without GRAPHICS; -1 if the device has none.
	ComputeQueueFamily int
	Features           Features

	// TimestampBits is the compute queue family's timestampValidBits: 0
	// when its queue cannot write timestamps (profiling is then refused).
	TimestampBits uint32
	// TimestampPeriod is nanoseconds per timestamp tick.
	TimestampPeriod float32

	// Memory types (property flags and heap index), for buffer allocation.
	memTypes []memType
	apiRaw   uint32
	// coopNV: VK_NV_cooperative_matrix's cooperativeMatrix feature, which
	// Open enables (Device.Enabled().CooperativeMatrix).
	coopNV bool
	// Per queue family: VkQueueFlags and timestampValidBits, for opening a
	// device on another family than ComputeQueueFamily (one that presents).
	familyFlags, familyTimestampBits []uint32
}

// memType is one VkMemoryType.
type memType struct {
	flags uint32
	heap  uint32
}

// Heap is one memory heap of a device.
type Heap struct {
	Size        uint64
	DeviceLocal bool
}

// Features are the optional capabilities bitvk's kernels care about.
type Features struct {
	Storage16             bool // storageBuffer16BitAccess
	Storage8              bool // storageBuffer8BitAccess
	Int8                  bool // shaderInt8
	Float16               bool // shaderFloat16
	Int64                 bool // shaderInt64
	IntegerDot            bool // shaderIntegerDotProduct (core 1.3 or VK_KHR_shader_integer_dot_product)
	IntegerDotAccelerated bool // integerDotProduct4x8BitPackedSignedAccelerated
	SubgroupArithmetic    bool // subgroup arithmetic operations in the compute stage
	SubgroupSizeControl   bool // subgroupSizeControl and computeFullSubgroups
	// CooperativeMatrix: VK_KHR_cooperative_matrix or
	// VK_NV_cooperative_matrix present; in Device.Enabled, NV's feature
	// enabled (shaders with GL_NV_cooperative_matrix may run)
	CooperativeMatrix bool
	// VulkanMemoryModel: vulkanMemoryModel and vulkanMemoryModelDeviceScope
	// (core 1.2 or VK_KHR_vulkan_memory_model), which SPIR-V declaring the
	// Vulkan memory model needs (GL_NV_cooperative_matrix requires it); in
	// Device.Enabled, enabled (only with CooperativeMatrix: with the model
	// on, validation holds every other kernel to its rules too)
	VulkanMemoryModel bool
}

// Names returns the names of the features present, in declaration order.
func (f Features) Names() []string {
	var names []string
	for _, x := range []struct {
		on   bool
		name string
	}{
		{f.Storage16, "storage16"},
		{f.Storage8, "storage8"},
		{f.Int8, "int8"},
		{f.Float16, "float16"},
		{f.Int64, "int64"},
		{f.IntegerDot, "integer_dot"},
		{f.IntegerDotAccelerated, "integer_dot_accelerated"},
		{f.SubgroupArithmetic, "subgroup_arithmetic"},
		{f.SubgroupSizeControl, "subgroup_size_control"},
		{f.CooperativeMatrix, "cooperative_matrix"},
		{f.VulkanMemoryModel, "vulkan_memory_model"},
	} {
		if x.on {
			names = append(names, x.name)
		}
	}
	return names
}

// typeRank orders device types for Pick: lower is better.
var typeRank = map[string]int{"discrete": 0, "integrated": 1, "virtual": 2, "cpu": 3}

// Pick returns the index into devs of the best device: discrete, then
// integrated, then virtual, then CPU, then any other; the first of its kind.
// It returns -1 when devs is empty.
func Pick(devs []DeviceInfo) int {
	best, bestRank := -1, 0
	for i, d := range devs {
		r, ok := typeRank[d.Type]
		if !ok {
			r = len(typeRank)
		}
		if best < 0 || r < bestRank {
			best, bestRank = i, r
		}
	}
	return best
}

// deviceTypeName maps VkPhysicalDeviceType to DeviceInfo.Type.
func deviceTypeName(t uint32) string {
	switch t {
	case 1:
		return "integrated"
	case 2:
		return "discrete"
	case 3:
		return "virtual"
	case 4:
		return "cpu"
	}
	return "other"
}

// apiVersionString formats a VK_MAKE_API_VERSION value as major.minor.patch.
func apiVersionString(v uint32) string {
	return fmt.Sprintf("%d.%d.%d", v>>22&0x7f, v>>12&0x3ff, v&0xfff)
}

// driverVersionString decodes driverVersion, whose encoding is the vendor's
// choice: NVIDIA packs 10.8.8.6 bits, most others follow VK_MAKE_VERSION.
func driverVersionString(vendor, v uint32) string {
	if vendor == 0x10de {
		return fmt.Sprintf("%d.%d.%d.%d", v>>22, v>>14&0xff, v>>6&0xff, v&0x3f)
	}
	return apiVersionString(v)
}

// subgroupOpNames lists VkSubgroupFeatureFlagBits in bit order.
var subgroupOpNames = []string{"basic", "vote", "arithmetic", "ballot", "shuffle", "shuffle_relative", "clustered", "quad"}

// subgroupOps decodes VkSubgroupFeatureFlags.
func subgroupOps(bits uint32) []string {
	var ops []string
	for i, name := range subgroupOpNames {
		if bits&(1<<i) != 0 {
			ops = append(ops, name)
		}
	}
	return ops
}

// pickQueueFamily returns a family with COMPUTE (bit 1), preferring one
// without GRAPHICS (bit 0); -1 when there is none.
func pickQueueFamily(flags []uint32) int {
	best := -1
	for i, f := range flags {
		if f&2 == 0 {
			continue
		}
		if f&1 == 0 {
			return i
		}
		if best < 0 {
			best = i
		}
	}
	return best
}

// hasSubgroupOp reports whether the device supports op in compute shaders.
func (d DeviceInfo) hasSubgroupOp(op string) bool { return slices.Contains(d.SubgroupOps, op) }

// formatSize writes a byte count for humans: "512 B", "32 MiB", "1.50 GiB".
func formatSize(n int64) string {
	const (
		kib = 1 << 10
		mib = 1 << 20
		gib = 1 << 30
	)
	switch {
	case n >= gib:
		return trimZeros(fmt.Sprintf("%.2f", float64(n)/gib)) + " GiB"
	case n >= mib:
		return trimZeros(fmt.Sprintf("%.2f", float64(n)/mib)) + " MiB"
	case n >= kib:
		return trimZeros(fmt.Sprintf("%.2f", float64(n)/kib)) + " KiB"
	}
	return fmt.Sprintf("%d B", n)
}

func trimZeros(s string) string {
	for len(s) > 0 && s[len(s)-1] == '0' {
		s = s[:len(s)-1]
	}
	if len(s) > 0 && s[len(s)-1] == '.' {
		s = s[:len(s)-1]
	}
	return s
}

// resultText names a VkResult the way bitvk's errors print it.
func resultText(r int32) string {
	switch r {
	case 0:
		return "success"
	case 1:
		return "not ready"
	case 2:
		return "timeout"
	case 5:
		return "incomplete"
	case -1:
		return "out of host memory"
	case -2:
		return "out of device memory"
	case -3:
		return "initialization failed"
	case -4:
		return "device lost"
	case -5:
		return "memory map failed"
	case -6:
		return "layer not present"
	case -7:
		return "extension not present"
	case -8:
		return "feature not present"
	case -9:
		return "incompatible driver (no Vulkan device or driver too old)"
	case -10:
		return "too many objects"
	case -11:
		return "format not supported"
	case -12:
		return "fragmented pool"
	case -13:
		return "unknown error"
	case -1000069000:
		return "out of pool memory"
	case -1000012000:
		return "invalid shader"
	}
	return fmt.Sprintf("VkResult %d", r)
}

// Range is a part of a buffer: Size 0 means "to the end of the buffer".
type Range struct {
	Buf  *Buffer
	Off  int64
	Size int64
}

// CoopMatShape is one cooperative matrix multiply a device runs: D (M×N,
// of type D) = A (M×K) · B (K×N) + C, in a scope (subgroup).
type CoopMatShape struct {
	M, N, K    uint32
	A, B, C, D string // component types: "s8", "u8", "s32", "f16", "f32", …
	Scope      string // "subgroup", "workgroup", "device", "queue"
}

// String is the shape as "s8×s8+s32→s32 16×8×32 (subgroup)".
func (s CoopMatShape) String() string {
	return fmt.Sprintf("%s×%s+%s→%s %d×%d×%d (%s)", s.A, s.B, s.C, s.D, s.M, s.N, s.K, s.Scope)
}

// componentTypeName names a VkComponentTypeNV.
func componentTypeName(t uint32) string {
	names := []string{"f16", "f32", "f64", "s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64"}
	if int(t) < len(names) {
		return names[t]
	}
	return fmt.Sprintf("type%d", t)
}

// scopeName names a VkScopeNV.
func scopeName(s uint32) string {
	switch s {
	case 1:
		return "device"
	case 2:
		return "workgroup"
	case 3:
		return "subgroup"
	case 5:
		return "queue family"
	}
	return fmt.Sprintf("scope%d", s)
}
