package nn

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/bitvk/bitvk/gguf"
)

// Tensor is one weight: its type, its shape in ggml order (In is the input
// width, the contiguous dimension; Out the number of rows) and its bytes, a
// view into the model file.
type Tensor struct {
	Name string
	Type gguf.Type
	In   int    // ggml dims[0]
	Out  int    // ggml dims[1]; 1 for vectors
	Data []byte // DataSize(Type, In·Out) bytes
}

// Layer holds the weights of one transformer block. AttnSubNorm and
// FFNSubNorm are empty (nil Data) in families without sub-norms.
type Layer struct {
	AttnNorm, AttnQ, AttnK, AttnV, AttnOutput, AttnSubNorm Tensor
	FFNNorm, FFNGate, FFNUp, FFNDown, FFNSubNorm           Tensor
}

// Weights is the weight table of a model.
type Weights struct {
	TokenEmbd  Tensor // [Embd, Vocab]
	OutputNorm Tensor // [Embd]
	Output     Tensor // [Embd, Vocab]; the same tensor as TokenEmbd when the head is tied
	TiedOutput bool
	Layers     []Layer

	release func([]byte) // drops file pages from resident memory; nil when not from a file
}

// Release says that a backend has copied t's data elsewhere and no longer
// reads it from the file, so the file's pages under it may leave resident
// memory (they are read again from the file if touched later). It keeps a
// model in memory once, in the backend's layout.
func (w *Weights) Release(t Tensor) {
	if w.release != nil {
		w.release(t.Data)
	}
}

// ternaryRunnable reports whether bitvk runs projections stored as t.
func ternaryRunnable(t gguf.Type) bool {
	return t == gguf.TypeI2_S || t == gguf.TypeTQ2_0 || t == gguf.TypeTQ1_0
}

// dim is one dimension a tensor must have, and the metadata it follows
// from, for error messages.
type dim struct {
	n    int
	from string
}

// LoadWeights builds the weight table of f for c and checks every tensor:
// present, of the shape c implies, of a type bitvk runs, its norm weights
// and ternary scales finite; and that the file's blocks are the
// block_count c says. All problems are reported at once.
func LoadWeights(f *gguf.File, c *Config) (*Weights, error) {
	if err := checkBlocks(f, c); err != nil {
		return nil, err
	}
	var errs []string
	bad := func(format string, a ...any) { errs = append(errs, fmt.Sprintf(format, a...)) }
	get := func(name string, kind string, want ...dim) Tensor {
		ti, ok := f.Tensor(name)
		if !ok {
			bad("tensor %s is missing", name)
			return Tensor{Name: name}
		}
		t := Tensor{Name: name, Type: ti.Type, In: int(ti.Dims[0]), Out: 1, Data: f.TensorData(ti)}
		if len(ti.Dims) > 1 {
			t.Out = int(ti.Dims[1])
		}
		shapeOK := shapeIs(ti.Dims, want)
		if !shapeOK {
			wantDims := make([]int, len(want))
			from := make([]string, len(want))
			for i, d := range want {
				wantDims[i], from[i] = d.n, d.from
			}
			bad("tensor %s has shape %v, want %v (%s)", name, ti.Dims, wantDims, strings.Join(from, " × "))
		}
		switch kind {
		case "ternary":
			if !ternaryRunnable(ti.Type) {
				if ti.Type.Ternary() {
					bad("tensor %s is %s, which bitvk cannot run (convert the model to I2_S, TQ2_0 or TQ1_0)", name, ti.Type)
				} else {
					bad("tensor %s is %s, not ternary: bitvk runs BitNet b1.58 models, whose projections are I2_S, TQ2_0 or TQ1_0", name, ti.Type)
				}
			} else if shapeOK && ti.Type == gguf.TypeI2_S {
				if s, err := t.I2SScale(); err != nil {
					bad("tensor %v", err)
				} else if !finite(s) {
					bad("tensor %s: the I2_S scale is %v", name, s)
				}
			}
		case "float", "norm":
			if !ti.Type.CanDecode() || ti.Type.Ternary() {
				bad("tensor %s is %s: bitvk cannot read it (want F32, F16, BF16, Q8_0, Q6_K or Q4_0)", name, ti.Type)
			} else if shapeOK && kind == "norm" {
				// A NaN or Inf here reaches every later activation: NaN
				// logits on the CPU, arbitrary finite ones where a kernel's
				// max drops NaN. llama.cpp refuses such values only with
				// --check-tensors; bitvk always does, for the few
				// kilobytes it reads (the large float tensors, the
				// embedding and head, are not scanned).
				if v, err := t.Floats(); err != nil {
					bad("tensor %v", err)
				} else if i := firstNonFinite(v); i >= 0 {
					bad("tensor %s: value %d is %v", name, i, v[i])
				}
			}
		}
		return t
	}
	embd := dim{c.Embd, SuffixEmbeddingLength}
	ffn := dim{c.FFN, SuffixFeedForward}
	kv := dim{c.KVDim(), SuffixHeadCountKV + "·head dimension"}
	vocab := dim{c.Vocab, "vocabulary"}
	w := &Weights{release: f.Release}
	w.TokenEmbd = get(TensorTokenEmbd, "float", embd, vocab)
	w.OutputNorm = get(TensorOutputNorm, "norm", embd)
	if _, ok := f.Tensor(TensorOutput); ok {
		w.Output = get(TensorOutput, "float", embd, vocab)
	} else {
		w.Output, w.TiedOutput = w.TokenEmbd, true
	}
	for l := 0; l < c.Layers; l++ {
		n := func(t LayerTensor) string { return LayerTensorName(l, t) }
		L := Layer{
			AttnNorm:   get(n(AttnNorm), "norm", embd),
			AttnQ:      get(n(AttnQ), "ternary", embd, embd),
			AttnK:      get(n(AttnK), "ternary", embd, kv),
			AttnV:      get(n(AttnV), "ternary", embd, kv),
			AttnOutput: get(n(AttnOutput), "ternary", embd, embd),
			FFNNorm:    get(n(FFNNorm), "norm", embd),
			FFNGate:    get(n(FFNGate), "ternary", embd, ffn),
			FFNUp:      get(n(FFNUp), "ternary", embd, ffn),
			FFNDown:    get(n(FFNDown), "ternary", ffn, embd),
		}
		if c.SubNorms {
			L.AttnSubNorm = get(n(AttnSubNorm), "norm", embd)
			L.FFNSubNorm = get(n(FFNSubNorm), "norm", ffn)
		} else {
			for _, t := range []LayerTensor{AttnSubNorm, FFNSubNorm} {
				if _, ok := f.Tensor(n(t)); ok {
					bad("tensor %s is present, but %s models have no sub-norms: the file mixes families", n(t), c.Arch)
				}
			}
		}
		w.Layers = append(w.Layers, L)
	}
	// Some converters store BitLinear scales as separate tensors
	// (blk.N.attn_q.scale): running without them would give a wrong answer,
	// so say so instead.
	for i := range f.Tensors {
		if name := f.Tensors[i].Name; strings.HasPrefix(name, "blk.") && strings.HasSuffix(name, ".scale") {
			bad("tensor %s holds a separate weight scale, which bitvk does not apply yet", name)
			break
		}
	}
	if len(errs) > 0 {
		if len(errs) > 8 {
			errs = append(errs[:8], fmt.Sprintf("and %d more", len(errs)-8))
		}
		return nil, fmt.Errorf("%s model: %s", c.Arch, strings.Join(errs, "; "))
	}
	return w, nil
}

// Check reports whether w is a weight table of configuration c: the layer
// count and the tensor shapes LoadWeights checks. Backends call it, since
// their callers may build a Config by hand.
func (w *Weights) Check(c *Config) error {
	if len(w.Layers) != c.Layers {
		return fmt.Errorf("nn: the configuration has %d layers but the weights have %d", c.Layers, len(w.Layers))
	}
	var errs []string
	check := func(t Tensor, in, out int) {
		if t.In != in || t.Out != out {
			errs = append(errs, fmt.Sprintf("tensor %s is [%d %d], but the configuration wants [%d %d]", t.Name, t.In, t.Out, in, out))
		}
	}
	optional := func(t Tensor, in int) {
		switch {
		case c.SubNorms && t.Data == nil:
			errs = append(errs, fmt.Sprintf("the configuration has sub-norms but %s is missing", t.Name))
		case c.SubNorms:
			check(t, in, 1)
		case t.Data != nil:
			errs = append(errs, fmt.Sprintf("the configuration has no sub-norms but %s is given", t.Name))
		}
	}
	check(w.TokenEmbd, c.Embd, c.Vocab)
	check(w.Output, c.Embd, c.Vocab)
	check(w.OutputNorm, c.Embd, 1)
	kv := c.KVDim()
	for _, L := range w.Layers {
		check(L.AttnNorm, c.Embd, 1)
		check(L.AttnQ, c.Embd, c.Embd)
		check(L.AttnK, c.Embd, kv)
		check(L.AttnV, c.Embd, kv)
		check(L.AttnOutput, c.Embd, c.Embd)
		optional(L.AttnSubNorm, c.Embd)
		check(L.FFNNorm, c.Embd, 1)
		check(L.FFNGate, c.Embd, c.FFN)
		check(L.FFNUp, c.Embd, c.FFN)
		check(L.FFNDown, c.FFN, c.Embd)
		optional(L.FFNSubNorm, c.FFN)
		if len(errs) > 0 {
			break // one layer's worth says enough
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("nn: %s", strings.Join(errs, "; "))
	}
	return nil
}

// shapeIs reports whether dims (ggml order) is want: a vector [n] for one
// wanted dimension, [in, out] for two, with any further dimensions 1.
func shapeIs(dims []uint64, want []dim) bool {
	if len(dims) < len(want) {
		return false
	}
	for i, d := range dims {
		switch {
		case i < len(want) && d != uint64(want[i].n):
			return false
		case i >= len(want) && d != 1:
			return false
		}
	}
	return true
}

// checkBlocks checks that the file's blocks (tensors blk.N.*) are blocks 0
// to c.Layers−1, before anything is done per block: a block_count larger
// than the file would otherwise cost work and an error per missing block
// (billions, for a huge count), and a smaller one would run a model with
// some blocks silently left out (llama.cpp rejects both: "wrong number of
// tensors").
func checkBlocks(f *gguf.File, c *Config) error {
	key := ArchKey(c.Arch, SuffixBlockCount)
	last, beyond := -1, ""
	for i := range f.Tensors {
		name := f.Tensors[i].Name
		l, ok := blockOf(name)
		if !ok {
			continue
		}
		last = max(last, l)
		if l >= c.Layers && beyond == "" {
			beyond = fmt.Sprintf("%s model: tensor %s belongs to block %d, beyond %s = %d", c.Arch, name, l, key, c.Layers)
		}
	}
	switch {
	case last < 0:
		return fmt.Errorf("%s model: metadata %s = %d, but the file has no block tensors (blk.N.*)", c.Arch, key, c.Layers)
	case c.Layers > last+1:
		return fmt.Errorf("%s model: metadata %s = %d, but the file has tensors of blocks 0 to %d only", c.Arch, key, c.Layers, last)
	case beyond != "":
		return fmt.Errorf("%s (the file has blocks 0 to %d)", beyond, last)
	}
	return nil
}

// blockOf returns N of a tensor named blk.N.…, and whether it is one.
func blockOf(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, "blk.")
	if !ok {
		return 0, false
	}
	num, _, ok := strings.Cut(rest, ".")
	if !ok {
		return 0, false
	}
	l, err := strconv.Atoi(num)
	if err != nil || l < 0 {
		return 0, false
	}
	return l, true
}

// firstNonFinite is the index of the first NaN or ±Inf in v, or −1.
func firstNonFinite(v []float32) int {
	for i, x := range v {
		if !finite(x) {
			return i
		}
	}
	return -1
}

func finite(x float32) bool { return !math.IsNaN(float64(x)) && !math.IsInf(float64(x), 0) }

// Floats decodes a whole float tensor (a norm weight, a small embedding).
func (t Tensor) Floats() ([]float32, error) {
	out := make([]float32, t.In*t.Out)
	if err := gguf.Decode(t.Type, t.Data, len(out), out); err != nil {
		return nil, fmt.Errorf("%s: %w", t.Name, err)
	}
	return out, nil
}

// Row decodes row r (t.In values) of a float tensor into dst.
func (t Tensor) Row(r int, dst []float32) error {
	if r < 0 || r >= t.Out || len(dst) < t.In {
		return fmt.Errorf("%s: row %d of %d into a buffer of %d", t.Name, r, t.Out, len(dst))
	}
	size, err := gguf.DataSize(t.Type, uint64(t.In))
	if err != nil {
		return fmt.Errorf("%s: %w", t.Name, err)
	}
	if err := gguf.Decode(t.Type, t.Data[uint64(r)*size:uint64(r+1)*size], t.In, dst); err != nil {
		return fmt.Errorf("%s row %d: %w", t.Name, r, err)
	}
	return nil
}

// Ternary unpacks a ternary tensor: values [Out][In] in {−1, 0, +1}, and the
// scales, one per blockLen consecutive values of the row-major flat index
// (one per tensor for I2_S, one per 256 values for TQ2_0 and TQ1_0). A stored
// code that is not a ternary value is an error.
func (t Tensor) Ternary() (vals []int8, scales []float32, blockLen int, err error) {
	n := t.In * t.Out
	vals = make([]int8, n)
	switch t.Type {
	case gguf.TypeI2_S:
		var s float32
		if s, err = gguf.UnpackI2_S(t.Data, n, vals); err == nil {
			var st gguf.TernaryStats
			if st, err = gguf.TernaryHistogram(t.Type, t.Data, uint64(n)); err == nil && st.Invalid > 0 {
				err = fmt.Errorf("%d stored codes are not ternary", st.Invalid)
			}
		}
		scales, blockLen = []float32{s}, n
	case gguf.TypeTQ2_0, gguf.TypeTQ1_0:
		scales, blockLen = make([]float32, n/256), 256
		var invalid int
		if t.Type == gguf.TypeTQ2_0 {
			invalid, err = gguf.UnpackTQ2_0(t.Data, n, vals, scales)
		} else {
			invalid, err = gguf.UnpackTQ1_0(t.Data, n, vals, scales)
		}
		if err == nil && invalid > 0 {
			err = fmt.Errorf("%d stored values are not ternary", invalid)
		}
	default:
		err = fmt.Errorf("type %s is not ternary", t.Type)
	}
	if err != nil {
		return nil, nil, 0, fmt.Errorf("%s: %w", t.Name, err)
	}
	return vals, scales, blockLen, nil
}

// RoundF16 rounds x to the nearest float16, as a K/V cache in float16 stores it.
func RoundF16(x float32) float32 { return gguf.F16ToF32(gguf.F32ToF16(x)) }

// F32ToF16 rounds x to the nearest float16 (ties to even) and returns its bits.
func F32ToF16(x float32) uint16 { return gguf.F32ToF16(x) }

// F16ToF32 is the float32 value of the float16 bits h.
func F16ToF32(h uint16) float32 { return gguf.F16ToF32(h) }

// I2SScale is the per-tensor scale of an I2_S tensor, stored after its codes.
func (t Tensor) I2SScale() (float32, error) {
	if t.Type != gguf.TypeI2_S {
		return 0, fmt.Errorf("%s: type %s is not I2_S", t.Name, t.Type)
	}
	s, err := gguf.I2_SScale(t.Data, t.In*t.Out)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", t.Name, err)
	}
	return s, nil
}

// TernaryRow unpacks row r of a TQ2_0 or TQ1_0 tensor: its t.In values in
// {−1, 0, +1} into vals and one scale per 256 values into scales
// (t.In/256 of them). A stored value that is not ternary is an error.
func (t Tensor) TernaryRow(r int, vals []int8, scales []float32) error {
	if t.Type != gguf.TypeTQ2_0 && t.Type != gguf.TypeTQ1_0 {
		return fmt.Errorf("%s: TernaryRow reads TQ2_0 and TQ1_0, not %s", t.Name, t.Type)
	}
	if r < 0 || r >= t.Out || len(vals) < t.In || len(scales) < t.In/256 {
		return fmt.Errorf("%s: row %d of %d into buffers of %d values and %d scales", t.Name, r, t.Out, len(vals), len(scales))
	}
	size, err := gguf.DataSize(t.Type, uint64(t.In))
	if err != nil {
		return fmt.Errorf("%s: %w", t.Name, err)
	}
	data := t.Data[uint64(r)*size : uint64(r+1)*size]
	var invalid int
	if t.Type == gguf.TypeTQ2_0 {
		invalid, err = gguf.UnpackTQ2_0(data, t.In, vals, scales)
	} else {
		invalid, err = gguf.UnpackTQ1_0(data, t.In, vals, scales)
	}
	if err == nil && invalid > 0 {
		err = fmt.Errorf("%d stored values are not ternary", invalid)
	}
	if err != nil {
		return fmt.Errorf("%s row %d: %w", t.Name, r, err)
	}
	return nil
}

// TQGroup is the number of weights that share one scale in TQ2_0 and TQ1_0
// (the length of scales that TernaryRow fills is t.In/TQGroup).
const TQGroup = 256

// RowScale returns the one scale of a row's groups of TQGroup values,
// ignoring all-zero groups (whose scale multiplies nothing), and whether
// the row has one; false means the row mixes scales.
func RowScale(vals []int8, scales []float32) (float32, bool) {
	var s float32
	seen := false
	for g, gs := range scales {
		zero := true
		for _, v := range vals[g*TQGroup : (g+1)*TQGroup] {
			if v != 0 {
				zero = false
				break
			}
		}
		if zero {
			continue
		}
		if seen && gs != s {
			return 0, false
		}
		s, seen = gs, true
	}
	return s, true
}

// PackI2S writes ternary values (−1, 0, +1), a multiple of 128 of them, as
// I2_S codes t+1: per 128 values 32 bytes, byte j holding values j, 32+j,
// 64+j and 96+j in bits 7-6, 5-4, 3-2 and 1-0. It is the layout the CPU
// and Vulkan kernels share.
func PackI2S(dst []byte, vals []int8) {
	for blk := 0; blk < len(vals)/128; blk++ {
		v := vals[blk*128 : blk*128+128]
		for j := range 32 {
			dst[blk*32+j] = byte(v[j]+1)<<6 | byte(v[32+j]+1)<<4 | byte(v[64+j]+1)<<2 | byte(v[96+j]+1)
		}
	}
}

// The tensor types backends meet, named here so that backends need not
// import gguf.
const (
	TypeF32   = gguf.TypeF32
	TypeF16   = gguf.TypeF16
	TypeI2_S  = gguf.TypeI2_S
	TypeTQ2_0 = gguf.TypeTQ2_0
	TypeTQ1_0 = gguf.TypeTQ1_0
	TypeQ8_0  = gguf.TypeQ8_0
	TypeQ6_K  = gguf.TypeQ6_K
	TypeQ4_0  = gguf.TypeQ4_0
)

// SizeText writes a number of bytes for humans: "128 MiB", "2.5 GiB", "2.0 TiB".
func SizeText(b float64) string {
	switch {
	case b >= 1<<40:
		return fmt.Sprintf("%.1f TiB", b/(1<<40))
	case b >= 1<<30:
		return fmt.Sprintf("%.1f GiB", b/(1<<30))
	}
	return fmt.Sprintf("%.0f MiB", b/(1<<20))
}
