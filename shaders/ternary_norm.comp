#version 450
// ternary_norm: one token's BitLinear with the RMSNorm and int8 quantization
// of its input in the prologue: a decode step's QKV and gate/up products.
// Every workgroup normalizes and quantizes the token's hidden state x itself
// (rmsquant.glsl, with norm_quant's loops and trees, so the codes and the
// scale are norm_quant's bits) into shared memory, and the step needs no
// norm_quant dispatch and no barrier before the product:
//   v = RMSNorm(x)·w, s = 127/max|v|, q = round_even(v·s)
//   y[row0+r] = ((Σ_i w_ri·q_i) / s) · rowScale[row0+r]       (ternary.glsl, as ternary.comp)
// The workgroup is G = size/LANES row groups of LANES invocations, each NR
// rows (4 when ROPE = 1), so the norm is computed once for G·NR rows.
//
// ACT = 1, 2: the input is a gated pair, h_i = gateAct(x[i], x[K + i]) (the
// FFN's activation, as norm_quant's ACT), normed and quantized as above:
// a decode step's down projection with the FFN's sub-norm in its prologue.
// ACT = 3: x holds split-K attention's partials and h is their combination
// (attn_combine.glsl, over the chunks of `chunk` positions the token at
// position seq[0].x sees): the output projection with attention_reduce's
// work in its prologue. It needs REGS = 1, whose sums run in
// attention_reduce's order, so that the codes are attention_reduce's bits.
//
// ROPE = 0: out[row0+r] = y, or out[row0+r] += y when ACC = 1 (the
// residual add, as ternary.comp's ACC).
// ROPE = 1: the matrix is one layer's Q, K and V stacked (heads·hd, then
// kvHeads·hd twice; one shard), and the epilogue is rope_kv's: RoPE on q and
// k at the token's position p = seq[0].x, q written to out, k and v into row
// p of the float16 caches from row seq[0].y on. Pairs are (i, i + ropeDim/2)
// (NEOX) or (2i, 2i+1) (interleaved). The workgroup's rows are taken in an
// order that puts both halves of two RoPE pairs, and the two float16 words
// they fill, in each group of four: within a head, the four rows from 4g on
// are (2g, 2g+1, 2g + d/2, 2g+1 + d/2) for NEOX below d = ropeDim, and in
// their own order otherwise. It needs hd and ropeDim multiples of 4.
//   wt         [rows][K/16] uint  ternary codes (common.glsl)
//   x          [K] float           the token's hidden state ([2K]: g then u, ACT > 0)
//   w          [K] float           the norm weight
//   rowScale, groupScale           as ternary.comp (GROUPED)
//   out        [outStride] float
//   rope, kcache, vcache, seq      as rope_kv.comp (read only when ROPE = 1)
// K ≤ KMAX, a multiple of 128 (256 when GROUPED).
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
#include "reduce.glsl" // after the workgroup size: it sizes shared memory by it
layout(constant_id = 1) const uint NR = 4;
layout(constant_id = 2) const uint GROUPED = 0;
layout(constant_id = 3) const uint ROPE = 0;
layout(constant_id = 4) const uint LANES = 64;
layout(constant_id = 5) const uint KMAX = 4096;
layout(constant_id = 6) const uint VEC = 1; // ternary.glsl
layout(constant_id = 7) const uint REGS = 0; // rmsquant.glsl
layout(constant_id = 8) const uint ACT = 0;
layout(constant_id = 9) const uint ACC = 0;
layout(constant_id = 10) const uint PRE = 0; // 1: the rows' first words loaded before the norm (ternary.glsl)
const uint NT = 1;

layout(std430, binding = 0) readonly buffer WT { uint wt[]; };
layout(std430, binding = 0) readonly buffer WT4 { uvec4 wt4[]; }; // the same words, four at a time
layout(std430, binding = 1) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer XP { float partial[]; }; // ACT = 3
layout(std430, binding = 2) readonly buffer W { float w[]; };
layout(std430, binding = 3) readonly buffer RS { float rowScale[]; };
layout(std430, binding = 4) readonly buffer GS { float groupScale[]; };
layout(std430, binding = 5) buffer Out { float outp[]; }; // read too when ACC = 1
layout(std430, binding = 6) readonly buffer Rope { vec2 rope[]; };
layout(std430, binding = 7) writeonly buffer KC { uint kcache[]; };
layout(std430, binding = 8) writeonly buffer VC { uint vcache[]; };
layout(std430, binding = 9) readonly buffer Seq { uvec2 seq[]; };

layout(push_constant) uniform Push {
    uint rows;
    uint row0;
    uint K;
    float eps;
    uint heads;
    uint kvHeads;
    uint hd;
    uint ropeDim;
    uint interleaved;
    uint chunks;
    uint chunk;
} pc; // chunks and chunk (ACT = 3): the partials' chunks per head, and positions per chunk

shared uint qs[KMAX / 4];  // the token's int8 codes
shared float ys[gl_WorkGroupSize.x / LANES * NR]; // the workgroup's outputs, for the RoPE pairs

#include "attn_combine.glsl"

vec4 attnValues(uint c) {
    uint nc = (seq[0].x + pc.chunk) / pc.chunk; // chunks the token's position + 1 positions fill
    return attnCombine(0, c, nc, pc.heads, pc.hd, pc.chunks);
}

float rqValue(uint i) {
    if (ACT == 3) return attnValues(i / 4)[i % 4];
    return ACT == 0 ? x[i] : gateAct(ACT, x[i], x[pc.K + i]);
}
vec4 rqValue4(uint c) {
    if (ACT == 3) return attnValues(c);
    return vec4(rqValue(4 * c), rqValue(4 * c + 1), rqValue(4 * c + 2), rqValue(4 * c + 3));
}
float rqWeight(uint i) { return w[i]; }
void rqPut(uint i4, uint c) { qs[i4] = c; }
#include "rmsquant.glsl"

// logical is the workgroup's r-th row in the order of its groups.
uint logical(uint r) {
    return (gl_WorkGroupID.x * (gl_WorkGroupSize.x / LANES) + gl_LocalInvocationID.x / LANES) * NR + r;
}

// physical is the matrix row computed as logical row l (see ROPE above).
uint physical(uint l) {
    if (ROPE == 0 || pc.interleaved != 0 || l >= (pc.heads + pc.kvHeads) * pc.hd) {
        return l;
    }
    uint j = l % pc.hd;
    if (j >= pc.ropeDim) {
        return l;
    }
    uint g = j / 4, r = j % 4;
    return l - j + 2 * g + (r & 1u) + (r >> 1) * (pc.ropeDim / 2);
}

uint tRow(uint r) {
    uint l = logical(r);
    return l < pc.rows ? physical(l) : ~0u;
}

uint tAct(uint t, uint i) { return qs[i]; }
uvec4 tAct4(uint t, uint i) { return uvec4(qs[i], qs[i + 1], qs[i + 2], qs[i + 3]); }

#include "ternary.glsl"

void main() {
    uint tid = gl_LocalInvocationID.x;
    uint group = tid / LANES, lane = tid % LANES;
    if (PRE == 1) {
        ternaryPreload(lane, pc.K); // in flight while the norm runs
    }
    float inv = rmsInv(pc.K, pc.eps);
    float sc = rmsQuant(pc.K, inv, true);
    barrier(); // the codes in qs, for every lane
    ternaryPartial(lane, LANES, pc.K, pc.row0, 0, 1);
    ternaryReduce(group, lane, LANES);
    uint row = lane < NR ? tRow(lane) : ~0u;
    float y = 0.0;
    if (row != ~0u) {
        y = tOut(tSum(group, LANES, lane), sc, GROUPED == 1 ? 1.0 : rowScale[pc.row0 + row]);
    }
    if (ROPE == 0) {
        if (row != ~0u) {
            uint o = pc.row0 + row;
            precise float r = ACC == 1 ? outp[o] + y : y;
            outp[o] = r;
        }
        return;
    }
    // RoPE: lane r of a group holds logical row 4·n + r; its pair is lane
    // r ^ 2 (NEOX) or r ^ 1 (interleaved), the lower half the one without that bit.
    if (lane < NR) ys[group * NR + lane] = y;
    barrier();
    uint qRows = pc.heads * pc.hd, kRows = pc.kvHeads * pc.hd;
    if (row != ~0u && row < qRows + kRows) {
        uint j = row % pc.hd;
        if (j < pc.ropeDim) {
            uint bit = pc.interleaved != 0 ? 1u : 2u;
            bool lo = (lane & bit) == 0u;
            uint lowRow = lo ? row : physical(logical(lane ^ bit));
            uint hr = pc.ropeDim / 2;
            uint i = pc.interleaved != 0 ? (lowRow % pc.hd) / 2 : lowRow % pc.hd;
            float a = lo ? y : ys[group * NR + (lane ^ bit)];
            float b = lo ? ys[group * NR + (lane ^ bit)] : y;
            vec2 ab = ropeRotate(a, b, rope[seq[0].x * hr + i]);
            y = lo ? ab.x : ab.y;
        }
    }
    barrier(); // every pair read before the rotated values replace them
    if (lane < NR) ys[group * NR + lane] = y;
    barrier();
    if (row == ~0u) {
        return;
    }
    if (row < qRows) {
        outp[row] = y;
        return;
    }
    // K and V: lanes 0 and 2 write the float16 words of rows (0, 1) and (2, 3).
    if ((lane & 1u) != 0u) {
        return;
    }
    bool isK = row < qRows + kRows;
    uint kv = row - qRows - (isK ? 0u : kRows); // row within the K (or V) heads
    uint p = seq[0].x;
    uint dst = (seq[0].y + p) * (kRows / 2) + kv / 2;
    uint v = packHalf2x16(vec2(y, ys[group * NR + lane + 1]));
    if (isK) {
        kcache[dst] = v;
    } else {
        vcache[dst] = v;
    }
}
