package gpu

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/bitvk/bitvk/gpu/vk"
	"github.com/bitvk/bitvk/nn"
	"github.com/bitvk/bitvk/spirv"
)

// shard is rows [row0, row0+rows) of a matrix, in one buffer: no tensor is
// bound whole when it is larger than the device's maxStorageBufferRange or
// maxMemoryAllocationSize.
type shard struct {
	buf        *vk.Buffer
	row0, rows int
}

// ternaryMatrix is one or more ternary projections stacked row-wise (Q, K
// and V in one; gate and up in one) in the I2_S layout, so one dispatch
// computes them all from one quantized input.
type ternaryMatrix struct {
	rows, k    int
	shards     []shard
	rowScale   *vk.Buffer // [rows] float
	groupScale *vk.Buffer // [rows][k/256] float, for TQ files with unequal block scales; nil otherwise
}

// floatMatrix is a float16 matrix [rows][k] (the token embedding, the F16
// head), an int8 one with a scale per row (the q8 head), or int8 codes with
// a scale per group of 16 or 32 values (a block-type head, nn.HeadBlocks).
type floatMatrix struct {
	rows, k     int
	shards      []shard
	rowScale    *vk.Buffer   // q8 only
	group       int          // block heads: values per scale; else 0
	groupScales []*vk.Buffer // block heads: per shard, [shard rows][k/group] float (nibbles: float16 pairs)
	// nibbles: Q4_0 in its own 4.5 bits (head_nibbles' layout): per shard
	// k/2 bytes a row and float16 group scales, where other block types
	// hold int8 codes and float32 scales.
	nibbles bool
	// six: Q6_K in 6.625 bits (head_six's layout): per shard 3k/4 bytes a
	// row, and per row the groups' int8 scales and the blocks' float32 d.
	six bool
}

// weightBytes is what rows rows of m take on the device (codes and
// scales): what a pass over them reads.
func (m *floatMatrix) weightBytes(rows int) int {
	v := rows * m.k
	switch {
	case m.nibbles:
		return v/2 + 2*v/m.group
	case m.six:
		return 3*v/4 + v/16 + v/64
	case m.group > 0:
		return v + 4*v/m.group
	case m.rowScale != nil:
		return v + 4*rows
	}
	return 2 * v
}

// blockKernels returns the head and embedding kernels of a block-type m
// (the head's plain form; Variant gives its twins) and the type's name
// for a profile.
func (m *floatMatrix) blockKernels() (head, embed spirv.Kernel, name string) {
	switch {
	case m.nibbles:
		return spirv.HeadNibbles, spirv.EmbedNibbles, "q4_0"
	case m.six:
		return spirv.HeadSix, spirv.EmbedSix, "q6_k"
	}
	return spirv.HeadBlocks, spirv.EmbedBlocks, "blocks"
}

// quantized says whether the head reads int8 activations (q8 and block
// heads) rather than the float normed state.
func (m *floatMatrix) quantized() bool { return m.rowScale != nil || m.group > 0 }

// groupLen is the span of one scale in TQ2_0 and TQ1_0 files.
const groupLen = nn.TQGroup

// shardRows is how many rows of rowBytes bytes go in one buffer.
func (b *Backend) shardRows(name string, rowBytes int) (int, error) {
	if int64(rowBytes) > b.maxShard {
		return 0, fmt.Errorf("gpu: one row of %s takes %d bytes, more than the device binds at once (%d)", name, rowBytes, b.maxShard)
	}
	return int(b.maxShard / int64(rowBytes)), nil
}

// upload makes the buffers of a matrix of rows rows of rowBytes bytes,
// filling each shard with fill(row0, rows) (the bytes of those rows).
func (b *Backend) upload(name string, rows, rowBytes int, fill func(row0, n int) ([]byte, error)) ([]shard, error) {
	per, err := b.shardRows(name, rowBytes)
	if err != nil {
		return nil, err
	}
	var shards []shard
	for r0 := 0; r0 < rows; r0 += per {
		n := min(per, rows-r0)
		label := name
		if rows > per {
			label = fmt.Sprintf("%s rows %d..%d", name, r0, r0+n-1)
		}
		buf, err := b.dev.NewBuffer(label, int64(n*rowBytes), false)
		if err != nil {
			return nil, err
		}
		data, err := fill(r0, n)
		if err != nil {
			return nil, err
		}
		if err := b.dev.Upload(buf, 0, data); err != nil {
			return nil, fmt.Errorf("gpu: uploading %s: %w", label, err)
		}
		shards = append(shards, shard{buf: buf, row0: r0, rows: n})
	}
	return shards, nil
}

// floats uploads a float32 vector.
func (b *Backend) floats(name string, v []float32) (*vk.Buffer, error) {
	buf, err := b.dev.NewBuffer(name, int64(4*max(len(v), 1)), false)
	if err != nil {
		return nil, err
	}
	return buf, b.dev.Upload(buf, 0, f32Bytes(v))
}

// vector uploads a float tensor (a norm weight) as float32.
func (b *Backend) vector(t nn.Tensor) (*vk.Buffer, error) {
	v, err := t.Floats()
	if err != nil {
		return nil, err
	}
	return b.floats(t.Name, v)
}

// newTernary stacks the tensors, all of input width k, into one matrix on
// the device, then releases their file pages.
func (b *Backend) newTernary(w *nn.Weights, ts ...nn.Tensor) (*ternaryMatrix, error) {
	m := &ternaryMatrix{k: ts[0].In}
	name := ts[0].Name
	for _, t := range ts[1:] {
		name += "+" + t.Name
	}
	for _, t := range ts {
		if t.In != m.k {
			return nil, fmt.Errorf("gpu: %s has input width %d, %s %d", t.Name, t.In, ts[0].Name, m.k)
		}
		if t.In%128 != 0 {
			return nil, fmt.Errorf("gpu: %s has input width %d, not a multiple of 128", t.Name, t.In)
		}
		m.rows += t.Out
	}
	stride := m.k / 4
	data := make([]byte, m.rows*stride)
	rowScale := make([]float32, m.rows)
	groups := m.k / groupLen
	var groupScale []float32 // [rows][groups], made when a row mixes scales
	r0 := 0
	for _, t := range ts {
		switch t.Type {
		case nn.TypeI2_S:
			scale, err := t.I2SScale()
			if err != nil {
				return nil, err
			}
			if !finite(scale) {
				return nil, fmt.Errorf("gpu: %s: scale %v is not finite", t.Name, scale)
			}
			if len(t.Data) < t.Out*stride {
				return nil, fmt.Errorf("gpu: %s: %d bytes of data, want %d", t.Name, len(t.Data), t.Out*stride)
			}
			dst := data[r0*stride : (r0+t.Out)*stride]
			copy(dst, t.Data)
			for _, v := range dst {
				if v&(v>>1)&0x55 != 0 {
					return nil, fmt.Errorf("gpu: %s: stored codes are not ternary (code 3)", t.Name)
				}
			}
			for r := r0; r < r0+t.Out; r++ {
				rowScale[r] = scale
			}
		case nn.TypeTQ2_0, nn.TypeTQ1_0:
			if m.k%groupLen != 0 {
				return nil, fmt.Errorf("gpu: %s has input width %d, not a multiple of %d", t.Name, m.k, groupLen)
			}
			vals := make([]int8, m.k)
			gs := make([]float32, groups)
			for r := 0; r < t.Out; r++ {
				if err := t.TernaryRow(r, vals, gs); err != nil {
					return nil, fmt.Errorf("gpu: %w", err)
				}
				for _, s := range gs {
					if !finite(s) {
						return nil, fmt.Errorf("gpu: %s: a block scale (%v) is not finite", t.Name, s)
					}
				}
				nn.PackI2S(data[(r0+r)*stride:(r0+r+1)*stride], vals)
				s, uniform := nn.RowScale(vals, gs)
				rowScale[r0+r] = s
				if !uniform && groupScale == nil {
					groupScale = make([]float32, m.rows*groups)
					for pr := 0; pr < r0+r; pr++ { // earlier rows: their one scale
						for g := range groups {
							groupScale[pr*groups+g] = rowScale[pr]
						}
					}
				}
				if groupScale != nil {
					copy(groupScale[(r0+r)*groups:], gs)
				}
			}
		default:
			return nil, fmt.Errorf("gpu: %s is %s, not a ternary type bitvk runs", t.Name, t.Type)
		}
		if groupScale != nil { // rows of this tensor that were uniform, or I2_S rows
			for r := r0; r < r0+t.Out; r++ {
				if allZero(groupScale[r*groups : (r+1)*groups]) {
					for g := range groups {
						groupScale[r*groups+g] = rowScale[r]
					}
				}
			}
		}
		r0 += t.Out
	}
	var err error
	if m.shards, err = b.upload(name, m.rows, stride, func(row0, n int) ([]byte, error) {
		return data[row0*stride : (row0+n)*stride], nil
	}); err != nil {
		return nil, err
	}
	if m.rowScale, err = b.floats(name+" scales", rowScale); err != nil {
		return nil, err
	}
	if groupScale != nil {
		if m.groupScale, err = b.floats(name+" block scales", groupScale); err != nil {
			return nil, err
		}
	}
	for _, t := range ts {
		w.Release(t)
	}
	return m, nil
}

// newF16 puts a float tensor [out][in] on the device as float16 rows, read
// in place from the file when it is F16.
func (b *Backend) newF16(t nn.Tensor) (*floatMatrix, error) {
	m := &floatMatrix{rows: t.Out, k: t.In}
	if t.In%4 != 0 {
		return nil, fmt.Errorf("gpu: %s has width %d, not a multiple of 4", t.Name, t.In)
	}
	rowBytes := 2 * t.In
	var err error
	m.shards, err = b.upload(t.Name, t.Out, rowBytes, func(row0, n int) ([]byte, error) {
		if t.Type == nn.TypeF16 {
			return t.Data[row0*rowBytes : (row0+n)*rowBytes], nil
		}
		out := make([]byte, n*rowBytes)
		row := make([]float32, t.In)
		for r := range n {
			if err := t.Row(row0+r, row); err != nil {
				return nil, err
			}
			for i, v := range row {
				h := nn.F32ToF16(v)
				out[r*rowBytes+2*i], out[r*rowBytes+2*i+1] = byte(h), byte(h>>8)
			}
		}
		return out, nil
	})
	return m, err
}

// newBlocks puts a float tensor [out][in] on the device as a block head of
// type h (nn.HeadBlocks): int8 codes, and per shard the group scales, every
// value scale·code exactly the file's (or the conversion's).
func (b *Backend) newBlocks(t nn.Tensor, h nn.HeadType) (*floatMatrix, error) {
	g := h.Group()
	m := &floatMatrix{rows: t.Out, k: t.In, group: g}
	if t.In%g != 0 || t.In%4 != 0 {
		return nil, fmt.Errorf("gpu: %s has width %d, not a multiple of %d (%s)", t.Name, t.In, g, h)
	}
	scales := make([]float32, t.Out*(t.In/g))
	tmp := make([]float32, t.In)
	var err error
	m.shards, err = b.upload(t.Name+" ("+string(h)+")", t.Out, t.In, func(row0, n int) ([]byte, error) {
		out := make([]byte, n*t.In)
		codes := make([]int8, t.In)
		for r := range n {
			gs := scales[(row0+r)*(t.In/g) : (row0+r+1)*(t.In/g)]
			if err := nn.HeadBlocks(t, row0+r, h, codes, gs, tmp); err != nil {
				return nil, err
			}
			for i, c := range codes {
				out[r*t.In+i] = byte(c)
			}
		}
		return out, nil
	})
	if err != nil {
		return nil, err
	}
	for _, sh := range m.shards {
		buf, err := b.floats(fmt.Sprintf("%s group scales rows %d..%d", t.Name, sh.row0, sh.row0+sh.rows-1),
			scales[sh.row0*(t.In/g):(sh.row0+sh.rows)*(t.In/g)])
		if err != nil {
			return nil, err
		}
		m.groupScales = append(m.groupScales, buf)
	}
	return m, nil
}

// newHead puts a head (or embedding) tensor on the device held as h, a
// block type or anything else (float16): Q4_0 in its own 4.5 bits, Q6_K in
// 6.625, Q8_0 as int8 codes and float32 group scales.
func (b *Backend) newHead(t nn.Tensor, h nn.HeadType) (*floatMatrix, error) {
	switch {
	case h == nn.HeadQ4_0:
		return b.newNibbles(t)
	case h == nn.HeadQ6_K:
		return b.newSix(t)
	case h.Group() > 0:
		return b.newBlocks(t, h)
	}
	return b.newF16(t)
}

// newNibbles puts a float tensor [out][in] on the device as Q4_0 in its
// own 4.5 bits (head_nibbles, embed_nibbles): per row in/2 bytes, each
// group of 32 values the 16 bytes of ggml's block_q4_0 (value j in byte
// j's low nibble, value j+16 in its high one, as codes c+8), and per shard
// the groups' float16 scales d in pairs, value = d·c exactly the file's
// (or --head q4_0's conversion's).
func (b *Backend) newNibbles(t nn.Tensor) (*floatMatrix, error) {
	const g = 32
	m := &floatMatrix{rows: t.Out, k: t.In, group: g, nibbles: true}
	if t.In%g != 0 {
		return nil, fmt.Errorf("gpu: %s has width %d, not a multiple of %d (q4_0)", t.Name, t.In, g)
	}
	groups := t.In / g
	scales := make([]uint16, t.Out*groups)
	tmp, gs := make([]float32, t.In), make([]float32, groups)
	var err error
	m.shards, err = b.upload(t.Name+" (q4_0)", t.Out, t.In/2, func(row0, n int) ([]byte, error) {
		out := make([]byte, n*t.In/2)
		codes := make([]int8, t.In)
		for r := range n {
			if err := nn.HeadBlocks(t, row0+r, nn.HeadQ4_0, codes, gs, tmp); err != nil {
				return nil, err
			}
			for j, d := range gs {
				h := nn.F32ToF16(d)
				if nn.F16ToF32(h) != d {
					return nil, fmt.Errorf("gpu: %s row %d: a Q4_0 scale (%v) is not a float16", t.Name, row0+r, d)
				}
				scales[(row0+r)*groups+j] = h
			}
			row := out[r*t.In/2:]
			for j := range groups {
				c := codes[g*j : g*j+g]
				for k := range 16 {
					row[16*j+k] = byte(c[k]+8) | byte(c[16+k]+8)<<4
				}
			}
		}
		return out, nil
	})
	if err != nil {
		return nil, err
	}
	err = b.shardScales(m, t.Name+" q4_0 scales", func(sh shard) []byte {
		hs := scales[sh.row0*groups : (sh.row0+sh.rows)*groups]
		data := make([]byte, 4*((len(hs)+1)/2)) // whole words
		for i, h := range hs {
			data[2*i], data[2*i+1] = byte(h), byte(h>>8)
		}
		return data
	})
	return m, err
}

// shardScales uploads, for each of m's shards, the scales of its rows
// (scales(sh)) as a buffer of its own: m.groupScales.
func (b *Backend) shardScales(m *floatMatrix, name string, scales func(sh shard) []byte) error {
	for _, sh := range m.shards {
		data := scales(sh)
		label := fmt.Sprintf("%s rows %d..%d", name, sh.row0, sh.row0+sh.rows-1)
		buf, err := b.dev.NewBuffer(label, int64(len(data)), false)
		if err != nil {
			return err
		}
		if err := b.dev.Upload(buf, 0, data); err != nil {
			return fmt.Errorf("gpu: uploading %s: %w", label, err)
		}
		m.groupScales = append(m.groupScales, buf)
	}
	return nil
}

// newSix puts a float tensor [out][in] on the device as Q6_K in 6.625 bits
// a value (head_six, embed_six): per row and group of 16 values three words,
// the codes c+32 ∈ 0…63 of nn.HeadQ6K as two words of low nibbles (byte b
// of word k: value 4k+b in its low half, 8+4k+b in its high half) and one
// of high bits (byte b: value 4j+b in bits 2j+1…2j); and per shard, per
// row, the groups' int8 scales sc four to a word, then the blocks' float32
// d. Every value d·sc·c is exactly the file's (or --head q6_k's).
func (b *Backend) newSix(t nn.Tensor) (*floatMatrix, error) {
	const g = 16
	m := &floatMatrix{rows: t.Out, k: t.In, group: g, six: true}
	if t.In%256 != 0 {
		return nil, fmt.Errorf("gpu: %s has width %d, not a multiple of 256 (q6_k)", t.Name, t.In)
	}
	groups, blocks := t.In/g, t.In/256
	scRow := groups + 4*blocks // bytes of scales a row
	scales := make([]byte, t.Out*scRow)
	tmp, d := make([]float32, t.In), make([]float32, blocks)
	var err error
	m.shards, err = b.upload(t.Name+" (q6_k)", t.Out, 3*t.In/4, func(row0, n int) ([]byte, error) {
		out := make([]byte, n*3*t.In/4)
		codes, sc := make([]int8, t.In), make([]int8, groups)
		for r := range n {
			if err := nn.HeadQ6K(t, row0+r, codes, sc, d, tmp); err != nil {
				return nil, err
			}
			ss := scales[(row0+r)*scRow:]
			for j, v := range sc {
				ss[j] = byte(v)
			}
			for j, v := range d {
				binary.LittleEndian.PutUint32(ss[groups+4*j:], math.Float32bits(v))
			}
			row := out[r*3*t.In/4:]
			for j := range groups {
				var c [16]byte
				for i := range c {
					c[i] = byte(codes[g*j+i] + 32)
				}
				w := row[12*j : 12*j+12]
				for bb := range 4 {
					w[bb] = c[bb]&15 | c[8+bb]<<4                                       // A0
					w[4+bb] = c[4+bb]&15 | c[12+bb]<<4                                  // A1
					w[8+bb] = c[bb]>>4 | c[4+bb]>>4<<2 | c[8+bb]>>4<<4 | c[12+bb]>>4<<6 // H
				}
			}
		}
		return out, nil
	})
	if err != nil {
		return nil, err
	}
	err = b.shardScales(m, t.Name+" q6_k scales", func(sh shard) []byte {
		return scales[sh.row0*scRow : (sh.row0+sh.rows)*scRow]
	})
	return m, err
}

// newQ8 puts a float tensor [out][in] on the device as int8 rows with one
// scale per row: w ≈ scale_r·w8, scale_r = max|w_r|/127.
func (b *Backend) newQ8(t nn.Tensor) (*floatMatrix, error) {
	m := &floatMatrix{rows: t.Out, k: t.In}
	if t.In%4 != 0 {
		return nil, fmt.Errorf("gpu: %s has width %d, not a multiple of 4", t.Name, t.In)
	}
	scales := make([]float32, t.Out)
	var err error
	m.shards, err = b.upload(t.Name+" (int8)", t.Out, t.In, func(row0, n int) ([]byte, error) {
		out := make([]byte, n*t.In)
		row := make([]float32, t.In)
		for r := range n {
			if err := t.Row(row0+r, row); err != nil {
				return nil, err
			}
			scales[row0+r] = quantizeRow(out[r*t.In:(r+1)*t.In], row)
		}
		return out, nil
	})
	if err != nil {
		return nil, err
	}
	m.rowScale, err = b.floats(t.Name+" row scales", scales)
	return m, err
}

// quantizeRow writes row as int8 codes round(w·127/m), m = max|w|, and
// returns the scale m/127 (0 for an all-zero row).
func quantizeRow(dst []byte, row []float32) float32 {
	m := float32(0)
	for _, v := range row {
		m = max(m, float32(math.Abs(float64(v))))
	}
	if m == 0 {
		clear(dst)
		return 0
	}
	inv := 127 / m
	for i, v := range row {
		dst[i] = byte(int8(max(-127, min(127, math.RoundToEven(float64(v*inv))))))
	}
	return m / 127
}

func allZero(v []float32) bool {
	for _, x := range v {
		if x != 0 {
			return false
		}
	}
	return true
}

func finite(x float32) bool { return !math.IsInf(float64(x), 0) && !math.IsNaN(float64(x)) }

// f32Bytes is the little-endian bytes of v.
func f32Bytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		u := math.Float32bits(x)
		b[4*i], b[4*i+1], b[4*i+2], b[4*i+3] = byte(u), byte(u>>8), byte(u>>16), byte(u>>24)
	}
	return b
}
