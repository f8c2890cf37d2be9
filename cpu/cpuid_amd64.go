//go:build !purego

package cpu

import (
	"encoding/binary"

	"golang.org/x/sys/cpu"
)

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

// hwPrefetcher says whether this CPU streams the memory-bound row kernels
// (a decode step's ternary products and its heads: float16, int8, int8
// with group scales) faster with its hardware prefetcher alone than with
// software prefetches: AMD's family 1Ah (Zen 5) and later. There the
// avx512vnni set takes the kernels' HW versions, the same arithmetic and
// so the same bits (tools/asmgen has the measurements: 0.85-1.02 of the
// read probe against 0.65-0.87 for the float16 head's rows on one thread,
// a layer sequence of ternary products at 63-64 GB/s against 57-61 on
// two, the int8 head 69 against 64, the Q6_K and Q4_0 heads' rows 26-28
// against 24-26 on one). The kernels of a few tokens (verification,
// several streams) have HW versions too, which leave the prefetches out
// only for 1-2 tokens (ternary; the float16 head's in spread tiles):
// with more, the arithmetic sets the pace and the prefetches help (the
// ternary product of 4 tokens read 25 GB/s without them against 35 on
// two threads there).
var hwPrefetcher = func() bool {
	vendor, family := cpuVendorFamily()
	return vendor == "AuthenticAMD" && family >= 0x1A
}()

// forCPU returns hw on CPUs with hwPrefetcher, else sw: forPrefetcher for
// a kernel without a version for Intel's cores.
func forCPU[F any](sw, hw F) F { return forPrefetcher(sw, sw, hw) }

// linePrefetches says whether this CPU streams the decode row kernels
// (ternary products, float16, int8, int8 with group scales, Q4_0, Q6_K)
// faster from DRAM with each 64-byte line of each row prefetched twice,
// 16 KiB ahead into L2 and 2 KiB ahead into L1 (the kernels' Two
// versions), and the few-token ternary products with up to 5 tokens in
// spread tiles (ternaryMatMulVNNILines): Intel's. On the Intel Xeon VM
// (Emerald Rapids), whose read probe streams 12-16 GB/s from one core,
// the 2B shape's heads read 0.76-0.95 of the probe with a prefetch per 256
// bytes, 0.88-0.99 with one per line and 0.92-1.03 with two, its ternary
// products 0.81-0.85 with one per line and 0.86-0.98 with two, on one
// thread and on two (docs/KERNELS.md); on the Zen 4 VM one per 256 bytes
// was the faster for the heads, and the ternary and Q6_K kernels there
// prefetch each line once, into L2.
var linePrefetches = func() bool {
	vendor, _ := cpuVendorFamily()
	return vendor == "GenuineIntel"
}()

// forPrefetcher returns hw on CPUs with hwPrefetcher, lines on CPUs with
// linePrefetches, else steps: the versions of a kernel (the same bits)
// with no software prefetch, with Intel's (two per line for the row
// kernels, spread tiles for the ternary products), and the plain one.
func forPrefetcher[F any](steps, lines, hw F) F {
	switch {
	case hwPrefetcher:
		return hw
	case linePrefetches:
		return lines
	}
	return steps
}

// hasGFNI says whether this CPU has GFNI with AVX-512 encodings (Intel's
// from Ice Lake, AMD's from Zen 4; not Cascade Lake, whose AVX-512 VNNI
// the avx512vnni set also runs).
var hasGFNI = cpu.X86.HasAVX512GFNI

// withGFNI returns gfni on Intel's CPUs with hasGFNI, else plain: two
// versions of a kernel with the same bits. On the Intel Xeon VM the GFNI
// version of a prefill's products was 3.5-9% faster on one thread
// (BenchmarkTernaryMatMulGFNI); AMD's Zen 4 and 5 have GFNI too but were
// not measured, and keep the other.
func withGFNI[F any](plain, gfni F) F {
	if hasGFNI && linePrefetches {
		return gfni
	}
	return plain
}
