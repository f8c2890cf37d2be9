//go:build !purego && !linux

package cpu

// amxPermitted: bitvk asks for the AMX tile state on Linux only.
func amxPermitted() bool { return false }
