#version 450
// ternary: BitLinear's matrix product over I2_S ternary weights, for T tokens
// (T = 1 is decode's matrix-vector product). For output row r (of this shard,
// rows [row0, row0+rows) of the whole matrix) and token t:
//   y[t][row0+r] = ((Σ_i w_ri·q_ti) / s[t]) · rowScale[row0+r]       GROUPED = 0
//   y[t][row0+r] = Σ_g (Σ_{i∈g} w_ri·q_ti) · groupScale[row0+r][g] / s[t]   GROUPED = 1, g = 256 weights
// the integer sums exact in int32; ACC = 1 adds y to out (the residual add).
//   wt         [rows][K/16] uint  ternary codes, I2_S layout (see common.glsl)
//   q          [T][K/4] uint      int8 activations (norm_quant)
//   s          [T] float          their scales
//   rowScale   [row0+rows] float
//   groupScale [row0+rows][K/256] float (bound to rowScale when GROUPED = 0)
//   out        [T][outStride] float
// K is a multiple of 128 (256 when GROUPED). A workgroup computes NR rows × NT
// tokens; its threads split the row's words and reduce in shared memory.
// DOT (a compile-time define) uses the integer dot product instruction.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint NR = 4;
layout(constant_id = 2) const uint NT = 1;
layout(constant_id = 3) const uint GROUPED = 0;
layout(constant_id = 4) const uint ACC = 0;

layout(std430, binding = 0) readonly buffer WT { uint wt[]; };
layout(std430, binding = 1) readonly buffer Q { uint q[]; };
layout(std430, binding = 2) readonly buffer S { float s[]; };
layout(std430, binding = 3) readonly buffer RS { float rowScale[]; };
layout(std430, binding = 4) readonly buffer GS { float groupScale[]; };
layout(std430, binding = 5) buffer Out { float outp[]; };

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
    uint words = pc.K / 16;           // uints per weight row
    uint qwords = pc.K / 4;           // uints per activation row
    int acc[NR * NT];
    float accf[NR * NT];
    for (uint i = 0; i < NR * NT; i++) { acc[i] = 0; accf[i] = 0.0; }

    for (uint w = tid; w < words; w += gl_WorkGroupSize.x) {
        uint blk = w / 8, k = w % 8;  // 128-weight block, byte quad within it
        uint codes[NR];
        for (uint r = 0; r < NR; r++) {
            codes[r] = r0 + r < pc.rows ? wt[(r0 + r) * words + w] : 0x55555555u; // code 1: weight 0
        }
        for (uint tt = 0; tt < NT; tt++) {
            uint t = min(t0 + tt, pc.T - 1);
            uint qb = t * qwords + blk * 32 + k;
            uint a0 = q[qb], a1 = q[qb + 8], a2 = q[qb + 16], a3 = q[qb + 24];
            for (uint r = 0; r < NR; r++) {
                uint c = codes[r];
                int p = dot4(ternaryBytes((c >> 6) & 0x03030303u), a0)
                      + dot4(ternaryBytes((c >> 4) & 0x03030303u), a1)
                      + dot4(ternaryBytes((c >> 2) & 0x03030303u), a2)
                      + dot4(ternaryBytes(c & 0x03030303u), a3);
                if (GROUPED == 1) {
                    uint row = min(pc.row0 + r0 + r, pc.row0 + pc.rows - 1);
                    accf[r * NT + tt] += float(p) * groupScale[row * (pc.K / 256) + w / 16];
                } else {
                    acc[r * NT + tt] += p;
                }
            }
        }
    }

    for (uint i = 0; i < NR * NT; i++) {
        red[i * gl_WorkGroupSize.x + tid] = GROUPED == 1 ? floatBitsToInt(accf[i]) : acc[i];
    }
    barrier();
    for (uint h = gl_WorkGroupSize.x / 2; h > 0; h >>= 1) {
        if (tid < h) {
            for (uint i = 0; i < NR * NT; i++) {
                uint a = i * gl_WorkGroupSize.x + tid;
                if (GROUPED == 1) {
                    red[a] = floatBitsToInt(intBitsToFloat(red[a]) + intBitsToFloat(red[a + h]));
                } else {
                    red[a] += red[a + h];
                }
            }
        }
        barrier();
    }
    if (tid < NR * NT) {
        uint r = tid / NT, tt = tid % NT;
        uint t = t0 + tt;
        if (r0 + r < pc.rows && t < pc.T) {
            uint row = pc.row0 + r0 + r;
            int sum = red[tid * gl_WorkGroupSize.x];
            // float32(float32(Σ)/s)·scale, as bitnet.cpp rounds it (precise: no
            // fused multiply-add with the residual).
            precise float y = GROUPED == 1 ? intBitsToFloat(sum) / s[t] : (float(sum) / s[t]) * rowScale[row];
            uint o = t * pc.outStride + row;
            precise float r = ACC == 1 ? outp[o] + y : y;
            outp[o] = r;
        }
    }
}
