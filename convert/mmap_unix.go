//go:build unix

package convert

import (
	"os"
	"syscall"
)

// mapFile maps the file read-only; ok is false where the system refuses
// (the file is then read tensor by tensor).
func mapFile(fh *os.File, size int64) (data []byte, unmap func() error, ok bool) {
	if size <= 0 || int64(int(size)) != size {
		return nil, nil, false
	}
	data, err := syscall.Mmap(int(fh.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, false
	}
	return data, func() error { return syscall.Munmap(data) }, true
}
