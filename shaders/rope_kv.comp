#version 450
// rope_kv: RoPE on the queries and keys of T tokens, token t at position
// p = seq[t].x of the sequence whose cache rows start at row seq[t].y (its
// slot · ctx), and the keys and values written to that row p of the float16
// cache.
// Pair i is (i, i + d/2) (NEOX: bitnet, bitnet-b1.58), or (2i, 2i+1) when
// interleaved is set (llama.cpp's llama architecture); below lo, hi.
// One workgroup per (token t, head g) with g over the heads query heads,
// then the kvHeads key heads, then the kvHeads value heads:
//   x_lo, x_hi ← x_lo·cos θ − x_hi·sin θ, x_lo·sin θ + x_hi·cos θ
//   for i < d/2, d = ropeDim, θ = p·base^(−2i/d), (cos θ, sin θ) = rope[p][i]
//   qkv    [T][qkvStride] float   per token: q [heads][hd], k [kvHeads][hd], v [kvHeads][hd]
//   rope   [ctx][ropeDim/2] vec2  the rotation table, computed on the host in float64
//   kcache [slots·ctx][kvHeads][hd/2] uint, vcache likewise: float16 pairs
//   seq    [T] uvec2                (position, first cache row of its slot)
// The queries are rotated in place; the keys only in the cache. hd ≤ 256, even.
// ternary_norm.comp does the same in a decode step's QKV epilogue.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) buffer QKV { float qkv[]; };
layout(std430, binding = 1) readonly buffer Rope { vec2 rope[]; };
layout(std430, binding = 2) writeonly buffer KC { uint kcache[]; };
layout(std430, binding = 3) writeonly buffer VC { uint vcache[]; };
layout(std430, binding = 4) readonly buffer Seq { uvec2 seq[]; };

// interleaved: 1 for adjacent pairs (2i, 2i+1), 0 for NEOX pairs (i, i + d/2).
layout(push_constant) uniform Push {
    uint heads;
    uint kvHeads;
    uint hd;
    uint ropeDim;
    uint qkvStride;
    uint interleaved;
} pc;

shared float hs[256];

void main() {
    uint t = gl_WorkGroupID.x, g = gl_WorkGroupID.y;
    uint tid = gl_LocalInvocationID.x;
    uint p = seq[t].x;
    uint hr = pc.ropeDim / 2;
    uint base = t * pc.qkvStride + g * pc.hd;
    if (g < pc.heads) {
        for (uint i = tid; i < hr; i += gl_WorkGroupSize.x) {
            vec2 cs = rope[p * hr + i];
            uint lo = pc.interleaved != 0 ? 2 * i : i, hi = pc.interleaved != 0 ? 2 * i + 1 : i + hr;
            vec2 ab = ropeRotate(qkv[base + lo], qkv[base + hi], cs);
            qkv[base + lo] = ab.x;
            qkv[base + hi] = ab.y;
        }
        return;
    }
    for (uint i = tid; i < pc.hd; i += gl_WorkGroupSize.x) {
        hs[i] = qkv[base + i];
    }
    barrier();
    bool isK = g < pc.heads + pc.kvHeads;
    if (isK) {
        for (uint i = tid; i < hr; i += gl_WorkGroupSize.x) {
            vec2 cs = rope[p * hr + i];
            uint lo = pc.interleaved != 0 ? 2 * i : i, hi = pc.interleaved != 0 ? 2 * i + 1 : i + hr;
            vec2 ab = ropeRotate(hs[lo], hs[hi], cs);
            hs[lo] = ab.x;
            hs[hi] = ab.y;
        }
        barrier();
    }
    uint kvh = isK ? g - pc.heads : g - pc.heads - pc.kvHeads;
    uint dst = ((seq[t].y + p) * pc.kvHeads + kvh) * (pc.hd / 2);
    for (uint w = tid; w < pc.hd / 2; w += gl_WorkGroupSize.x) {
        uint v = packHalf2x16(vec2(hs[2 * w], hs[2 * w + 1]));
        if (isK) {
            kcache[dst + w] = v;
        } else {
            vcache[dst + w] = v;
        }
    }
}
