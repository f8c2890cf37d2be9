//go:build !purego && !linux

package cpu

// amxPermitted and amxKernelSupport: bitvk asks for the AMX tile state on
// Linux only.
func amxPermitted() bool     { return false }
func amxKernelSupport() bool { return false }
