package cpu

import (
	"fmt"
	"runtime"
	"sync"
	"time"
)

// The trainer's float32 matrix products, C += A·B in three storage layouts:
//
//	SgemmNT  c[i·ldc + j] += Σ_{p<k} a[i·lda + p] · b[j·ldb + p]   (A [m×k], B stored [n×k])
//	SgemmNN  c[i·ldc + j] += Σ_{p<k} a[i·lda + p] · b[p·ldb + j]   (A [m×k], B [k×n])
//	SgemmTN  c[i·ldc + j] += Σ_{p<k} a[p·lda + i] · b[p·ldb + j]   (A stored [k×m], B [k×n])
//
// for i < m, j < n: the forward pass y = x·Wᵀ, the input gradient dx = dy·W
// and the weight gradient dW += dyᵀ·x.
//
// One driver serves all three (the structure of BLIS / GotoBLAS). The inner
// dimension is cut into blocks of kc; for each block, nc columns of B are
// packed into micro-panels of nr columns (nr floats per p, contiguous,
// zero-padded) that stay in the L3, then mc rows of A into micro-panels of
// mr rows (mr floats per p) that stay in the L2. The micro-kernel (tile)
// then adds one mr×nr tile of C per call, keeping the tile in registers for
// the kc steps: per p it loads nr floats of B (from L1, where the B
// micro-panel stays while all mc/mr A micro-panels pass by it) and
// broadcasts mr floats of A. Packing turns every layout into the one the
// micro-kernel reads, so only the packing differs between NT, NN and TN:
// operands stored along k ("rows": A in NT/NN, B in NT) are transposed
// into panels, the others are copied in runs of mr or nr floats. Tiles at
// the right and bottom edges are computed into a scratch tile from the
// zero-padded panels and the valid part added to C.
//
// The sum over k runs in the kernel's own order (kc-blocks added into C in
// turn, FMA within a block), so results differ from a sequential loop by
// float32 rounding only: at most about (k+1)·2⁻²⁴·(|c| + Σ_p |a·b|) per
// element.

// sgemmKernels is one kernel set's float32 matrix-product kernels and
// block sizes.
type sgemmKernels struct {
	// mr×nr is the micro-kernel's tile; kc, mc and nc the blocks of the
	// inner dimension, of A's rows (a multiple of mr) and of B's columns
	// (a multiple of nr).
	mr, nr, kc, mc, nc int

	// tile computes c[r·ldc + j] += Σ_{p<kc} a[p·mr + r]·b[p·nr + j] for
	// r < mr, j < nr: one tile of C from an A micro-panel (mr floats per
	// p) and a B micro-panel (nr floats per p).
	tile func(kc int, a, b, c []float32, ldc int)

	// fmaLoop runs iters iterations of fmaFlops float32 FLOPs each,
	// independent FMA chains on registers only: FMAPeak's probe.
	fmaLoop  func(iters int)
	fmaFlops int
}

// sgemmGeneric is the plain Go twin: the same driver around a 4×4 tile.
var sgemmGeneric = sgemmKernels{
	mr: 4, nr: 4, kc: 256, mc: 128, nc: 2048,
	tile:     sgemmTileGeneric,
	fmaLoop:  fmaLoopGeneric,
	fmaFlops: 2 * fmaGenericChains,
}

// SgemmNT computes c[i·ldc + j] += Σ_{p<k} a[i·lda + p]·b[j·ldb + p] for
// i < m, j < n: C += A·Bᵀ with A stored [m×k] and B stored [n×k], both
// contiguous along k. It runs on the calling goroutine (callers split rows
// or columns across goroutines themselves; concurrent calls are safe when
// their C regions do not overlap) and allocates nothing once warm.
//
// Preconditions (a violation panics, as an out-of-range slice index does):
// m, n, k ≥ 0; lda ≥ k, ldb ≥ k, ldc ≥ n; the slices hold every element
// the formula reads or writes; c overlaps neither a nor b.
func SgemmNT(m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
	sgemmCheck("SgemmNT", m, n, k, a, m, k, lda, b, n, k, ldb, c, ldc)
	sgemm(&active.sgemm, true, true, m, n, k, a, lda, b, ldb, c, ldc)
}

// SgemmNN computes c[i·ldc + j] += Σ_{p<k} a[i·lda + p]·b[p·ldb + j] for
// i < m, j < n: C += A·B with A stored [m×k] and B stored [k×n], both
// row-major. Preconditions and concurrency as SgemmNT, with lda ≥ k,
// ldb ≥ n, ldc ≥ n.
func SgemmNN(m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
	sgemmCheck("SgemmNN", m, n, k, a, m, k, lda, b, k, n, ldb, c, ldc)
	sgemm(&active.sgemm, true, false, m, n, k, a, lda, b, ldb, c, ldc)
}

// SgemmTN computes c[i·ldc + j] += Σ_{p<k} a[p·lda + i]·b[p·ldb + j] for
// i < m, j < n: C += Aᵀ·B with A stored [k×m] and B stored [k×n], both
// row-major. Preconditions and concurrency as SgemmNT, with lda ≥ m,
// ldb ≥ n, ldc ≥ n.
func SgemmTN(m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
	sgemmCheck("SgemmTN", m, n, k, a, k, m, lda, b, k, n, ldb, c, ldc)
	sgemm(&active.sgemm, false, false, m, n, k, a, lda, b, ldb, c, ldc)
}

// sgemmCheck panics unless every dimension is ≥ 0 and a, b and c hold
// matrices of the given stored shapes (rows × cols with stride ld).
func sgemmCheck(name string, m, n, k int, a []float32, ar, ac, lda int, b []float32, br, bc, ldb int, c []float32, ldc int) {
	if m < 0 || n < 0 || k < 0 {
		panic(fmt.Sprintf("cpu: %s: negative dimension m=%d n=%d k=%d", name, m, n, k))
	}
	checkMatrix(name, "a", a, ar, ac, lda)
	checkMatrix(name, "b", b, br, bc, ldb)
	checkMatrix(name, "c", c, m, n, ldc)
}

// checkMatrix panics unless s holds rows rows of cols floats, ld apart,
// with ld ≥ cols (rows may not overlap).
func checkMatrix(name, which string, s []float32, rows, cols, ld int) {
	if rows == 0 || cols == 0 {
		return
	}
	if ld < cols {
		panic(fmt.Sprintf("cpu: %s: ld%s = %d is less than the %d columns of %s", name, which, ld, cols, which))
	}
	if len(s) < cols || (len(s)-cols)/ld < rows-1 {
		panic(fmt.Sprintf("cpu: %s: %s holds %d floats, too few for %d×%d with stride %d (needs %d)",
			name, which, len(s), rows, cols, ld, (rows-1)*ld+cols))
	}
}

// sgemmScratch holds one caller's packed panels and edge tile; a pool
// hands one to each call, so concurrent callers never share one.
type sgemmScratch struct {
	a, b, tile []float32
}

var sgemmPool = sync.Pool{New: func() any { return new(sgemmScratch) }}

// grow returns s[:n], reallocated if it is shorter (once per scratch).
func grow(s []float32, n int) []float32 {
	if cap(s) < n {
		return make([]float32, n)
	}
	return s[:n]
}

// sgemm is the driver behind the three layouts: aRows says A is stored
// [m×k] (element (i, p) at a[i·lda + p]) rather than [k×m] (at a[p·lda + i]);
// bRows says B is stored [n×k] (element (p, j) at b[j·ldb + p]) rather than
// [k×n] (at b[p·ldb + j]). The arguments are already checked.
func sgemm(s *sgemmKernels, aRows, bRows bool, m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
	if m == 0 || n == 0 || k == 0 {
		return
	}
	mr, nr := s.mr, s.nr
	sc := sgemmPool.Get().(*sgemmScratch)
	// Panels are padded to whole micro-panels; size them for this call's
	// blocks so small products touch little memory.
	kcMax := min(s.kc, k)
	mcMax, ncMax := min(s.mc, roundUp(m, mr)), min(s.nc, roundUp(n, nr))
	sc.a, sc.b, sc.tile = grow(sc.a, mcMax*kcMax), grow(sc.b, ncMax*kcMax), grow(sc.tile, mr*nr)
	ap, bp, tile := sc.a, sc.b, sc.tile

	for jc := 0; jc < n; jc += s.nc {
		nc := min(s.nc, n-jc)
		for pc := 0; pc < k; pc += s.kc {
			kc := min(s.kc, k-pc)
			if bRows {
				packRows(bp, b[jc*ldb+pc:], ldb, nc, kc, nr)
			} else {
				packCols(bp, b[pc*ldb+jc:], ldb, nc, kc, nr)
			}
			for ic := 0; ic < m; ic += s.mc {
				mc := min(s.mc, m-ic)
				if aRows {
					packRows(ap, a[ic*lda+pc:], lda, mc, kc, mr)
				} else {
					packCols(ap, a[pc*lda+ic:], lda, mc, kc, mr)
				}
				for jr := 0; jr < nc; jr += nr {
					bPanel := bp[jr*kc : (jr+nr)*kc]
					cols := min(nr, nc-jr)
					for ir := 0; ir < mc; ir += mr {
						aPanel := ap[ir*kc : (ir+mr)*kc]
						rows := min(mr, mc-ir)
						ci := (ic+ir)*ldc + jc + jr
						if rows == mr && cols == nr {
							s.tile(kc, aPanel, bPanel, c[ci:], ldc)
							continue
						}
						clear(tile)
						s.tile(kc, aPanel, bPanel, tile, nr)
						for r := 0; r < rows; r++ {
							cr, tr := c[ci+r*ldc:][:cols], tile[r*nr:][:cols]
							for j, v := range tr {
								cr[j] += v
							}
						}
					}
				}
			}
		}
	}
	sgemmPool.Put(sc)
}

func roundUp(x, m int) int { return (x + m - 1) / m * m }

// packRows packs an x×kc block stored by rows, element (i, p) at
// src[i·ld + p], into micro-panels of w rows: element (i, p) goes to
// dst[(i/w)·kc·w + p·w + i%w], and the rows from x up to the next multiple
// of w are zero. Four rows at a time, so that each p writes 16 bytes.
func packRows(dst, src []float32, ld, x, kc, w int) {
	for i0 := 0; i0 < x; i0 += w {
		panel := dst[i0*kc : (i0+w)*kc]
		rows := min(w, x-i0)
		r := 0
		for ; r+4 <= rows; r += 4 {
			s0 := src[(i0+r)*ld:][:kc]
			s1 := src[(i0+r+1)*ld:][:kc]
			s2 := src[(i0+r+2)*ld:][:kc]
			s3 := src[(i0+r+3)*ld:][:kc]
			for p := range s0 {
				d := panel[p*w+r:][:4]
				d[0], d[1], d[2], d[3] = s0[p], s1[p], s2[p], s3[p]
			}
		}
		for ; r < rows; r++ {
			for p, v := range src[(i0+r)*ld:][:kc] {
				panel[p*w+r] = v
			}
		}
		for ; r < w; r++ {
			for p := 0; p < kc; p++ {
				panel[p*w+r] = 0
			}
		}
	}
}

// packCols packs an x×kc block stored by columns, element (i, p) at
// src[p·ld + i], into micro-panels of w as packRows does: runs of w floats
// copied per p. It reads the block row by row (p outside): with the panels
// outside, a power-of-two ld would map every row's run to one L1 set, and
// each panel would fetch the lines the one before it had just evicted.
func packCols(dst, src []float32, ld, x, kc, w int) {
	full := x / w * w
	for p := 0; p < kc; p++ {
		row := src[p*ld:][:x]
		for i0 := 0; i0 < full; i0 += w {
			copy(dst[i0*kc+p*w:][:w], row[i0:i0+w])
		}
		if full < x {
			d := dst[full*kc+p*w:][:w]
			copy(d, row[full:])
			clear(d[x-full:])
		}
	}
}

// sgemmTileGeneric is the tile for mr = nr = 4: sixteen scalar accumulators.
func sgemmTileGeneric(kc int, a, b, c []float32, ldc int) {
	var c00, c01, c02, c03, c10, c11, c12, c13 float32
	var c20, c21, c22, c23, c30, c31, c32, c33 float32
	a, b = a[:4*kc], b[:4*kc]
	for p := 0; p < len(a); p += 4 {
		av, bv := a[p:p+4:p+4], b[p:p+4:p+4]
		a0, a1, a2, a3 := av[0], av[1], av[2], av[3]
		b0, b1, b2, b3 := bv[0], bv[1], bv[2], bv[3]
		c00, c01, c02, c03 = c00+a0*b0, c01+a0*b1, c02+a0*b2, c03+a0*b3
		c10, c11, c12, c13 = c10+a1*b0, c11+a1*b1, c12+a1*b2, c13+a1*b3
		c20, c21, c22, c23 = c20+a2*b0, c21+a2*b1, c22+a2*b2, c23+a2*b3
		c30, c31, c32, c33 = c30+a3*b0, c31+a3*b1, c32+a3*b2, c33+a3*b3
	}
	addRow4(c[0:4], c00, c01, c02, c03)
	addRow4(c[ldc:ldc+4], c10, c11, c12, c13)
	addRow4(c[2*ldc:2*ldc+4], c20, c21, c22, c23)
	addRow4(c[3*ldc:3*ldc+4], c30, c31, c32, c33)
}

func addRow4(c []float32, v0, v1, v2, v3 float32) {
	c = c[:4]
	c[0], c[1], c[2], c[3] = c[0]+v0, c[1]+v1, c[2]+v2, c[3]+v3
}

// fmaGenericChains is how many independent multiply-add chains the Go
// probe runs (scalar: one float32 each).
const fmaGenericChains = 8

// fmaIn and fmaSink keep the Go probe's values opaque to the compiler, so
// that it neither folds nor drops the loop.
var fmaIn, fmaSink float32

const int8GenericChains = 8

// int8In and int8Sink keep the Go int8 probe's values opaque.
var int8In, int8Sink int32

func int8LoopGeneric(iters int) {
	x := int8In
	var s0, s1, s2, s3, s4, s5, s6, s7 int32
	for range iters {
		s0, s1, s2, s3 = s0+x*x, s1+x*x, s2+x*x, s3+x*x
		s4, s5, s6, s7 = s4+x*s0, s5+x*s1, s6+x*s2, s7+x*s3
	}
	int8Sink = s0 + s1 + s2 + s3 + s4 + s5 + s6 + s7
}

func fmaLoopGeneric(iters int) {
	x := fmaIn
	var s0, s1, s2, s3, s4, s5, s6, s7 float32
	for range iters {
		s0, s1, s2, s3 = s0*x+x, s1*x+x, s2*x+x, s3*x+x
		s4, s5, s6, s7 = s4*x+x, s5*x+x, s6*x+x, s7*x+x
	}
	fmaSink = s0 + s1 + s2 + s3 + s4 + s5 + s6 + s7
}

// FMAPeak measures one core's float32 multiply-add peak in GFLOP/s (an FMA
// counts 2 FLOPs) with the active kernel set's register-only FMA loop
// (AVX-512 or AVX2 FMA, or the Go loop in a pure-Go build), for about d. It
// reports the best rate over calls of ≥ 100 µs, so that a core shared with
// other threads still shows its own peak: the ceiling the Sgemm functions'
// GFLOP/s are a share of.
func FMAPeak(d time.Duration) float64 { return fmaPeak(&active.sgemm, d) }

func fmaPeak(s *sgemmKernels, d time.Duration) float64 {
	return probePeak(s.fmaLoop, float64(s.fmaFlops), d)
}

// Int8Peak measures one core's int8 multiply-accumulate peak in GMAC/s
// (one byte product added into a sum) with the register-only loop of the
// kernel set set ("" for the default; see Options.Kernels) of the
// instruction its ternary products are bound by (vpdpbusd, vpmaddubsw, or
// Go's int32 multiply-add), for about d, as FMAPeak does: the ceiling a
// prompt's ternary products are a share of.
func Int8Peak(set string, d time.Duration) (float64, error) {
	k, err := kernelSet(set)
	if err != nil {
		return 0, err
	}
	return probePeak(k.int8Loop, float64(k.int8MACs), d), nil
}

// Int8PeakThreads is Int8Peak for threads threads at once, each on an OS
// thread of its own, started together on the same work (calls of about
// d/4, four each): their summed rate in GMAC/s. Where the threads have
// cores of their own it is about threads × Int8Peak; where they share
// cores (SMT siblings, or a virtual machine whose host runs two vCPUs on
// one core, as the Zen 5 VM's did at times: 225 + 225 against 449 alone)
// it is what a prompt on those threads can reach.
func Int8PeakThreads(set string, threads int, d time.Duration) (float64, error) {
	k, err := kernelSet(set)
	if err != nil {
		return 0, err
	}
	if threads <= 1 {
		return probePeak(k.int8Loop, float64(k.int8MACs), d), nil
	}
	iters := 1 << 10
	for iters < 1<<30 {
		t0 := time.Now()
		k.int8Loop(iters)
		if time.Since(t0) >= d/4 {
			break
		}
		iters *= 2
	}
	rates := make([]float64, threads)
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	for i := range rates {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			ready.Done()
			<-start
			t0 := time.Now()
			for range 4 {
				k.int8Loop(iters)
			}
			rates[i] = 4 * float64(iters) * float64(k.int8MACs) / time.Since(t0).Seconds() / 1e9
		}()
	}
	ready.Wait()
	close(start)
	done.Wait()
	sum := 0.0
	for _, r := range rates {
		sum += r
	}
	return sum, nil
}

// probePeak times loop(iters), each iteration perIter operations, growing
// iters until a call lasts ≥ 100 µs, then calls it for about d and
// returns the best rate in billions of operations per second.
func probePeak(loop func(iters int), perIter float64, d time.Duration) float64 {
	iters := 1 << 10
	for iters < 1<<30 {
		t0 := time.Now()
		loop(iters)
		if time.Since(t0) >= 100*time.Microsecond {
			break
		}
		iters *= 2
	}
	best := 0.0
	for start := time.Now(); ; {
		t0 := time.Now()
		loop(iters)
		best = max(best, float64(iters)*perIter/time.Since(t0).Seconds()/1e9)
		if time.Since(start) >= d {
			return best
		}
	}
}
