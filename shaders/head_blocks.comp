#version 450
// head_blocks: the output head held as a block type (nn.HeadBlocks: Q8_0 and
// Q4_0 as groups of 32 int8 codes with one scale, Q6_K as groups of 16), for
// T tokens whose final-normed state was quantized by norm_quant:
//   out[t][row0+r] = (Σ_g gscale[r][g] · Σ_{i∈g} W8[r][i]·q[t][i]) / s[t]    each group's sum exact
//   W8     [rows][K/4] uint     int8 codes, one shard of the head
//   q      [T][K/4] uint        int8 activations
//   s      [T] float
//   gscale [rows][K/G] float    the shard's group scales (every value is scale·code, exactly the file's)
//   out    [T][outStride] float
// G is 16 or 32 and divides K. A workgroup computes NR rows × NT tokens; an
// invocation takes whole groups, so each group's integer sum meets its scale
// once. DOT (a compile-time define) uses the integer dot product instruction.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint NR = 4;
layout(constant_id = 2) const uint NT = 1;

layout(std430, binding = 0) readonly buffer W8 { uint w8[]; };
layout(std430, binding = 1) readonly buffer Q { uint q[]; };
layout(std430, binding = 2) readonly buffer S { float s[]; };
layout(std430, binding = 3) readonly buffer GS { float gscale[]; };
layout(std430, binding = 4) writeonly buffer Out { float outp[]; };

layout(push_constant) uniform Push {
    uint rows;
    uint row0;
    uint K;
    uint T;
    uint outStride;
    uint group;
} pc;

#include "head.glsl"

void main() {
    uint tid = gl_LocalInvocationID.x;
    uint r0 = gl_WorkGroupID.x * NR;
    uint t0 = gl_WorkGroupID.y * NT;
    uint words = pc.K / 4;
    uint gw = pc.group / 4;
    uint groups = pc.K / pc.group;
    for (uint i = 0; i < NR * NT; i++) acc[i] = 0.0;

    for (uint g = tid; g < groups; g += gl_WorkGroupSize.x) {
        int isum[NR * NT];
        for (uint i = 0; i < NR * NT; i++) isum[i] = 0;
        for (uint k = 0; k < gw; k++) {
            uint w = g * gw + k;
            uint wv[NR];
            for (uint r = 0; r < NR; r++) {
                wv[r] = r0 + r < pc.rows ? w8[(r0 + r) * words + w] : 0u;
            }
            for (uint tt = 0; tt < NT; tt++) {
                uint a = q[min(t0 + tt, pc.T - 1) * words + w];
                for (uint r = 0; r < NR; r++) {
                    isum[r * NT + tt] += dot4(wv[r], a);
                }
            }
        }
        for (uint r = 0; r < NR; r++) {
            float sc = r0 + r < pc.rows ? gscale[(r0 + r) * groups + g] : 0.0;
            for (uint tt = 0; tt < NT; tt++) {
                acc[r * NT + tt] += float(isum[r * NT + tt]) * sc;
            }
        }
    }

    float sum = headReduce();
    if (tid < NR * NT) {
        uint r = tid / NT, t = t0 + tid % NT;
        if (r0 + r < pc.rows && t < pc.T) {
            outp[t * pc.outStride + pc.row0 + r0 + r] = sum / s[t];
        }
    }
}
