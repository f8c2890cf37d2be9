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
// tokens; its threads split the row's words and reduce in shared memory
// (ternary.glsl).
// VEC = 4 reads the weights and activations 16 bytes at a time (ternary.glsl).
// DOT (a compile-time define) uses the integer dot product instruction.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint NR = 4;
layout(constant_id = 2) const uint NT = 1;
layout(constant_id = 3) const uint GROUPED = 0;
layout(constant_id = 4) const uint ACC = 0;
layout(constant_id = 5) const uint VEC = 1;
const uint PRE = 0; // ternary.glsl: no prologue to overlap

layout(std430, binding = 0) readonly buffer WT { uint wt[]; };
layout(std430, binding = 0) readonly buffer WT4 { uvec4 wt4[]; }; // the same words, four at a time
layout(std430, binding = 1) readonly buffer Q { uint q[]; };
layout(std430, binding = 1) readonly buffer Q4 { uvec4 q4[]; };
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

uint tRow(uint r) {
    uint row = gl_WorkGroupID.x * NR + r;
    return row < pc.rows ? row : ~0u;
}

uint tAct(uint t, uint i) { return q[t * (pc.K / 4) + i]; }
uvec4 tAct4(uint t, uint i) { return q4[(t * (pc.K / 4) + i) / 4]; }

#include "ternary.glsl"

void main() {
    uint tid = gl_LocalInvocationID.x;
    uint t0 = gl_WorkGroupID.y * NT;
    ternaryPartial(tid, gl_WorkGroupSize.x, pc.K, pc.row0, t0, pc.T);
    ternaryReduce(0, tid, gl_WorkGroupSize.x);
    if (tid < NR * NT) {
        uint r = tid / NT, tt = tid % NT;
        uint t = t0 + tt;
        uint row = tRow(r);
        if (row != ~0u && t < pc.T) {
            row += pc.row0;
            float y = tOut(tSum(0, gl_WorkGroupSize.x, tid), s[t], GROUPED == 1 ? 1.0 : rowScale[row]);
            uint o = t * pc.outStride + row;
            precise float r = ACC == 1 ? outp[o] + y : y;
            outp[o] = r;
        }
    }
}
