//go:build unix

package gguf

import (
	"os"
	"syscall"
)

// mapFile maps the file read-only. Where mmap is refused (some file systems,
// pipes renamed as files), it falls back to reading the file into memory.
func mapFile(fh *os.File, size int64) ([]byte, func() error, error) {
	if size == 0 {
		return nil, nil, nil
	}
	if int64(int(size)) == size {
		data, err := syscall.Mmap(int(fh.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
		if err == nil {
			return data, func() error { return syscall.Munmap(data) }, nil
		}
	}
	return readFile(fh, size)
}
