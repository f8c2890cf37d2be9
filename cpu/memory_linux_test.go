package cpu

import (
	"syscall"
	"testing"
	"unsafe"
)

// TestCommit: after commit (MADV_POPULATE_WRITE) and after touchPages (its
// fallback on older kernels) every page of a fresh buffer is resident
// (mincore) and its contents are unchanged (zero, as the K/V caches are
// when New commits them).
func TestCommit(t *testing.T) {
	for _, f := range []struct {
		name string
		fn   func([]byte)
	}{{"commit", commit}, {"touchPages", touchPages}} {
		b := new(weightArena).bytes(8 << 20)
		f.fn(b)
		page := syscall.Getpagesize()
		start := uintptr(unsafe.Pointer(unsafe.SliceData(b))) &^ uintptr(page-1)
		end := uintptr(unsafe.Pointer(unsafe.SliceData(b))) + uintptr(len(b))
		vec := make([]byte, (end-start+uintptr(page)-1)/uintptr(page))
		if _, _, e := syscall.Syscall(syscall.SYS_MINCORE, start, end-start, uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
			t.Skipf("mincore: %v", e)
		}
		for i, v := range vec {
			if v&1 == 0 {
				t.Fatalf("%s: page %d of %d is not resident", f.name, i, len(vec))
			}
		}
		for i, v := range b {
			if v != 0 {
				t.Fatalf("%s: byte %d is %d, want 0", f.name, i, v)
			}
		}
	}
}
