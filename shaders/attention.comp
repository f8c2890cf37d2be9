#version 450
// attention: the first half of split-K (flash-decoding) causal grouped-query
// attention for T tokens over the float16 cache, token t at position
// p_t = seq[t].x of the sequence (slot) whose cache rows start at seq[t].y.
// Token t's query head h sees its slot's positions j < n_t = p_t + 1 of KV head
// h/(heads/kvHeads); those are cut into chunks of CHUNK positions, and one
// workgroup computes, for chunk c and TT tokens × G query heads of one KV
// head (R = TT·G query rows, K and V read once for all of them), the
// chunk's partial softmax:
//   s_j = (f16(q)·k_j)·(1/√hd)               for j in c's positions below n_t (float32)
//   m   = max_j s_j,   l = Σ_j e^{s_j − m},   acc = Σ_j e^{s_j − m} · v_j
// attention_reduce.comp combines the chunks:
//   o = Σ_c acc_c·e^{m_c − M} / Σ_c l_c·e^{m_c − M},   M = max_c m_c
// or, with COMBINE = 1 (one token: TT = 1, T = 1), this kernel does: each
// workgroup, once its partials are written, counts itself in count[countOff
// + its head group], and the last of the group's chunks to count combines
// the group's G heads into out (attn_combine.glsl: attention_reduce's
// arithmetic, so the same bits) and sets the count back to 0. A decode step
// then needs no attention_reduce, and no later kernel combines the partials
// again (the output projection normalizes out: ternary_norm ACT = 0).
// Keys are staged in shared memory TK positions at a time (coalesced reads,
// rows padded by one word against bank conflicts), and R·TK invocations
// each take a score; the chunk's scores stay in shared memory. With VUN = 4
// an invocation loads four V rows before it adds them (the same sums in the
// same order). The max and sum reductions use subgroup arithmetic when
// compiled with -DSUBGROUP (attention_subgroup), shared memory otherwise.
//   qkv     [T][qkvStride] float   queries at the start of each token's row (rotated)
//   kcache  [slots·ctx][kvHeads][hd/2] uint, vcache likewise: float16 pairs
//   partial [T][heads][chunks][hd + 2] float   acc[hd], then m, then l
//   seq     [T] uvec2                  (position, first cache row of its slot)
//   count   [groups] uint from countOff   COMBINE = 1: chunks of the head group done (0 between passes)
//   out     [T][heads·hd] float           COMBINE = 1: the combined attention output
// The TT tokens of one workgroup share the K/V reads, so they must be of one
// slot (the host records TT = 1 for a batch of several slots); their
// positions need not be consecutive.
// Dispatch: x = chunks, y = (heads/G)·⌈T/TT⌉ (head group fastest). A
// workgroup whose chunk starts at or past every one of its rows' n_t exits;
// rows of tokens ≥ T are not written. hd/2 ≤ the workgroup size (a power
// of two); CHUNK a multiple of TK.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl" // with the subgroup extensions under SUBGROUP

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint HW = 64;       // hd/2: float16 pairs per head
layout(constant_id = 2) const uint G = 1;         // query heads per workgroup, of one KV head
layout(constant_id = 3) const uint TT = 1;        // tokens per workgroup
layout(constant_id = 4) const uint CHUNK = 256;   // positions per chunk
layout(constant_id = 5) const uint TK = 16;       // key positions staged at a time (CHUNK a multiple)
layout(constant_id = 6) const uint VUN = 1;       // V rows loaded at once per invocation: 1 or 4
layout(constant_id = 7) const uint COMBINE = 0;   // 1: the last chunk of a head group combines them (one token)
const uint R = G * TT;                            // query rows per workgroup, r = tt·G + g
const float LOWEST = -3.402823466e38;             // below every score; no infinities

layout(std430, binding = 0) readonly buffer QKV { float qkv[]; };
layout(std430, binding = 1) readonly buffer KC { uint kcache[]; };
layout(std430, binding = 2) readonly buffer VC { uint vcache[]; };
// coherent: with COMBINE = 1 the last workgroup reads the others' partials.
layout(std430, binding = 3) coherent buffer Partial { float partial[]; };
layout(std430, binding = 4) readonly buffer Seq { uvec2 seq[]; };
layout(std430, binding = 5) buffer Count { uint count[]; };
layout(std430, binding = 6) writeonly buffer Out { float outp[]; };

layout(push_constant) uniform Push {
    uint heads;
    uint kvHeads;
    uint qkvStride;
    uint T;
    uint chunks;
    float scale;
    uint countOff;
} pc;

#include "attn_combine.glsl" // after partial[]

shared vec2 qs[R * HW];                 // queries rounded to float16 (scaled by 1/√hd after K·q)
shared float sc[R * CHUNK];             // scores, then e^{s − m} (0 where masked)
shared uint ks[TK * (HW + 1)];          // a tile of keys, rows padded
shared float red[gl_WorkGroupSize.x];
shared vec2 red2[gl_WorkGroupSize.x];
shared float rowMax[R], rowSum[R];
shared uint lastChunk;                  // COMBINE = 1: this workgroup combines

// f16Round is x rounded to the nearest float16 (ties to even), as a float:
// bitnet.cpp's rounding of q, on the bits. unpackHalf2x16(packHalf2x16(q))
// says the same, but NVIDIA's compiler folds that pair away and q stays
// float32 (TestConformanceOps' "queries rounded to float16" case); Vulkan
// does not fix packHalf2x16's rounding either.
float f16Round(float x) {
    uint u = floatBitsToUint(x);
    uint a = u & 0x7FFFFFFFu, s = u & 0x80000000u;
    if (a >= 0x7F800000u) return x;                                  // Inf, NaN
    if (a >= 0x477FF000u) return uintBitsToFloat(s | 0x7F800000u);   // ≥ 65520: ±Inf
    if (a >= 0x38800000u)                                            // a normal float16
        return uintBitsToFloat(s | ((a + 0xFFFu + ((a >> 13u) & 1u)) & ~0x1FFFu));
    uint sh = 126u - (a >> 23u);                                     // a subnormal: k·2^-24
    if (sh > 24u) return uintBitsToFloat(s);
    uint m = (a & 0x7FFFFFu) | 0x800000u;
    uint k = m >> sh, low = m & ((1u << sh) - 1u), tie = 1u << (sh - 1u);
    if (low > tie || (low == tie && (k & 1u) != 0u)) k++;
    return uintBitsToFloat(s | floatBitsToUint(float(k) * (1.0 / 16777216.0)));
}

// reduce returns the maximum (isMax) or the sum of v over the workgroup.
// Every invocation calls it (uniform control flow).
float reduce(float v, bool isMax) {
#ifdef SUBGROUP
    if (isMax) {
        v = subgroupMax(v);
    } else {
        v = subgroupAdd(v);
    }
    if (subgroupElect()) red[gl_SubgroupID] = v;
    barrier();
    float r = red[0];
    for (uint i = 1; i < gl_NumSubgroups; i++) r = isMax ? max(r, red[i]) : r + red[i];
#else
    uint tid = gl_LocalInvocationID.x;
    red[tid] = v;
    barrier();
    for (uint k = gl_WorkGroupSize.x / 2; k > 0; k >>= 1) {
        if (tid < k) red[tid] = isMax ? max(red[tid], red[tid + k]) : red[tid] + red[tid + k];
        barrier();
    }
    float r = red[0];
#endif
    barrier();
    return r;
}

void main() {
    uint tid = gl_LocalInvocationID.x;
    uint WG = gl_WorkGroupSize.x;
    uint c = gl_WorkGroupID.x;
    uint groups = pc.heads / G;
    uint h0 = (gl_WorkGroupID.y % groups) * G;          // first query head
    uint t0 = (gl_WorkGroupID.y / groups) * TT;         // first token
    uint kvh = h0 / (pc.heads / pc.kvHeads);
    uint row0 = seq[t0].y;                              // the slot's first cache row
    uint nt[TT];                                        // positions each token sees (0: no token)
    uint nMax = 0;                                      // positions any token sees
    for (uint tt = 0; tt < TT; tt++) {
        nt[tt] = t0 + tt < pc.T ? seq[t0 + tt].x + 1 : 0;
        nMax = max(nMax, nt[tt]);
    }
    uint c0 = c * CHUNK;                                // first position of the chunk
    if (c0 >= nMax) {
        return;                                         // the whole workgroup: nothing to see
    }
    uint len = min(CHUNK, nMax - c0);                   // positions of the chunk any row sees
    uint hd = 2 * HW;

    for (uint i = tid; i < R * HW; i += WG) {
        uint r = i / HW, w = i % HW;
        uint t = t0 + r / G, h = h0 + r % G;
        vec2 q = vec2(0.0);
        if (t < pc.T) {
            uint qi = t * pc.qkvStride + h * hd + 2 * w;
            q = vec2(f16Round(qkv[qi]), f16Round(qkv[qi + 1])); // q in float16, as bitnet.cpp rounds it
        }
        qs[i] = q;
    }

    // scores, TK positions at a time
    for (uint j0 = 0; j0 < len; j0 += TK) {
        barrier();                                      // qs written; the last tile read
        for (uint i = tid; i < TK * HW; i += WG) {
            uint jj = i / HW, w = i % HW;
            uint p = c0 + j0 + jj;
            ks[jj * (HW + 1) + w] = p < nMax ? kcache[((row0 + p) * pc.kvHeads + kvh) * HW + w] : 0u;
        }
        barrier();
        for (uint i = tid; i < R * TK; i += WG) {
            uint r = i / TK, jj = i % TK;
            uint p = c0 + j0 + jj;
            float d = LOWEST;
            if (p < nt[r / G]) {
                d = 0.0;
                for (uint w = 0; w < HW; w++) {
                    d += dot(qs[r * HW + w], unpackHalf2x16(ks[jj * (HW + 1) + w]));
                }
                precise float ds = d * pc.scale;    // then the scale, in float32
                d = ds;
            }
            sc[r * CHUNK + j0 + jj] = d;
        }
    }
    barrier();

    // per row: m, e^{s − m} in place, l
    for (uint r = 0; r < R; r++) {
        uint n = nt[r / G];                             // the row sees positions < n
        float m = LOWEST;
        for (uint j = tid; j < len; j += WG) m = max(m, sc[r * CHUNK + j]);
        m = reduce(m, true);
        float l = 0.0;
        for (uint j = tid; j < len; j += WG) {
            float e = c0 + j < n ? exp(sc[r * CHUNK + j] - m) : 0.0;
            sc[r * CHUNK + j] = e;
            l += e;
        }
        l = reduce(l, false);                           // its barriers publish sc
        if (tid == 0) {
            rowMax[r] = m;
            rowSum[r] = l;
        }
    }
    barrier();

    // acc = Σ_j e_j·v_j: thread (part, w) takes the pair w of every parts-th position
    uint parts = WG / HW;
    uint w = tid % HW, part = tid / HW;
    vec2 acc[R];
    for (uint r = 0; r < R; r++) acc[r] = vec2(0.0);
    if (part < parts) {
        uint j = part;
        if (VUN == 4) {
            uint step = parts * pc.kvHeads * HW; // words from position j to j + parts
            for (; j + 3 * parts < len; j += 4 * parts) {
                uint vb = ((row0 + c0 + j) * pc.kvHeads + kvh) * HW + w;
                vec2 v0 = unpackHalf2x16(vcache[vb]), v1 = unpackHalf2x16(vcache[vb + step]);
                vec2 v2 = unpackHalf2x16(vcache[vb + 2 * step]), v3 = unpackHalf2x16(vcache[vb + 3 * step]);
                for (uint r = 0; r < R; r++) {
                    acc[r] += sc[r * CHUNK + j] * v0;
                    acc[r] += sc[r * CHUNK + j + parts] * v1;
                    acc[r] += sc[r * CHUNK + j + 2 * parts] * v2;
                    acc[r] += sc[r * CHUNK + j + 3 * parts] * v3;
                }
            }
        }
        for (; j < len; j += parts) {
            vec2 v = unpackHalf2x16(vcache[((row0 + c0 + j) * pc.kvHeads + kvh) * HW + w]);
            for (uint r = 0; r < R; r++) acc[r] += sc[r * CHUNK + j] * v;
        }
    }
    for (uint r = 0; r < R; r++) {
        vec2 a = acc[r];
        if (parts > 1) {
            red2[tid] = a;
            barrier();
            if (part == 0) {
                for (uint k = 1; k < parts; k++) a += red2[k * HW + w];
            }
            barrier();
        }
        uint t = t0 + r / G;
        if (part == 0 && t < pc.T) {
            uint o = ((t * pc.heads + h0 + r % G) * pc.chunks + c) * (hd + 2);
            partial[o + 2 * w] = a.x;
            partial[o + 2 * w + 1] = a.y;
            if (w == 0) {
                partial[o + hd] = rowMax[r];
                partial[o + hd + 1] = rowSum[r];
            }
        }
    }
    if (COMBINE == 0) {
        return;
    }
    // The partials out before the count; the count read before the others'
    // partials. Under the Vulkan memory model a fence orders another
    // workgroup's view only through an atomic of the same invocation, and a
    // control barrier carries order between invocations only as fence →
    // barrier → fence: so every writer fences, the workgroup meets, and
    // invocation 0 fences (acquiring its workgroup's stores, releasing them
    // with the count), counts, and fences again (acquiring the other
    // workgroups' partials) before the workgroup meets again and reads.
    uint nc = (nMax + CHUNK - 1) / CHUNK;               // chunks the token sees
    memoryBarrierBuffer();
    barrier();
    if (tid == 0) {
        memoryBarrierBuffer();
        uint done = atomicAdd(count[pc.countOff + gl_WorkGroupID.y], 1u);
        memoryBarrierBuffer();
        lastChunk = done == nc - 1 ? 1u : 0u;
        if (done == nc - 1) {
            // Every chunk has counted: reset for the next pass, atomically
            // (the others' increments were atomic too).
            atomicExchange(count[pc.countOff + gl_WorkGroupID.y], 0u);
        }
    }
    barrier();
    if (lastChunk == 0u) {
        return;
    }
    memoryBarrierBuffer();
    uint E = pc.heads * hd;
    for (uint i4 = tid; i4 < G * hd / 4; i4 += WG) {
        uint j4 = h0 * hd / 4 + i4;                     // four values of the token's row
        vec4 o = attnCombine(t0, j4, nc, pc.heads, hd, pc.chunks);
        for (uint e = 0; e < 4; e++) {
            outp[t0 * E + 4 * j4 + e] = o[e];
        }
    }
}
