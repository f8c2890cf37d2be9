#version 450
// sample: the candidate set of one sampling step (nn.SamplePlan), so that the
// host finishes nn.Sampler's draw over a few tokens instead of reading back
// the n logits. One workgroup.
//  1. Penalties, in place, for the nPen distinct ids of the window (count c):
//       x ← x/r if x > 0 else x·r (when r ≠ 1);  x ← x − (c·freq + presence)
//     each operation rounded on its own (precise: no fused multiply-add), as
//     nn.Sampler.Penalize does; the raw and penalized values go to the host,
//     which checks them bit for bit.
//  2. mode 1 (top-k): exactly the k best penalized logits, ranked by logit and
//     then by lower id (-0 ties +0), NaN and -Inf never candidates. A radix
//     select over the 64-bit key (order(x), ~id) — unique per token — walks
//     its 8-bit digits from the top, one histogram pass per digit, until the
//     digit's bucket holds exactly the number still needed; every token with
//     a key at or above that prefix is a candidate.
//     mode 2 (min-p): every token with x ≥ thr, thr = M + lnMinP − margin,
//     M the largest penalized logit and margin = (|M| + |lnMinP|)·2^-20,
//     far above float32 rounding: a superset of nn.Sampler's min-p set
//     (x − M ≥ ln(min_p) in float64); thr = +Inf when M = +Inf.
// Candidates are written in no particular order; count is how many qualify,
// which may exceed cap (the host then falls back to the logits).
//   logits [n] float, penalized in place
//   plan   mode, k, nPen, pad; repeat, freq, presence, lnMinP (float32, rounded
//          down); win[0..penCap) the window's ids, win[penCap..2·penCap) counts
//   res    [0] count, [1..3] 0; then raw[penCap], pen[penCap] (float bits),
//          ids[cap], values[cap] (float bits)
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) coherent buffer L { float logits[]; };
layout(std430, binding = 1) readonly buffer P {
    uint mode;
    uint k;
    uint nPen;
    uint pad;
    float repeatPen;
    float freq;
    float presence;
    float lnMinP;
    uint win[];
};
layout(std430, binding = 2) writeonly buffer R { uint res[]; };

layout(push_constant) uniform Push {
    uint n;
    uint cap;
    uint penCap;
} pc;

const uint headWords = 4u;

shared uint hist[256];
shared uint sPrefixHi, sPrefixLo, sNeed, sDone, sCount, sMax;

// candidateKey reports whether token i can be a candidate (not NaN, not
// -Inf) and its order key: a larger logit has a larger key, -0 the key of +0.
bool candidateKey(uint i, out uint key) {
    uint u = floatBitsToUint(logits[i]);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u || u == 0xFF800000u) {
        return false;
    }
    if ((u & 0x7FFFFFFFu) == 0u) {
        u = 0u;
    }
    key = (u & 0x80000000u) != 0u ? ~u : (u | 0x80000000u);
    return true;
}

float keyFloat(uint key) {
    return uintBitsToFloat((key & 0x80000000u) != 0u ? (key & 0x7FFFFFFFu) : ~key);
}

// digit p (0 = the top 8 bits) of the 64-bit key (hi, lo).
uint digitOf(uint hi, uint lo, uint p) {
    uint w = p < 4u ? hi : lo;
    return (w >> (24u - 8u * (p & 3u))) & 0xFFu;
}

// matches reports whether the top 8p bits of (hi, lo) are those of (ph, pl).
bool matches(uint hi, uint lo, uint p, uint ph, uint pl) {
    if (p == 0u) {
        return true;
    }
    if (p <= 4u) {
        uint s = 32u - 8u * p;
        return (hi >> s) == (ph >> s);
    }
    uint s = 64u - 8u * p;
    return hi == ph && (lo >> s) == (pl >> s);
}

// emit appends token i and its penalized logit (its exact bits) to the
// candidates.
void emit(uint i) {
    uint slot = atomicAdd(sCount, 1u);
    if (slot < pc.cap) {
        uint base = headWords + 2u * pc.penCap;
        res[base + slot] = i;
        res[base + pc.cap + slot] = floatBitsToUint(logits[i]);
    }
}

void main() {
    uint tid = gl_LocalInvocationID.x;

    // 1. penalties
    for (uint j = tid; j < nPen; j += gl_WorkGroupSize.x) {
        uint id = win[j];
        float x = logits[id];
        res[headWords + j] = floatBitsToUint(x);
        precise float y = x;
        if (repeatPen != 1.0) {
            y = x > 0.0 ? x / repeatPen : x * repeatPen;
        }
        precise float t = float(win[pc.penCap + j]) * freq;
        precise float d = t + presence;
        precise float z = y - d;
        logits[id] = z;
        res[headWords + pc.penCap + j] = floatBitsToUint(z);
    }
    if (tid == 0u) {
        sCount = 0u;
        sMax = 0u;
        sDone = 0u;
        sNeed = k;
        sPrefixHi = 0u;
        sPrefixLo = 0u;
    }
    memoryBarrierBuffer();
    barrier();

    uint key;
    if (mode == 1u) {
        // 2a. top-k: sDone 1 = the prefix is found, 2 = every candidate fits.
        for (uint p = 0u; p < 8u; p++) {
            for (uint b = tid; b < 256u; b += gl_WorkGroupSize.x) {
                hist[b] = 0u;
            }
            uint ph = sPrefixHi, pl = sPrefixLo;
            barrier();
            for (uint i = tid; i < pc.n; i += gl_WorkGroupSize.x) {
                if (candidateKey(i, key) && matches(key, ~i, p, ph, pl)) {
                    atomicAdd(hist[digitOf(key, ~i, p)], 1u);
                }
            }
            barrier();
            if (tid == 0u) {
                uint need = sNeed;
                uint total = 0u;
                if (p == 0u) {
                    for (uint b = 0u; b < 256u; b++) {
                        total += hist[b];
                    }
                }
                if (p == 0u && total <= need) {
                    sDone = 2u;
                } else {
                    uint above = 0u;
                    for (int b = 255; b >= 0; b--) {
                        uint h = hist[b];
                        if (above + h >= need) {
                            need -= above;
                            if (p < 4u) {
                                sPrefixHi = ph | (uint(b) << (24u - 8u * p));
                            } else {
                                sPrefixLo = pl | (uint(b) << (24u - 8u * (p - 4u)));
                            }
                            sNeed = need;
                            if (h == need) {
                                sDone = 1u;
                            }
                            break;
                        }
                        above += h;
                    }
                }
            }
            barrier();
            if (sDone != 0u) {
                break;
            }
        }
        uint ph = sPrefixHi, pl = sPrefixLo;
        bool all = sDone == 2u;
        for (uint i = tid; i < pc.n; i += gl_WorkGroupSize.x) {
            if (candidateKey(i, key) && (all || key > ph || (key == ph && ~i >= pl))) {
                emit(i);
            }
        }
    } else {
        // 2b. min-p: the largest key, then everything above the threshold.
        uint best = 0u; // below every candidate's key
        for (uint i = tid; i < pc.n; i += gl_WorkGroupSize.x) {
            if (candidateKey(i, key)) {
                best = max(best, key);
            }
        }
        atomicMax(sMax, best);
        barrier();
        if (sMax != 0u) {
            float m = keyFloat(sMax);
            precise float thr = (m + lnMinP) - (abs(m) + abs(lnMinP)) * (1.0 / 1048576.0);
            if (isinf(m)) {
                thr = m;
            }
            for (uint i = tid; i < pc.n; i += gl_WorkGroupSize.x) {
                if (candidateKey(i, key) && logits[i] >= thr) {
                    emit(i);
                }
            }
        }
    }
    barrier();
    if (tid == 0u) {
        res[0] = sCount;
        res[1] = 0u;
        res[2] = 0u;
        res[3] = 0u;
    }
}
