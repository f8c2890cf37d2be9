package gpu

import (
	"os"
	"strings"
	"testing"

	"github.com/bitvk/bitvk/gpu/vk"
	"github.com/bitvk/bitvk/nn"
	"github.com/bitvk/bitvk/nn/nntest"
)

// needVulkan skips the test when there is no Vulkan device, unless
// BITVK_REQUIRE_VULKAN=1 (as in `make test`), where it fails instead.
func needVulkan(t testing.TB) {
	t.Helper()
	devs, err := Devices()
	if err == nil && len(devs) > 0 {
		return
	}
	if os.Getenv("BITVK_REQUIRE_VULKAN") == "1" {
		t.Fatalf("no Vulkan device (BITVK_REQUIRE_VULKAN=1): %v", err)
	}
	t.Skipf("no Vulkan device: %v (install mesa-vulkan-drivers for lavapipe)", err)
}

// open makes a backend with the validation layer on, and fails the test at
// its end if the layer said anything.
func open(t testing.TB, c *nn.Config, w *nn.Weights, o Options) *Backend {
	t.Helper()
	needVulkan(t)
	o.Validation = true
	b, err := New(c, w, o)
	if err != nil {
		t.Fatalf("gpu.New: %v", err)
	}
	t.Cleanup(func() {
		b.Close()
		msgs := b.ValidationMessages() // since New, the device's destruction included
		for _, m := range msgs {
			t.Errorf("validation: %s", m)
		}
	})
	return b
}

// variants are the backend configurations every suite runs: the integer
// dot product kernels and subgroup reductions (where the device has them),
// the plain int32 kernels with shared-memory reductions, and weights split
// into many small shards with a batch smaller than the suite's chunks, its
// decode steps fused (ternary_norm) even on a CPU device.
var variants = []struct {
	name string
	o    Options
}{
	{"default", Options{}},
	{"plain", Options{Plain: true, NoSubgroups: true}},
	{"sharded", Options{MaxShardBytes: 4096, Batch: 5, Fusion: FuseOn}},
	// Decode shapes other than the defaults (Tuning): more rows and fewer
	// lanes, a bigger norm workgroup, short attention chunks; then rows
	// too few for the fused RoPE (it runs apart) and the smallest shapes;
	// prompt tiles larger and smaller than the defaults.
	{"tuned", Options{Fusion: FuseOn, Tune: Tuning{Rows: 8, Lanes: 32, Norm: 512, Chunk: 32, PrefillRows: 4, PrefillTokens: 16, Layer: 6}}},
	{"tuned-narrow", Options{Fusion: FuseOn, Tune: Tuning{Rows: 2, Lanes: 8, Norm: 32, Chunk: 16, PrefillRows: 1, PrefillTokens: 2}}},
	// 16-byte loads in the ternary products, decode (fused) and prompts.
	// The norms reading their values once (registers); with a narrow
	// workgroup, the 2B-like widths of the suite hold more than
	// maxNormRegs a lane and fall back to three passes.
	// Attention staging 64 keys at a time, its values four rows a load.
	// The FFN's sub-norm in the down projection's prologue and attention's
	// reduce in the output projection's (layer 5), sharded too.
	// Prompt tiles of other workgroup sizes (plane).
	{"vec4-1pass-tk64", Options{Fusion: FuseOn, Tune: Tuning{Vec: 4, PrefillVec: 4, PrefillLanes: 32, NormPasses: 1, TK: 64, VUnroll: 4, Layer: 5}}},
	{"vec4-1pass-narrow", Options{Fusion: FuseOn, Tune: Tuning{Rows: 2, Lanes: 8, Norm: 32, Chunk: 32, Vec: 4, PrefillRows: 1, PrefillTokens: 2, PrefillLanes: 16, PrefillVec: 4, NormPasses: 1, TK: 32, VUnroll: 4, Layer: 5}}},
	{"plane128", Options{Tune: Tuning{PrefillLanes: 128}}},
	{"sharded-layer5", Options{MaxShardBytes: 4096, Batch: 5, Fusion: FuseOn, Tune: Tuning{Layer: 5}}},
	// Prompts through ternary_mm (Tuning.Tiled): tiles of 8 tokens × 64
	// rows (passes of 4 tokens or more), 8 × 8 outputs an invocation in
	// plain int32 math, and shards of a few rows in chunks of 5 tokens,
	// the tiles shrunk towards 1024 workgroups (TiledGroups).
	{"tiled", Options{Tune: Tuning{Tiled: 8, TiledBlock: 64}}},
	{"tiled-plain-8x8", Options{Plain: true, NoSubgroups: true, Tune: Tuning{Tiled: 16, TiledBlock: 64, TiledRows: 8, TiledTokens: 8}}},
	{"tiled-sharded", Options{MaxShardBytes: 4096, Batch: 5, Fusion: FuseOn, Tune: Tuning{Tiled: 8, TiledBlock: 64, TiledGroups: 1024}}},
}

// TestConformancePositionZero: a token alone at position 0 gives the
// oracle's logits to nntest.PositionZeroTolerance, the 2B shape included
// (skipped with -short): the norms and BitLinear round as bitnet.cpp's and
// the oracle's do, so no int8 code flips in 30 layers.
func TestConformancePositionZero(t *testing.T) {
	needVulkan(t)
	nntest.PositionZero(t, func(c *nn.Config, w *nn.Weights, ctx int) (nn.Backend, error) {
		return open(t, c, w, Options{Context: ctx}), nil
	}, "tiny", "small", "2b")
}

func TestConformanceForward(t *testing.T) {
	needVulkan(t)
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			nntest.Forward(t, func(c *nn.Config, w *nn.Weights, ctx int) (nn.Backend, error) {
				o := v.o
				o.Context = ctx
				return open(t, c, w, o), nil
			})
		})
	}
}

// The int8 head is an approximation of the float16 one: its logits follow
// the oracle's closely, not exactly.
func TestHeadQ8(t *testing.T) {
	m := nntest.NewModel(t, "small", nntest.StoreI2S, 5)
	toks := []int32{1, 17, 400, 3, 99, 1000}
	f16 := open(t, m.Config, m.Weights, Options{Context: 16})
	m2 := nntest.NewModel(t, "small", nntest.StoreI2S, 5)
	q8 := open(t, m2.Config, m2.Weights, Options{Context: 16, HeadQ8: true})
	V := m.Config.Vocab
	a, b := make([]float32, len(toks)*V), make([]float32, len(toks)*V)
	if err := f16.Forward(toks, 0, a); err != nil {
		t.Fatal(err)
	}
	if err := q8.Forward(toks, 0, b); err != nil {
		t.Fatal(err)
	}
	for p := range toks {
		if c := nntest.Correlation(a[p*V:(p+1)*V], b[p*V:(p+1)*V]); c < 0.999 {
			t.Errorf("position %d: q8 head's logits correlate %.5f with the f16 head's", p, c)
		}
	}
}

// The heads converted at load (--head q8_0|q6_k|q4_0; Q4_0 in its own 4.5
// bits, head_nibbles; Q6_K in 6.625, head_six) approximate the float16 one: their logits follow it
// closely, as the CPU's do (the same codes and scales, nn.HeadBlocks).
func TestHeadTypes(t *testing.T) {
	toks := []int32{1, 17, 400, 3, 99, 1000}
	m := nntest.NewModel(t, "small", nntest.StoreI2S, 5)
	f16 := open(t, m.Config, m.Weights, Options{Context: 16})
	V := m.Config.Vocab
	want := make([]float32, len(toks)*V)
	if err := f16.Forward(toks, 0, want); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		head nn.HeadType
		min  float64
	}{{nn.HeadQ8_0, 0.999}, {nn.HeadQ6_K, 0.999}, {nn.HeadQ4_0, 0.995}} {
		for _, shard := range []int64{0, 4096} {
			m := nntest.NewModel(t, "small", nntest.StoreI2S, 5)
			b := open(t, m.Config, m.Weights, Options{Context: 16, Head: tc.head, MaxShardBytes: shard})
			v := int64(V) * int64(m.Config.Embd)
			// bytes per 256 values: Q8_0's int8 codes and float32 scales; Q6_K's
			// 6-bit codes, int8 group scales and float32 d; Q4_0's nibbles
			// and float16 scales
			per256 := map[nn.HeadType]int64{nn.HeadQ8_0: 256 + 8*4, nn.HeadQ6_K: 192 + 16 + 4, nn.HeadQ4_0: 128 + 8*2}[tc.head]
			if got := b.HeadBytes(); 256*got != per256*v {
				t.Errorf("%s head: HeadBytes %d for %d values, want %d", tc.head, got, v, per256*v/256)
			}
			got := make([]float32, len(toks)*V)
			if err := b.Forward(toks, 0, got); err != nil {
				t.Fatal(err)
			}
			for p := range toks {
				if c := nntest.Correlation(want[p*V:(p+1)*V], got[p*V:(p+1)*V]); c < tc.min {
					t.Errorf("%s head (shards of %d bytes): position %d: logits correlate %.5f with the f16 head's, want ≥ %v", tc.head, shard, p, c, tc.min)
				}
			}
		}
	}
}

// ForwardArgmax picks the same token as the argmax of Forward's logits, and
// ForwardTrace reports every block and the same logits as Forward.
func TestArgmaxAndTrace(t *testing.T) {
	m := nntest.NewModel(t, "tiny", nntest.StoreI2S, 9)
	b := open(t, m.Config, m.Weights, Options{Context: 32, Batch: 4})
	V := m.Config.Vocab
	toks := []int32{5, 9, 2, 77, 31, 8, 1}
	logits := make([]float32, V)
	if err := b.Forward(toks, 0, logits); err != nil {
		t.Fatal(err)
	}
	want, _ := nntest.Top2(logits)
	id, err := b.ForwardArgmax(toks, 0)
	if err != nil {
		t.Fatal(err)
	}
	if int(id) != want {
		t.Errorf("ForwardArgmax = %d, argmax of the logits %d", id, want)
	}
	// The argmax of several workgroups, as a GPU runs it, on any device.
	split := open(t, m.Config, m.Weights, Options{Context: 32, Batch: 4})
	split.argmaxSplit = true
	if id, err := split.ForwardArgmax(toks, 0); err != nil || int(id) != want {
		t.Errorf("ForwardArgmax in several workgroups = %d, %v; argmax of the logits %d", id, err, want)
	}
	traced := make([]float32, V)
	seen := map[[2]int]int{}
	err = b.ForwardTrace(toks, 0, traced, func(l int, s nn.Stage, x []float32) {
		seen[[2]int{l, int(s)}] += len(x)
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := range logits {
		if logits[i] != traced[i] {
			t.Fatalf("ForwardTrace logit %d = %v, Forward %v", i, traced[i], logits[i])
		}
	}
	for l := range m.Config.Layers {
		for s := range 2 {
			if got := seen[[2]int{l, s}]; got != len(toks)*m.Config.Embd {
				t.Errorf("layer %d stage %d: traced %d values, want %d", l, s, got, len(toks)*m.Config.Embd)
			}
		}
	}
}

func TestBackendErrors(t *testing.T) {
	m := nntest.NewModel(t, "tiny", nntest.StoreI2S, 1)
	b := open(t, m.Config, m.Weights, Options{Context: 8})
	V := m.Config.Vocab
	for _, tc := range []struct {
		name   string
		toks   []int32
		pos    int
		logits []float32
		want   string
	}{
		{"past the context", []int32{1, 2}, 7, nil, "outside the context"},
		{"bad token", []int32{int32(V)}, 0, nil, "outside the vocabulary"},
		{"bad logits", []int32{1}, 0, make([]float32, 3), "logits buffer"},
	} {
		err := b.Forward(tc.toks, tc.pos, tc.logits)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
	if _, err := New(m.Config, m.Weights, Options{Device: 99}); err == nil || !strings.Contains(err.Error(), "no device 99") {
		t.Errorf("device 99: error %v", err)
	}
	b.Close()
	if err := b.Forward([]int32{1}, 0, nil); err == nil {
		t.Error("Forward after Close did not fail")
	}
	if err := b.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestDevices(t *testing.T) {
	needVulkan(t)
	devs, err := Devices()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range devs {
		if d.Name == "" || d.MaxStorageBufferRange == 0 || d.ComputeQueueFamily < 0 {
			t.Errorf("device %d: incomplete description %+v", d.Index, d)
		}
	}
	if vk.Pick(devs) < 0 {
		t.Error("Pick found no device")
	}
}

// Drafts verified in the batched (prefill) pipeline give the tokens of
// plain decoding.
// (One variant: the others share its pipelines, and each run is long on
// a software device.)
func TestConformanceDrafting(t *testing.T) {
	needVulkan(t)
	nntest.Drafting(t, func(c *nn.Config, w *nn.Weights, ctx int) (nn.Backend, error) {
		return open(t, c, w, Options{Context: ctx, Batch: 5}), nil
	}, true)
}

// Mixed batches of several slots give each sequence bit for bit the logits
// it gets alone (nntest.MultiSeq): with the default batch, and with a batch
// of 5 tokens over sharded weights, so that passes split.
func TestConformanceMultiSeq(t *testing.T) {
	needVulkan(t)
	for _, v := range []struct {
		name string
		o    Options
	}{
		{"default", Options{Fusion: FuseOn}}, // a lone token of a slot is a fused decode step
		{"sharded", Options{MaxShardBytes: 4096, Batch: 5}},
	} {
		t.Run(v.name, func(t *testing.T) {
			nntest.MultiSeq(t, func(c *nn.Config, w *nn.Weights, ctx, slots int) (nn.MultiBackend, error) {
				o := v.o
				o.Context, o.Slots = ctx, slots
				return open(t, c, w, o), nil
			}, true)
		})
	}
}

// A K/V cache of more slots than one buffer binds is a clear error.
func TestSlotsTooMany(t *testing.T) {
	m := nntest.NewModel(t, "tiny", nntest.StoreI2S, 1)
	needVulkan(t)
	devs, err := Devices()
	if err != nil {
		t.Fatal(err)
	}
	const ctx = 16
	perSlot := int64(ctx * m.Config.KVDim() * 2)
	slots := int(int64(devs[vk.Pick(devs)].MaxStorageBufferRange)/perSlot) + 1
	b, err := New(m.Config, m.Weights, Options{Context: ctx, Slots: slots})
	if err == nil {
		b.Close()
		t.Fatalf("%d slots of %d positions: no error", slots, ctx)
	}
	if !strings.Contains(err.Error(), "--parallel") {
		t.Errorf("%d slots: error %q does not say what to lower", slots, err)
	}
}
