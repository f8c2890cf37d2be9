//go:build !unix

package convert

import "os"

// mapFile never maps here: the file is read tensor by tensor.
func mapFile(fh *os.File, size int64) (data []byte, unmap func() error, ok bool) {
	return nil, nil, false
}
