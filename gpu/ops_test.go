package gpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/bitvk/bitvk/gguf"
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

// The Q4_0 and Q6_K heads in their own bits at widths of an odd number of
// groups and blocks, whole and in shards of an odd number of rows (Q4_0's
// float16 scales then end a shard in half a word), in both kernels' forms,
// against the file's values times the int8 activations they see.
func TestHeadPackedShapes(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for _, plain := range []bool{false, true} {
		a := newOps(t, plain)
		for _, tc := range []struct {
			typ          gguf.Type
			in, out      int
			rowsPerShard int // 0: one shard
		}{
			{gguf.TypeQ4_0, 96, 37, 0}, {gguf.TypeQ4_0, 96, 37, 5}, {gguf.TypeQ4_0, 160, 9, 3},
			{gguf.TypeQ6_K, 768, 29, 0}, {gguf.TypeQ6_K, 768, 29, 3}, {gguf.TypeQ6_K, 256, 5, 1},
		} {
			vals := make([]float32, tc.in*tc.out)
			for i := range vals {
				vals[i] = float32(rng.NormFloat64())
			}
			var data []byte
			var err error
			if tc.typ == gguf.TypeQ4_0 {
				data, err = gguf.EncodeQ4_0(vals)
			} else {
				data, err = gguf.EncodeQ6_K(vals)
			}
			if err != nil {
				t.Fatal(err)
			}
			w := nn.Tensor{Name: "output.weight", Type: tc.typ, In: tc.in, Out: tc.out, Data: data}
			a.b.maxShard = 1 << 20
			if tc.rowsPerShard > 0 {
				rowBytes := map[gguf.Type]int{gguf.TypeQ4_0: tc.in / 2, gguf.TypeQ6_K: 3 * tc.in / 4}[tc.typ]
				a.b.maxShard = int64(tc.rowsPerShard * rowBytes)
			}
			x := make([]float32, tc.in)
			for i := range x {
				x[i] = float32(rng.NormFloat64())
			}
			got, err := a.Logits(w, x)
			if err != nil {
				t.Fatal(err)
			}
			// The kernels see x as norm_quant's int8 q = round(x·s), s =
			// 127/max|x|: against that, only the float sums' order differs.
			m := 0.0
			for _, v := range x {
				m = max(m, math.Abs(float64(v)))
			}
			sc := float32(127 / m)
			want := make([]float64, tc.out)
			row := make([]float32, tc.in)
			for r := range want {
				if err := w.Row(r, row); err != nil {
					t.Fatal(err)
				}
				for i, v := range row {
					want[r] += float64(v) * math.RoundToEven(float64(x[i]*sc))
				}
				want[r] /= float64(sc)
			}
			if n := len(a.b.head.shards); tc.rowsPerShard > 0 && n != (tc.out+tc.rowsPerShard-1)/tc.rowsPerShard {
				t.Errorf("%s %d×%d: %d shards, want rows of %d each", tc.typ, tc.out, tc.in, n, tc.rowsPerShard)
			}
			top, worst := 0.0, 0.0
			for i := range want {
				top = max(top, math.Abs(want[i]))
				worst = max(worst, math.Abs(float64(got[i])-want[i]))
			}
			if worst > 1e-5*top {
				t.Errorf("%s %d×%d, shards of %d rows (plain %v): logits off by %.3g, the largest %.3g", tc.typ, tc.out, tc.in, tc.rowsPerShard, plain, worst, top)
			}
		}
	}
}
