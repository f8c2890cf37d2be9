package train

import (
	"sync"
)

// workers splits loops across threads. Each item goes to exactly one
// thread and is computed the same way whichever thread runs it, so results
// do not depend on the thread count.
type workers struct {
	n int
}

// run calls fn over contiguous ranges covering [0, items), one per thread.
func (w *workers) run(items int, fn func(lo, hi int)) {
	n := min(w.n, items)
	if n <= 1 {
		if items > 0 {
			fn(0, items)
		}
		return
	}
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		lo, hi := items*i/n, items*(i+1)/n
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(lo, hi)
		}()
	}
	wg.Wait()
}

// The three matrix products of a linear layer y = x·Wᵀ (x [N][in], W
// [out][in], y [N][out]) and its backward pass, row-major:
//
//	forward  y  = x·Wᵀ      matmulNT(y, x, W, N, out, in)
//	input    dx += dy·W     matmulNN(dx, dy, W, N, in, out)
//	weight   dW += dyᵀ·x    matmulTN(dW, dy, x, out, in, N)
//
// Rows of the result are shared among the workers.

// matmulNT: c[m][n] = Σ_p a[m][p]·b[n][p] (overwrites c).
func matmulNT(w *workers, c, a, b []float32, m, n, k int) {
	w.run(m, func(lo, hi int) {
		clear(c[lo*n : hi*n])
		sgemmNT(hi-lo, n, k, a[lo*k:], k, b, k, c[lo*n:], n)
	})
}

// matmulNN: c[m][n] += Σ_p a[m][p]·b[p][n].
func matmulNN(w *workers, c, a, b []float32, m, n, k int) {
	w.run(m, func(lo, hi int) {
		sgemmNN(hi-lo, n, k, a[lo*k:], k, b, n, c[lo*n:], n)
	})
}

// matmulTN: c[m][n] += Σ_p a[p][m]·b[p][n] (a stored [k][m]).
func matmulTN(w *workers, c, a, b []float32, m, n, k int) {
	w.run(m, func(lo, hi int) {
		sgemmTN(hi-lo, n, k, a[lo:], m, b, n, c[lo*n:], n)
	})
}

// sgemmNT: c[i·ldc+j] += Σ_p a[i·lda+p]·b[j·ldb+p], i < m, j < n.
func sgemmNT(m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
	for i := 0; i < m; i++ {
		ai := a[i*lda : i*lda+k]
		ci := c[i*ldc : i*ldc+n]
		j := 0
		for ; j+4 <= n; j += 4 {
			b0, b1, b2, b3 := b[j*ldb:j*ldb+k], b[(j+1)*ldb:(j+1)*ldb+k], b[(j+2)*ldb:(j+2)*ldb+k], b[(j+3)*ldb:(j+3)*ldb+k]
			var s0, s1, s2, s3 float32
			for p, x := range ai {
				s0 += x * b0[p]
				s1 += x * b1[p]
				s2 += x * b2[p]
				s3 += x * b3[p]
			}
			ci[j] += s0
			ci[j+1] += s1
			ci[j+2] += s2
			ci[j+3] += s3
		}
		for ; j < n; j++ {
			bj := b[j*ldb : j*ldb+k]
			var s float32
			for p, x := range ai {
				s += x * bj[p]
			}
			ci[j] += s
		}
	}
}

// sgemmNN: c[i·ldc+j] += Σ_p a[i·lda+p]·b[p·ldb+j].
func sgemmNN(m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
	for i := 0; i < m; i++ {
		ci := c[i*ldc : i*ldc+n]
		for p := 0; p < k; p++ {
			x := a[i*lda+p]
			if x == 0 {
				continue
			}
			bp := b[p*ldb : p*ldb+n]
			for j := range ci {
				ci[j] += x * bp[j]
			}
		}
	}
}

// sgemmTN: c[i·ldc+j] += Σ_p a[p·lda+i]·b[p·ldb+j].
func sgemmTN(m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
	for i := 0; i < m; i++ {
		ci := c[i*ldc : i*ldc+n]
		for p := 0; p < k; p++ {
			x := a[p*lda+i]
			if x == 0 {
				continue
			}
			bp := b[p*ldb : p*ldb+n]
			for j := range ci {
				ci[j] += x * bp[j]
			}
		}
	}
}
