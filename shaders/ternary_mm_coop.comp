#version 450
// ternary_mm_coop: ternary_mm (a prompt's BitLinear product over I2_S weights,
// one scale a row) with the multiply-adds on cooperative matrices
// (VK_NV_cooperative_matrix: NVIDIA's tensor cores), the same bits: the sums
// are exact integers, and the epilogue is ternary_mm's. Buffers and push
// constants are ternary_mm's (and ternary.comp's):
//   wt       [rows][K/16] uint  ternary codes, I2_S layout (see common.glsl)
//   q        [T][K/4] uint      int8 activations (norm_quant)
//   s        [T] float          their scales
//   rowScale [row0+rows] float
//   out      [T][outStride] float
// K is a multiple of 128.
//
// A workgroup of 4 subgroups (of 32 invocations: the device's subgroup size)
// computes a tile of BM = 64 rows × BN = 64 tokens, each subgroup 32 rows ×
// 32 tokens of it: 2 × 4 accumulators of CM × CN = 16 × 8 int32. The K
// dimension goes one 128-weight block at a time, as in ternary_mm: the
// workgroup stages the block's codes of its rows, expanded to signed bytes,
// at ws[row][p] and the block's activations at as[token][p] (word p of the
// block's 32, row- and token-major, rows 36 words apart); then each subgroup takes
// the block in four steps of CK = 32 bytes (8 words): a 16 × 32 s8 matrix of
// weights (row-major, 36 words a row) times a 32 × 8 s8 matrix of
// activations (column-major: a token's 32 bytes together) into its int32
// accumulators. Weight word p of a row meets activation word p of a token,
// byte for byte, as in ternary_mm. The accumulators go to shared memory
// (acc[row][token]) for the epilogue.
#extension GL_GOOGLE_include_directive : require
#extension GL_NV_cooperative_matrix : require
#extension GL_NV_integer_cooperative_matrix : require
#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require
#extension GL_EXT_shader_explicit_arithmetic_types_int32 : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#include "common.glsl"

layout(local_size_x_id = 0) in; // 128: the host passes it (four subgroups of 32)
layout(constant_id = 1) const uint ACC = 0;

const uint BM = 64, BN = 64;   // the workgroup's tile
const uint CM = 16, CN = 8;    // an accumulator's rows and tokens
const uint SW = 32;            // words of a staged row or token (one 128-weight block)
const uint SP = 36;            // their stride in shared memory: 144 bytes (a multiple of 16), so
                               // that 32 invocations staging 32 rows meet 8 banks, not one

layout(std430, binding = 0) readonly buffer WT4 { uvec4 wt4[]; };
layout(std430, binding = 1) readonly buffer Q4 { uvec4 q4[]; };
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

shared uint ws[BM * SP];   // [row][p]
shared uint as[BN * SP];   // [token][p]
shared int acc[BM * BN];   // [row][token], the epilogue's

void main() {
    uint lid = gl_LocalInvocationID.x;
    uint sg = gl_SubgroupID;                  // of 4 (the host runs it where subgroups are 32 wide): rows 32·(sg/2), tokens 32·(sg%2)
    uint sr = 32 * (sg / 2), st = 32 * (sg % 2);
    uint r0 = gl_WorkGroupID.x * BM, t0 = gl_WorkGroupID.y * BN;
    uint quads = pc.K / 64;                   // uvec4s of codes a row
    uint aquads = pc.K / 16;                  // uvec4s of activations a token

    icoopmatNV<32, gl_ScopeSubgroup, CM, CN> c[2][4];
    for (uint i = 0; i < 2; i++) {
        for (uint j = 0; j < 4; j++) {
            c[i][j] = icoopmatNV<32, gl_ScopeSubgroup, CM, CN>(0);
        }
    }
    for (uint blk = 0; blk < pc.K / 128; blk++) {
        // Codes: BM rows × 2 quads. Code word k of the block holds, in bits
        // 7-6, 5-4, 3-2 and 1-0 of its bytes, the weights that meet
        // activation words k, 8+k, 16+k and 24+k.
        for (uint cw = lid; cw < BM * 2; cw += gl_WorkGroupSize.x) {
            uint lr = cw % BM, h = cw / BM;
            uint row = r0 + lr;
            uvec4 code = uvec4(0x55555555u); // weight 0 past the last row (unused)
            if (row < pc.rows) {             // a branch, not ?:, so no load past the buffer
                code = wt4[row * quads + blk * 2 + h];
            }
            for (uint j = 0; j < 4; j++) {
                uint k = 4 * h + j;
                for (uint f = 0; f < 4; f++) {
                    ws[lr * SP + 8 * f + k] = ternaryBytes((code[j] >> (6 - 2 * f)) & 0x03030303u);
                }
            }
        }
        // Activations: BN tokens × 8 quads.
        for (uint cw = lid; cw < BN * 8; cw += gl_WorkGroupSize.x) {
            uint tt = cw % BN, h = cw / BN;
            uint t = t0 + tt;
            uvec4 a = uvec4(0u);
            if (t < pc.T) {
                a = q4[t * aquads + blk * 8 + h];
            }
            for (uint j = 0; j < 4; j++) {
                as[tt * SP + 4 * h + j] = a[j];
            }
        }
        barrier();
        for (uint ks = 0; ks < SW; ks += 8) { // 32 bytes of K at a time
            icoopmatNV<8, gl_ScopeSubgroup, CM, 32> a[2];
            for (uint i = 0; i < 2; i++) {
                coopMatLoadNV(a[i], ws, (sr + CM * i) * SP + ks, SP, false);
            }
            for (uint j = 0; j < 4; j++) {
                icoopmatNV<8, gl_ScopeSubgroup, 32, CN> b;
                coopMatLoadNV(b, as, (st + CN * j) * SP + ks, SP, true);
                for (uint i = 0; i < 2; i++) {
                    c[i][j] = coopMatMulAddNV(a[i], b, c[i][j]);
                }
            }
        }
        barrier();
    }
    for (uint i = 0; i < 2; i++) {
        for (uint j = 0; j < 4; j++) {
            coopMatStoreNV(c[i][j], acc, (sr + CM * i) * BN + st + CN * j, BN, false);
        }
    }
    barrier();
    for (uint o = lid; o < BM * BN; o += gl_WorkGroupSize.x) {
        uint lr = o / BN, tt = o % BN;
        uint row = r0 + lr, t = t0 + tt;
        if (row >= pc.rows || t >= pc.T) continue;
        uint g = pc.row0 + row;
        // ternary_mm's (ternary.comp's) epilogue, in the same float32 steps.
        precise float y = (float(acc[lr * BN + tt]) / s[t]) * rowScale[g];
        uint oi = t * pc.outStride + g;
        precise float r = ACC == 1 ? outp[oi] + y : y;
        outp[oi] = r;
    }
}
