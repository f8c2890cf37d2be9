//go:build purego || !amd64

package cpu

// amxKernelSupport: builds without the amd64 assembly have no amx set.
func amxKernelSupport() bool { return false }
