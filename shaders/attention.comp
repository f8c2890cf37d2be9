#version 450
// attention: causal grouped-query attention for T tokens at positions
// p_t = pos0 + t over the float16 cache, one workgroup per (token t, query head h):
//   o[t][h] = Σ_{j ≤ p_t} softmax_j(q·k_j / √hd) · v_j,   k, v of KV head h/(heads/kvHeads)
// Scores are computed by the threads in parallel over positions, kept in the
// scratch buffer, then the weighted sum of values is split over positions and
// head dimensions and reduced in shared memory.
//   qkv     [T][qkvStride] float   queries at the start of each token's row (rotated)
//   kcache  [ctx][kvHeads][hd/2] uint, vcache likewise: float16 pairs
//   scratch [T][heads][ctx] float
//   out     [T][heads·hd] float
//   params  [0] = pos0
// hd ≤ 256, even, and hd/2 ≤ the workgroup size.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer QKV { float qkv[]; };
layout(std430, binding = 1) readonly buffer KC { uint kcache[]; };
layout(std430, binding = 2) readonly buffer VC { uint vcache[]; };
layout(std430, binding = 3) coherent buffer Scratch { float scratch[]; };
layout(std430, binding = 4) writeonly buffer Out { float outp[]; };
layout(std430, binding = 5) readonly buffer Params { uint params[]; };

layout(push_constant) uniform Push {
    uint heads;
    uint kvHeads;
    uint hd;
    uint qkvStride;
    uint ctx;
    float scale;
} pc;

shared vec2 qs[128];
shared float red[gl_WorkGroupSize.x];
shared vec2 red2[gl_WorkGroupSize.x];

float reduce(float v, bool isMax) {
    uint tid = gl_LocalInvocationID.x;
    red[tid] = v;
    barrier();
    for (uint k = gl_WorkGroupSize.x / 2; k > 0; k >>= 1) {
        if (tid < k) red[tid] = isMax ? max(red[tid], red[tid + k]) : red[tid] + red[tid + k];
        barrier();
    }
    float r = red[0];
    barrier();
    return r;
}

void main() {
    uint t = gl_WorkGroupID.x, h = gl_WorkGroupID.y;
    uint tid = gl_LocalInvocationID.x;
    uint n = params[0] + t + 1;                 // positions this query sees
    uint hw = pc.hd / 2;                        // float16 pairs per head
    uint kvh = h / (pc.heads / pc.kvHeads);
    uint kvStride = pc.kvHeads * hw;            // uints per cached position
    uint sbase = (t * pc.heads + h) * pc.ctx;

    for (uint w = tid; w < hw; w += gl_WorkGroupSize.x) {
        uint qi = t * pc.qkvStride + h * pc.hd + 2 * w;
        qs[w] = vec2(qkv[qi], qkv[qi + 1]);
    }
    barrier();

    float m = -1.0 / 0.0;
    for (uint j = tid; j < n; j += gl_WorkGroupSize.x) {
        uint kb = j * kvStride + kvh * hw;
        float d = 0.0;
        for (uint w = 0; w < hw; w++) {
            d += dot(qs[w], unpackHalf2x16(kcache[kb + w]));
        }
        d *= pc.scale;
        scratch[sbase + j] = d;
        m = max(m, d);
    }
    m = reduce(m, true);
    float sum = 0.0;
    for (uint j = tid; j < n; j += gl_WorkGroupSize.x) {
        float e = exp(scratch[sbase + j] - m);
        scratch[sbase + j] = e;
        sum += e;
    }
    sum = reduce(sum, false);                   // its barriers also publish the scratch writes
    memoryBarrierBuffer();
    barrier();

    uint parts = gl_WorkGroupSize.x / hw;       // threads per head dimension pair
    uint w = tid % hw, part = tid / hw;
    vec2 acc = vec2(0.0);
    if (part < parts) {
        for (uint j = part; j < n; j += parts) {
            acc += scratch[sbase + j] * unpackHalf2x16(vcache[j * kvStride + kvh * hw + w]);
        }
    }
    red2[tid] = acc;
    barrier();
    if (part == 0) {
        for (uint k = 1; k < parts; k++) acc += red2[k * hw + w];
        uint o = t * pc.heads * pc.hd + h * pc.hd + 2 * w;
        outp[o] = acc.x / sum;
        outp[o + 1] = acc.y / sum;
    }
}
