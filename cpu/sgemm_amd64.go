//go:build !purego

package cpu

import "fmt"

// The assembly sgemm micro-kernels and FMA probes (tools/asmgen/sgemm.go).
// The tile shapes here must be the ones the generator unrolled; a test
// reads them back from the generated declarations.
//
// sgemmAVX512 needs only AVX-512 F, but it rides in the avx512vnni kernel
// set, so a CPU with AVX-512 and no VNNI (Skylake-X) runs sgemmAVX2.
//
// Block sizes: kc = 256 keeps a 12×32 tile's B micro-panel (32 KiB) in
// Zen 5's 48 KiB L1; mc = 240 rows of A (240 KiB packed) stay in the 1 MiB
// L2; nc = 2048 columns of B (2 MiB packed) in the L3. On the 2-core
// development VM kc = 128 ... 512 and mc = 120 ... 480 all measured within
// its noise (±10%) of these.

var sgemmAVX512 = sgemmKernels{
	mr: 12, nr: 32, kc: 256, mc: 240, nc: 2048,
	tile:     checkSgemmTile(12, 32, sgemmTileAVX512),
	fmaLoop:  fmaLoopAVX512,
	fmaFlops: 2 * 16 * 16,
}

var sgemmAVX2 = sgemmKernels{
	mr: 6, nr: 16, kc: 256, mc: 240, nc: 2048,
	tile:     checkSgemmTile(6, 16, sgemmTileAVX2),
	fmaLoop:  fmaLoopAVX2,
	fmaFlops: 2 * 12 * 8,
}

// checkSgemmTile wraps an mr×nr assembly tile in the O(1) check that a, b
// and c hold every element it reads or writes.
func checkSgemmTile(mr, nr int, f func(kc int, a, b, c []float32, ldc int)) func(kc int, a, b, c []float32, ldc int) {
	return func(kc int, a, b, c []float32, ldc int) {
		if kc < 0 || len(a)/mr < kc || len(b)/nr < kc || ldc < nr || !rowsFit(len(c), ldc, nr, mr) {
			panic(fmt.Sprintf("cpu: sgemmTile %d×%d: kc %d, a %d, b %d, c %d floats (ldc %d) do not fit",
				mr, nr, kc, len(a), len(b), len(c), ldc))
		}
		f(kc, a, b, c, ldc)
	}
}
