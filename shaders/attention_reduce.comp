#version 450
// attention_reduce: the second half of split-K attention (see attention.comp),
// with the attention sub-norm and BitLinear's int8 quantization of the result
// fused in (the input of the output projection). One workgroup per token t
// combines, for every query head h, the partials of the ⌈n_t/CHUNK⌉ chunks
// that token sees (n_t = seq[t].x + 1, its position + 1):
//   M = max_c m_c,   L = Σ_c l_c·e^{m_c − M},   o = Σ_c acc_c·e^{m_c − M} / L
// then over the row o[t] of E = heads·hd values, as norm_quant does:
//   v_i = (o_i · 1/sqrt(mean(o²) + eps)) · w_i  NORM = 1 (NORM = 0: v = o), rounded as norm_quant does
//   m = max(1e-5, max|v|), s = 127/m, q_i = round_even(v_i·s) clamped to ±127
//   partial [T][heads][chunks][hd + 2] float   acc[hd], then m, then l
//   out     [T][E] float                      o (for traces and tests)
//   seq     [T] uvec2                          (position, first cache row of its slot)
//   w       [E] float                         the sub-norm weight (NORM = 1)
//   q       [T][E/4] uint                     packed int8
//   s       [T] float
// Each invocation normalizes and quantizes the groups of four values it
// wrote itself, so no value crosses invocations through memory; with
// REGS = 1 it keeps them in registers instead of reading them back (the
// same values, the same bits). Every chunk
// combined holds at least one position the row sees, so L ≥ 1. hd and E are
// multiples of 4.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
#include "reduce.glsl" // after the workgroup size: it sizes shared memory by it
layout(constant_id = 1) const uint CHUNK = 256;   // positions per chunk
layout(constant_id = 2) const uint NORM = 1;
layout(constant_id = 3) const uint REGS = 0;      // 1: o kept in registers (E ≤ EMAX)
layout(constant_id = 4) const uint EMAX = 4;
const uint OCH = (EMAX / 4 + gl_WorkGroupSize.x - 1) / gl_WorkGroupSize.x; // chunks of four an invocation holds

layout(std430, binding = 0) readonly buffer Partial { float partial[]; };
layout(std430, binding = 1) buffer Out { float outp[]; };
layout(std430, binding = 2) readonly buffer Seq { uvec2 seq[]; };
layout(std430, binding = 3) readonly buffer W { float w[]; };
layout(std430, binding = 4) writeonly buffer Q { uint q[]; };
layout(std430, binding = 5) writeonly buffer S { float s[]; };

layout(push_constant) uniform Push {
    uint heads;
    uint hd;
    uint chunks;
    float eps;
} pc;

#include "attn_combine.glsl"

// combine returns the four values from 4·i4 on of token t's row (written
// to out too), their squares added to ss in order (as rmsquant.glsl's
// REGS = 1 adds a chunk's, which ternary_norm's ACT = 3 relies on).
vec4 combine(uint t, uint i4, uint nc, uint row, inout vec2 ss) {
    vec4 o = attnCombine(t, i4, nc, pc.heads, pc.hd, pc.chunks);
    for (uint e = 0; e < 4; e++) {
        outp[row + 4 * i4 + e] = o[e];
        precise float o2 = o[e] * o[e];
        ss = ffAdd(ss, vec2(o2, 0.0));
    }
    return o;
}

void main() {
    uint t = gl_WorkGroupID.x;
    uint tid = gl_LocalInvocationID.x;
    uint n = seq[t].x + 1;
    uint nc = (n + CHUNK - 1) / CHUNK;
    uint E = pc.heads * pc.hd;
    uint row = t * E;

    // Combine the chunks: four consecutive values (one head) per step.
    vec2 ss = vec2(0.0);
    vec4 ov[OCH];
    if (REGS == 1) {
        for (uint j = 0; j < OCH; j++) { // a bound known at pipeline creation: ov stays in registers
            uint i4 = tid + j * gl_WorkGroupSize.x;
            ov[j] = vec4(0.0);
            if (i4 < E / 4) {
                ov[j] = combine(t, i4, nc, row, ss); // not in a ?: whose both sides glslang may evaluate
            }
        }
    } else {
        for (uint i4 = tid; i4 < E / 4; i4 += gl_WorkGroupSize.x) {
            combine(t, i4, nc, row, ss);
        }
    }
    float inv = 1.0;
    if (NORM == 1) {
        inv = rmsScale(wgSumFF(ss), float(E), pc.eps);
    }
    float m = 0.0;
    if (REGS == 1) {
        for (uint j = 0; j < OCH; j++) {
            uint i4 = tid + j * gl_WorkGroupSize.x;
            if (i4 < E / 4) {
                for (uint e = 0; e < 4; e++) {
                    precise float v = ov[j][e];
                    if (NORM == 1) v = (v * inv) * w[4 * i4 + e];
                    ov[j][e] = v;
                    m = max(m, abs(v));
                }
            }
        }
        m = max(wgMax(m), 1e-5);
        float sc = quantScale(m);
        for (uint j = 0; j < OCH; j++) {
            uint i4 = tid + j * gl_WorkGroupSize.x;
            if (i4 < E / 4) {
                q[t * (E / 4) + i4] = pack8(quant8(ov[j].x, sc), quant8(ov[j].y, sc), quant8(ov[j].z, sc), quant8(ov[j].w, sc));
            }
        }
        if (tid == 0) {
            s[t] = sc;
        }
        return;
    }
    for (uint i4 = tid; i4 < E / 4; i4 += gl_WorkGroupSize.x) {
        for (uint j = 0; j < 4; j++) {
            uint i = 4 * i4 + j;
            precise float v = outp[row + i];
            if (NORM == 1) v = (v * inv) * w[i];
            m = max(m, abs(v));
        }
    }
    m = max(wgMax(m), 1e-5);
    float sc = quantScale(m);
    for (uint i4 = tid; i4 < E / 4; i4 += gl_WorkGroupSize.x) {
        int c[4];
        for (uint j = 0; j < 4; j++) {
            uint i = 4 * i4 + j;
            precise float v = outp[row + i];
            if (NORM == 1) v = (v * inv) * w[i];
            c[j] = quant8(v, sc);
        }
        q[t * (E / 4) + i4] = pack8(c[0], c[1], c[2], c[3]);
    }
    if (tid == 0) {
        s[t] = sc;
    }
}
