#version 450
// head_q8: the output head over int8 rows with one scale per row (--head q8),
// for T tokens whose final-normed state was quantized by norm_quant:
//   out[t][row0+r] = (Σ_i W8[r][i] · q[t][i]) · rowScale[row0+r] / s[t]    the sum exact
//   W8       [rows][K/4] uint   int8, one shard of the head
//   q        [T][K/4] uint      int8 activations
//   s        [T] float
//   rowScale [row0+rows] float  max|w_r|/127
//   out      [T][outStride] float
// K is a multiple of 4. A workgroup computes NR rows × NT tokens. DOT (a
// compile-time define) uses the integer dot product instruction.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint NR = 4;
layout(constant_id = 2) const uint NT = 1;

layout(std430, binding = 0) readonly buffer W8 { uint w8[]; };
layout(std430, binding = 1) readonly buffer Q { uint q[]; };
layout(std430, binding = 2) readonly buffer S { float s[]; };
layout(std430, binding = 3) readonly buffer RS { float rowScale[]; };
layout(std430, binding = 4) writeonly buffer Out { float outp[]; };

layout(push_constant) uniform Push {
    uint rows;
    uint row0;
    uint K;
    uint T;
    uint outStride;
} pc;

shared int red[NR * NT * gl_WorkGroupSize.x];

void main() {
    uint tid = gl_LocalInvocationID.x;
    uint r0 = gl_WorkGroupID.x * NR;
    uint t0 = gl_WorkGroupID.y * NT;
    uint words = pc.K / 4;
    int acc[NR * NT];
    for (uint i = 0; i < NR * NT; i++) acc[i] = 0;

    for (uint w = tid; w < words; w += gl_WorkGroupSize.x) {
        uint wv[NR];
        for (uint r = 0; r < NR; r++) {
            wv[r] = r0 + r < pc.rows ? w8[(r0 + r) * words + w] : 0u;
        }
        for (uint tt = 0; tt < NT; tt++) {
            uint a = q[min(t0 + tt, pc.T - 1) * words + w];
            for (uint r = 0; r < NR; r++) {
                acc[r * NT + tt] += dot4(wv[r], a);
            }
        }
    }

    for (uint i = 0; i < NR * NT; i++) red[i * gl_WorkGroupSize.x + tid] = acc[i];
    barrier();
    for (uint h = gl_WorkGroupSize.x / 2; h > 0; h >>= 1) {
        if (tid < h) {
            for (uint i = 0; i < NR * NT; i++) red[i * gl_WorkGroupSize.x + tid] += red[i * gl_WorkGroupSize.x + tid + h];
        }
        barrier();
    }
    if (tid < NR * NT) {
        uint r = tid / NT, t = t0 + tid % NT;
        if (r0 + r < pc.rows && t < pc.T) {
            uint row = pc.row0 + r0 + r;
            outp[t * pc.outStride + row] = float(red[tid * gl_WorkGroupSize.x]) * (rowScale[row] / s[t]);
        }
    }
}
