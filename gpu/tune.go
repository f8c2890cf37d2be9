package gpu

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
)

// Tuning is the shape of the kernels on one device: what a workgroup
// takes on, what a lane loads at once, how many dispatches a decode
// step's layer takes. The zero value of a field is its default (see
// defaultTuning); Options.Tune, or the environment variable BITVK_VK_TUNE
// (for benchmarking a device: "rows=8,lanes=32,norm=1024,chunk=64"),
// sets others. Every shape computes the same thing; the conformance suite
// runs the defaults and others (docs/KERNELS.md lists what each changes).
// A decode step and a pass of several tokens give a token the same bits
// (what keeps speculative decoding lossless) as long as Lanes equals
// PrefillLanes and Vec equals PrefillVec, or the model has no block-scaled
// matrices, whose float sums follow the lanes' split of a row.
type Tuning struct {
	// Rows is the matrix rows a row group of a decode step's ternary
	// products computes (NR of ternary.comp and ternary_norm.comp at one
	// token): each lane loads a word of every row before it adds, so more
	// rows keep more loads in flight. A power of two, 1 to 32; the fused
	// RoPE epilogue needs a multiple of 4 (else RoPE runs apart).
	Rows int
	// Lanes is the invocations of a row group in those products: a power
	// of two, 8 to Norm.
	Lanes int
	// Norm is the workgroup of norm_quant and ternary_norm, whose trees
	// must be the same (the fused norm's codes are norm_quant's bits): a
	// power of two, 32 to 1024 (capped by the device).
	Norm int
	// Chunk is the positions of one attention workgroup (split-K): a
	// multiple of 16.
	Chunk int
	// PrefillRows and PrefillTokens are the tile of a prompt's ternary
	// products (NR × NT of ternary.comp over several tokens): each weight
	// word read serves PrefillTokens tokens. Powers of two, at most 32
	// each and PrefillLanes together (one output per invocation in the
	// epilogue). A pass of at most fewTokens tokens (verification, several
	// streams) takes them in one tile instead (tokenTile).
	PrefillRows, PrefillTokens int
	// PrefillLanes is the invocations of a prompt's ternary-product
	// workgroup (one row group, splitting each row's words): a power of
	// two, 16 to 128, at least PrefillRows·PrefillTokens (one output
	// each in the epilogue), and their product at most 4096.
	PrefillLanes int
	// Vec and PrefillVec are the 32-bit words a lane of a decode step's
	// (a prompt's) ternary products loads at once: 1, or 4 (one 16-byte
	// load a row, ternary.glsl's VEC).
	Vec, PrefillVec int
	// NormPasses is how many times norm_quant, ternary_norm's prologue and
	// attention_reduce's epilogue read a token's values: 3 (for the sum of
	// squares, the maximum and the quantization), or 1 (read once into
	// registers, the shaders' REGS; where an invocation would hold more
	// than maxNormRegs values, 3 all the same).
	NormPasses int
	// TK is the key positions attention stages in shared memory at a
	// time, one score an invocation (TK·rows of the workgroup's
	// invocations busy): a power of two from 16 to 256 dividing Chunk.
	TK int
	// VUnroll is the value rows attention's weighted sum loads at once
	// per invocation before it adds them: 1 or 4.
	VUnroll int
	// Tiled is the tokens of a workgroup's tile when a prompt's ternary
	// products run as a tiled matrix-matrix product (ternary_mm.comp: each
	// block of weights and activations staged in shared memory, every
	// code expanded once), for passes of at least Tiled/2 tokens over
	// matrices with one scale a row; 1 keeps ternary.comp's tiles
	// (PrefillRows × PrefillTokens). 1, or a power of two from 4 to 256.
	Tiled int
	// TiledBlock is the rows of that tile: a power of two from 4 to 1024.
	TiledBlock int
	// TiledRows and TiledTokens are the rows and tokens one invocation of
	// ternary_mm computes: 4 or 8 each, at most the tile's. The workgroup
	// is (TiledBlock/TiledRows)·(Tiled/TiledTokens) invocations, 16 to
	// 1024 (capped by the device).
	TiledRows, TiledTokens int
	// TiledGroups is the fewest workgroups a ternary_mm dispatch aims for:
	// where a shard's product over a pass's tokens makes fewer tiles, the
	// tile's rows halve (to 32 at least), then its tokens (to
	// 4·TiledTokens), until it makes that many, so that every compute unit
	// of a GPU has work (a 2,560-row matrix over 128 tokens is 20 × 2
	// tiles of 128 × 64). 1 keeps the tile whole. A CPU device (lavapipe),
	// whose few cores take large tiles best, keeps it whole under the
	// default too.
	TiledGroups int
	// Layer is the dispatches of a fused decode step's layer: 7; 6 with
	// the FFN's activation, sub-norm and quantization in the down
	// projection's prologue (each of its workgroups computing them, as
	// the QKV and gate/up products do their input norms); 5 with
	// attention's reduce, sub-norm and quantization in the output
	// projection's prologue too.
	Layer int
	// Warm is whether a decode step reads weights into the GPU's cache
	// (L2) before its products need them: 1, no (the default); 2, each
	// layer's output, gate/up and down matrices and the next layer's
	// Q/K/V matrix while its attention runs, and the first layer's Q/K/V
	// beside the embedding lookup (read_bandwidth dispatches with no
	// barrier of their own, beside the step's kernels). On the H200 a
	// decode step's products read 250-470 GB/s of its 4,500 (each waits on
	// its loads' latency, not on bandwidth), while attention and the norms
	// leave the memory idle; 2 makes each layer 4 dispatches more (about
	// 17 MB of the 2B shape's weights a layer ahead: for GPUs whose cache
	// holds that).
	Warm int
	// Combine is where a decode step combines attention's chunks under
	// Layer 5: 1 (the default), in the output projection's prologue, each
	// of its workgroups combining every head's partials (ternary_norm
	// ACT 3); 2, once, in attention's own kernel by the last workgroup of
	// each head group to finish (attention.comp COMBINE), the output
	// projection then normalizing the combined row (ACT 0). At a long
	// context the partials are many (chunks × heads × head size), and 1
	// reads them all in every workgroup of the output projection.
	Combine int
	// Preload is whether a fused decode step's products load a lane's first
	// words of every row before their prologue's norm (ternary_norm PRE):
	// 1, no (the default); 2, yes, so that the weights' trip from memory
	// overlaps the norm's reductions instead of following them (with
	// vec=4, a 2,560-wide row is 40 quads: every lane's whole share).
	Preload int
	// AttnRows is the most query rows (tokens × query heads of one K/V
	// head) an attention workgroup takes: the tokens of a pass of several
	// (a prompt, a verification pass) share each K/V tile it reads, so
	// more rows read the cache fewer times; shared memory caps it (the
	// tokens halve first, see planAttention). A power of two, 1 to 64.
	AttnRows int
	// TiledCoop is whether the tiled products (Tiled) multiply on
	// cooperative matrices (ternary_mm_coop.comp: NVIDIA's tensor cores
	// through VK_NV_cooperative_matrix, tiles of 64 × 64): 1, no (the
	// default); 2, yes, where the device multiplies s8 × s8 + s32 in
	// 16 × 8 × 32 shapes in subgroups of 32, an error elsewhere.
	TiledCoop int
}

// maxNormRegs is the most values an invocation holds with NormPasses 1.
const maxNormRegs = 64

// TuneEnv names the environment variable New reads when Options.Tune is
// the zero value.
const TuneEnv = "BITVK_VK_TUNE"

// defaultTuning is the shape on every device unless tuned.
func defaultTuning() Tuning {
	return Tuning{Rows: rowsWG, Lanes: wgMat, Norm: wgNorm, Chunk: attnChunk, PrefillRows: rowsWG, PrefillTokens: tileT, PrefillLanes: wgMat, Vec: 1, PrefillVec: 1, NormPasses: 3, TK: attnTK, VUnroll: 1,
		Tiled: tiledTokens, TiledBlock: tiledRows, TiledRows: 8, TiledTokens: 4, TiledGroups: tiledGroups, Layer: 7, Warm: 1, Combine: 1, Preload: 1, AttnRows: attnMaxRows, TiledCoop: 1}
}

// tuningField is one key of a tuning: its name in BITVK_VK_TUNE and the
// field it sets.
type tuningField struct {
	key string
	v   *int
}

// fields lists t's keys, in the order String writes them: the one table
// that ParseTuning, String, checkTuning and Changed read.
func (t *Tuning) fields() []tuningField {
	return []tuningField{{"rows", &t.Rows}, {"lanes", &t.Lanes}, {"norm", &t.Norm}, {"chunk", &t.Chunk},
		{"prows", &t.PrefillRows}, {"ptok", &t.PrefillTokens}, {"plane", &t.PrefillLanes}, {"vec", &t.Vec},
		{"pvec", &t.PrefillVec}, {"npass", &t.NormPasses}, {"tk", &t.TK}, {"vunroll", &t.VUnroll},
		{"mm", &t.Tiled}, {"mmm", &t.TiledBlock}, {"mmr", &t.TiledRows}, {"mmt", &t.TiledTokens}, {"mmg", &t.TiledGroups}, {"layer", &t.Layer}, {"warm", &t.Warm}, {"acomb", &t.Combine}, {"pre", &t.Preload}, {"arows", &t.AttnRows}, {"mmc", &t.TiledCoop}}
}

// tuningKeys names the keys, for errors.
func tuningKeys() string {
	var keys []string
	for _, f := range new(Tuning).fields() {
		keys = append(keys, f.key)
	}
	return strings.Join(keys, ", ")
}

// ParseTuning reads "key=value" pairs, comma-separated (the keys of
// Tuning.fields); the keys not given keep their zero value, the default.
func ParseTuning(s string) (Tuning, error) {
	var t Tuning
	if strings.TrimSpace(s) == "" {
		return t, nil
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		n, err := strconv.Atoi(v)
		if !ok || err != nil || n <= 0 {
			return t, fmt.Errorf("gpu: tuning %q: want key=positive integer (keys %s)", kv, tuningKeys())
		}
		i := slices.IndexFunc(t.fields(), func(f tuningField) bool { return f.key == k })
		if i < 0 {
			return t, fmt.Errorf("gpu: tuning %q: unknown key %q (keys %s)", kv, k, tuningKeys())
		}
		*t.fields()[i].v = n
	}
	return t, nil
}

// String is the tuning as ParseTuning reads it (zero fields, the
// defaults, left out).
func (t Tuning) String() string {
	var parts []string
	for _, f := range t.fields() {
		if *f.v != 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", f.key, *f.v))
		}
	}
	return strings.Join(parts, ",")
}

// resolveTuning fills o's zero fields (from BITVK_VK_TUNE when o is all
// zero) with the defaults and checks the result; maxWG is the device's
// largest workgroup, maxShared its shared memory. A device that cannot run
// the default tile of ternary_mm keeps ternary.comp's tiles for prompts; a
// tile asked for that it cannot run is an error.
func resolveTuning(o Tuning, maxWG, maxShared uint32) (Tuning, error) {
	given, name := o, ""
	if o == (Tuning{}) {
		var err error
		if given, err = ParseTuning(os.Getenv(TuneEnv)); err != nil {
			return Tuning{}, fmt.Errorf("%s: %w", TuneEnv, err)
		}
		name = TuneEnv + ": "
	}
	t, err := checkTuning(given, maxWG)
	if err == nil {
		if err = t.checkTiled(maxWG, maxShared); err != nil && given.Tiled == 0 && given.TiledBlock == 0 && given.TiledRows == 0 && given.TiledTokens == 0 {
			t.Tiled, err = 1, nil
		}
	}
	if err != nil {
		return Tuning{}, fmt.Errorf("%s%w", name, err)
	}
	return t, nil
}

// checkTuning is resolveTuning of o as given.
func checkTuning(o Tuning, maxWG uint32) (Tuning, error) {
	o = o.WithDefaults()
	pow2 := func(n int) bool { return n > 0 && n&(n-1) == 0 }
	switch {
	case !pow2(o.Rows) || o.Rows > 32:
		return Tuning{}, fmt.Errorf("gpu: tuning rows=%d: want a power of two from 1 to 32", o.Rows)
	case !pow2(o.Norm) || o.Norm < 32 || o.Norm > 1024:
		return Tuning{}, fmt.Errorf("gpu: tuning norm=%d: want a power of two from 32 to 1024", o.Norm)
	case !pow2(o.Lanes) || o.Lanes < 8 || o.Lanes > o.Norm:
		return Tuning{}, fmt.Errorf("gpu: tuning lanes=%d: want a power of two from 8 to norm (%d)", o.Lanes, o.Norm)
	case o.Rows > o.Lanes:
		return Tuning{}, fmt.Errorf("gpu: tuning rows=%d: at most lanes (%d)", o.Rows, o.Lanes)
	case o.Rows*o.Lanes > 4096: // ternary.comp's reduction, as a prompt's below
		return Tuning{}, fmt.Errorf("gpu: tuning rows=%d,lanes=%d: at most 4096 partial sums in a workgroup", o.Rows, o.Lanes)
	case !pow2(o.TK) || o.TK < attnTK || o.TK > 256:
		return Tuning{}, fmt.Errorf("gpu: tuning tk=%d: want a power of two from %d to 256", o.TK, attnTK)
	case o.Chunk < o.TK || o.Chunk%o.TK != 0:
		return Tuning{}, fmt.Errorf("gpu: tuning chunk=%d: want a positive multiple of tk (%d)", o.Chunk, o.TK)
	case o.VUnroll != 1 && o.VUnroll != 4:
		return Tuning{}, fmt.Errorf("gpu: tuning vunroll=%d: want 1 or 4", o.VUnroll)
	case o.Layer < 5 || o.Layer > 7:
		return Tuning{}, fmt.Errorf("gpu: tuning layer=%d: want 5, 6 or 7", o.Layer)
	case !pow2(o.AttnRows) || o.AttnRows > 64:
		return Tuning{}, fmt.Errorf("gpu: tuning arows=%d: want a power of two from 1 to 64", o.AttnRows)
	case o.TiledCoop != 1 && o.TiledCoop != 2:
		return Tuning{}, fmt.Errorf("gpu: tuning mmc=%d: want 1 or 2", o.TiledCoop)
	case o.TiledCoop == 2 && o.Tiled == 1:
		return Tuning{}, fmt.Errorf("gpu: tuning mmc=2 multiplies ternary_mm's tiles on cooperative matrices (mm=1 turns them off)")
	case o.Preload != 1 && o.Preload != 2:
		return Tuning{}, fmt.Errorf("gpu: tuning pre=%d: want 1 or 2", o.Preload)
	case o.Combine != 1 && o.Combine != 2:
		return Tuning{}, fmt.Errorf("gpu: tuning acomb=%d: want 1 or 2", o.Combine)
	case o.Combine == 2 && o.Layer != 5:
		return Tuning{}, fmt.Errorf("gpu: tuning acomb=2 combines attention's chunks for the output projection of layer=5 (layer=%d)", o.Layer)
	case o.Warm != 1 && o.Warm != 2:
		return Tuning{}, fmt.Errorf("gpu: tuning warm=%d: want 1 (no) or 2 (weights into the cache ahead of the products)", o.Warm)
	case !pow2(o.PrefillRows) || o.PrefillRows > 32:
		return Tuning{}, fmt.Errorf("gpu: tuning prows=%d: want a power of two from 1 to 32", o.PrefillRows)
	case !pow2(o.PrefillTokens) || o.PrefillTokens > 32:
		return Tuning{}, fmt.Errorf("gpu: tuning ptok=%d: want a power of two from 1 to 32", o.PrefillTokens)
	case o.TiledRows != 4 && o.TiledRows != 8:
		return Tuning{}, fmt.Errorf("gpu: tuning mmr=%d: want 4 or 8", o.TiledRows)
	case o.TiledTokens != 4 && o.TiledTokens != 8:
		return Tuning{}, fmt.Errorf("gpu: tuning mmt=%d: want 4 or 8", o.TiledTokens)
	case o.Tiled != 1 && (!pow2(o.Tiled) || o.Tiled < 4 || o.Tiled > 256):
		return Tuning{}, fmt.Errorf("gpu: tuning mm=%d: want 1, or a power of two from 4 to 256", o.Tiled)
	case !pow2(o.TiledBlock) || o.TiledBlock < 4 || o.TiledBlock > 1024:
		return Tuning{}, fmt.Errorf("gpu: tuning mmm=%d: want a power of two from 4 to 1024", o.TiledBlock)
	case o.Tiled > 1 && (o.TiledTokens > o.Tiled || o.TiledRows > o.TiledBlock):
		return Tuning{}, fmt.Errorf("gpu: tuning mm=%d,mmm=%d,mmr=%d,mmt=%d: an invocation's rows and tokens within the tile", o.Tiled, o.TiledBlock, o.TiledRows, o.TiledTokens)
	case o.TiledGroups > 1<<16:
		return Tuning{}, fmt.Errorf("gpu: tuning mmg=%d: want 1 to 65536", o.TiledGroups)
	case o.Tiled > 1 && (o.tiledWG() < 16 || o.tiledWG() > 1024):
		return Tuning{}, fmt.Errorf("gpu: tuning mm=%d,mmm=%d,mmr=%d,mmt=%d: a workgroup of %d invocations, want 16 to 1024", o.Tiled, o.TiledBlock, o.TiledRows, o.TiledTokens, o.tiledWG())
	case o.Vec != 1 && o.Vec != 4:
		return Tuning{}, fmt.Errorf("gpu: tuning vec=%d: want 1 or 4", o.Vec)
	case o.PrefillVec != 1 && o.PrefillVec != 4:
		return Tuning{}, fmt.Errorf("gpu: tuning pvec=%d: want 1 or 4", o.PrefillVec)
	case o.NormPasses != 1 && o.NormPasses != 3:
		return Tuning{}, fmt.Errorf("gpu: tuning npass=%d: want 1 or 3", o.NormPasses)
	case !pow2(o.PrefillLanes) || o.PrefillLanes < 16 || o.PrefillLanes > 128:
		return Tuning{}, fmt.Errorf("gpu: tuning plane=%d: want a power of two from 16 to 128", o.PrefillLanes)
	case o.PrefillRows*o.PrefillTokens > o.PrefillLanes:
		return Tuning{}, fmt.Errorf("gpu: tuning prows=%d,ptok=%d: at most plane (%d) outputs together", o.PrefillRows, o.PrefillTokens, o.PrefillLanes)
	case o.PrefillRows*o.PrefillTokens*o.PrefillLanes > 4096: // ternary.comp's reduction: 16 KiB of shared memory, every device's least
		return Tuning{}, fmt.Errorf("gpu: tuning prows=%d,ptok=%d,plane=%d: at most 4096 partial sums in a workgroup", o.PrefillRows, o.PrefillTokens, o.PrefillLanes)
	}
	for uint32(o.Norm) > maxWG && o.Norm > o.Lanes {
		o.Norm /= 2
	}
	return o, nil
}

// The default tile of ternary_mm: 128 rows × 64 tokens, 8 × 4 outputs an
// invocation (256 invocations, 24 KiB of shared memory). On lavapipe (2B
// shape, pp128, two Zen 5 cores) prompts went 2.36-3.48 tok/s with
// ternary.comp's tiles → 6.31-6.49 (64 × 64 tiles, 4 × 4 outputs: 4.57;
// 64 × 64, 8 × 8: 4.64; 128 × 64, 8 × 8: 6.13; 128 × 128, 8 × 8: 2.61).
const (
	tiledRows   = 128
	tiledTokens = 64
	// tiledGroups: two workgroups a compute unit of the largest GPUs
	// (132 on an H100 or H200), a guess no GPU has timed yet; the sweep of
	// scripts/gpu-session.sh times mmg=1 beside it.
	tiledGroups = 256
)

// tiledWG is the workgroup of ternary_mm: one invocation per TiledRows ×
// TiledTokens of the tile.
func (t Tuning) tiledWG() int {
	return (t.TiledBlock / t.TiledRows) * (t.Tiled / t.TiledTokens)
}

// tiledTile returns the rows and tokens of ternary_mm's tile for a shard
// of rows rows over T tokens, and its workgroup: the tuning's tile, shrunk
// as TiledGroups asks unless shrink is false.
func (t Tuning) tiledTile(rows, T int, shrink bool) (bm, bn, wg int) {
	bm, bn = t.TiledBlock, t.Tiled
	tiles := func() int { return ((rows + bm - 1) / bm) * ((T + bn - 1) / bn) }
	for shrink && tiles() < t.TiledGroups {
		if bm > 32 && bm > t.TiledRows {
			bm /= 2
		} else if bn > 4*t.TiledTokens {
			bn /= 2
		} else {
			break
		}
	}
	return bm, bn, (bm / t.TiledRows) * (bn / t.TiledTokens)
}

// tiledShared is the shared memory a ternary_mm workgroup stages a block
// of weights and activations in (one 128-weight block: 32 words of each
// of the tile's rows and tokens).
func (t Tuning) tiledShared() int { return 4 * 32 * (t.TiledBlock + t.Tiled) }

// checkTiled reports whether the device runs the tuning's ternary_mm: its
// workgroup and its shared memory.
func (t Tuning) checkTiled(maxWG, maxShared uint32) error {
	if t.Tiled <= 1 {
		return nil
	}
	if wg := t.tiledWG(); wg > int(maxWG) {
		return fmt.Errorf("gpu: tuning mm=%d,mmm=%d,mmr=%d,mmt=%d: ternary_mm needs workgroups of %d invocations, the device runs at most %d",
			t.Tiled, t.TiledBlock, t.TiledRows, t.TiledTokens, wg, maxWG)
	}
	if shared := t.tiledShared(); shared > int(maxShared) {
		return fmt.Errorf("gpu: tuning mm=%d,mmm=%d: a tile of %d rows × %d tokens stages %d bytes in shared memory, the device has %d",
			t.Tiled, t.TiledBlock, t.TiledBlock, t.Tiled, shared, maxShared)
	}
	return nil
}

// regsFit reports whether a norm of K values in a workgroup of wg
// invocations can hold them in registers (the shaders' REGS = 1): chunks
// of four, which need K a multiple of 4 (only an unquantized norm may not
// be one), at most maxNormRegs values an invocation.
func regsFit(K, wg int) bool { return K%4 == 0 && (K+wg-1)/wg <= maxNormRegs }

// normRegs is the shaders' REGS for a norm of K values in a workgroup of
// wg invocations under this tuning, and the KMAX that sizes its registers
// (4 without them, so that every K shares one pipeline).
func (t Tuning) normRegs(K, wg int) (regs, kmax uint32) {
	if t.NormPasses == 1 && regsFit(K, wg) {
		return 1, uint32(K)
	}
	return 0, 4
}

// Changed is t with the fields that hold their defaults zeroed: its
// String names only what a tuning changes ("" for the defaults).
func (t Tuning) Changed() Tuning {
	d := defaultTuning()
	df := d.fields()
	for i, f := range t.fields() {
		if *f.v == *df[i].v {
			*f.v = 0
		}
	}
	return t
}
