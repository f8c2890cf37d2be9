package gpu

import (
	"fmt"
	"math"
	"slices"

	"github.com/bitvk/bitvk/gpu/vk"
	"github.com/bitvk/bitvk/nn"
	"github.com/bitvk/bitvk/spirv"
)

// Attention runs split-K (flash-decoding): the positions a token sees are
// cut into chunks, one workgroup per (chunk, group of query heads sharing a
// KV head, tile of tokens) computes the chunk's partial softmax, and a
// second kernel combines the chunks (shaders/attention.comp and
// attention_reduce.comp). A decode step at a long context so runs
// heads/group × chunks workgroups instead of one per head walking the whole
// context, and no score buffer grows with the context.
const (
	attnChunk   = 256 // positions per chunk
	attnTK      = 16  // key positions staged in shared memory at a time (TK in attention.comp), by default
	attnMaxRows = 8   // query rows (tokens × heads) per workgroup, by default (Tuning.AttnRows)
)

// attnPlan is how the attention kernels split the work on one device.
type attnPlan struct {
	wg        uint32 // workgroup size of the partial kernel, a power of two ≥ hd/2
	chunk     int    // positions per chunk, a multiple of tk
	tk        int    // key positions staged at a time
	vunroll   int    // V rows loaded at once per invocation (1 or 4)
	chunks    int    // chunks dispatched per row: ⌈ctx/chunk⌉
	group     int    // query heads per workgroup (dividing heads/kvHeads)
	prefillTT int    // tokens per workgroup when T > 1 (1 for decode)
	subgroup  bool   // reductions with subgroup arithmetic
}

// planAttention picks the split for the model on the device: chunks of
// chunk positions, up to tune.AttnRows query rows per workgroup, all within
// the device's shared memory, the keys staged tk positions at a time
// (tune.TK) and the values loaded tune.VUnroll rows at once. subgroups
// allows subgroup arithmetic where the device has it in compute shaders.
func planAttention(c *nn.Config, info vk.DeviceInfo, ctx int, wg uint32, tune Tuning, subgroups bool) (attnPlan, error) {
	hw := c.HeadDim / 2
	if uint32(hw) > wg {
		return attnPlan{}, fmt.Errorf("gpu: attention needs a workgroup of %d invocations (head dimension %d); the device allows %d", hw, c.HeadDim, wg)
	}
	chunk, tk := tune.Chunk, max(tune.TK, 1)
	maxRows := tune.AttnRows
	if maxRows <= 0 {
		maxRows = attnMaxRows
	}
	if chunk < tk || chunk%tk != 0 {
		return attnPlan{}, fmt.Errorf("gpu: attention chunk of %d positions is not a positive multiple of %d", chunk, tk)
	}
	p := attnPlan{
		wg:       wg,
		chunk:    chunk,
		tk:       tk,
		vunroll:  max(tune.VUnroll, 1),
		group:    divisorUpTo(c.Heads/c.KVHeads, maxRows),
		subgroup: subgroups && info.Features.SubgroupArithmetic && slices.Contains(info.SubgroupOps, "basic"),
	}
	p.prefillTT = max(1, maxRows/p.group)
	limit := int(info.MaxComputeSharedMemorySize)
	for p.sharedBytes(hw, p.prefillTT) > limit {
		switch {
		case p.prefillTT > 1:
			p.prefillTT /= 2
		case p.group > 1:
			p.group = divisorUpTo(c.Heads/c.KVHeads, p.group-1)
		case p.chunk > p.tk:
			p.chunk = max(p.tk, p.chunk/2/p.tk*p.tk)
		case p.tk > attnTK:
			p.tk /= 2
			p.chunk = p.tk
		default:
			return attnPlan{}, fmt.Errorf("gpu: attention of head dimension %d needs %d bytes of shared memory; the device has %d", c.HeadDim, p.sharedBytes(hw, 1), limit)
		}
	}
	p.chunks = (ctx + p.chunk - 1) / p.chunk
	if uint32(p.chunks) > info.MaxComputeWorkGroupCount[0] {
		return attnPlan{}, fmt.Errorf("gpu: a context of %d makes %d attention chunks, more workgroups than the device dispatches (%d); lower -c", ctx, p.chunks, info.MaxComputeWorkGroupCount[0])
	}
	return p, nil
}

// divisorUpTo is the largest divisor of n that is at most m (at least 1).
func divisorUpTo(n, m int) int {
	for d := min(n, m); d > 1; d-- {
		if n%d == 0 {
			return d
		}
	}
	return 1
}

// sharedBytes is the shared memory attention.comp declares for heads of hw
// float16 pairs and tt tokens per workgroup.
func (p attnPlan) sharedBytes(hw, tt int) int {
	rows, wg := p.group*tt, int(p.wg)
	return 8*rows*hw + // qs
		4*rows*p.chunk + // sc
		4*p.tk*(hw+1) + // ks
		4*wg + 8*wg + // red, red2
		8*rows + // rowMax, rowSum
		4 // lastChunk
}

// partialBytes is the size of the partials of T tokens:
// [T][heads][chunks][hd + 2] float.
func (p attnPlan) partialBytes(c *nn.Config, T int) int64 {
	return 4 * int64(T) * int64(c.Heads) * int64(p.chunks) * int64(c.HeadDim+2)
}

// attention records causal attention for T tokens of b.qkv (queries
// rotated, keys and values already in the cache of l) into b.att: the
// chunk partials, a barrier, and their combination, which also applies the
// layer's attention sub-norm (if any) and quantizes the result into b.q and
// b.s for the output projection.
func (rc *recorder) attention(l layerBufs, T int) {
	rc.attentionChunks(l, T, -1)
	rc.r.Barrier()
	rc.attentionReduce(l, T)
}

// attentionChunks records the first half of attention: the chunks'
// partials; with layer ≥ 0 (a decode step: T = 1), also their combination
// into b.att by the last workgroup of each head group, counting in b.attnCount
// from that layer's counters (attention.comp's COMBINE).
func (rc *recorder) attentionChunks(l layerBufs, T, layer int) {
	b := rc.b
	c, p := b.c, b.attn
	k := spirv.Attention
	if p.subgroup {
		k = spirv.AttentionSubgroup
	}
	tt := 1
	if T > 1 && !rc.mixed { // a workgroup's tokens share its K/V reads: one slot
		tt = p.prefillTT
	}
	// Traffic: the K/V cache up to the last position, the queries, and the
	// partials of the chunks in use (written, then read by the reduction).
	combine, label, off := uint32(0), "attention (chunks)", 0
	if layer >= 0 {
		if T != 1 {
			rc.err = fmt.Errorf("gpu: attention's chunks combined in place for %d tokens (one only)", T)
			return
		}
		combine, label, off = 1, "attention (chunks+combine)", layer*(c.Heads/p.group)
	}
	rc.note(label, 2*2*(rc.pos+T)*c.KVDim()+4*T*c.Embd+rc.attnUsed(T)+4*T*c.Embd*int(combine))
	rc.dispatch(k, []uint32{p.wg, uint32(c.HeadDim / 2), uint32(p.group), uint32(tt), uint32(p.chunk), uint32(p.tk), uint32(p.vunroll), combine},
		[]vk.Range{whole(b.qkv), whole(l.kc), whole(l.vc), whole(b.attnPart), rc.seq(), whole(b.attnCount), whole(b.att)},
		attnPush{Heads: uint32(c.Heads), KVHeads: uint32(c.KVHeads), QKVStride: uint32(c.Embd + 2*c.KVDim()), T: uint32(T),
			Chunks: uint32(p.chunks), Scale: float32(1 / math.Sqrt(float64(c.HeadDim))), CountOff: uint32(off)},
		uint32(p.chunks), uint32(c.Heads/p.group)*ceilDiv(T, tt))
}

// attnUsed is the bytes of the partials of the chunks in use for T tokens
// from position rc.pos on.
func (rc *recorder) attnUsed(T int) int {
	c, p := rc.b.c, rc.b.attn
	return (rc.pos + T + p.chunk - 1) / p.chunk * T * c.Heads * (c.HeadDim + 2) * 4
}

// attentionReduce records the second half: the chunks combined, then the
// attention sub-norm and the int8 quantization of the output projection's
// input. Its workgroup is the norms' (Tuning.Norm), whose trees the output
// projection's prologue repeats when it does this work itself (layer 5).
func (rc *recorder) attentionReduce(l layerBufs, T int) {
	b := rc.b
	c, p := b.c, b.attn
	norm, w := uint32(1), l.attnSubNorm
	if w == nil {
		norm, w = 0, b.outNorm // any float buffer: unread
	}
	rc.note("attention (reduce+subnorm+quant)", rc.attnUsed(T)+4*T*c.Embd+4*c.Embd+T*(c.Embd+4))
	wg := uint32(b.tune.Norm)
	regs, emax := b.tune.normRegs(c.Embd, int(wg))
	rc.dispatch(spirv.AttentionReduce, []uint32{wg, uint32(p.chunk), norm, regs, emax},
		[]vk.Range{whole(b.attnPart), whole(b.att), rc.seq(), whole(w), whole(b.q), whole(b.s)},
		attnReducePush{Heads: uint32(c.Heads), HD: uint32(c.HeadDim), Chunks: uint32(p.chunks), Eps: c.Eps},
		uint32(T), 1)
}
