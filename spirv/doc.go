// Package spirv embeds the compiled SPIR-V kernels (generated from ../shaders
// by `make shaders` and checked in) and names them with typed constants.
package spirv
