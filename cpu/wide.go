package cpu

import "fmt"

// A long prompt's attention in items of many queries (attendRun, items of
// attnWideQueries queries or more): kScoresWide and axpyF16RowsWide take up
// to 16 queries a call where kScores and axpyF16Rows4 take four, so each
// float16 key or value is read and widened once for all of them instead of
// once per four. Their fields are nil in the sets without them; each gives
// kScores' and axpyF16Rows4's bits (the same FMA chains).

// wideCounts are the query counts the wide kernels take in one call,
// largest first; the wrappers split any count into them.
var wideCounts = [...]int{16, 8, 4, 2, 1}

// wideSplit returns the largest of wideCounts not above nq.
func wideSplit(nq int) int {
	for _, c := range wideCounts {
		if c <= nq {
			return c
		}
	}
	return 0
}

// kScoresWideGeneric is kScoresGeneric with the queries transposed: query
// j's value of key d at qT[d·qStride + j].
func kScoresWideGeneric(kt []uint16, hd, n int, qT []float32, qStride, nq int, out []float32, outStride int) {
	if n <= 0 {
		return
	}
	checkKScoresWide(kt, hd, n, qT, qStride, nq, out, outStride)
	for j := 0; j < nq; j++ {
		o := out[j*outStride : j*outStride+n]
		for p := range o {
			blk := kt[p/kBlock*kBlock*hd+p%kBlock:]
			var s float32
			for d := 0; d < hd; d++ {
				s += qT[d*qStride+j] * f16Table[blk[d*kBlock]]
			}
			o[p] = s
		}
	}
}

// axpyF16RowsWideGeneric is axpyF16Rows4's generic sums for nq queries:
// y_j[i] += a_j[p]·f16(v[p·stride + i]) for p < np in order, i < n, a_j =
// a[j·aStride:], y_j = y[j·n:].
func axpyF16RowsWideGeneric(a []float32, aStride, nq, np int, v []uint16, stride int, y []float32, n int) {
	if np <= 0 {
		return
	}
	checkAxpyF16RowsWide(a, aStride, nq, np, v, stride, y, n)
	for j := 0; j < nq; j++ {
		yj := y[j*n : (j+1)*n]
		for p, w := range a[j*aStride : j*aStride+np] {
			row := v[p*stride : p*stride+n]
			for i := range yj {
				yj[i] += w * f16Table[row[i]]
			}
		}
	}
}

// checkKScoresWide panics unless kScoresWide's operands hold what it reads
// and writes.
func checkKScoresWide(kt []uint16, hd, n int, qT []float32, qStride, nq int, out []float32, outStride int) {
	blocks := (n + kBlock - 1) / kBlock
	if hd <= 0 || nq <= 0 || qStride < nq || outStride < n || len(kt) < blocks*kBlock*hd ||
		len(qT) < (hd-1)*qStride+nq || len(out) < (nq-1)*outStride+n {
		panic(fmt.Sprintf("cpu: kScoresWide: %d positions of %d queries (head size %d, %d apart) from %d keys and %d query values into %d scores %d apart",
			n, nq, hd, qStride, len(kt), len(qT), len(out), outStride))
	}
}

// checkAxpyF16RowsWide panics unless axpyF16RowsWide's operands hold what
// it reads and writes, n a multiple of 16.
func checkAxpyF16RowsWide(a []float32, aStride, nq, np int, v []uint16, stride int, y []float32, n int) {
	if nq <= 0 || n <= 0 || n%16 != 0 || aStride < np || stride < n ||
		len(a) < (nq-1)*aStride+np || len(v) < (np-1)*stride+n || len(y) < nq*n {
		panic(fmt.Sprintf("cpu: axpyF16RowsWide: %d × %d weights (stride %d) over %d rows of %d (stride %d) into %d × %d do not fit in a %d, v %d, y %d",
			nq, np, aStride, np, n, stride, nq, n, len(a), len(v), len(y)))
	}
}
