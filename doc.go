// Package bitvk is the root of the bitvk module: a BitNet b1.58 inference
// engine that runs ternary GGUF models on Vulkan GPUs and on the CPU.
//
// The code lives in the packages below this one (see deps_test.go for how
// they may import each other); the command is cmd/bitvk.
package bitvk
