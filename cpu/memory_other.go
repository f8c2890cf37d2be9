//go:build !linux

package cpu

// physicalMemory is the machine's memory in bytes, and whether it is known
// (not on this system: newCacheSize then uses a fixed bound).
func physicalMemory() (uint64, bool) { return 0, false }

// adviseHuge: huge pages are asked for on Linux only.
func adviseHuge([]byte) {}

// commit makes the pages of b resident now by writing each page's first
// byte (b must be zero, as a fresh allocation is).
func commit(b []byte) { touchPages(b) }
