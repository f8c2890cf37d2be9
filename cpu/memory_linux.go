package cpu

import "syscall"

// physicalMemory is the machine's memory in bytes, and whether it is known.
func physicalMemory() (uint64, bool) {
	var si syscall.Sysinfo_t
	if err := syscall.Sysinfo(&si); err != nil || si.Totalram == 0 {
		return 0, false
	}
	return uint64(si.Totalram) * uint64(max(si.Unit, 1)), true
}
