package gpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/bitvk/bitvk/gpu/vk"
	"github.com/bitvk/bitvk/nn"
	"github.com/bitvk/bitvk/nn/nntest"
	"github.com/bitvk/bitvk/nn/ref"
)

// f16Bytes packs rows of values as float16, as the K/V cache holds them.
func f16Bytes(rows [][]float32) []byte {
	var out []byte
	for _, r := range rows {
		for _, x := range r {
			h := nn.F32ToF16(x)
			out = append(out, byte(h), byte(h>>8))
		}
	}
	return out
}

// nanBytes is n bytes of 0xFF: float32 and float16 NaNs, so that a kernel
// reading what nobody wrote fails the comparison.
func nanBytes(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = 0xFF
	}
	return b
}

// seqBytes is the seq buffer of T tokens at positions pos0… of the slot
// whose cache rows start at row0: (position, row0) per token.
func seqBytes(pos0, T, row0 int) []byte {
	out := make([]byte, 8*T)
	for t := range T {
		putU32(out[8*t:], uint32(pos0+t))
		putU32(out[8*t+4:], uint32(row0))
	}
	return out
}

// attention runs rc.attention with the plan over the caches kc and vc for
// T tokens at positions pos0… whose queries are q [T][heads·hd], and
// returns the output [T][heads·hd]. The partials and the output start as
// NaN.
func (a opsAdapter) attention(c *nn.Config, plan attnPlan, kc, vc *vk.Buffer, q []float32, T, pos0 int) []float32 {
	b := a.b
	E, stride := c.Heads*c.HeadDim, c.Heads*c.HeadDim+2*c.KVDim()
	qkv := make([]float32, T*stride)
	for t := range T {
		copy(qkv[t*stride:], q[t*E:(t+1)*E])
	}
	b.c, b.attn = c, plan
	b.qkv = a.buf(f32Bytes(qkv))
	b.inDev, b.seqOff = a.buf(seqBytes(pos0, T, 0)), 0
	b.attnPart = a.buf(nanBytes(int(plan.partialBytes(c, T))))
	b.att = a.buf(nanBytes(4 * T * E))
	b.attnCount = a.buf(make([]byte, 4*c.Heads))
	b.q, b.s, b.outNorm = a.buf(make([]byte, T*E)), a.buf(make([]byte, 4*T)), a.buf(make([]byte, 4*E))
	a.run(func(rc *recorder) { rc.attention(layerBufs{kc: kc, vc: vc}, T) })
	return a.floats(b.att, T*E)
}

// attentionCombined is attention for one token with the chunks combined in
// attention.comp (COMBINE) instead of by attention_reduce, counting in the
// counters of layer 1 (a nonzero offset): twice, the second pass over the
// counts the first left, which must be back to 0.
func (a opsAdapter) attentionCombined(c *nn.Config, plan attnPlan, kc, vc *vk.Buffer, q []float32, pos0 int) []float32 {
	b := a.b
	E, stride := c.Heads*c.HeadDim, c.Heads*c.HeadDim+2*c.KVDim()
	qkv := make([]float32, stride)
	copy(qkv, q[:E])
	b.c, b.attn = c, plan
	b.qkv = a.buf(f32Bytes(qkv))
	b.inDev, b.seqOff = a.buf(seqBytes(pos0, 1, 0)), 0
	b.attnCount = a.buf(make([]byte, 2*4*c.Heads))
	for range 2 {
		b.attnPart = a.buf(nanBytes(int(plan.partialBytes(c, 1)))) // NaN: a chunk combined before it is written shows
		b.att = a.buf(nanBytes(4 * E))
		a.run(func(rc *recorder) { rc.attentionChunks(layerBufs{kc: kc, vc: vc}, 1, 1) })
	}
	if counts := a.read(b.attnCount, 2*4*c.Heads); !slices.Equal(counts, make([]byte, len(counts))) {
		a.t.Fatalf("the counts after a pass: %v, want zeros", counts)
	}
	return a.floats(b.att, E)
}

// The split-K kernels match nn/ref's attention at a context of several
// chunks: decode steps at chunk boundaries and at the last position, and
// batches of tokens (chunked prefill) crossing boundaries, for GQA groups
// of 4, 1 and 3, with chunks of 256 and 32 positions, with subgroup
// reductions and with shared-memory ones. Cache positions past the last
// token are NaN, so reading them fails.
func TestAttentionSplitK(t *testing.T) {
	const ctx = 1040 // 4 chunks of 256 and a partial one
	shapes := []struct {
		name               string
		heads, kvHeads, hd int
	}{
		{"gqa4-hd128", 8, 2, 128}, // the 2B model's group and head dimension
		{"mha-hd64", 4, 4, 64},    // no sharing; two threads per float16 pair
		{"gqa3-hd96", 6, 2, 96},   // odd group, hd/2 not a power of two
	}
	cases := []struct{ pos0, T int }{
		{0, 1}, {1, 1}, {31, 1}, {32, 1}, {255, 1}, {256, 1}, {257, 1}, {511, 1}, {512, 1}, {1023, 1}, {1024, 1}, {ctx - 1, 1},
		{0, 5}, {250, 7}, {500, 33}, {ctx - 64, 64}, {1000, ctx - 1000},
	}
	a := newOps(t, false)
	rng := rand.New(rand.NewPCG(3, 4))
	randRows := func(n, w int) [][]float32 {
		rows := make([][]float32, n)
		for i := range rows {
			rows[i] = make([]float32, w)
			for j := range rows[i] {
				rows[i][j] = nn.RoundF16((rng.Float32()*2 - 1) * 2)
			}
		}
		return rows
	}
	for _, sh := range shapes {
		c := &nn.Config{Heads: sh.heads, KVHeads: sh.kvHeads, HeadDim: sh.hd, Embd: sh.heads * sh.hd}
		E, KV := c.Embd, c.KVDim()
		k, v := randRows(ctx, KV), randRows(ctx, KV)
		for _, tc := range cases {
			n := tc.pos0 + tc.T
			q := make([]float32, 0, tc.T*E)
			want := make([]float32, 0, tc.T*E)
			for tk := range tc.T {
				qt := randRows(1, E)[0]
				q = append(q, qt...)
				want = append(want, ref.Attention(qt, k[:tc.pos0+tk+1], v[:tc.pos0+tk+1], sh.heads, sh.kvHeads, sh.hd)...)
			}
			kc := a.buf(append(f16Bytes(k[:n]), nanBytes(2*(ctx-n)*KV)...))
			vc := a.buf(append(f16Bytes(v[:n]), nanBytes(2*(ctx-n)*KV)...))
			// chunks of the default size and short ones; keys staged 64 at a
			// time with values loaded four rows at once (Tuning.TK, VUnroll)
			for _, tn := range []Tuning{{Chunk: attnChunk, TK: attnTK, VUnroll: 1}, {Chunk: 32, TK: attnTK, VUnroll: 1},
				{Chunk: attnChunk, TK: 64, VUnroll: 4}, {Chunk: 64, TK: 64, VUnroll: 4},
				{Chunk: 64, TK: attnTK, VUnroll: 1, AttnRows: 32}} { // up to 32 query rows: 8 tokens of a GQA group of 4
				chunk := tn.Chunk
				for _, sub := range []bool{true, false} {
					plan, err := planAttention(c, a.b.info, ctx, a.b.workgroup(wgAttn), tn, sub)
					if err != nil {
						t.Fatal(err)
					}
					if sub && !plan.subgroup {
						t.Logf("%s: no subgroup arithmetic on this device", sh.name)
					}
					got := a.attention(c, plan, kc, vc, q, tc.T, tc.pos0)
					name := fmt.Sprintf("%s pos0 %d T %d chunk %d tk %d vunroll %d subgroup %v (group %d, %d tokens per workgroup)",
						sh.name, tc.pos0, tc.T, chunk, plan.tk, plan.vunroll, plan.subgroup, plan.group, plan.prefillTT)
					if rows := plan.group * plan.prefillTT; tn.AttnRows == 32 && (rows > 32 || rows <= 16) {
						t.Fatalf("%s: %d rows a workgroup, want 17 to 32", name, rows)
					}
					for tk := range tc.T {
						nearRel(t, fmt.Sprintf("%s token %d", name, tk), got[tk*E:(tk+1)*E], want[tk*E:(tk+1)*E], 1e-4)
					}
					// A decode step's chunks combined by their last
					// workgroup: attention_reduce's bits.
					if tc.T == 1 {
						comb := a.attentionCombined(c, plan, kc, vc, q, tc.pos0)
						for i := range comb {
							if math.Float32bits(comb[i]) != math.Float32bits(got[i]) {
								t.Fatalf("%s combined in place: [%d] = %v, attention_reduce %v", name, i, comb[i], got[i])
							}
						}
					}
				}
			}
		}
	}
}

// nearRel fails unless |got−want| ≤ tol·max|want| everywhere (the
// conformance suite's attention tolerance).
func nearRel(t *testing.T, what string, got, want []float32, tol float64) {
	t.Helper()
	var scale float64
	for _, w := range want {
		scale = math.Max(scale, math.Abs(float64(w)))
	}
	for i := range want {
		if d := math.Abs(float64(got[i]) - float64(want[i])); !(d <= tol*scale) {
			t.Fatalf("%s: [%d] = %v, oracle %v (|diff| %.3g > %.3g)", what, i, got[i], want[i], d, tol*scale)
		}
	}
}

// planAttention keeps the workgroup within the device's shared memory,
// shrinking the token tile, then the head group, then the chunk.
func TestPlanAttention(t *testing.T) {
	c := &nn.Config{Heads: 20, KVHeads: 5, HeadDim: 128, Embd: 2560}
	info := vk.DeviceInfo{MaxComputeSharedMemorySize: 48 << 10, MaxComputeWorkGroupCount: [3]uint32{65535, 65535, 65535},
		SubgroupOps: []string{"basic", "arithmetic"}, Features: vk.Features{SubgroupArithmetic: true}}
	for _, tc := range []struct {
		shared                   uint32
		group, tt, chunk, chunks int
		subgroups, wantSubgroup  bool
	}{
		{48 << 10, 4, 2, 256, 16, true, true},
		{16 << 10, 4, 1, 256, 16, false, false},
		{8 << 10, 1, 1, 256, 16, true, true},
		{7000, 1, 1, 128, 32, true, true},
	} {
		info.MaxComputeSharedMemorySize = tc.shared
		p, err := planAttention(c, info, 4096, 128, defaultTuning(), tc.subgroups)
		if err != nil {
			t.Fatal(err)
		}
		if p.group != tc.group || p.prefillTT != tc.tt || p.chunk != tc.chunk || p.chunks != tc.chunks || p.subgroup != tc.wantSubgroup {
			t.Errorf("shared %d: plan %+v, want group %d, %d tokens, chunk %d ×%d, subgroup %v", tc.shared, p, tc.group, tc.tt, tc.chunk, tc.chunks, tc.wantSubgroup)
		}
		if got := p.sharedBytes(c.HeadDim/2, p.prefillTT); got > int(tc.shared) {
			t.Errorf("shared %d: plan %+v needs %d bytes", tc.shared, p, got)
		}
	}
	info.MaxComputeSharedMemorySize = 1024
	if _, err := planAttention(c, info, 4096, 128, defaultTuning(), true); err == nil {
		t.Error("1 KiB of shared memory: no error")
	}
	if _, err := planAttention(c, info, 4096, 32, defaultTuning(), true); err == nil {
		t.Error("a workgroup of 32 for hd/2 = 64: no error")
	}
}

// The whole forward pass at a context of four chunks follows the oracle:
// prefill in batches crossing chunk boundaries (logits of every token of
// one of them checked), decode steps on both sides of the boundaries and
// at the last position; with subgroup reductions and without.
func TestAttentionLongForward(t *testing.T) {
	const ctx = 1024
	m := nntest.NewModel(t, "tiny", nntest.StoreI2S, 11)
	m.Config.Context = ctx
	V := m.Config.Vocab
	toks := make([]int32, ctx)
	for i := range toks {
		toks[i] = int32((i*7919 + i*i*31 + 1) % V)
	}
	check := map[int]bool{255: true, 256: true, 300: true, 511: true, 512: true, 513: true, 699: true, 767: true, 768: true, 1023: true}
	r, err := ref.New(m.Config, m.Weights)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int][]float32{}
	for p, tok := range toks {
		l, err := r.Forward(tok)
		if err != nil {
			t.Fatal(err)
		}
		if check[p] {
			want[p] = l
		}
	}
	// segments: [start, end) and which logits to fetch
	segments := []struct {
		start, end int
		all        bool
	}{
		{0, 255, false}, {255, 256, false}, {256, 257, false}, {257, 700, true},
		{700, 767, false}, {767, 768, false}, {768, 769, false}, {769, 1023, false}, {1023, 1024, false},
	}
	for _, noSub := range []bool{false, true} {
		t.Run(fmt.Sprintf("noSubgroups=%v", noSub), func(t *testing.T) {
			m := nntest.NewModel(t, "tiny", nntest.StoreI2S, 11)
			m.Config.Context = ctx
			b := open(t, m.Config, m.Weights, Options{Context: ctx, NoSubgroups: noSub})
			if b.attn.chunks != 4 {
				t.Fatalf("plan %+v: %d chunks, want 4", b.attn, b.attn.chunks)
			}
			for _, s := range segments {
				n := s.end - s.start
				var logits []float32
				switch {
				case s.all:
					logits = make([]float32, n*V)
				case check[s.end-1]:
					logits = make([]float32, V)
				}
				if err := b.Forward(toks[s.start:s.end], s.start, logits); err != nil {
					t.Fatal(err)
				}
				for p := s.start; p < s.end; p++ {
					if !check[p] || logits == nil || (!s.all && p != s.end-1) {
						continue
					}
					got := logits
					if s.all {
						got = logits[(p-s.start)*V : (p-s.start+1)*V]
					}
					if c := nntest.Correlation(want[p], got); !(c >= nntest.MinCorrelation) {
						t.Errorf("position %d: logits correlate %.6f with the oracle's", p, c)
					}
					best, margin := nntest.Top2(want[p])
					if g, _ := nntest.Top2(got); margin >= nntest.ArgmaxMargin && g != best {
						t.Errorf("position %d: argmax %d, oracle %d (margin %.3f)", p, g, best, margin)
					}
				}
			}
		})
	}
}
