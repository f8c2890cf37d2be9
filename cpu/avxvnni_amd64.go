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
// tiles of 12 tokens (ternaryMatMul12AVXVNNI), then one of 8
// (ternaryMatMul8AVXVNNI) where 8 to 11 are left, then one of 4
// (ternaryMatMul4AVXVNNI, rows in threes) where 4 to 7 are; the tiles of
// 12 and 8 in spans of the columns. The rest (at most 3 tokens, and the
// 4-token tile's last rows) run avx2's tiles, on each panel while it is
// in L2; calls of 1-3 tokens run them over all rows at once.
func ternaryMatMulAVXVNNI(w []byte, stride, rows int, x []int8, xStride, n, tokens int, out []int32, outStride int) {
	t8 := tokens / 12 * 12
	if tokens-t8 >= 8 {
		t8 += 8
	}
	t4 := t8
	if tokens-t4 >= 4 {
		t4 += 4
	}
	if t4 == 0 {
		avx2MatMul(w, stride, rows, x, xStride, n, tokens, out, outStride)
		return
	}
	// Spans add to out, so they need each token's outputs apart; a call
	// whose tokens share them (outStride < rows: the same sums, from the
	// same activations) takes whole rows, and so does one of fewer than 8
	// tokens, whose activations fit L1 whole.
	parts := 1
	if t8 > 0 && outStride >= rows {
		parts = max(1, (n+avxvnniColumns-1)/avxvnniColumns)
	}
	span := (n/128 + parts - 1) / parts * 128
	p := max(12, avxvnniPanel/max(1, span/4)/12*12)
	for r := 0; r < rows; r += p {
		pr := min(p, rows-r)
		threes := pr / 3 * 3
		for c := 0; ; c += span {
			wc, m := w[r*stride+c/4:], min(span, n-c)
			t := 0
			for ; t+12 <= t8; t += 12 {
				ternaryMatMul12AVXVNNI(wc, stride, pr, x[t*xStride+c:], xStride, m, out[t*outStride+r:], outStride, c)
			}
			if t < t8 {
				ternaryMatMul8AVXVNNI(wc, stride, pr, x[t*xStride+c:], xStride, m, out[t*outStride+r:], outStride, c)
			}
			if t4 > t8 && threes > 0 {
				ternaryMatMul4AVXVNNI(wc, stride, threes, x[t8*xStride+c:], xStride, m, out[t8*outStride+r:], outStride, c)
			}
			if c+span >= n {
				break
			}
		}
		if t4 > t8 && threes < pr {
			avx2MatMul(w[(r+threes)*stride:], stride, pr-threes, x[t8*xStride:], xStride, n, 4, out[t8*outStride+r+threes:], outStride)
		}
		if t4 < tokens {
			avx2MatMul(w[r*stride:], stride, pr, x[t4*xStride:], xStride, n, tokens-t4, out[t4*outStride+r:], outStride)
		}
	}
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
