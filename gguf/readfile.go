package gguf

import (
	"fmt"
	"io"
	"os"
)

// readFile reads size bytes of fh into memory: the fallback where mmap fails.
func readFile(fh *os.File, size int64) ([]byte, func() error, error) {
	if int64(int(size)) != size {
		return nil, nil, fmt.Errorf("file of %d bytes is too large for this system", size)
	}
	data := make([]byte, size)
	if _, err := io.ReadFull(fh, data); err != nil {
		return nil, nil, fmt.Errorf("reading: %w", err)
	}
	return data, nil, nil
}
