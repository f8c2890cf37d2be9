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

// adviseHuge asks Linux to back b with transparent huge pages (2 MiB
// pages) when it first touches them: Debian's default, THP "madvise",
// gives them only to memory that asks. A decode step streams every weight
// once, and with 4 KiB pages the TLB misses a page every 4 KiB of each
// stream and the hardware prefetcher stops at each page's end: on the Zen 5
// VM the float16 head's rows read 38 GB/s from huge pages against 33 from
// small ones on one thread (77 against 65 on two), a layer sequence of
// ternary products 38 against 34 (69 against 63). A refusal (THP "never",
// an old kernel) leaves the small pages, as before.
func adviseHuge(b []byte) {
	if len(b) > 0 {
		_ = syscall.Madvise(b, syscall.MADV_HUGEPAGE)
	}
}

// madvPopulateWrite is Linux's MADV_POPULATE_WRITE (5.14 and later), which
// the syscall package does not name.
const madvPopulateWrite = 23

// commit makes the pages of b resident now, without changing its
// contents: MADV_POPULATE_WRITE, or on an older kernel a write of each
// page's first byte (b must then be zero, as a fresh allocation is).
func commit(b []byte) {
	if len(b) == 0 || syscall.Madvise(b, madvPopulateWrite) == nil {
		return
	}
	touchPages(b)
}
