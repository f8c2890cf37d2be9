//go:build !purego

package cpu

import (
	"slices"
	"sync"

	"golang.org/x/sys/cpu"
)

// The amx kernel set: the avx512vnni set with the ternary matrix product
// on Intel's AMX tiles (AMX-TILE and AMX-INT8, with GFNI: Sapphire Rapids
// and later), 1024 int8 multiply-adds a cycle against vpdpbusd's 128
// (amx_amd64.s says how), and its float16 head rows prefetched line by
// line. Every other kernel, and a product of fewer than amxMinTokens
// tokens (a decode step, a server step of a few streams: memory-bound,
// and the VNNI kernels stream those faster), is the avx512vnni set's.
//
// Linux gives a process the AMX tile state only when asked
// (arch_prctl(ARCH_REQ_XCOMP_PERM); until then a tile instruction faults),
// so the set exists only where that request succeeded (amxPermitted).

// hasAMX says whether this CPU and OS run the amx set.
var hasAMX = hasAVX2 && hasAVX512VNNI && cpu.X86.HasAVX512GFNI && cpu.X86.HasAMXTile && cpu.X86.HasAMXInt8 && amxPermitted()

// amxMinTokens is the fewest tokens the amx set's ternaryMatMul gives the
// tiles; fewer go to ternaryMatMulVNNI. From DRAM (2B shape, Intel Xeon
// VM) a VNNI pass of up to 4-5 tokens costs what one token costs and the
// tiles' pass of 2-16 tokens 1.2-1.3 times that; VNNI's climbs from 6
// tokens on (9: 1.9 times one token, the tiles 1.3).
const amxMinTokens = 6

// amxTileConfig is the LDTILECFG operand: palette 1, all eight tiles 16
// rows × 64 bytes.
var amxTileConfig = func() (c [64]byte) {
	c[0] = 1
	for t := 0; t < 8; t++ {
		c[16+2*t] = 64
		c[48+t] = 16
	}
	return c
}()

//go:noescape
func amxTernaryTiles(w *byte, stride, n, groups int, xb *byte, tokens int, out *int32, outStride int, scr *byte, cfg *byte)

//go:noescape
func amxTernaryFew(w *byte, stride, n, groups int, xb *byte, tokens int, out *int32, outStride int, scr *byte, cfg *byte)

//go:noescape
func amxPackX(x *int8, xStride, n, tokens int, xb *byte)

//go:noescape
func amxLoop(iters int, cfg *byte)

var amxKernels = func() kernels {
	k := avx512VNNIKernels
	k.name = "amx"
	k.ternaryMatMul = checkTernaryMatMul(ternaryMatMulAMX)
	k.int8Loop = func(iters int) { amxLoop(iters, &amxTileConfig[0]) }
	k.int8MACs = 6 * 16 * 16 * 64
	return k
}()

// amxBuffers keeps the buffers of finished calls (packed activations,
// staging and store scratch) for the next ones: calls run on every worker
// at once. Not a sync.Pool, which every collection empties: calls would
// allocate and clear megabytes again after each GC.
var amxBuffers struct {
	sync.Mutex
	free [][]byte
}

// amxBuffer returns a buffer of at least n bytes, 64-byte aligned.
func amxBuffer(n int) []byte {
	amxBuffers.Lock()
	defer amxBuffers.Unlock()
	for i, b := range amxBuffers.free {
		if len(b) >= n {
			last := len(amxBuffers.free) - 1
			amxBuffers.free[i] = amxBuffers.free[last]
			amxBuffers.free = amxBuffers.free[:last]
			return b
		}
	}
	return alignedBytes(n)
}

// amxRelease returns b for reuse, keeping at most 8 buffers (dropping the
// smallest).
func amxRelease(b []byte) {
	amxBuffers.Lock()
	defer amxBuffers.Unlock()
	amxBuffers.free = append(amxBuffers.free, b)
	if len(amxBuffers.free) > 8 {
		small := 0
		for i, f := range amxBuffers.free {
			if len(f) < len(amxBuffers.free[small]) {
				small = i
			}
		}
		amxBuffers.free = slices.Delete(amxBuffers.free, small, small+1)
	}
}

// ternaryMatMulAMX is ternaryMatMul on AMX tiles for whole blocks of 32
// rows and at least amxMinTokens tokens (up to 16 in amxTernaryFew, more in
// amxTernaryTiles); the other rows, and fewer tokens, go to
// ternaryMatMulVNNI, in its version for Intel's cores (AMX's) below
// amxMinTokens.
func ternaryMatMulAMX(w []byte, stride, rows int, x []int8, xStride, n, tokens int, out []int32, outStride int) {
	groups := rows / 32
	if tokens < amxMinTokens || groups == 0 || n == 0 {
		ternaryMatMulVNNILines(w, stride, rows, x, xStride, n, tokens, out, outStride)
		return
	}
	// buf: two 4 KiB staging sets and the 1 KiB C scratch, then the B
	// tiles of every token (16·n bytes per 16 tokens); for more than 16
	// tokens an even number of them: a zero tile after an odd last one.
	tiles := (tokens + 15) / 16
	padded := tiles
	if tiles > 1 {
		padded = (tiles + 1) &^ 1
	}
	need := 9*1024 + padded*16*n
	buf := amxBuffer(need)
	scr, xb := buf[:9*1024], buf[9*1024:need]
	amxPackX(&x[0], xStride, n, tokens, &xb[0])
	if padded > tiles {
		clear(xb[tiles*16*n:])
	}
	if tiles == 1 {
		amxTernaryFew(&w[0], stride, n, groups, &xb[0], tokens, &out[0], outStride, &scr[0], &amxTileConfig[0])
	} else {
		amxTernaryTiles(&w[0], stride, n, groups, &xb[0], tokens, &out[0], outStride, &scr[0], &amxTileConfig[0])
	}
	amxRelease(buf)
	if r := groups * 32; r < rows {
		ternaryMatMulVNNI(w[r*stride:], stride, rows-r, x, xStride, n, tokens, out[r:], outStride)
	}
}
