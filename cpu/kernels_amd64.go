//go:build !purego

package cpu

// asmKernelSets lists the assembly kernel sets this CPU supports, fastest
// first. (Placeholder until tools/asmgen generates them.)
func asmKernelSets() []kernels { return nil }
