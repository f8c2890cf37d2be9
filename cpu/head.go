package cpu

import (
	"fmt"
	"math"

	"github.com/bitvk/bitvk/nn"
)

// head is the output projection logits = xn · outputᵀ, in one of three forms:
//
//   - float16 rows [vocab][embd], read in place from the file when the
//     tensor is F16 (the tied token_embd of BitNet b1.58 2B4T), converted
//     once otherwise; logits[r] = Σ f16(w_r,i)·xn_i in float32.
//   - int8 rows with one scale per row (nn.HeadQ8): w_r,i ≈ rowScale_r·w8_r,i
//     with rowScale_r = max|w_r|/127, and xn quantized to int8 with
//     s = 127/max|xn|: logits[r] = rowScale_r·(Σ w8·x8)/s, the sum exact.
//   - int8 codes with one scale per group of 16 or 32 values (the block
//     types Q8_0, Q6_K, Q4_0: nn.HeadBlocks), each value exactly the one
//     the file stores (or the conversion made): logits[r] =
//     (Σ_g scale_r,g·Σ_{i∈g} c_r,i·x8_i)/s, the inner sums exact, the outer
//     in the kernel's order (dotBlockRows). Held as 8-bit codes plus a float32 per group
//     (9 or 10 bits a value against Q8_0's 8.5 and Q6_K's 6.6 in the file).
//     Q4_0 is held as the file holds it, 4-bit codes and a float16 per
//     group of 32 (4.5 bits a value; dotNibbleRows), when embd is a
//     multiple of 128, so a decode step reads half the bytes for it;
//     Q6_K in its 6-bit codes, int8 group scales and a float32 per block
//     of 256 (6.75 bits a value against 10; dotSixRows).
type head struct {
	rows, n int
	typ     nn.HeadType // f16, q8, or a block type
	f16     []uint16    // [vocab][embd] float16 bits, or nil
	q8      []int8      // [vocab][embd] int8 rows or block codes, or nil
	q8Scale []float32   // [vocab] row scales (q8), or [vocab][embd/group] group scales
	q4      []byte      // [vocab][embd/2] Q4_0 codes in nibbleRow's layout, or nil
	q4Scale []uint16    // [vocab][embd/32] their float16 scales
	q6      []byte      // [vocab][3·embd/4] Q6_K codes in sixRow's layout, or nil
	q6Scale []byte      // [vocab][3·embd/32] their scales in sixRow's layout
	group   int         // values per scale of a block type, else 0
}

// bytes is the memory one pass over the head reads.
func (h *head) bytes() int64 {
	return int64(2*len(h.f16) + len(h.q8) + 4*len(h.q8Scale) + len(h.q4) + 2*len(h.q4Scale) + len(h.q6) + len(h.q6Scale))
}

// int8 reports whether the head multiplies int8 activations (every form
// but float16).
func (h *head) int8() bool { return h.f16 == nil }

// releaseRows is how many converted head rows go before their file pages
// are released.
const releaseRows = 512

// newHead loads the head as ht says (nn.HeadStored: the file's type); a
// Q6_K head in dotSixRows' form when six (the kernel set's sixHead).
func newHead(p *pool, a *weightArena, w *nn.Weights, ht nn.HeadType, six bool) (*head, error) {
	t := w.Output
	ht = ht.For(t.Type)
	h := &head{rows: t.Out, n: t.In, typ: ht, group: ht.Group()}
	// A float16 head is copied out of the file too, rather than read in
	// place: a decode step streams all of it, and on the Zen 5 VM of
	// docs/BENCHMARKS.md it streamed from the file's page-cache pages at
	// about half the rate it does from the process's own memory (2B shape,
	// two threads: 50-70 ms a step against 42 ms). The file's pages are
	// released as the copy goes, as for the conversions below.
	copyF16 := ht == nn.HeadF16 && t.Type == nn.TypeF16
	switch {
	case ht == nn.HeadQ4_0 && h.n%128 == 0:
		h.q4 = a.bytes(h.rows * h.n / 2)
		h.q4Scale = a.f16(h.rows * h.n / 32)
	case six && ht == nn.HeadQ6_K && h.n%sixBlock == 0:
		h.q6 = a.bytes(h.rows * 3 * h.n / 4)
		h.q6Scale = a.bytes(h.rows * 3 * h.n / 32)
	case ht == nn.HeadQ8:
		h.q8 = a.i8(h.rows * h.n)
		h.q8Scale = make([]float32, h.rows)
	case h.group > 0:
		if h.n%h.group != 0 {
			return nil, fmt.Errorf("cpu: output head width %d is not a multiple of %d (%s)", h.n, h.group, ht)
		}
		h.q8 = a.i8(h.rows * h.n)
		h.q8Scale = make([]float32, h.rows*(h.n/h.group))
	default:
		h.f16 = a.f16(h.rows * h.n)
	}
	errs := make([]error, p.workers)
	rowBytes := len(t.Data) / max(t.Out, 1)
	p.run(h.rows, 64, func(wk, lo, hi int) {
		row := make([]float32, h.n)
		var codes, sc []int8
		var scales []float32
		if h.q4 != nil {
			codes, scales = make([]int8, h.n), make([]float32, h.n/32)
		}
		if h.q6 != nil {
			codes, sc, scales = make([]int8, h.n), make([]int8, h.n/16), make([]float32, h.n/sixBlock)
		}
		done := lo // rows [lo, done) converted and released
		for r := lo; r < hi && errs[wk] == nil; r++ {
			if h.q4 != nil {
				errs[wk] = packNibbles(t, r, h.q4[r*h.n/2:(r+1)*h.n/2], h.q4Scale[r*h.n/32:(r+1)*h.n/32], codes, scales, row)
			} else if h.q6 != nil {
				if errs[wk] = nn.HeadQ6K(t, r, codes, sc, scales, row); errs[wk] == nil {
					sixRow(h.q6[r*3*h.n/4:(r+1)*3*h.n/4], h.q6Scale[r*3*h.n/32:(r+1)*3*h.n/32], codes, sc, scales)
				}
			} else if copyF16 {
				copy(h.f16[r*h.n:(r+1)*h.n], f16View(t.Data[r*rowBytes:(r+1)*rowBytes]))
			} else if h.group > 0 {
				g := h.n / h.group
				errs[wk] = nn.HeadBlocks(t, r, ht, h.q8[r*h.n:(r+1)*h.n], h.q8Scale[r*g:(r+1)*g], row)
			} else if errs[wk] = t.Row(r, row); errs[wk] == nil {
				if ht == nn.HeadQ8 {
					h.q8Scale[r] = quantizeRow(h.q8[r*h.n:(r+1)*h.n], row)
				} else {
					for i, v := range row {
						h.f16[r*h.n+i] = nn.F32ToF16(v)
					}
				}
			}
			if errs[wk] != nil {
				return
			}
			// Release the file's pages as the conversion goes, so the
			// source and the copy are never both resident in full.
			if r+1-done == releaseRows || r+1 == hi {
				w.Release(nn.Tensor{Data: t.Data[done*rowBytes : (r+1)*rowBytes]})
				done = r + 1
			}
		}
	})
	for _, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("cpu: output head: %w", err)
		}
	}
	// Embedding lookups still read the tied tensor's rows, a few pages per
	// token; the head no longer streams it.
	return h, nil
}

// packNibbles writes row r of the Q4_0 head t (or of t converted to Q4_0)
// in dotNibbleRows' form: its codes into dst in nibbleRow's layout, its
// scales as float16 bits. codes, scales and row are scratch.
func packNibbles(t nn.Tensor, r int, dst []byte, dstScales []uint16, codes []int8, scales, row []float32) error {
	if err := nn.HeadBlocks(t, r, nn.HeadQ4_0, codes, scales, row); err != nil {
		return err
	}
	for i, c := range codes {
		if c < -8 || c > 7 {
			return fmt.Errorf("row %d: Q4_0 code %d at %d is outside [-8, 7]", r, c, i)
		}
	}
	nibbleRow(dst, codes)
	for g, s := range scales {
		h := nn.F32ToF16(s)
		if nn.F16ToF32(h) != s && !(s != s) {
			return fmt.Errorf("row %d: Q4_0 scale %g of group %d is not a float16", r, s, g)
		}
		dstScales[g] = h
	}
	return nil
}

// quantizeRow writes row as int8 in [−127, 127] with the scale
// max|row|/127 (round half to even) and returns the scale.
func quantizeRow(dst []int8, row []float32) float32 {
	m := float32(0)
	for _, v := range row {
		m = max(m, abs32(v))
	}
	if m == 0 {
		clear(dst)
		return 0
	}
	inv := 127 / m
	for i, v := range row {
		dst[i] = int8(max(-127, min(127, math.RoundToEven(float64(v*inv)))))
	}
	return m / 127
}

// headTile is the most tokens one head pass computes: each weight row is
// read once per tile (the few tokens of a speculative verification fit
// one), and the int8 head's sums of a tile take headTile·vocab int32s.
const headTile = 16

// headScratch is the head's working memory for up to headTile tokens.
type headScratch struct {
	hq    []int8  // [headTile][embd] the int8 quantization of xn (q8 head)
	hRaw  []int32 // [headTile][vocab] the q8 head's exact sums, or nil
	hBias []int32 // [headTile][embd/4] blockBias or nibbleBias of hq, or [headTile][embd/16] the Q6_K head's biases (sixActivations); nil for the others
	hSix  []int8  // [headTile][embd] sixActivations of hq (Q6_K head; the biases in hBias), or nil
	job   headJob // logits' pool job
}

func (h *head) newScratch() headScratch {
	var s headScratch
	if h.int8() {
		s.hq = make([]int8, headTile*h.n)
	}
	if h.typ == nn.HeadQ8 {
		s.hRaw = make([]int32, headTile*h.rows)
	}
	if h.group > 0 || h.q6 != nil {
		s.hBias = make([]int32, headTile*h.n/4)
	}
	if h.q6 != nil {
		s.hSix = make([]int8, headTile*h.n)
	}
	return s
}

// logits computes out [T][vocab] for the normalized states xn [T][embd],
// T ≤ headTile, the rows split across the workers. Each token's logits are
// bit-identical to those it gets alone (T = 1): the few-token kernels sum
// every (row, token) in the order of the one-token ones.
func (h *head) logits(k kernels, p *pool, sc *headScratch, xn []float32, T int, out []float32) {
	n := h.n
	j := &sc.job
	*j = headJob{h: h, k: k, sc: sc, xn: xn, T: T, out: out}
	if h.int8() {
		for t := 0; t < T; t++ {
			j.scale[t] = quantizeRow(sc.hq[t*n:(t+1)*n], xn[t*n:(t+1)*n]) // = max|xn|/127: x ≈ s·x8
		}
	}
	if h.q6 != nil {
		for t := 0; t < T; t++ {
			sixActivations(sc.hq[t*n:(t+1)*n], sc.hSix[t*n:(t+1)*n], sc.hBias[t*n/16:(t+1)*n/16])
		}
	} else if h.q4 != nil {
		for t := 0; t < T; t++ {
			nibbleBias(sc.hq[t*n:(t+1)*n], sc.hBias[t*n/4:(t+1)*n/4])
		}
	} else if h.group > 0 {
		j.bk, j.bm = k.dotBlockRows, k.dotBlockMatMul
		if n%64 != 0 { // the assembly takes whole 64-byte steps
			j.bk, j.bm = generic.dotBlockRows, generic.dotBlockMatMul
		}
		for t := 0; t < T; t++ {
			blockBias(sc.hq[t*n:(t+1)*n], sc.hBias[t*n/4:(t+1)*n/4])
		}
	}
	p.runChunksJob(h.rows, 64, j)
}

// scaleBlocks multiplies the block head's sums in rows lo…hi of every
// token's logits by the token's activation scale.
func (j *headJob) scaleBlocks(lo, hi int) {
	v := j.h.rows
	for t := 0; t < j.T; t++ {
		s := float64(j.scale[t])
		ot := j.out[t*v+lo : t*v+hi]
		for r, sum := range ot {
			ot[r] = float32(float64(sum) * s)
		}
	}
}

// headJob is logits' pool job: rows lo…hi of every token's logits.
type headJob struct {
	h     *head
	k     kernels
	sc    *headScratch
	xn    []float32
	T     int
	out   []float32
	scale [headTile]float32 // each token's x8 scale (int8 heads)
	bk    func(w []int8, scales []float32, group int, x []int8, bias []int32, out []float32)
	bm    func(w []int8, scales []float32, group, rows int, x []int8, bias []int32, xStride, tokens int, out []float32, outStride int)
}

func (j *headJob) do(_, lo, hi int) {
	h, k, sc, T, out := j.h, &j.k, j.sc, j.T, j.out
	n, v := h.n, h.rows
	switch {
	case h.q6 != nil:
		// As for Q4_0, the few-token kernel gives each (row, token) the
		// one-token bits.
		if T == 1 {
			k.dotSixRows(h.q6[lo*3*n/4:hi*3*n/4], h.q6Scale[lo*3*n/32:hi*3*n/32], sc.hSix[:n], sc.hBias[:n/16], out[lo:hi])
		} else {
			k.dotSixMatMul(h.q6[lo*3*n/4:hi*3*n/4], h.q6Scale[lo*3*n/32:hi*3*n/32], hi-lo, sc.hSix[:T*n], sc.hBias[:T*n/16], n, T, out[lo:], v)
		}
		j.scaleBlocks(lo, hi)
	case h.q4 != nil:
		// The few-token kernel gives each (row, token) the bits of the
		// one-token one: the head is batch-invariant.
		if T == 1 {
			k.dotNibbleRows(h.q4[lo*n/2:hi*n/2], h.q4Scale[lo*n/32:hi*n/32], sc.hq[:n], sc.hBias[:n/4], out[lo:hi])
		} else {
			k.dotNibbleMatMul(h.q4[lo*n/2:hi*n/2], h.q4Scale[lo*n/32:hi*n/32], hi-lo, sc.hq[:T*n], sc.hBias[:T*n/4], n, T, out[lo:], v)
		}
		j.scaleBlocks(lo, hi)
	case h.f16 != nil:
		if T == 1 {
			k.dotF16Rows(h.f16[lo*n:], n, j.xn[:n], out[lo:hi])
		} else {
			k.dotF16MatMul(h.f16[lo*n:], n, hi-lo, j.xn, n, n, T, out[lo:], v)
		}
	case h.group > 0:
		// The few-token kernel gives each (row, token) the bits of the
		// one-token one: the head is batch-invariant.
		G := n / h.group
		if T == 1 {
			j.bk(h.q8[lo*n:hi*n], h.q8Scale[lo*G:hi*G], h.group, sc.hq[:n], sc.hBias[:n/4], out[lo:hi])
		} else {
			j.bm(h.q8[lo*n:hi*n], h.q8Scale[lo*G:hi*G], h.group, hi-lo, sc.hq[:T*n], sc.hBias[:T*n/4], n, T, out[lo:], v)
		}
		j.scaleBlocks(lo, hi)
	default:
		raw := sc.hRaw
		if T == 1 {
			k.dotI8Rows(h.q8[lo*n:], n, sc.hq[:n], raw[lo:hi])
		} else {
			k.dotI8MatMul(h.q8[lo*n:], n, hi-lo, sc.hq, n, n, T, raw[lo:], v)
		}
		for t := 0; t < T; t++ {
			k.scaleI8(out[t*v+lo:t*v+hi], raw[t*v+lo:t*v+hi], h.q8Scale[lo:hi], float64(j.scale[t]))
		}
	}
}
