// Package cpu is bitvk's CPU backend: ternary weights repacked at load into
// the layout its kernels want, int8 activation quantization, and SIMD
// kernels (amd64 assembly, each with a pure-Go twin tested against it) run on
// a persistent worker pool. It also serves as the check on the GPU.
//
// It implements nn.Backend and imports nothing of ours but nn; it never
// imports gpu.
package cpu
