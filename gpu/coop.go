package gpu

import (
	"fmt"
	"math/rand/v2"

	"github.com/bitvk/bitvk/gpu/vk"
	"github.com/bitvk/bitvk/nn"
)

// The cooperative-matrix products (Tuning.TiledCoop, ternary_mm_coop.comp):
// workgroups of coopWG invocations (four subgroups of 32), tiles of
// coopTile rows × coopTile tokens.
const (
	coopWG   = 128
	coopTile = 64
)

// coopReady reports whether the device runs ternary_mm_coop: with the
// features enabled the kernel's SPIR-V declares (NV's cooperative matrix,
// int8, and the Vulkan memory model, which GL_NV_cooperative_matrix
// requires), subgroups of 32, and s8 × s8 + s32 products in 16 × 8 × 32
// shapes a subgroup.
func coopReady(enabled vk.Features, info vk.DeviceInfo) error {
	switch {
	case !enabled.CooperativeMatrix:
		return fmt.Errorf("%s has no VK_NV_cooperative_matrix", info.Name)
	case !enabled.Int8:
		return fmt.Errorf("%s has no shaderInt8, which ternary_mm_coop's int8 matrices need", info.Name)
	case !enabled.VulkanMemoryModel:
		return fmt.Errorf("%s has no vulkanMemoryModel, which ternary_mm_coop's SPIR-V declares (GL_NV_cooperative_matrix requires it)", info.Name)
	}
	if info.SubgroupSize != 32 {
		return fmt.Errorf("%s runs subgroups of %d, ternary_mm_coop's of 32", info.Name, info.SubgroupSize)
	}
	for _, s := range info.CoopMat {
		if s.M == 16 && s.N == 8 && s.K == 32 && s.A == "s8" && s.B == "s8" && s.C == "s32" && s.D == "s32" && s.Scope == "subgroup" {
			return nil
		}
	}
	return fmt.Errorf("%s lists no s8×s8+s32→s32 16×8×32 cooperative matrix in subgroups", info.Name)
}

// checkTiledSums runs the tuning's tiled prompt product (ternary_mm, or
// ternary_mm_coop with mmc=2) on a small matrix of random codes over 69
// tokens of random activations and compares its sums with exact ones
// computed here: New runs it before it takes mmc=2, so that a device whose
// cooperative matrices give other sums (a driver's bug, or the kernel's on
// a device none of us ran) is refused at load with an error, never a wrong
// answer. 77 rows and 69 tokens leave the 64 × 64 tiles part empty; K =
// 256 is two blocks; rowScale and the token scales are 1, so the outputs
// are the sums, exactly (|Σ| < 2²⁴). It runs the plain product and then the
// accumulating one (a residual's projection) over its output.
func (b *Backend) checkTiledSums() error {
	const rows, K = 77, 256
	T := max(69, b.tune.Tiled/2+1) // a pass the tiled kernel takes
	rng := rand.New(rand.NewPCG(1, 2))
	vals := make([]int8, rows*K) // the weights, −1, 0 or +1
	for i := range vals {
		vals[i] = int8(rng.IntN(3) - 1)
	}
	act := make([]int8, T*K)
	for i := range act {
		act[i] = int8(rng.IntN(256) - 128)
	}
	act[0], act[1] = -128, 127
	want := make([]int32, T*rows)
	for t := range T {
		for r := range rows {
			var sum int32
			for i := range K {
				sum += int32(vals[r*K+i]) * int32(act[t*K+i])
			}
			want[t*rows+r] = sum
		}
	}
	var bufs []*vk.Buffer
	defer func() {
		for _, x := range bufs {
			x.Release()
		}
	}()
	upload := func(name string, data []byte) (*vk.Buffer, error) {
		buf, err := b.dev.NewBuffer(name, int64(max(len(data), 4)), false)
		if err != nil {
			return nil, err
		}
		bufs = append(bufs, buf)
		return buf, b.dev.Upload(buf, 0, data)
	}
	wb := make([]byte, rows*K/4)
	nn.PackI2S(wb, vals) // the layout the kernels read (rows of K/4 bytes)
	ab := make([]byte, len(act))
	for i, v := range act {
		ab[i] = byte(v)
	}
	ones := make([]float32, max(rows, T))
	for i := range ones {
		ones[i] = 1
	}
	wbuf, err := upload("tiled check weights", wb)
	if err != nil {
		return err
	}
	qbuf, err := upload("tiled check activations", ab)
	if err != nil {
		return err
	}
	sbuf, err := upload("tiled check scales", f32Bytes(ones))
	if err != nil {
		return err
	}
	out, err := upload("tiled check output", make([]byte, 4*T*rows))
	if err != nil {
		return err
	}
	m := &ternaryMatrix{rows: rows, k: K, shards: []shard{{buf: wbuf, rows: rows}}, rowScale: sbuf}
	q, s := b.q, b.s
	b.q, b.s = qbuf, sbuf
	defer func() { b.q, b.s = q, s }()
	// Twice: the plain product into out, then the accumulating one (the
	// residual's: out += the product), which must leave twice the sums.
	for pass, acc := range []bool{false, true} {
		rc := &recorder{b: b, r: b.dev.Record("tiled check")}
		rc.ternary("tiled check", m, out, rows, T, acc)
		if rc.err == nil {
			rc.err = rc.r.Finish()
		}
		if rc.err == nil {
			rc.err = b.dev.Submit(rc.r)
		}
		rc.r.Release()
		if rc.err != nil {
			return rc.err
		}
		got := make([]byte, 4*T*rows)
		if err := b.dev.Download(out, 0, got); err != nil {
			return err
		}
		for i, g := range f32View(got, len(want)) {
			if w := want[i] * int32(pass+1); g != float32(w) {
				what := "the exact sum"
				if acc {
					what = "twice the exact sum (accumulating)"
				}
				return fmt.Errorf("token %d, row %d: %v, %s %d", i/rows, i%rows, g, what, w)
			}
		}
	}
	return nil
}
