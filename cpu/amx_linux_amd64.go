//go:build !purego

package cpu

import "syscall"

// amxPermitted asks Linux for the AMX tile data state (XFEATURE_XTILEDATA,
// 18) for the whole process, as its documentation for dynamic XSAVE
// features requires before the first tile instruction, and reports
// whether it was granted. The kernel grows the signal frames of the
// process's threads for it; Go's 32 KiB signal stacks hold them.
func amxPermitted() bool {
	const archReqXCompPerm, xfeatureXTileData = 0x1023, 18
	_, _, errno := syscall.RawSyscall(syscall.SYS_ARCH_PRCTL, archReqXCompPerm, xfeatureXTileData, 0)
	return errno == 0
}
