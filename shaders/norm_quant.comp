#version 450
// norm_quant: for each token t (one workgroup each), over K values
//   h_i = in[t][i]                                   ACT = 0
//   h_i = relu(g_i)²·u_i  or  silu(g_i)·u_i          ACT = 1, 2: g = in[t][0:K], u = in[t][K:2K]
//   v_i = (h_i · 1/sqrt(mean(h²) + eps)) · w_i       NORM = 1 (RMSNorm); v = h when NORM = 0
//         rounded as ggml does (see rmsScale in reduce.glsl): h² in float32,
//         summed exactly enough (float-float), the mean and the scale in float32
// then either (QUANT = 0) out[t][i] = v_i, or (QUANT = 1) BitLinear's int8
// quantization: m = max(1e-5, max|v|), s = 127/m (correctly rounded), q_i = round_even(v_i·s)
// clamped to [−128, 127], written as q[t][K/4] packed int8 and s[t]
// (rmsquant.glsl, which ternary_norm.comp shares).
//   in   [T][inStride] float, read from token inOff on
//   w    [K] float          the norm weight (unused when NORM = 0)
//   out  [T][K] float       QUANT = 0
//   q    [T][K/4] uint      QUANT = 1
//   s    [T] float          QUANT = 1
// K must be a multiple of 4.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
#include "reduce.glsl" // after the workgroup size: it sizes shared memory by it
layout(constant_id = 1) const uint ACT = 0;
layout(constant_id = 2) const uint NORM = 1;
layout(constant_id = 3) const uint QUANT = 1;
layout(constant_id = 4) const uint REGS = 0;    // rmsquant.glsl
layout(constant_id = 5) const uint KMAX = 4096; // K ≤ KMAX when REGS = 1

layout(std430, binding = 0) readonly buffer In { float inp[]; };
layout(std430, binding = 1) readonly buffer W { float w[]; };
layout(std430, binding = 2) writeonly buffer Out { float outp[]; };
layout(std430, binding = 3) writeonly buffer Q { uint q[]; };
layout(std430, binding = 4) writeonly buffer S { float s[]; };

layout(push_constant) uniform Push {
    uint K;
    uint inStride;
    uint inOff;
    float eps;
} pc;

uint base; // the token's first value in inp

float rqValue(uint i) {
    if (ACT == 0) {
        return inp[base + i];
    }
    return gateAct(ACT, inp[base + i], inp[base + pc.K + i]);
}

vec4 rqValue4(uint c) { return vec4(rqValue(4 * c), rqValue(4 * c + 1), rqValue(4 * c + 2), rqValue(4 * c + 3)); }
float rqWeight(uint i) { return w[i]; }

void rqPut(uint i4, uint c) { q[gl_WorkGroupID.x * (pc.K / 4) + i4] = c; }

#include "rmsquant.glsl"

void main() {
    uint t = gl_WorkGroupID.x;
    uint tid = gl_LocalInvocationID.x;
    base = (pc.inOff + t) * pc.inStride;
    float inv = NORM == 1 ? rmsInv(pc.K, pc.eps) : 1.0;
    if (QUANT == 0) {
        for (uint i = tid; i < pc.K; i += gl_WorkGroupSize.x) {
            outp[t * pc.K + i] = rmsValue(i, inv, NORM == 1);
        }
        return;
    }
    float sc = rmsQuant(pc.K, inv, NORM == 1);
    if (tid == 0) {
        s[t] = sc;
    }
}
