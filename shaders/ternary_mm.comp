#version 450
// ternary_mm: a prompt's BitLinear matrix product over I2_S ternary weights as a
// tiled matrix-matrix product, for matrices with one scale a row (ternary.comp
// with GROUPED = 0: the same bits, since the sums are exact integers):
//   y[t][row0+r] = ((Σ_i w_ri·q_ti) / s[t]) · rowScale[row0+r]
// ACC = 1 adds y to out (the residual add). Buffers and push constants are
// ternary.comp's (the group-scale binding is not read):
//   wt       [rows][K/16] uint  ternary codes, I2_S layout (see common.glsl)
//   q        [T][K/4] uint      int8 activations (norm_quant)
//   s        [T] float          their scales
//   rowScale [row0+rows] float
//   out      [T][outStride] float
// K is a multiple of 128.
//
// A workgroup of WG invocations computes a tile of BM rows × BN tokens, each
// invocation TM rows × TN tokens of it (an invocation grid of GX = BN/TN
// tokens by GY = WG/GX rows, BM = TM·GY). The K dimension goes one 128-weight
// block at a time: the workgroup stages the block's codes of its BM rows,
// expanded once to signed bytes (four words of int8 a code word), and the
// block's activations of its BN tokens in shared memory, each word p of the
// block's 32 at [p][row] and [p][token]; then every invocation multiplies
// its TM × TN outputs from there, 32 words of each, TM + TN loads for TM·TN
// dot products per word. Each weight word read from memory serves BN tokens
// and each activation word BM rows, against NT = 8 tokens and one row group
// in ternary.comp, and no invocation expands a code more than once.
// DOT (a compile-time define) uses the integer dot product instruction.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint TM = 4;  // rows an invocation computes: 4 or 8
layout(constant_id = 2) const uint TN = 4;  // tokens an invocation computes: 4 or 8
layout(constant_id = 3) const uint BN = 64; // tokens of a workgroup's tile: a multiple of TN
layout(constant_id = 4) const uint ACC = 0;

const uint GX = BN / TN;                   // invocations along the tokens
const uint GY = gl_WorkGroupSize.x / GX;   // invocations along the rows
const uint BM = TM * GY;                   // rows of a workgroup's tile

layout(std430, binding = 0) readonly buffer WT4 { uvec4 wt4[]; }; // four code words at a time
layout(std430, binding = 1) readonly buffer Q4 { uvec4 q4[]; };   // four activation words at a time
layout(std430, binding = 2) readonly buffer S { float s[]; };
layout(std430, binding = 3) readonly buffer RS { float rowScale[]; };
layout(std430, binding = 5) buffer Out { float outp[]; };

layout(push_constant) uniform Push {
    uint rows;
    uint row0;
    uint K;
    uint T;
    uint outStride;
} pc;

// The block staged: word p of a row's expanded weights at ws[p][row], word p of
// a token's activations at as[p][token], four to a uvec4.
shared uvec4 ws[32 * BM / 4];
shared uvec4 as[32 * BN / 4];

// setWord writes uint v as element i of a uvec4 array in shared memory.
#define setWord(arr, i, v) arr[(i) / 4][(i) % 4] = (v)

void main() {
    uint lid = gl_LocalInvocationID.x;
    uint tx = lid % GX, ty = lid / GX;
    uint r0 = gl_WorkGroupID.x * BM, t0 = gl_WorkGroupID.y * BN;
    uint quads = pc.K / 64; // uvec4s of codes a row (K/16 words)
    uint aquads = pc.K / 16; // uvec4s of activations a token (K/4 words)
    int acc[TM * TN];
    for (uint i = 0; i < TM * TN; i++) acc[i] = 0;

    for (uint blk = 0; blk < pc.K / 128; blk++) {
        // Codes: BM rows × 2 quads, consecutive invocations on consecutive
        // rows (their shared words consecutive too). A code word k of the
        // block holds, in bits 7-6, 5-4, 3-2 and 1-0 of its bytes, the weights
        // that meet activation words k, 8+k, 16+k and 24+k.
        for (uint c = lid; c < BM * 2; c += gl_WorkGroupSize.x) {
            uint lr = c % BM, h = c / BM;
            uint row = r0 + lr;
            uvec4 code = uvec4(0x55555555u); // weight 0 past the last row (unused)
            if (row < pc.rows) {             // a branch, not ?:, so no load past the buffer
                code = wt4[row * quads + blk * 2 + h];
            }
            for (uint j = 0; j < 4; j++) {
                uint k = 4 * h + j;
                for (uint f = 0; f < 4; f++) {
                    setWord(ws, (8 * f + k) * BM + lr, ternaryBytes((code[j] >> (6 - 2 * f)) & 0x03030303u));
                }
            }
        }
        // Activations: BN tokens × 8 quads, consecutive invocations on
        // consecutive tokens.
        for (uint c = lid; c < BN * 8; c += gl_WorkGroupSize.x) {
            uint tt = c % BN, h = c / BN;
            uint t = t0 + tt;
            uvec4 a = uvec4(0u);
            if (t < pc.T) {
                a = q4[t * aquads + blk * 8 + h];
            }
            for (uint j = 0; j < 4; j++) {
                setWord(as, (4 * h + j) * BN + tt, a[j]);
            }
        }
        barrier();
        for (uint p = 0; p < 32; p++) {
            uint w[TM], x[TN];
            for (uint i = 0; i < TM; i += 4) {
                uvec4 v = ws[(p * BM + ty * TM + i) / 4];
                w[i] = v.x; w[i + 1] = v.y; w[i + 2] = v.z; w[i + 3] = v.w;
            }
            for (uint j = 0; j < TN; j += 4) {
                uvec4 v = as[(p * BN + tx * TN + j) / 4];
                x[j] = v.x; x[j + 1] = v.y; x[j + 2] = v.z; x[j + 3] = v.w;
            }
            for (uint i = 0; i < TM; i++) {
                for (uint j = 0; j < TN; j++) {
                    acc[i * TN + j] += dot4(w[i], x[j]);
                }
            }
        }
        barrier();
    }

    for (uint i = 0; i < TM; i++) {
        uint row = r0 + ty * TM + i;
        if (row >= pc.rows) continue;
        uint g = pc.row0 + row;
        float rs = rowScale[g];
        for (uint j = 0; j < TN; j++) {
            uint t = t0 + tx * TN + j;
            if (t >= pc.T) continue;
            // ternary.comp's tOut and residual add, in the same float32 steps.
            precise float y = (float(acc[i * TN + j]) / s[t]) * rs;
            uint o = t * pc.outStride + g;
            precise float r = ACC == 1 ? outp[o] + y : y;
            outp[o] = r;
        }
    }
}
