package cpu

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"

	"github.com/bitvk/bitvk/nn"
)

// ternaryMatrix is one or more ternary projections stacked row-wise (Q, K
// and V in one; gate and up in one) in the kernel layout (see kernels.go),
// so one pass over the shared int8 input computes them all.
//
// BitLinear on it, for an input quantized as q (int8) with scale s:
//
//	y[r] = scale_r · (Σ_i c_ri·q_i − Σ_i q_i) / s        c = t+1 ∈ {0,1,2}
//
// the integer part exact in int32, the rest computed in float64 as nn/ref
// does, so the two agree bit for bit.
type ternaryMatrix struct {
	rows, n  int       // output rows, input width (a multiple of 128)
	stride   int       // bytes per row: n/4
	data     []byte    // [rows][stride] codes in the ternary layout
	rowScale []float32 // [rows] the weight scale of each row
	// groupScale [rows][n/256] holds one scale per 256 weights for a matrix
	// whose rows mix scales (a TQ2_0/TQ1_0 file quantized per block with
	// unequal blocks); nil otherwise, the common case.
	groupScale []float32

	job applyJob // apply's, reused: a call allocates nothing
}

// groupLen is the span of one scale in TQ2_0 and TQ1_0 files.
const groupLen = nn.TQGroup

// newTernaryMatrix repacks the tensors, all of input width n, into one
// matrix, then releases their file pages: memory holds the model once.
func newTernaryMatrix(p *pool, a *weightArena, w *nn.Weights, ts ...nn.Tensor) (*ternaryMatrix, error) {
	m := &ternaryMatrix{n: ts[0].In}
	for _, t := range ts {
		if t.In != m.n {
			return nil, fmt.Errorf("cpu: %s has input width %d, %s %d", t.Name, t.In, ts[0].Name, m.n)
		}
		if t.In%128 != 0 {
			return nil, fmt.Errorf("cpu: %s has input width %d, not a multiple of 128", t.Name, t.In)
		}
		m.rows += t.Out
	}
	m.stride = m.n / 4
	m.data = a.bytes(m.rows * m.stride)
	m.rowScale = make([]float32, m.rows)
	r0 := 0
	for _, t := range ts {
		var err error
		switch t.Type {
		case nn.TypeI2_S:
			err = m.fromI2S(p, t, r0)
		case nn.TypeTQ2_0, nn.TypeTQ1_0:
			err = m.fromTQ(p, t, r0)
		default:
			err = fmt.Errorf("cpu: %s is %s, not a ternary type bitvk runs", t.Name, t.Type)
		}
		if err != nil {
			return nil, err
		}
		r0 += t.Out
	}
	for _, t := range ts {
		w.Release(t)
	}
	return m, nil
}

// fromI2S copies an I2_S tensor, whose layout the kernels share, into rows
// r0… of m. Code 3 is not a ternary value: such a file is rejected, as
// nn/ref rejects it.
func (m *ternaryMatrix) fromI2S(p *pool, t nn.Tensor, r0 int) error {
	scale, err := t.I2SScale()
	if err != nil {
		return err
	}
	if !finite(scale) {
		return fmt.Errorf("cpu: %s: scale %v is not finite", t.Name, scale)
	}
	bad := make([]int, p.workers)
	p.run(t.Out, 64, func(wk, lo, hi int) {
		copy(m.data[(r0+lo)*m.stride:(r0+hi)*m.stride], t.Data[lo*m.stride:hi*m.stride])
		bad[wk] += countCode3(m.data[(r0+lo)*m.stride : (r0+hi)*m.stride])
	})
	for _, b := range bad {
		if b > 0 {
			return fmt.Errorf("cpu: %s: stored codes are not ternary (code 3)", t.Name)
		}
	}
	for r := r0; r < r0+t.Out; r++ {
		m.rowScale[r] = scale
		if m.groupScale != nil { // an earlier tensor of m mixes scales
			for g := 0; g < m.n/groupLen; g++ {
				m.groupScale[r*(m.n/groupLen)+g] = scale
			}
		}
	}
	return nil
}

// countCode3 counts bytes holding the code 3, which no ternary value has.
func countCode3(b []byte) int {
	n := 0
	for _, v := range b {
		if v&(v>>1)&0x55 != 0 {
			n++
		}
	}
	return n
}

// fromTQ unpacks a TQ2_0 or TQ1_0 tensor row by row into rows r0… of m.
// Rows whose blocks share one scale (ignoring all-zero blocks, whose scale
// multiplies nothing) keep it as their row scale; otherwise m gets
// per-group scales.
func (m *ternaryMatrix) fromTQ(p *pool, t nn.Tensor, r0 int) error {
	groups := m.n / groupLen
	scales := make([]float32, t.Out*groups) // [rows of t][groups]
	errs := make([]error, p.workers)
	mixed := make([]bool, p.workers)
	p.run(t.Out, 16, func(wk, lo, hi int) {
		vals := make([]int8, m.n)
		for r := lo; r < hi && errs[wk] == nil; r++ {
			gs := scales[r*groups : (r+1)*groups]
			if errs[wk] = t.TernaryRow(r, vals, gs); errs[wk] != nil {
				return
			}
			nn.PackI2S(m.data[(r0+r)*m.stride:(r0+r+1)*m.stride], vals)
			s, uniform := nn.RowScale(vals, gs)
			m.rowScale[r0+r] = s
			mixed[wk] = mixed[wk] || !uniform
		}
	})
	for _, err := range errs {
		if err != nil {
			return fmt.Errorf("cpu: %w", err)
		}
	}
	for _, s := range scales {
		if !finite(s) {
			return fmt.Errorf("cpu: %s: a block scale (%v) is not finite", t.Name, s)
		}
	}
	isMixed := false
	for _, b := range mixed {
		isMixed = isMixed || b
	}
	if !isMixed && m.groupScale == nil {
		return nil
	}
	if m.groupScale == nil { // rows before r0 had uniform scales: spread them
		m.groupScale = make([]float32, m.rows*groups)
		for r := 0; r < r0; r++ {
			for g := 0; g < groups; g++ {
				m.groupScale[r*groups+g] = m.rowScale[r]
			}
		}
	}
	copy(m.groupScale[r0*groups:], scales)
	return nil
}

// weightArena hands out the memory of a model's weights: 64-byte-aligned
// pieces of chunks that start on a huge-page boundary and that the system
// is asked to back with huge pages (adviseHuge), laid end to end so that
// only a chunk's last huge page is ever partly unused. (One allocation per
// matrix, each rounded to huge pages, would leave up to 2 MiB resident and
// unused after each of the 2B shape's 121 matrices.) A chunk's untouched
// tail is address space only. The zero value is ready; a nil *weightArena
// allocates each piece on its own (alignedBytes), as any arena does a
// piece under arenaMin.
type weightArena struct {
	rest []byte // the current chunk's unused part, 64-byte aligned
}

// arenaChunk is the size of a weight arena's chunks (a larger piece gets a
// chunk of its own), hugePage the huge pages' size, and arenaMin the
// smallest piece the arena places in a chunk: smaller ones (a small
// model's matrices, a short context's caches) are allocated on their own,
// so that a small model does not take 64 MiB chunks, which a test making
// many backends would have the Go runtime clear each time it reuses them.
const (
	arenaChunk = 64 << 20
	hugePage   = 2 << 20
	arenaMin   = 1 << 20
)

// bytes returns n bytes of the arena starting on a 64-byte boundary.
func (a *weightArena) bytes(n int) []byte {
	if a == nil || n < arenaMin {
		return alignedBytes(n)
	}
	n64 := (n + 63) &^ 63
	if n64 > len(a.rest) {
		size := max(arenaChunk, (n64+hugePage-1)&^(hugePage-1))
		b := make([]byte, size+hugePage)
		off := int(-uintptr(unsafe.Pointer(unsafe.SliceData(b))) & (hugePage - 1))
		a.rest = b[off : off+size : off+size]
		adviseHuge(a.rest)
	}
	p := a.rest[:n:n]
	a.rest = a.rest[min(n64, len(a.rest)):]
	return p
}

// f16 returns n float16 values of the arena, the first on a 64-byte
// boundary.
func (a *weightArena) f16(n int) []uint16 {
	b := a.bytes(2 * n)
	return unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(b))), n)
}

// i8 returns n int8 values of the arena, the first on a 64-byte boundary.
func (a *weightArena) i8(n int) []int8 {
	b := a.bytes(n)
	return unsafe.Slice((*int8)(unsafe.Pointer(unsafe.SliceData(b))), n)
}

// touchPages writes a zero at the start of each 4 KiB page of b, which
// must be zero: the system gives the pages it has only promised so far.
func touchPages(b []byte) {
	for i := 0; i < len(b); i += 4096 {
		b[i] = 0
	}
}

// f16Bytes is the memory of s.
func f16Bytes(s []uint16) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), 2*len(s))
}

// alignedBytes allocates n bytes starting on a 64-byte boundary (a cache
// line, a zmm load).
func alignedBytes(n int) []byte {
	b := make([]byte, n+64)
	off := int(-uintptr(unsafe.Pointer(unsafe.SliceData(b))) & 63)
	return b[off : off+n : off+n]
}

func finite(x float32) bool { return !math.IsInf(float64(x), 0) && !math.IsNaN(float64(x)) }

// littleEndian says whether this machine stores numbers as GGUF files do.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// f16View returns float16 data as []uint16: a view of the file's bytes on a
// little-endian machine, a converted copy elsewhere.
func f16View(b []byte) []uint16 {
	if len(b) == 0 {
		return nil
	}
	if littleEndian && uintptr(unsafe.Pointer(&b[0]))%2 == 0 {
		return unsafe.Slice((*uint16)(unsafe.Pointer(&b[0])), len(b)/2)
	}
	out := make([]uint16, len(b)/2)
	for i := range out {
		out[i] = binary.LittleEndian.Uint16(b[2*i:])
	}
	return out
}
