package spirv

import (
	"embed"
	"fmt"
	"slices"
)

//go:embed *.spv
var files embed.FS

// Kernel names one compiled kernel: shaders/<name>.comp, or a variant of it.
type Kernel string

// The kernels. Each file's opening comment in shaders/ gives its formula,
// its buffers and its push constants.
const (
	Embed Kernel = "embed" // float16 token embedding lookup, one shard
	// EmbedBlocks is the lookup of an embedding stored as a block type
	// (Q8_0, Q6_K, Q4_0 codes with group scales), one shard.
	EmbedBlocks Kernel = "embed_blocks"
	NormQuant   Kernel = "norm_quant"  // (activation ·) RMSNorm (· int8 quantization)
	Ternary     Kernel = "ternary"     // I2_S ternary matrix product, plain int32 math
	TernaryDot  Kernel = "ternary_dot" // the same with the integer dot product instruction
	// TernaryMM is a prompt's ternary product (one scale a row) as a
	// tiled matrix-matrix product through shared memory, the same bits as
	// Ternary; TernaryMMDot uses the integer dot product.
	TernaryMM    Kernel = "ternary_mm"
	TernaryMMDot Kernel = "ternary_mm_dot"
	// TernaryMMCoop is TernaryMM with the multiply-adds on cooperative
	// matrices (VK_NV_cooperative_matrix, s8 × s8 → s32, 16 × 8 × 32).
	TernaryMMCoop Kernel = "ternary_mm_coop"
	// TernaryNorm is a decode step's ternary product with the RMSNorm and
	// int8 quantization of its input in the prologue (and, for Q, K and V,
	// RoPE and the K/V cache write in the epilogue); TernaryNormDot uses
	// the integer dot product.
	TernaryNorm    Kernel = "ternary_norm"
	TernaryNormDot Kernel = "ternary_norm_dot"
	// The subgroup twins of the matrix products and of norm_quant: integer
	// sums and maxima reduced with subgroup arithmetic (see Variant).
	TernarySubgroup        Kernel = "ternary_subgroup"
	TernarySubgroupDot     Kernel = "ternary_subgroup_dot"
	TernaryNormSubgroup    Kernel = "ternary_norm_subgroup"
	TernaryNormSubgroupDot Kernel = "ternary_norm_subgroup_dot"
	NormQuantSubgroup      Kernel = "norm_quant_subgroup"
	HeadF16                Kernel = "head_f16"    // float16 output head
	HeadQ8                 Kernel = "head_q8"     // int8 output head, plain int32 math
	HeadQ8Dot              Kernel = "head_q8_dot" // the same with the integer dot product instruction
	// HeadBlocks is the output head held as a block type (Q8_0, Q6_K, Q4_0
	// codes with group scales); HeadBlocksDot uses the integer dot product.
	HeadBlocks    Kernel = "head_blocks"
	HeadBlocksDot Kernel = "head_blocks_dot"
	// HeadNibbles is the output head held as Q4_0 in its own 4.5 bits
	// (nibble codes, float16 group scales); HeadNibblesDot uses the
	// integer dot product. EmbedNibbles is the embedding's lookup in it.
	HeadNibbles    Kernel = "head_nibbles"
	HeadNibblesDot Kernel = "head_nibbles_dot"
	EmbedNibbles   Kernel = "embed_nibbles"
	// HeadSix is the output head held as Q6_K in 6.625 bits (6-bit codes,
	// int8 group scales, float32 block scales); HeadSixDot uses the
	// integer dot product. EmbedSix is the embedding's lookup in it.
	HeadSix    Kernel = "head_six"
	HeadSixDot Kernel = "head_six_dot"
	EmbedSix   Kernel = "embed_six"
	RopeKV     Kernel = "rope_kv"   // RoPE on q and k, k and v into the float16 cache
	Attention  Kernel = "attention" // split-K causal grouped-query attention: partials per chunk
	// AttentionSubgroup is Attention with subgroup-arithmetic reductions.
	AttentionSubgroup Kernel = "attention_subgroup"
	AttentionReduce   Kernel = "attention_reduce" // combines Attention's chunk partials
	Argmax            Kernel = "argmax"           // greedy token on the device

	ReadBandwidth Kernel = "read_bandwidth" // streams a buffer in: the roofline probe
	// Int8Peak runs chains of dot4 multiply-adds: the prefill's peak probe
	// (plain int32 math; Int8PeakDot uses the integer dot product).
	Int8Peak    Kernel = "int8_peak"
	Int8PeakDot Kernel = "int8_peak_dot"
	Sample      Kernel = "sample"    // penalties and the candidate set of a sampling step
	ViewDraw    Kernel = "view_draw" // bitvk view: one layer of rectangles and glyphs into a frame's pixels
)

// Kernels lists every kernel.
func Kernels() []Kernel {
	return []Kernel{Embed, EmbedBlocks, NormQuant, NormQuantSubgroup, Ternary, TernaryDot, TernaryMM, TernaryMMDot, TernaryMMCoop, TernarySubgroup, TernarySubgroupDot, TernaryNorm, TernaryNormDot, TernaryNormSubgroup, TernaryNormSubgroupDot, HeadF16, HeadQ8, HeadQ8Dot, HeadBlocks, HeadBlocksDot, HeadNibbles, HeadNibblesDot, EmbedNibbles, HeadSix, HeadSixDot, EmbedSix, RopeKV, Attention, AttentionSubgroup, AttentionReduce, Argmax, ReadBandwidth, Int8Peak, Int8PeakDot, Sample, ViewDraw}
}

// Variant returns k's twin built with subgroup operations (subgroup) and
// the integer dot product instruction (dot), each where k has one: the
// variant names end in "_subgroup", then "_dot".
func (k Kernel) Variant(subgroup, dot bool) Kernel {
	for _, v := range []struct {
		on     bool
		suffix string
	}{{subgroup, "_subgroup"}, {dot, "_dot"}} {
		if w := k + Kernel(v.suffix); v.on && slices.Contains(Kernels(), w) {
			k = w
		}
	}
	return k
}

// Code returns the SPIR-V words of k as bytes.
func Code(k Kernel) ([]byte, error) {
	b, err := files.ReadFile(string(k) + ".spv")
	if err != nil {
		return nil, fmt.Errorf("spirv: no kernel %q in this build", k)
	}
	return b, nil
}
