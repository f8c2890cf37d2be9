#version 450
// head_six: the output head held as Q6_K in 6.625 bits a value (stored so, or
// converted by --head q6_k), for T tokens whose final-normed state was
// quantized by norm_quant:
//   out[t][row0+r] = (Σ_g d[r][g/16]·sc[r][g] · Σ_{i∈g} (c[r][i]−32)·q[t][i]) / s[t]    each group's sum exact
//   W6  [rows][3K/16] uint  per group g of 16 values three words (sixWord):
//                           A0, A1 the low nibbles (byte b of A_k: value 4k+b
//                           in its low half, value 8+4k+b in its high half),
//                           H the high two bits (byte b: value 4j+b in bits 2j+1…2j)
//   q   [T][K/4] uint       int8 activations
//   s   [T] float
//   sc  [rows][K/64 + K/256] uint  per row the groups' int8 scales sc, four to a
//                           word, then the blocks' float32 d
//   out [T][outStride] float
// K is a multiple of 256. Each group's scale d·sc is exact in float32 (11 by 8
// significant bits), as nn.HeadBlocks gives it. A workgroup computes NR rows ×
// NT tokens; an invocation takes whole groups, so each group's integer sum
// meets its scale once. DOT (a compile-time define) uses the integer dot
// product instruction.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint NR = 4;
layout(constant_id = 2) const uint NT = 1;

layout(std430, binding = 0) readonly buffer W6 { uint w6[]; };
layout(std430, binding = 1) readonly buffer Q { uint q[]; };
layout(std430, binding = 2) readonly buffer S { float s[]; };
layout(std430, binding = 3) readonly buffer SC { uint sc[]; };
layout(std430, binding = 4) writeonly buffer Out { float outp[]; };

// group is always 16 (push constants shared with the block kernels).
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
    uint words = pc.K / 4;       // activation words a token
    uint rowWords = 3 * pc.K / 16;
    uint scWords = pc.K / 64 + pc.K / 256;
    uint groups = pc.K / 16;
    for (uint i = 0; i < NR * NT; i++) acc[i] = 0.0;

    for (uint g = tid; g < groups; g += gl_WorkGroupSize.x) {
        int isum[NR * NT];
        for (uint i = 0; i < NR * NT; i++) isum[i] = 0;
        uint a0[NR], a1[NR], h[NR];
        for (uint r = 0; r < NR; r++) {
            // Rows past the shard read codes of 32: values of 0.
            bool inside = r0 + r < pc.rows;
            uint base = (r0 + r) * rowWords + 3 * g;
            a0[r] = inside ? w6[base] : 0u;
            a1[r] = inside ? w6[base + 1] : 0u;
            h[r] = inside ? w6[base + 2] : 0xAAAAAAAAu;
        }
        for (uint j = 0; j < 4; j++) {
            uint c[NR];
            for (uint r = 0; r < NR; r++) {
                uint lo = j < 2 ? (j == 0 ? a0[r] : a1[r]) : ((j == 2 ? a0[r] : a1[r]) >> 4);
                c[r] = sixBytes((lo & 0x0F0F0F0Fu) | ((h[r] >> (2 * j)) & 0x03030303u) << 4);
            }
            for (uint tt = 0; tt < NT; tt++) {
                uint a = q[min(t0 + tt, pc.T - 1) * words + 4 * g + j];
                for (uint r = 0; r < NR; r++) {
                    isum[r * NT + tt] += dot4(c[r], a);
                }
            }
        }
        for (uint r = 0; r < NR; r++) {
            float scale = 0.0;
            if (r0 + r < pc.rows) {
                uint base = (r0 + r) * scWords;
                int sg = bitfieldExtract(int(sc[base + g / 4]), int(8 * (g % 4)), 8);
                scale = uintBitsToFloat(sc[base + pc.K / 64 + g / 16]) * float(sg);
            }
            for (uint tt = 0; tt < NT; tt++) {
                acc[r * NT + tt] += float(isum[r * NT + tt]) * scale;
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
