// Package ref is the oracle: a plain forward pass of a BitNet b1.58 model,
// written to be read, against which every backend is checked. Nothing here
// is fast; everything here is the formula.
//
// Per layer, x being the residual stream in float32:
//
//	a = RMSNorm(x, attn_norm)
//	q, k, v = BitLinear(a, attn_q), BitLinear(a, attn_k), BitLinear(a, attn_v)
//	q, k = RoPE(q, pos), RoPE(k, pos)            NEOX pairs (i, i + rope_dim/2); llama: (2i, 2i+1)
//	o = softmax(q·kᵀ/√head_dim + causal mask)·v  query head h reads KV head h/(heads/kv_heads)
//	x = x + BitLinear(RMSNorm(o, attn_sub_norm), attn_output)
//	f = RMSNorm(x, ffn_norm)
//	h = act(BitLinear(f, ffn_gate)) ⊙ BitLinear(f, ffn_up)    act = relu² or SiLU
//	x = x + BitLinear(RMSNorm(h, ffn_sub_norm), ffn_down)
//	logits = RMSNorm(x, output_norm) · outputᵀ
//
// Sub-norms are skipped in families without them.
//
// Every step rounds as bitnet.cpp (through ggml) rounds it, so that the
// oracle and the backends agree with it at position 0 to a few float32
// ulps and no int8 code flips:
//
//   - RMSNorm: each x·x in float32, summed in float64; mean = float32(Σ/n);
//     scale = 1/sqrtf(mean + eps) in float32; then (x·scale)·w in float32.
//   - BitLinear quantizes its input per token: m = max(1e-5, max|x|) in
//     float64, s = float32(127/m), q = round_half_to_even(float32(x·s))
//     clamped to [−128, 127]; then y = float32(float32(Σ t·q)/s)·scale in
//     float32, the sum exact in int32. (A row whose blocks have unequal
//     scales, as a TQ2_0 file may: Σ_b scale_b·(Σ_b t·q) in float64, /s.)
//   - K and V are cached as float16; q is rounded to float16 before K·q;
//     the scores are float32(K·q)·float32(1/√head_dim); softmax takes
//     e = expf(score − max) in float32, Σe in float64, P = e·float32(1/Σe)
//     in float32 (bitnet.cpp rounds P to float16 in a one-token decode
//     step but not in a batch; bitvk follows its batch everywhere, so that
//     a batch's tokens get exactly their one-token logits).
//   - The head's input stays float32 (likewise bitnet.cpp's batch).
//
// Sums the formulas leave open (K·q, P·V, the head) are taken in float64.
package ref

import (
	"fmt"
	"math"

	"github.com/bitvk/bitvk/nn"
)

// ternary is an unpacked ternary weight.
type ternary struct {
	in, out  int
	t        []int8    // [out][in] values in {−1, 0, +1}
	scales   []float32 // per block of blockLen values along a row-major flat index
	blockLen int       // values per scale: in·out for a per-tensor scale
}

// layer is one block's weights, unpacked.
type layer struct {
	attnNorm, attnSubNorm, ffnNorm, ffnSubNorm []float32 // [embd] or [ffn]; sub-norms nil when absent
	q, k, v, o, gate, up, down                 ternary
}

// Model is the oracle for one model. It keeps its own K/V cache.
type Model struct {
	c      *nn.Config
	w      *nn.Weights
	layers []layer
	norm   []float32 // output_norm [embd]
	// kCache, vCache: [layer][pos][kv_dim], each value rounded to float16
	kCache, vCache [][][]float32
}

// New unpacks the weights of a model. It is meant for small models: every
// ternary weight takes a byte.
func New(c *nn.Config, w *nn.Weights) (*Model, error) {
	m := &Model{c: c, w: w}
	var err error
	if m.norm, err = vector(w.OutputNorm); err != nil {
		return nil, err
	}
	for _, L := range w.Layers {
		var l layer
		for _, p := range []struct {
			dst *[]float32
			t   nn.Tensor
		}{{&l.attnNorm, L.AttnNorm}, {&l.ffnNorm, L.FFNNorm}, {&l.attnSubNorm, L.AttnSubNorm}, {&l.ffnSubNorm, L.FFNSubNorm}} {
			if p.t.Data == nil {
				continue // no sub-norms in this family
			}
			if *p.dst, err = vector(p.t); err != nil {
				return nil, err
			}
		}
		for _, p := range []struct {
			dst *ternary
			t   nn.Tensor
		}{{&l.q, L.AttnQ}, {&l.k, L.AttnK}, {&l.v, L.AttnV}, {&l.o, L.AttnOutput}, {&l.gate, L.FFNGate}, {&l.up, L.FFNUp}, {&l.down, L.FFNDown}} {
			if *p.dst, err = unpack(p.t); err != nil {
				return nil, err
			}
		}
		m.layers = append(m.layers, l)
	}
	m.Reset()
	return m, nil
}

// Reset empties the K/V cache.
func (m *Model) Reset() {
	m.kCache = make([][][]float32, m.c.Layers)
	m.vCache = make([][][]float32, m.c.Layers)
}

// Pos is the number of positions in the K/V cache.
func (m *Model) Pos() int { return len(m.kCache[0]) }

func vector(t nn.Tensor) ([]float32, error) { return t.Floats() }

func unpack(t nn.Tensor) (ternary, error) {
	vals, scales, blockLen, err := t.Ternary()
	return ternary{in: t.In, out: t.Out, t: vals, scales: scales, blockLen: blockLen}, err
}

// Forward runs one token at the next position and returns its logits [vocab].
func (m *Model) Forward(token int32) ([]float32, error) {
	c := m.c
	pos := m.Pos()
	if token < 0 || int(token) >= c.Vocab {
		return nil, fmt.Errorf("token %d is outside the vocabulary of %d", token, c.Vocab)
	}
	if pos >= c.Context {
		return nil, fmt.Errorf("position %d is beyond the context length %d", pos, c.Context)
	}
	x, err := row(m.w.TokenEmbd, int(token)) // x: [embd]
	if err != nil {
		return nil, err
	}
	for li := range m.layers {
		l := &m.layers[li]
		a := RMSNorm(x, l.attnNorm, c.Eps) // a: [embd]
		aq, as := Quantize(a)              // aq: [embd] int8
		q := l.q.matvec(aq, as)            // q: [heads·head_dim]
		k := l.k.matvec(aq, as)            // k: [kv_heads·head_dim]
		v := l.v.matvec(aq, as)            // v: [kv_heads·head_dim]
		for h := 0; h < c.Heads; h++ {     //
			RoPE(q[h*c.HeadDim:(h+1)*c.HeadDim], pos, c.RopeDim, c.RopeBase, c.RopeInterleaved)
		}
		for h := 0; h < c.KVHeads; h++ {
			RoPE(k[h*c.HeadDim:(h+1)*c.HeadDim], pos, c.RopeDim, c.RopeBase, c.RopeInterleaved)
		}
		m.kCache[li] = append(m.kCache[li], toF16(k))
		m.vCache[li] = append(m.vCache[li], toF16(v))
		o := m.attention(li, q) // o: [embd]
		if l.attnSubNorm != nil {
			o = RMSNorm(o, l.attnSubNorm, c.Eps)
		}
		oq, os := Quantize(o)
		add(x, l.o.matvec(oq, os))

		f := RMSNorm(x, l.ffnNorm, c.Eps) // f: [embd]
		fq, fs := Quantize(f)
		g := l.gate.matvec(fq, fs) // g: [ffn]
		u := l.up.matvec(fq, fs)   // u: [ffn]
		h := make([]float32, c.FFN)
		for i := range h {
			h[i] = activate(c.Activation, g[i]) * u[i]
		}
		if l.ffnSubNorm != nil {
			h = RMSNorm(h, l.ffnSubNorm, c.Eps)
		}
		hq, hs := Quantize(h)
		add(x, l.down.matvec(hq, hs))
	}
	xn := RMSNorm(x, m.norm, c.Eps)
	logits, err := Logits(m.w.Output, xn) // logits: [vocab]
	if err != nil {
		return nil, err
	}
	return logits, nil
}

// attention is causal GQA over the cache of layer li for query q [heads·head_dim].
func (m *Model) attention(li int, q []float32) []float32 {
	c := m.c
	return Attention(q, m.kCache[li], m.vCache[li], c.Heads, c.KVHeads, c.HeadDim)
}

// Attention is softmax(q·kᵀ/√head_dim)·v for every query head h of q
// [heads·head_dim] over all positions of k and v ([n][kv_heads·head_dim]),
// query head h reading KV head h/(heads/kv_heads). It returns
// [heads·head_dim].
func Attention(q []float32, k, v [][]float32, heads, kvHeads, headDim int) []float32 {
	out := make([]float32, heads*headDim)
	group := heads / kvHeads
	n := len(k)
	scale := float32(1 / math.Sqrt(float64(headDim)))
	scores := make([]float32, n)
	for h := 0; h < heads; h++ {
		qh := toF16(q[h*headDim : (h+1)*headDim])
		kvOff := (h / group) * headDim
		maxS := float32(math.Inf(-1))
		for p := 0; p < n; p++ {
			kp := k[p][kvOff : kvOff+headDim]
			var s float64
			for i := range qh {
				s += float64(qh[i]) * float64(kp[i])
			}
			scores[p] = float32(float32(s) * scale)
			maxS = max(maxS, scores[p])
		}
		var sum float64
		for p := range scores {
			scores[p] = float32(math.Exp(float64(float32(scores[p] - maxS))))
			sum += float64(scores[p])
		}
		inv := float32(1 / sum)
		for p := range scores {
			scores[p] = float32(scores[p] * inv)
		}
		for i := 0; i < headDim; i++ {
			var o float64
			for p := 0; p < n; p++ {
				o += float64(scores[p]) * float64(v[p][kvOff+i])
			}
			out[h*headDim+i] = float32(o)
		}
	}
	return out
}

// BitLinear is one projection of x [in] by the ternary tensor w:
// Quantize, then the exact integer sums times the scales. It returns [out].
func BitLinear(w nn.Tensor, x []float32) ([]float32, error) {
	t, err := unpack(w)
	if err != nil {
		return nil, err
	}
	if len(x) != t.in {
		return nil, fmt.Errorf("%s: input of %d, want %d", w.Name, len(x), t.in)
	}
	q, s := Quantize(x)
	return t.matvec(q, s), nil
}

// TernarySums returns Σ_i t[o][i]·q[i] for every row o of the ternary
// tensor w, exact in int32, ignoring scales: [out].
func TernarySums(w nn.Tensor, q []int8) ([]int32, error) {
	vals, _, _, err := w.Ternary()
	if err != nil {
		return nil, err
	}
	if len(q) != w.In {
		return nil, fmt.Errorf("%s: input of %d, want %d", w.Name, len(q), w.In)
	}
	out := make([]int32, w.Out)
	for o := range out {
		for i, v := range vals[o*w.In : (o+1)*w.In] {
			out[o] += int32(v) * int32(q[i])
		}
	}
	return out, nil
}

// Logits is x [in] times every row of the float tensor w, in float64: [out].
func Logits(w nn.Tensor, x []float32) ([]float32, error) {
	logits := make([]float32, w.Out)
	for t := range logits {
		r, err := row(w, t)
		if err != nil {
			return nil, err
		}
		var s float64
		for i := range r {
			s += float64(r[i]) * float64(x[i])
		}
		logits[t] = float32(s)
	}
	return logits, nil
}

// row decodes row r of a [in, out] float tensor.
func row(t nn.Tensor, r int) ([]float32, error) {
	out := make([]float32, t.In)
	return out, t.Row(r, out)
}

// matvec is BitLinear after quantization: y[o] = float32(float32(Σ t·q)/s)·scale
// for a row with one scale; Σ_blocks scale_b·(Σ t·q)/s in float64 for a
// row whose blocks' scales differ.
func (w *ternary) matvec(q []int8, s float32) []float32 {
	y := make([]float32, w.out)
	for o := 0; o < w.out; o++ {
		rowT := w.t[o*w.in : (o+1)*w.in]
		var acc float64
		var total int32 // exact: |Σ| ≤ 128·in
		for start := 0; start < w.in; {
			flat := o*w.in + start
			b := flat / w.blockLen
			end := min(w.in, start+(b+1)*w.blockLen-flat)
			var sum int32
			for i := start; i < end; i++ {
				sum += int32(rowT[i]) * int32(q[i])
			}
			acc += float64(w.scales[b]) * float64(sum)
			total += sum
			start = end
		}
		if scale, one := w.rowScale(o); one {
			y[o] = float32(float32(float32(total)/s) * scale)
		} else {
			y[o] = float32(acc / float64(s))
		}
	}
	return y
}

// rowScale returns row o's scale and true when all its blocks that hold a
// nonzero value share one scale (see nn.RowScale).
func (w *ternary) rowScale(o int) (float32, bool) {
	if w.blockLen >= w.in*w.out {
		return w.scales[0], true
	}
	g := w.in / w.blockLen // the row's blocks (TQ2_0, TQ1_0: 256 values each)
	return nn.RowScale(w.t[o*w.in:(o+1)*w.in], w.scales[o*g:(o+1)*g])
}

// Quantize is BitLinear's per-token int8 absmax quantization; it returns
// the codes and s = float32(127/m), m = max(1e-5, max|x|) in float64.
func Quantize(x []float32) ([]int8, float32) {
	m := 1e-5
	for _, v := range x {
		m = max(m, math.Abs(float64(v)))
	}
	s := float32(127 / m)
	q := make([]int8, len(x))
	for i, v := range x {
		r := math.RoundToEven(float64(float32(v * s)))
		q[i] = int8(max(-128, min(127, r)))
	}
	return q, s
}

// RMSNorm returns x / sqrt(mean(x²) + eps) · w, rounded as ggml rounds it:
// x·x in float32 summed in float64, the mean in float32, 1/sqrtf(mean+eps)
// in float32, then (x·scale)·w in float32.
func RMSNorm(x, w []float32, eps float32) []float32 {
	var sum float64
	for _, v := range x {
		sum += float64(float32(v * v))
	}
	mean := float32(sum / float64(len(x)))
	scale := float32(1 / float32(math.Sqrt(float64(float32(mean+eps)))))
	out := make([]float32, len(x))
	for i := range x {
		out[i] = float32(float32(x[i]*scale) * w[i])
	}
	return out
}

// RoPE rotates the first dim values of one head, pair i by
// pos·base^(−2i/dim): NEOX pairs (i, i + dim/2), or adjacent pairs
// (2i, 2i+1) when interleaved (llama.cpp's llama architecture).
func RoPE(x []float32, pos, dim int, base float32, interleaved bool) {
	half := dim / 2
	for i := 0; i < half; i++ {
		theta := float64(pos) * math.Pow(float64(base), -2*float64(i)/float64(dim))
		sin, cos := math.Sincos(theta)
		lo, hi := RopePair(i, half, interleaved)
		a, b := float64(x[lo]), float64(x[hi])
		x[lo] = float32(a*cos - b*sin)
		x[hi] = float32(a*sin + b*cos)
	}
}

// RopePair is the indices of RoPE's pair i in a head whose rotated part
// has half·2 values.
func RopePair(i, half int, interleaved bool) (lo, hi int) {
	if interleaved {
		return 2 * i, 2*i + 1
	}
	return i, i + half
}

func activate(a nn.Activation, g float32) float32 {
	if a == nn.ReLUSquared {
		r := max(g, 0)
		return r * r
	}
	return float32(float64(g) / (1 + math.Exp(-float64(g))))
}

func add(x, y []float32) {
	for i := range x {
		x[i] += y[i]
	}
}

func toF16(x []float32) []float32 {
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = nn.RoundF16(v)
	}
	return out
}
