//go:build !unix

package gguf

import "os"

// mapFile reads the whole file: this system has no mmap that bitvk uses.
func mapFile(fh *os.File, size int64) ([]byte, func() error, error) {
	return readFile(fh, size)
}
