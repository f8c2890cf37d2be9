package gguf

import "syscall"

// releasePages drops the pages of b (page-aligned, part of a file mapping)
// from the process's resident set; the page cache keeps them.
func releasePages(b []byte) { _ = syscall.Madvise(b, syscall.MADV_DONTNEED) }
