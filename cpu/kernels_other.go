//go:build purego || !amd64

package cpu

// asmKernelSets: this build has no assembly (not amd64, or -tags purego).
func asmKernelSets() []kernels { return nil }
