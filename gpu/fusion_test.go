package gpu

import (
	"testing"

	"github.com/bitvk/bitvk/nn"
	"github.com/bitvk/bitvk/nn/nntest"
	"github.com/bitvk/bitvk/spirv"
)

// Every token of a batch gets exactly the logits it gets alone
// (nntest.BatchInvariance): a decode step runs the fused kernel
// (ternary_norm: the input norms in the QKV and gate/up prologues, RoPE and
// the K/V cache write in the QKV epilogue) and a batch norm_quant, ternary
// and rope_kv, so this holds the fused kernel to their bits; sharded, the
// norms alone are fused.
func TestConformanceBatchInvariance(t *testing.T) {
	needVulkan(t)
	for _, v := range []struct {
		name string
		o    Options
	}{
		{"default", Options{Fusion: FuseOn}},
		{"sharded", Options{MaxShardBytes: 4096, Batch: 5, Fusion: FuseOn}},
		// The GPU run's candidate shapes: decode and prompts load alike
		// (vec = pvec), so block-scaled sums run in one order.
		{"layer5", Options{Fusion: FuseOn, Tune: Tuning{Vec: 4, PrefillVec: 4, NormPasses: 1, TK: 64, VUnroll: 4, Layer: 5}}},
		// Prompts and verification passes of 4 tokens or more through
		// ternary_mm (exact integer sums: a token's bits whatever the tile).
		{"tiled", Options{Fusion: FuseOn, Tune: Tuning{Tiled: 8, TiledBlock: 64}}},
		// A decode step's attention chunks combined in attention.comp,
		// chunks of 16 positions: attention_reduce's bits in passes of
		// several tokens.
		{"layer5-acomb", Options{Fusion: FuseOn, Tune: Tuning{Layer: 5, Combine: 2, Chunk: 16, TK: 16}}},
		// Prompts' attention 32 query rows a workgroup (8 tokens × 4
		// heads), decode steps 4: each row's sums whatever its neighbours.
		{"arows32", Options{Fusion: FuseOn, Tune: Tuning{AttnRows: 32, Chunk: 64}}},
	} {
		t.Run(v.name, func(t *testing.T) {
			nntest.BatchInvariance(t, func(c *nn.Config, w *nn.Weights, ctx int) (nn.Backend, error) {
				o := v.o
				o.Context = ctx
				b := open(t, c, w, o)
				if !b.fuse.norm || b.fuse.rope != (o.MaxShardBytes == 0) {
					t.Fatalf("%s: fusion %+v", c.Name, b.fuse)
				}
				return b, nil
			})
		})
	}
}

// FuseAuto fuses on GPUs and not on CPU devices such as lavapipe.
func TestFusionAuto(t *testing.T) {
	m := nntest.NewModel(t, "tiny", nntest.StoreI2S, 11)
	b := open(t, m.Config, m.Weights, Options{Context: 16})
	if cpu := b.Device().Type == "cpu"; b.fuse.norm == cpu || b.fuse.rope == cpu {
		t.Errorf("%s device: fusion %+v", b.Device().Type, b.fuse)
	}
}

// A fused decode step gives the logits and the cache of an unfused one bit
// for bit in the RoPE variants the model zoo has: interleaved pairs, and a
// RoPE dimension below the head dimension; with the integer dot product
// and without; and with the norms reading their values once, the
// products 16 bytes a load, the FFN's sub-norm in the down projection and
// attention's reduce in the output projection (Tuning).
func TestFusedDecode(t *testing.T) {
	needVulkan(t)
	for _, tc := range []struct {
		name        string
		interleaved bool
		ropeDiv     int
		plain       bool
		tune        Tuning
	}{
		{"neox", false, 1, false, Tuning{}},
		{"interleaved", true, 1, false, Tuning{}},
		{"partial", false, 2, false, Tuning{}},
		{"interleaved-partial-plain", true, 4, true, Tuning{}},
		{"neox-1pass-vec4", false, 1, false, Tuning{NormPasses: 1, Vec: 4}},
		{"neox-layer6", false, 1, false, Tuning{Layer: 6}},
		{"interleaved-plain-1pass-layer6", true, 1, true, Tuning{NormPasses: 1, Layer: 6}},
		{"neox-layer5", false, 1, false, Tuning{Layer: 5}},
		{"partial-plain-1pass-vec4-layer5", false, 2, true, Tuning{NormPasses: 1, Vec: 4, Layer: 5}},
		{"interleaved-1pass-layer5", true, 1, false, Tuning{NormPasses: 1, Layer: 5}},
		{"neox-layer5-acomb", false, 1, false, Tuning{Layer: 5, Combine: 2}},
		{"interleaved-plain-1pass-layer5-acomb", true, 1, true, Tuning{NormPasses: 1, Layer: 5, Combine: 2}},
		{"neox-pre", false, 1, false, Tuning{Preload: 2}},
		{"neox-pre-lanes8", false, 1, false, Tuning{Preload: 2, Lanes: 8}}, // two trips a lane and more
		{"partial-plain-vec4-pre-layer5", false, 2, true, Tuning{Vec: 4, Preload: 2, Layer: 5}},
		{"interleaved-1pass-vec4-pre-layer6", true, 1, false, Tuning{NormPasses: 1, Vec: 4, Preload: 2, Layer: 6}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logits [2][]float32
			for i, o := range []Options{{Fusion: FuseOn}, {Fusion: FuseOff}} {
				m := nntest.NewModel(t, "tiny", nntest.StoreI2S, 11)
				m.Config.RopeInterleaved = tc.interleaved
				m.Config.RopeDim = m.Config.HeadDim / tc.ropeDiv
				o.Context, o.Plain, o.Tune = 16, tc.plain, tc.tune
				b := open(t, m.Config, m.Weights, o)
				fused := o.Fusion == FuseOn
				if b.fuse.rope != fused || b.fuse.down != (fused && tc.tune.Layer != 0 && tc.tune.Layer <= 6) ||
					b.fuse.attn != (fused && tc.tune.Layer == 5) || b.fuse.combine != (fused && tc.tune.Combine == 2) {
					t.Fatalf("options %+v: fusion %+v", o, b.fuse)
				}
				V := m.Config.Vocab
				toks := []int32{3, 141, 59, 26, 5, 35, 8, 97, 93, 23}
				logits[i] = make([]float32, len(toks)*V)
				for p, tok := range toks { // every position a decode step, so every position reads the cache
					if err := b.Forward([]int32{tok}, p, logits[i][p*V:(p+1)*V]); err != nil {
						t.Fatal(err)
					}
				}
			}
			for j := range logits[0] {
				if logits[0][j] != logits[1][j] {
					t.Fatalf("logit %d: %v fused, %v unfused", j, logits[0][j], logits[1][j])
				}
			}
		})
	}
}

// Pipelines are cached by every specialization constant: two that differ
// only in the last of ternary_norm's ten (ACC) are two pipelines, and a
// kernel given more constants than a key holds is refused, not cached
// under a shorter key.
func TestKernelKey(t *testing.T) {
	a := newOps(t, false)
	spec := []uint32{256, 4, 0, 0, 64, 512, 1, 0, 0, 0}
	p0, err := a.b.kernel(spirv.TernaryNorm, spec...)
	if err != nil {
		t.Fatal(err)
	}
	spec[9] = 1
	p1, err := a.b.kernel(spirv.TernaryNorm, spec...)
	if err != nil {
		t.Fatal(err)
	}
	if p0 == p1 {
		t.Error("ACC = 0 and ACC = 1 share a pipeline")
	}
	if p, err := a.b.kernel(spirv.TernaryNorm, spec[:9]...); err != nil || p == p1 {
		t.Errorf("nine constants: %v, the same pipeline as ten: %v", err, p == p1)
	}
	if _, err := a.b.kernel(spirv.TernaryNorm, make([]uint32, maxSpec+1)...); err == nil {
		t.Errorf("%d constants: no error", maxSpec+1)
	}
}

// A fused decode step whose attention chunks are combined in attention.comp
// (Tuning.Combine = 2) gives an unfused step's logits bit for bit over a
// context of several chunks (16 positions each, 40 steps: up to 3 chunks),
// its norms reading their values three times or once, with the integer dot
// product and without.
func TestCombinedDecode(t *testing.T) {
	needVulkan(t)
	for _, tc := range []struct {
		name  string
		plain bool
		tune  Tuning
	}{
		{"3pass", false, Tuning{Layer: 5, Combine: 2, Chunk: 16, TK: 16}},
		{"1pass-plain", true, Tuning{Layer: 5, Combine: 2, Chunk: 16, TK: 16, NormPasses: 1}},
		{"1pass-tk16-vunroll4", false, Tuning{Layer: 5, Combine: 2, Chunk: 32, TK: 16, VUnroll: 4, NormPasses: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := nntest.NewModel(t, "tiny", nntest.StoreI2S, 11)
			V := m.Config.Vocab
			const steps = 40
			var logits [2][]float32
			for i, o := range []Options{{Fusion: FuseOn, Tune: tc.tune}, {Fusion: FuseOff, Tune: Tuning{Chunk: tc.tune.Chunk, TK: tc.tune.TK}}} {
				o.Context, o.Plain = 64, tc.plain
				b := open(t, m.Config, m.Weights, o)
				if fused := o.Fusion == FuseOn; b.fuse.combine != fused {
					t.Fatalf("options %+v: fusion %+v", o, b.fuse)
				}
				logits[i] = make([]float32, steps*V)
				for p := range steps {
					if err := b.Forward([]int32{int32((p*37 + 5) % V)}, p, logits[i][p*V:(p+1)*V]); err != nil {
						t.Fatal(err)
					}
				}
			}
			for j := range logits[0] {
				if logits[0][j] != logits[1][j] {
					t.Fatalf("position %d, logit %d: %v combined in place, %v unfused", j/V, j%V, logits[0][j], logits[1][j])
				}
			}
		})
	}
}
