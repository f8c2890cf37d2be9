#version 450
// head_f16: the output head, logits = xn · Wᵀ, over float16 rows, for T tokens.
// For row r of this shard (rows [row0, row0+rows) of the vocabulary) and token t:
//   out[t][row0+r] = Σ_i f32(W[r][i]) · x[t][i]          in float32
//   W   [rows][K/2] uint   float16 pairs, one shard of the head
//   x   [T][K] float       the final-normed hidden state
//   out [T][outStride] float
// K is even. A workgroup computes NR rows × NT tokens.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint NR = 4;
layout(constant_id = 2) const uint NT = 1;

layout(std430, binding = 0) readonly buffer WH { uint wh[]; };
layout(std430, binding = 1) readonly buffer X { vec2 x[]; };
layout(std430, binding = 2) writeonly buffer Out { float outp[]; };

layout(push_constant) uniform Push {
    uint rows;
    uint row0;
    uint K;
    uint T;
    uint outStride;
} pc;

#include "head.glsl"

void main() {
    uint tid = gl_LocalInvocationID.x;
    uint r0 = gl_WorkGroupID.x * NR;
    uint t0 = gl_WorkGroupID.y * NT;
    uint words = pc.K / 2;
    for (uint i = 0; i < NR * NT; i++) acc[i] = 0.0;

    for (uint w = tid; w < words; w += gl_WorkGroupSize.x) {
        vec2 wv[NR];
        for (uint r = 0; r < NR; r++) {
            wv[r] = r0 + r < pc.rows ? unpackHalf2x16(wh[(r0 + r) * words + w]) : vec2(0.0);
        }
        for (uint tt = 0; tt < NT; tt++) {
            vec2 xv = x[min(t0 + tt, pc.T - 1) * words + w];
            for (uint r = 0; r < NR; r++) {
                acc[r * NT + tt] += dot(wv[r], xv);
            }
        }
    }

    float sum = headReduce();
    if (tid < NR * NT) {
        uint r = tid / NT, t = t0 + tid % NT;
        if (r0 + r < pc.rows && t < pc.T) {
            outp[t * pc.outStride + pc.row0 + r0 + r] = sum;
        }
    }
}
