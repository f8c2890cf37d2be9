#version 450
// head_nibbles: the output head held as Q4_0 in its own 4.5 bits (stored so,
// or converted by --head q4_0), for T tokens whose final-normed state was
// quantized by norm_quant:
//   out[t][row0+r] = (Σ_g d[r][g] · Σ_{i∈g} (c[r][i]−8)·q[t][i]) / s[t]    each group's sum exact
//   W4  [rows][K/8] uint   per group of 32 values four words, the group's 16
//                          bytes as ggml's block_q4_0 holds them: byte j the
//                          code c ∈ 0…15 of value j (low nibble) and of value
//                          j+16 (high nibble)
//   q   [T][K/4] uint      int8 activations
//   s   [T] float
//   d   [⌈rows·K/32 / 2⌉] uint  the shard's group scales as float16 pairs:
//                          scale i = r·(K/32) + g in half i%2 of word i/2
//   out [T][outStride] float
// K is a multiple of 32. A workgroup computes NR rows × NT tokens; an
// invocation takes whole groups, so each group's integer sum meets its scale
// once. Every value d·(c−8) is exactly the file's. DOT (a compile-time define)
// uses the integer dot product instruction.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint NR = 4;
layout(constant_id = 2) const uint NT = 1;

layout(std430, binding = 0) readonly buffer W4 { uint w4[]; };
layout(std430, binding = 1) readonly buffer Q { uint q[]; };
layout(std430, binding = 2) readonly buffer S { float s[]; };
layout(std430, binding = 3) readonly buffer D { uint dh[]; };
layout(std430, binding = 4) writeonly buffer Out { float outp[]; };

// group is always 32 (push constants shared with the block kernels).
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
    uint words = pc.K / 4;  // activation words a token
    uint nwords = pc.K / 8; // nibble words a row
    uint groups = pc.K / 32;
    for (uint i = 0; i < NR * NT; i++) acc[i] = 0.0;

    for (uint g = tid; g < groups; g += gl_WorkGroupSize.x) {
        int isum[NR * NT];
        for (uint i = 0; i < NR * NT; i++) isum[i] = 0;
        for (uint k = 0; k < 4; k++) {
            uint lo[NR], hi[NR];
            for (uint r = 0; r < NR; r++) {
                // Rows past the shard read codes of 8: values of 0.
                uint w = r0 + r < pc.rows ? w4[(r0 + r) * nwords + 4 * g + k] : 0x88888888u;
                lo[r] = nibbleBytes(w & 0x0F0F0F0Fu);
                hi[r] = nibbleBytes((w >> 4) & 0x0F0F0F0Fu);
            }
            for (uint tt = 0; tt < NT; tt++) {
                uint a = min(t0 + tt, pc.T - 1) * words + 8 * g + k;
                uint a0 = q[a], a1 = q[a + 4]; // values 4k…4k+3 and 16+4k…16+4k+3
                for (uint r = 0; r < NR; r++) {
                    isum[r * NT + tt] += dot4(lo[r], a0) + dot4(hi[r], a1);
                }
            }
        }
        for (uint r = 0; r < NR; r++) {
            float d = 0.0;
            if (r0 + r < pc.rows) {
                uint i = (r0 + r) * groups + g;
                d = unpackHalf2x16(dh[i / 2])[i % 2];
            }
            for (uint tt = 0; tt < NT; tt++) {
                acc[r * NT + tt] += float(isum[r * NT + tt]) * d;
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
