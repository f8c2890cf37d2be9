// Package vk is bitvk's Vulkan compute runtime: instance and device
// discovery, device-local and host-visible storage buffers, explicit upload
// and download through a staging buffer, compute kernels (one SPIR-V
// pipeline each) and recordings: lists of dispatches, copies, fills and
// barriers translated once into a command buffer and replayed with one queue
// submit each.
//
// It is built over github.com/vulkan-go/vulkan for the Vulkan 1.0/1.1 calls.
// What those bindings cannot express (the pNext feature and property chains
// of newer Vulkan versions, device creation with such a chain, the
// VK_EXT_debug_utils messenger) and the per-token submit live in a small C
// shim (shim.c) compiled against Khronos' <vulkan/vulkan_core.h>, carried in
// third_party/vulkan-headers (version HeadersVersion), so that building needs
// a C compiler but no Vulkan SDK. The Vulkan loader (libvulkan.so.1) is
// opened at run time; without one NewInstance returns ErrUnavailable. This is
// the only package of bitvk that uses cgo; without cgo it still builds and
// NewInstance returns ErrUnavailable.
//
// A Device and everything created from it are meant for one goroutine at a
// time; Instance.Messages may be called from any goroutine.
package vk
