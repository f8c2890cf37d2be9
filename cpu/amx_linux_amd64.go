//go:build !purego

package cpu

import (
	"syscall"
	"unsafe"
)

// Linux's arch_prctl codes for dynamic XSAVE features, and AMX's tile data.
const (
	archGetXCompSupp  = 0x1021
	archReqXCompPerm  = 0x1023
	xfeatureXTileData = 18
)

// amxPermitted asks Linux for the AMX tile data state for the whole
// process, as its documentation for dynamic XSAVE features requires before
// the first tile instruction, and reports whether it was granted. The
// kernel grows the signal frames of the process's threads for it; Go's
// 32 KiB signal stacks hold them.
func amxPermitted() bool {
	_, _, errno := syscall.RawSyscall(syscall.SYS_ARCH_PRCTL, archReqXCompPerm, xfeatureXTileData, 0)
	return errno == 0
}

// amxKernelSupport reports whether this kernel offers the AMX tile data
// state at all (Linux 5.16 and later, on a CPU that has it).
func amxKernelSupport() bool {
	var mask uint64
	_, _, errno := syscall.RawSyscall(syscall.SYS_ARCH_PRCTL, archGetXCompSupp, uintptr(unsafe.Pointer(&mask)), 0)
	return errno == 0 && mask&(1<<xfeatureXTileData) != 0
}
