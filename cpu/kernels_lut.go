package cpu

import "sync"

// The portable kernel set, "go": the plain twins, but with the ternary
// products through lookup tables, for machines without an assembly set
// (arm64, riscv64, … and -tags purego builds).
//
// ternaryRowsLUT: a byte of a row holds two nibbles, the codes of weights
// (j, 32+j) in the high one and (64+j, 96+j) in the low one of its block.
// For each byte position p of the rows, a table of 32 sums gives
// c₀·x₀ + c₁·x₁ for each of the 16 values of the high nibble, then the
// same for the low nibble, so a byte of weights costs two lookups and two
// adds instead of four multiply-adds. The tables (n/4 × 32 int32, 80 KiB
// at n = 2560) are built once per call and serve every row; rows go four
// at a time, sharing each table's address. Exact: every entry and sum is
// an integer well inside int32 (|entry| ≤ 2·3·128).
//
// The heads (dotF16Rows, dotI8Rows) take four rows at a time, each summed
// in the twin's order, so the float results are the twin's to the bit
// while four sums are in flight instead of one dependency chain.
var goKernels = func() kernels {
	k := generic
	k.name = "go"
	k.ternaryRows = ternaryRowsLUT
	k.ternaryMatMul = ternaryMatMulLUT
	k.dotF16Rows = dotF16Rows4
	k.dotF16MatMul = blockedF16(dotF16Rows4)
	k.dotI8Rows = dotI8Rows4
	k.dotI8MatMul = blockedI8(dotI8Rows4)
	return k
}()

// fourRows returns rows r…r+3 of w (stride apart, n long); the three
// last resliced to the first's length, so that indexing them by the
// first's indices needs no bounds checks.
func fourRows[T any](w []T, r, stride, n int) (a, b, c, d []T) {
	a = w[r*stride : r*stride+n]
	b = w[(r+1)*stride : (r+1)*stride+n][:len(a)]
	c = w[(r+2)*stride : (r+2)*stride+n][:len(a)]
	d = w[(r+3)*stride : (r+3)*stride+n][:len(a)]
	return
}

// dotF16Rows4 is dotF16RowsGeneric four rows at a time.
func dotF16Rows4(w []uint16, stride int, x []float32, out []float32) {
	n := len(x)
	r := 0
	for ; r+4 <= len(out); r += 4 {
		w0, w1, w2, w3 := fourRows(w, r, stride, n)
		var s0, s1, s2, s3 float32
		for i, h := range w0 {
			xi := x[i]
			s0 += f16Table[h] * xi
			s1 += f16Table[w1[i]] * xi
			s2 += f16Table[w2[i]] * xi
			s3 += f16Table[w3[i]] * xi
		}
		out[r], out[r+1], out[r+2], out[r+3] = s0, s1, s2, s3
	}
	if r < len(out) {
		dotF16RowsGeneric(w[r*stride:], stride, x, out[r:])
	}
}

// dotI8Rows4 is dotI8RowsGeneric four rows at a time.
func dotI8Rows4(w []int8, stride int, x []int8, out []int32) {
	n := len(x)
	r := 0
	for ; r+4 <= len(out); r += 4 {
		w0, w1, w2, w3 := fourRows(w, r, stride, n)
		var s0, s1, s2, s3 int32
		for i, v := range w0 {
			xi := int32(x[i])
			s0 += int32(v) * xi
			s1 += int32(w1[i]) * xi
			s2 += int32(w2[i]) * xi
			s3 += int32(w3[i]) * xi
		}
		out[r], out[r+1], out[r+2], out[r+3] = s0, s1, s2, s3
	}
	if r < len(out) {
		dotI8RowsGeneric(w[r*stride:], stride, x, out[r:])
	}
}

// lutPool holds the tables of ternaryRowsLUT between calls.
var lutPool sync.Pool

func ternaryRowsLUT(w []byte, stride int, x []int8, out []int32) {
	n := len(x)
	nb := n / 4
	p, _ := lutPool.Get().(*[][32]int32)
	if p == nil {
		p = new([][32]int32)
	}
	if cap(*p) < nb {
		*p = make([][32]int32, nb)
	}
	tab := (*p)[:nb]
	defer lutPool.Put(p)
	for blk := 0; blk < n/128; blk++ {
		xs := x[blk*128 : blk*128+128]
		for j := range 32 {
			t := &tab[blk*32+j]
			x0, x1, x2, x3 := int32(xs[j]), int32(xs[32+j]), int32(xs[64+j]), int32(xs[96+j])
			for v := range int32(16) {
				t[v] = (v>>2)*x0 + (v&3)*x1
				t[16+v] = (v>>2)*x2 + (v&3)*x3
			}
		}
	}
	r := 0
	for ; r+4 <= len(out); r += 4 {
		r0, r1, r2, r3 := fourRows(w, r, stride, nb)
		var a0, a1, a2, a3 int32
		for p, b0 := range r0 {
			t := &tab[p]
			b1, b2, b3 := r1[p], r2[p], r3[p]
			a0 += t[b0>>4] + t[16+b0&15]
			a1 += t[b1>>4] + t[16+b1&15]
			a2 += t[b2>>4] + t[16+b2&15]
			a3 += t[b3>>4] + t[16+b3&15]
		}
		out[r], out[r+1], out[r+2], out[r+3] = a0, a1, a2, a3
	}
	for ; r < len(out); r++ {
		var a int32
		for p, b := range w[r*stride : r*stride+nb] {
			t := &tab[p]
			a += t[b>>4] + t[16+b&15]
		}
		out[r] = a
	}
}

// ternaryMatMulLUT is ternaryMatMul through ternaryRowsLUT, a token at a
// time (each token's tables built once for all rows).
func ternaryMatMulLUT(w []byte, stride, rows int, x []int8, xStride, n, tokens int, out []int32, outStride int) {
	for t := range tokens {
		ternaryRowsLUT(w, stride, x[t*xStride:t*xStride+n], out[t*outStride:t*outStride+rows])
	}
}
