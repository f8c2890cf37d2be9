//go:build !purego

package cpu

import "encoding/binary"

// cpuid executes CPUID with EAX = leaf and ECX = sub.
//
//go:noescape
func cpuid(leaf, sub uint32) (a, b, c, d uint32)

// cpuVendorFamily returns the CPU's vendor string ("AuthenticAMD",
// "GenuineIntel") and its family as the vendors' manuals number it: the
// base family, plus the extended family when the base is 0Fh (AMD's Zen 4
// is 19h, Zen 5 1Ah).
func cpuVendorFamily() (vendor string, family uint32) {
	_, b, c, d := cpuid(0, 0)
	var v [12]byte
	binary.LittleEndian.PutUint32(v[0:], b)
	binary.LittleEndian.PutUint32(v[4:], d)
	binary.LittleEndian.PutUint32(v[8:], c)
	a, _, _, _ := cpuid(1, 0)
	family = a >> 8 & 0xF
	if family == 0xF {
		family += a >> 20 & 0xFF
	}
	return string(v[:]), family
}

// f16RowsForCPU is the avx512vnni set's dotF16Rows for this CPU: the
// version that streams the float16 head fastest from DRAM (all three are
// the same arithmetic, so the same bits; tools/asmgen/float.go,
// genDotF16RowsAVX512, has the measurements). On AMD's family 1Ah (Zen 5)
// and later, software prefetches slow it down and the hardware prefetcher
// alone reads the head at the read probe's pace; elsewhere one prefetch
// per 256 bytes of each row.
func f16RowsForCPU() func(w []uint16, stride int, x []float32, out []float32) {
	if vendor, family := cpuVendorFamily(); vendor == "AuthenticAMD" && family >= 0x1A {
		return dotF16RowsAVX512HW
	}
	return dotF16RowsAVX512
}
