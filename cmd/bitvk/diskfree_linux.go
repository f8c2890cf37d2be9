package main

import "syscall"

// freeBytes is the space an unprivileged writer has left on the file
// system holding dir; ok is false where it cannot be told.
func freeBytes(dir string) (n uint64, ok bool) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil || st.Bsize <= 0 {
		return 0, false
	}
	return st.Bavail * uint64(st.Bsize), true
}
