package gpu

import (
	"testing"

	"github.com/bitvk/bitvk/gpu/vk"
	"github.com/bitvk/bitvk/nn"
	"github.com/bitvk/bitvk/nn/nntest"
	"github.com/bitvk/bitvk/spirv"
)

// opsAdapter runs the backend's kernels one at a time for nntest.RunOps,
// each in its own recording, on buffers made for the call.
type opsAdapter struct {
	t testing.TB
	b *Backend
}

// newOps runs the kernels as the device allows (integer dot products,
// subgroup reductions), or with plain, with neither.
func newOps(t testing.TB, plain bool) opsAdapter {
	needVulkan(t)
	inst, err := vk.Shared(vk.InstanceOptions{Validation: true, SyncValidation: true})
	if err != nil {
		t.Fatal(err)
	}
	b := &Backend{inst: inst, msgs: inst.Listen(), kernels: map[kernelKey]*vk.Kernel{}, recs: map[recKey]*vk.Recording{}, c: &nn.Config{}}
	if b.dev, err = inst.Open(vk.Pick(inst.Devices())); err != nil {
		b.Close()
		t.Fatal(err)
	}
	b.info = b.dev.Info()
	b.dot = b.dev.Enabled().IntegerDot && !plain
	b.subgroups = subgroupReductions(b.info) && !plain
	b.maxShard = 1 << 20
	b.tune = defaultTuning()
	t.Cleanup(func() {
		b.Close()
		msgs := b.ValidationMessages() // since newOps, the device's destruction included
		for _, m := range msgs {
			t.Errorf("validation: %s", m)
		}
	})
	return opsAdapter{t, b}
}

func (a opsAdapter) buf(data []byte) *vk.Buffer {
	buf, err := a.b.dev.NewBuffer("test", int64(max(len(data), 4)), false)
	if err != nil {
		a.t.Fatal(err)
	}
	if len(data) > 0 {
		if err := a.b.dev.Upload(buf, 0, data); err != nil {
			a.t.Fatal(err)
		}
	}
	return buf
}

func (a opsAdapter) read(buf *vk.Buffer, n int) []byte {
	out := make([]byte, n)
	if err := a.b.dev.Download(buf, 0, out); err != nil {
		a.t.Fatal(err)
	}
	return out
}

func (a opsAdapter) floats(buf *vk.Buffer, n int) []float32 {
	return append([]float32(nil), f32View(a.read(buf, 4*n), n)...)
}

// run records fn into one recording and submits it.
func (a opsAdapter) run(fn func(rc *recorder)) {
	rc := &recorder{b: a.b, r: a.b.dev.Record("op")}
	fn(rc)
	if rc.err == nil {
		rc.err = rc.r.Finish()
	}
	if rc.err == nil {
		rc.err = a.b.dev.Submit(rc.r)
	}
	rc.r.Release()
	if rc.err != nil {
		a.t.Fatal(rc.err)
	}
}

// quantize runs norm_quant without the norm on T rows of K values into the
// adapter's own q and s.
func (a opsAdapter) quantize(x []float32, T int) {
	b := a.b
	K := len(x) / T
	b.q, b.s, b.xn = a.buf(make([]byte, len(x))), a.buf(make([]byte, 4*T)), a.buf(nil)
	in := a.buf(f32Bytes(x))
	b.outNorm = in
	a.run(func(rc *recorder) { rc.normQuant("test", in, nil, K, K, 0, T, 0, 1) })
}

func (a opsAdapter) Quantize(x []float32) ([]int8, float32) {
	padded := append(append([]float32(nil), x...), make([]float32, (4-len(x)%4)%4)...)
	a.quantize(padded, 1)
	q := a.read(a.b.q, len(padded))
	out := make([]int8, len(x))
	for i := range out {
		out[i] = int8(q[i])
	}
	return out, a.floats(a.b.s, 1)[0]
}

func (a opsAdapter) TernarySums(w nn.Tensor, q []int8, T int) ([]int32, error) {
	m, err := a.b.newTernary(&nn.Weights{}, w)
	if err != nil {
		return nil, err
	}
	ones := make([]float32, max(m.rows, T))
	for i := range ones {
		ones[i] = 1
	}
	m.rowScale, m.groupScale = a.buf(f32Bytes(ones)), nil
	qb := make([]byte, len(q))
	for i, v := range q {
		qb[i] = byte(v)
	}
	a.b.q, a.b.s = a.buf(qb), a.buf(f32Bytes(ones))
	out := a.buf(make([]byte, 4*T*w.Out))
	a.run(func(rc *recorder) { rc.ternary("test", m, out, w.Out, T, false) })
	y := a.floats(out, T*w.Out)
	sums := make([]int32, len(y))
	for i, v := range y {
		sums[i] = int32(v)
	}
	return sums, nil
}

func (a opsAdapter) BitLinear(w nn.Tensor, x []float32, T int) ([]float32, error) {
	m, err := a.b.newTernary(&nn.Weights{}, w)
	if err != nil {
		return nil, err
	}
	a.quantize(x, T)
	out := a.buf(make([]byte, 4*T*w.Out))
	a.run(func(rc *recorder) { rc.ternary("test", m, out, w.Out, T, false) })
	return a.floats(out, T*w.Out), nil
}

func (a opsAdapter) RMSNorm(x, w []float32, eps float32) []float32 {
	b := a.b
	b.c = &nn.Config{Eps: eps}
	in, wb := a.buf(f32Bytes(x)), a.buf(f32Bytes(w))
	b.xn, b.q, b.s = a.buf(make([]byte, 4*len(x))), a.buf(nil), a.buf(nil)
	a.run(func(rc *recorder) { rc.normQuant("test", in, wb, len(x), len(x), 0, 1, 0, 0) })
	return a.floats(b.xn, len(x))
}

func (a opsAdapter) RoPE(x []float32, pos, dim int, base float32, interleaved bool) {
	hd := len(x)
	qkv := a.buf(f32Bytes(x))
	rope := a.buf(f32Bytes(ropeTable(pos+1, dim, base)))
	params := a.buf(seqBytes(pos, 1, 0))
	kc, vc := a.buf(make([]byte, 2*hd*(pos+1))), a.buf(make([]byte, 2*hd*(pos+1)))
	a.run(func(rc *recorder) {
		rc.dispatch(spirv.RopeKV, []uint32{wgRope}, []vk.Range{whole(qkv), whole(rope), whole(kc), whole(vc), whole(params)},
			ropePush{Heads: 1, KVHeads: 1, HD: uint32(hd), RopeDim: uint32(dim), QKVStride: uint32(3 * hd), Interleaved: b32(interleaved)}, 1, 1)
	})
	copy(x, a.floats(qkv, hd))
}

func (a opsAdapter) Attention(q []float32, k, v [][]float32, heads, kvHeads, hd int) []float32 {
	n := len(k)
	c := &nn.Config{Heads: heads, KVHeads: kvHeads, HeadDim: hd, Embd: heads * hd}
	plan, err := planAttention(c, a.b.info, n, a.b.workgroup(wgAttn), a.b.tune, true)
	if err != nil {
		a.t.Fatal(err)
	}
	return a.attention(c, plan, a.buf(f16Bytes(k)), a.buf(f16Bytes(v)), q, 1, n-1)
}

// Logits holds the head in w's own type: float16, Q4_0 in its 4.5 bits
// (head_nibbles), or another block type's codes and group scales
// (head_blocks), the last two on the int8 quantization of x.
func (a opsAdapter) Logits(w nn.Tensor, x []float32) ([]float32, error) {
	b := a.b
	h, err := b.newHead(w, nn.HeadStored.For(w.Type))
	if err != nil {
		return nil, err
	}
	if h.quantized() {
		a.quantize(x, 1)
	} else {
		b.xn = a.buf(f32Bytes(x))
	}
	b.head, b.c = h, &nn.Config{Vocab: w.Out}
	b.logits = a.buf(make([]byte, 4*w.Out))
	a.run(func(rc *recorder) { rc.head(1) })
	return a.floats(b.logits, w.Out), nil
}

func TestConformanceOps(t *testing.T) {
	for _, plain := range []bool{false, true} {
		// the ternary products' words per load (Tuning.Vec), the norms'
		// passes over their values (Tuning.NormPasses)
		for _, vec := range []int{1, 4} {
			name := "dot"
			if plain {
				name = "plain"
			}
			passes := 3
			if vec > 1 {
				name, passes = name+"-vec4-1pass", 1
			}
			t.Run(name, func(t *testing.T) {
				a := newOps(t, plain)
				a.b.tune.Vec, a.b.tune.PrefillVec, a.b.tune.NormPasses = vec, vec, passes
				if vec > 1 {
					a.b.tune.PrefillLanes = 32 // prompt tiles in workgroups of 32 (Tuning.PrefillLanes)
				}
				nntest.RunOps(t, a)
			})
		}
	}
}
