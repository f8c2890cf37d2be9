package gpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/bitvk/bitvk/gguf"
	"github.com/bitvk/bitvk/gpu/vk"
	"github.com/bitvk/bitvk/nn"
	"github.com/bitvk/bitvk/nn/nntest"
	"github.com/bitvk/bitvk/nn/ref"
	"github.com/bitvk/bitvk/spirv"
)

// TestTernaryTiled: a prompt's ternary products as ternary_mm computes them
// (Tuning.Tiled) give the oracle's exact sums, and with scales and the
// residual add the bits ternary.comp gives, for tiles of several shapes,
// row and token counts that leave tiles part empty, matrices split into
// shards, and sums at the int32 kernels' edge (every weight +1 or −1
// against codes of −128 and 127); with the integer dot product and in
// plain int32 math.
func TestTernaryTiled(t *testing.T) {
	cases := []struct {
		tiledCase
		wantTiled bool
	}{
		{tiledCase{"mm=64", 200, 512, 100, 0, 0}, true},                     // the default tile: 128 rows × 64 tokens
		{tiledCase{"mm=64,mmm=128,mmr=8,mmt=8", 300, 256, 130, 0, 0}, true}, // 8×8 outputs an invocation
		{tiledCase{"mm=16,mmm=32", 77, 384, 9, 4096, 0}, true},              // 42 rows a shard
		{tiledCase{"mm=8,mmm=64,mmr=8", 64, 128, 5, 0, 0}, true},            // a tile of 8 tokens, 5 of them
		{tiledCase{"mm=32,mmm=16", 48, 6912, 40, 0, 1}, true},               // Σ = 128·6912 at the edge
		{tiledCase{"mm=32,mmm=16", 48, 6912, 40, 0, -1}, true},
		{tiledCase{"mm=64", 100, 256, 31, 0, 0}, false},        // under half a tile: ternary.comp
		{tiledCase{"mm=64,mmg=64", 200, 512, 100, 0, 0}, true}, // shrunk to 32 rows × 16 tokens: 7 × 7 tiles
	}
	for _, plain := range []bool{false, true} {
		a := newOps(t, plain)
		for ci, tc := range cases {
			name := fmt.Sprintf("plain=%v/%s/%dx%dx%d", plain, tc.tune, tc.rows, tc.k, tc.T)
			t.Run(name, func(t *testing.T) {
				a.usedTiled() // forget the pipelines of the cases before
				tc.run(t, a, uint64(ci), 9, func() {
					used, tokens := a.usedTiled()
					if used != tc.wantTiled {
						t.Fatalf("ternary_mm ran: %v, want %v", used, tc.wantTiled)
					}
					if want := map[string]uint32{"mm=64": 64, "mm=64,mmg=64": 16}[tc.tune]; used && want != 0 && tokens != want {
						t.Fatalf("ternary_mm's tile took %d tokens, want %d", tokens, want)
					}
				})
			})
		}
	}
}

// tiledCase is a prompt's product for the tiled kernels' tests: a tuning,
// a matrix of rows × k in shards of at most shard bytes (0: one), T
// tokens, every weight allSame (0: random) against codes of −128 then.
type tiledCase struct {
	tune       string
	rows, k, T int
	shard      int64
	allSame    int8
}

// run computes the case's sums under its tuning, calls ran (which says
// whether the kernel meant to run did), and checks them against the
// oracle's, then the scaled outputs added to a residual against
// ternary.comp's bits under the defaults.
func (tc tiledCase) run(t *testing.T, a opsAdapter, seed, stream uint64, ran func()) {
	t.Helper()
	tiled, err := ParseTuning(tc.tune)
	if err == nil {
		tiled, err = resolveTuning(tiled, a.b.info.MaxComputeWorkGroupInvocations, a.b.info.MaxComputeSharedMemorySize)
	}
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, stream))
	vals := make([]int8, tc.rows*tc.k)
	for i := range vals {
		vals[i] = tc.allSame
		if tc.allSame == 0 {
			vals[i] = int8(rng.IntN(3) - 1)
		}
	}
	data, err := gguf.EncodeI2_S(vals, 0.75)
	if err != nil {
		t.Fatal(err)
	}
	w := nn.Tensor{Name: "w", Type: nn.TypeI2_S, In: tc.k, Out: tc.rows, Data: data}
	q := make([]int8, tc.T*tc.k)
	for i := range q {
		switch {
		case tc.allSame != 0:
			q[i] = -128
		case i%97 == 0:
			q[i] = 127
		default:
			q[i] = int8(rng.IntN(256) - 128)
		}
	}
	a.b.maxShard = 1 << 20
	if tc.shard > 0 {
		a.b.maxShard = tc.shard
	}
	defer func() { a.b.maxShard, a.b.tune = 1<<20, defaultTuning() }()
	a.b.tune = tiled
	got, err := a.TernarySums(w, q, tc.T)
	if err != nil {
		t.Fatal(err)
	}
	ran()
	for tk := 0; tk < tc.T; tk++ {
		want, err := ref.TernarySums(w, q[tk*tc.k:(tk+1)*tc.k])
		if err != nil {
			t.Fatal(err)
		}
		for o := range want {
			if g := got[tk*tc.rows+o]; g != want[o] {
				t.Fatalf("token %d row %d: %d, oracle %d", tk, o, g, want[o])
			}
		}
	}

	// Scaled, added to the output: ternary.comp's bits.
	x := make([]float32, tc.T*tc.k)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	base := make([]float32, tc.T*tc.rows)
	for i := range base {
		base[i] = float32(rng.NormFloat64())
	}
	a.b.tune = tiled
	gotY := a.bitLinearAdd(w, x, base, tc.T)
	a.b.tune = defaultTuning()
	wantY := a.bitLinearAdd(w, x, base, tc.T)
	for i := range wantY {
		if math.Float32bits(gotY[i]) != math.Float32bits(wantY[i]) {
			t.Fatalf("token %d row %d: %v with %s, %v from ternary.comp", i/tc.rows, i%tc.rows, gotY[i], tc.tune, wantY[i])
		}
	}
}

// usedTiled reports whether a pipeline of ternary_mm was made, and the
// tokens of its tile (BN, its specialization constant 3), and forgets the
// pipelines, so that the next call asks again.
func (a opsAdapter) usedTiled() (used bool, tokens uint32) {
	for key, k := range a.b.kernels {
		if key.k == spirv.TernaryMM || key.k == spirv.TernaryMMDot {
			used, tokens = true, key.spec[3]
		}
		k.Release()
		delete(a.b.kernels, key)
	}
	return used, tokens
}

// bitLinearAdd is base plus BitLinear of x by w for T tokens, through
// rc.ternary's residual add.
func (a opsAdapter) bitLinearAdd(w nn.Tensor, x, base []float32, T int) []float32 {
	m, err := a.b.newTernary(&nn.Weights{}, w)
	if err != nil {
		a.t.Fatal(err)
	}
	a.quantize(x, T)
	out := a.buf(f32Bytes(base))
	a.run(func(rc *recorder) { rc.ternary("test", m, out, w.Out, T, true) })
	return a.floats(out, T*w.Out)
}

// TestTernaryTiledCoop: the tiled products on cooperative matrices
// (mmc=2, ternary_mm_coop.comp) give the oracle's exact sums and, scaled
// and added to the output, ternary.comp's bits, for tiles part empty,
// matrices in shards, and sums at the int32 edge. It runs where the device
// multiplies s8 × s8 + s32 in 16 × 8 × 32 shapes (NVIDIA's tensor cores);
// lavapipe has no cooperative matrices.
func TestTernaryTiledCoop(t *testing.T) {
	a := newOps(t, false)
	if err := coopReady(a.b.dev.Enabled(), a.b.info); err != nil {
		t.Skipf("no cooperative matrices for ternary_mm_coop: %v", err)
	}
	for ci, tc := range []tiledCase{
		{"mmc=2", 200, 512, 100, 0, 0},       // 4 × 2 tiles of 64 × 64, the last ones part empty
		{"mm=16,mmc=2", 77, 384, 9, 4096, 0}, // 42 rows a shard, 9 tokens of a tile
		{"mm=16,mmc=2", 48, 6912, 40, 0, 1},  // Σ = 128·6912 at the edge
		{"mm=16,mmc=2", 48, 6912, 40, 0, -1},
		{"mmc=2", 2560, 2560, 128, 0, 0}, // a 2B shape's output projection over a prompt of 128
	} {
		t.Run(fmt.Sprintf("%s/%dx%dx%d", tc.tune, tc.rows, tc.k, tc.T), func(t *testing.T) {
			a.usedTiled()
			tc.run(t, a, uint64(ci), 19, func() {
				coop := false
				for key := range a.b.kernels {
					coop = coop || key.k == spirv.TernaryMMCoop
				}
				if !coop {
					t.Fatal("ternary_mm_coop did not run")
				}
			})
		})
	}
}

// mmc=2 on a device without the cooperative matrices ternary_mm_coop
// needs is an error naming what it lacks, at New.
func TestCoopRefused(t *testing.T) {
	all := vk.Features{CooperativeMatrix: true, Int8: true, VulkanMemoryModel: true}
	for _, c := range []struct {
		name string
		off  func(*vk.Features)
		want string
	}{
		{"no cooperative matrix", func(f *vk.Features) { f.CooperativeMatrix = false }, "VK_NV_cooperative_matrix"},
		{"no int8", func(f *vk.Features) { f.Int8 = false }, "shaderInt8"},
		{"no memory model", func(f *vk.Features) { f.VulkanMemoryModel = false }, "vulkanMemoryModel"},
	} {
		f := all
		c.off(&f)
		if err := coopReady(f, vk.DeviceInfo{Name: "dev", SubgroupSize: 32}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	if err := coopReady(all, vk.DeviceInfo{Name: "dev", SubgroupSize: 64}); err == nil || !strings.Contains(err.Error(), "subgroups of 64") {
		t.Errorf("subgroups of 64: %v", err)
	}
	f16 := vk.CoopMatShape{M: 16, N: 8, K: 16, A: "f16", B: "f16", C: "f32", D: "f32", Scope: "subgroup"}
	if err := coopReady(all, vk.DeviceInfo{Name: "dev", SubgroupSize: 32, CoopMat: []vk.CoopMatShape{f16}}); err == nil || !strings.Contains(err.Error(), "16×8×32") {
		t.Errorf("float shapes only: %v", err)
	}
	s8 := vk.CoopMatShape{M: 16, N: 8, K: 32, A: "s8", B: "s8", C: "s32", D: "s32", Scope: "subgroup"}
	if err := coopReady(all, vk.DeviceInfo{Name: "dev", SubgroupSize: 32, CoopMat: []vk.CoopMatShape{f16, s8}}); err != nil {
		t.Errorf("with the s8 shape: %v", err)
	}
	m := nntest.NewModel(t, "tiny", nntest.StoreI2S, 3)
	needVulkan(t)
	_, err := New(m.Config, m.Weights, Options{Tune: Tuning{TiledCoop: 2}})
	if probe, _ := Devices(); len(probe) > 0 && !probe[0].Features.CooperativeMatrix && (err == nil || !strings.Contains(err.Error(), "mmc=2")) {
		t.Errorf("mmc=2 on a device without cooperative matrices: %v", err)
	}
}

// checkTiledSums, which New runs before it takes mmc=2, passes for the
// kernels that compute the exact sums (ternary_mm, and ternary.comp with
// mm=1): its own sums and layout are the kernels'.
func TestCheckTiledSums(t *testing.T) {
	a := newOps(t, false)
	defer func() { a.b.tune = defaultTuning() }()
	for _, tune := range []string{"", "mm=1", "mm=128", "mm=16,mmm=32"} {
		tn, err := ParseTuning(tune)
		if err == nil {
			tn, err = resolveTuning(tn, a.b.info.MaxComputeWorkGroupInvocations, a.b.info.MaxComputeSharedMemorySize)
		}
		if err != nil {
			t.Fatal(err)
		}
		a.b.tune = tn
		a.usedTiled()
		if err := a.b.checkTiledSums(); err != nil {
			t.Errorf("%q: %v", tune, err)
		}
		if used, _ := a.usedTiled(); used != (tn.Tiled > 1) {
			t.Errorf("%q: ternary_mm ran: %v", tune, used)
		}
	}
}
