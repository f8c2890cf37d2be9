//go:build cgo

package vk

// #include <stdlib.h>
import "C"

import "unsafe"

// cBytes copies data into C memory, for structures that keep a pointer
// beyond the call that receives them. Free it with freeC.
func cBytes(data []byte) unsafe.Pointer {
	p := C.malloc(C.size_t(max(len(data), 1)))
	copy(unsafe.Slice((*byte)(p), len(data)), data)
	return p
}

// freeC frees memory from cBytes.
func freeC(p unsafe.Pointer) { C.free(p) }
