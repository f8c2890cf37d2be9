//go:build !purego

package cpu

import "golang.org/x/sys/cpu"

// The avxvnni set: the avx2 set with its ternary row kernel on AVX-VNNI's
// vpdpbusd (VEX-encoded, ymm), for CPUs that have AVX-VNNI and no AVX-512
// (Intel's Alder Lake and later desktop and laptop cores; AMD's Zen 5 has
// both and runs the avx512vnni set). avx2's ternaryRows is bound by its
// vpmaddubsw (three instructions per 32 codes and scale where vpdpbusd
// takes one): a decode step's ternary products. avxvnni_amd64.s says how;
// docs/KERNELS.md has the measurements.

// hasAVXVNNI says whether this CPU runs the avxvnni set.
var hasAVXVNNI = hasAVX2 && cpu.X86.HasAVXVNNI

//go:noescape
func ternaryRowsAVXVNNI(w []byte, stride int, x []int8, out []int32)

var avxVNNIKernels = func() kernels {
	k := avx2Kernels
	k.name = "avxvnni"
	k.ternaryRows = checkTernaryRows(ternaryRowsAVXVNNI)
	return k
}()
