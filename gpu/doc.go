// Package gpu is bitvk's Vulkan backend: SPIR-V compute kernels (from the
// spirv package) over device-local, row-sharded ternary weights, a decode
// step recorded once and replayed with one queue submit per token.
//
// cgo is confined to one subpackage, so that CGO_ENABLED=0 still builds
// bitvk; the backend then reports itself unavailable. It never imports cpu.
package gpu
