//go:build !linux

package gguf

// releasePages does nothing where bitvk does not use madvise.
func releasePages(b []byte) {}
