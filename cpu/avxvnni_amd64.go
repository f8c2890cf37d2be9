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

// ternaryRowsAVXVNNITwo is ternaryRowsAVXVNNI (the same bits) prefetching
// each line twice, 16 KiB ahead into L2 and 2 KiB ahead into L1, for
// Intel's cores (forPrefetcher; avxvnni_amd64.s).
//
//go:noescape
func ternaryRowsAVXVNNITwo(w []byte, stride int, x []int8, out []int32)

//go:noescape
func ternaryMatMul8AVXVNNI(w []byte, stride int, rows int, x []int8, xStride int, n int, out []int32, outStride int, add int)

//go:noescape
func ternaryMatMul3AVXVNNI(w []byte, stride int, rows int, x []int8, xStride int, n int, out []int32, outStride int, add int)

//go:noescape
func ternaryMatMul4AVXVNNI(w []byte, stride int, rows int, x []int8, xStride int, n int, out []int32, outStride int, add int)

//go:noescape
func ternaryMatMul12AVXVNNI(w []byte, stride int, rows int, x []int8, xStride int, n int, out []int32, outStride int, add int)

// The blocks of ternaryMatMulAVXVNNI's tiles: spans of at most
// avxvnniColumns columns of a row, so that 12 tokens' activations (30 KiB)
// stay in L1 (48 KiB on the performance cores that run this set) while
// the rows stream past, wider rows split into equal spans of whole
// blocks, each call after a row's first adding to its sums; and panels of
// rows of at most avxvnniPanel bytes of a span, which the calls after the
// first read from L2.
const (
	avxvnniColumns = 2560
	avxvnniPanel   = 512 << 10
)

// ternaryMatMulAVXVNNI is ternaryMatMul on AVX-VNNI, in panels of rows:
// tiles of 12 tokens (ternaryMatMul12AVXVNNI), then of 8
// (ternaryMatMul8AVXVNNI), 4 (ternaryMatMul4AVXVNNI, rows in threes) and
// 3 (ternaryMatMul3AVXVNNI, rows in fours) as avxvnniTiles counts them,
// the tiles of 12 and 8 in spans of the columns; the last 1-2 tokens one
// at a time in ternaryRowsAVXVNNI, and the last rows of the tiles of 4 and
// 3 in avx2's tiles, each on the panel while it is in L2. Calls of 1-2
// tokens run avx2's tiles over all rows at once.
func ternaryMatMulAVXVNNI(w []byte, stride, rows int, x []int8, xStride, n, tokens int, out []int32, outStride int) {
	n12, n8, n4, n3, _ := avxvnniTiles(tokens)
	if n12+n8+n4+n3 == 0 {
		avx2MatMul(w, stride, rows, x, xStride, n, tokens, out, outStride)
		return
	}
	t4 := 12*n12 + 8*n8 // the first token of the tile of 4, then of the 3s
	t3 := t4 + 4*n4
	t1 := t3 + 3*n3 // and of the single tokens
	// Spans add to out, so they need each token's outputs apart; a call
	// whose tokens share them (outStride < rows: the same sums, from the
	// same activations) takes whole rows, and so does one of fewer than 8
	// tokens, whose activations fit L1 whole.
	parts := 1
	if t4 > 0 && outStride >= rows {
		parts = max(1, (n+avxvnniColumns-1)/avxvnniColumns)
	}
	span := (n/128 + parts - 1) / parts * 128
	p := max(12, avxvnniPanel/max(1, span/4)/12*12)
	for r := 0; r < rows; r += p {
		pr := min(p, rows-r)
		threes, fours := pr/3*3, pr/4*4
		for c := 0; ; c += span {
			wc, m := w[r*stride+c/4:], min(span, n-c)
			t := 0
			for ; t+12 <= t4; t += 12 {
				ternaryMatMul12AVXVNNI(wc, stride, pr, x[t*xStride+c:], xStride, m, out[t*outStride+r:], outStride, c)
			}
			if t < t4 {
				ternaryMatMul8AVXVNNI(wc, stride, pr, x[t*xStride+c:], xStride, m, out[t*outStride+r:], outStride, c)
			}
			if n4 > 0 && threes > 0 {
				ternaryMatMul4AVXVNNI(wc, stride, threes, x[t4*xStride+c:], xStride, m, out[t4*outStride+r:], outStride, c)
			}
			for t := t3; t < t1 && fours > 0; t += 3 {
				ternaryMatMul3AVXVNNI(wc, stride, fours, x[t*xStride+c:], xStride, m, out[t*outStride+r:], outStride, c)
			}
			if c+span >= n {
				break
			}
		}
		if n4 > 0 && threes < pr {
			avx2MatMul(w[(r+threes)*stride:], stride, pr-threes, x[t4*xStride:], xStride, n, 4, out[t4*outStride+r+threes:], outStride)
		}
		for t := t3; t < t1 && fours < pr; t += 3 {
			avx2MatMul(w[(r+fours)*stride:], stride, pr-fours, x[t*xStride:], xStride, n, 3, out[t*outStride+r+fours:], outStride)
		}
		for t := t1; t < tokens; t++ {
			ternaryRowsAVXVNNI(w[r*stride:], stride, x[t*xStride:t*xStride+n], out[t*outStride+r:t*outStride+r+pr])
		}
	}
}

// avxvnniTiles is how ternaryMatMulAVXVNNI takes a call's tokens: n12
// tiles of 12, then n8 of 8, n4 of 4, n3 of 3 and n1 single tokens, the
// 4s and 3s chosen so that at most 2 tokens are left single (5 = 4 + 1,
// 6 = 3 + 3, 7 = 4 + 3).
func avxvnniTiles(tokens int) (n12, n8, n4, n3, n1 int) {
	n12, rest := tokens/12, tokens%12
	if rest >= 8 {
		n8, rest = 1, rest-8
	}
	switch rest {
	case 1, 2:
		n1 = rest
	case 3:
		n3 = 1
	case 4:
		n4 = 1
	case 5:
		n4, n1 = 1, 1
	case 6:
		n3 = 2
	case 7:
		n4, n3 = 1, 1
	}
	return n12, n8, n4, n3, n1
}

// avx2MatMul is the avx2 set's ternaryMatMul without its bounds check
// and L1 blocking: tiles of avx2MatMulTokens tokens.
var avx2MatMul = tokenChunks(ternaryMatMulAVX2, avx2MatMulTokens)

// kScoresAVX2Set is the avxvnni set's kScores kernel: kScoresAVX2Two on
// CPUs with linePrefetches, else kScoresAVX2. A function of its own, calling
// each directly, as kScoresAVX512Set is: kScoresWhole's scratch for a
// partial block then stays on the stack.
func kScoresAVX2Set(kt []uint16, hd, n int, q []float32, nq int, out []float32, outStride int) {
	if linePrefetches {
		kScoresAVX2Two(kt, hd, n, q, nq, out, outStride)
		return
	}
	kScoresAVX2(kt, hd, n, q, nq, out, outStride)
}

// int8LoopAVXVNNI is the set's int8 peak probe: 12 independent VEX
// vpdpbusd on ymm an iteration.
//
//go:noescape
func int8LoopAVXVNNI(iters int)

var avxVNNIKernels = func() kernels {
	k := avx2Kernels
	k.name = "avxvnni"
	// Intel's cores (every CPU with AVX-VNNI and no AVX-512 so far) stream
	// the decode kernels faster with each line prefetched twice (the Two
	// versions, linePrefetches): on the Intel Xeon VM, running this set,
	// docs/KERNELS.md.
	k.ternaryRows = checkTernaryRows(forPrefetcher(ternaryRowsAVXVNNI, ternaryRowsAVXVNNITwo, ternaryRowsAVXVNNI))
	k.dotF16Rows = checkDotF16Rows(forPrefetcher(dotF16RowsAVX2, dotF16RowsAVX2Two, dotF16RowsAVX2))
	k.dotF16MatMul = checkDotF16MatMul(tiledF16(forPrefetcher(dotF16MatMulAVX2, dotF16MatMulAVX2Two, dotF16MatMulAVX2), 5))
	k.kScores = kScoresWhole(kScoresAVX2Set)
	axpy4 := forPrefetcher(axpyF16Rows4AVX2, axpyF16Rows4AVX2Two, axpyF16Rows4AVX2)
	k.axpyF16Rows4 = checkAxpyF16Rows4(wholeAxpyRows4(axpy4, fourOf(rowsOfAxpy(checkAxpyF16(axpyF16AVX2)))))
	i8Rows := checkDotI8Rows(forPrefetcher(dotI8RowsAVX2, dotI8RowsAVX2Two, dotI8RowsAVX2))
	k.dotI8Rows = i8Rows
	k.dotI8MatMul = checkDotI8MatMul(blockedI8(i8Rows))
	blockRows := checkDotBlockRows(forPrefetcher(dotBlockRowsAVX2, dotBlockRowsAVX2Two, dotBlockRowsAVX2))
	k.dotBlockRows = blockRows
	k.dotBlockMatMul = checkDotBlockMatMul(blockedBlocks(blockRows))
	nibbleRows := checkDotNibbleRows(forPrefetcher(dotNibbleRowsAVX2, dotNibbleRowsAVX2Two, dotNibbleRowsAVX2))
	k.dotNibbleRows = nibbleRows
	k.dotNibbleMatMul = checkDotNibbleMatMul(blockedNibbles(nibbleRows))
	sixRows := checkDotSixRows(forPrefetcher(dotSixRowsAVX2, dotSixRowsAVX2Two, dotSixRowsAVX2))
	k.dotSixRows = sixRows
	k.dotSixMatMul = checkDotSixMatMul(blockedSix(sixRows))
	k.ternaryMatMul = checkTernaryMatMul(ternaryMatMulAVXVNNI)
	k.int8Loop, k.int8MACs = int8LoopAVXVNNI, 12*32
	return k
}()
