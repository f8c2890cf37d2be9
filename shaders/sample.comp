#version 450
// sample: the candidate set of one sampling step (nn.SamplePlan), so that the
// host finishes nn.Sampler's draw over a few tokens instead of reading back
// the n logits.
//  1. Penalties, in place, for the nPen distinct ids of the window (count c):
//       x ← x/r if x > 0 else x·r (when r ≠ 1);  x ← x − (c·freq + presence)
//     each operation rounded on its own (precise: no fused multiply-add), as
//     nn.Sampler.Penalize does; the raw and penalized values go to the host,
//     which checks them bit for bit. The quotient is quotient()'s, correctly
//     rounded on every device, not GLSL's x / r: Vulkan lets that be 2.5 ulp
//     off (NVIDIA's is), and fma, the usual correction, need not be fused
//     (lavapipe's is not). On a device that flushes subnormals the check
//     fails for a subnormal logit or result, and the host samples instead.
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
//
// Stages (spec constant STAGE), so that on a GPU the vocabulary is read by
// many workgroups at once rather than by one compute unit:
//   STAGE 0, one workgroup: all of the above over the n logits (a CPU
//     device, where a second dispatch costs more than the scan).
//   STAGE 1, groups workgroups: workgroup g takes logits chunk·g … chunk·g +
//     chunk − 1 (those below n): the penalties of the window's ids among
//     them, then for top-k its own k best (the same select) into its region
//     of part, for min-p its largest key into part; workgroup 0 zeroes the
//     result's head.
//   STAGE 2, groups workgroups after a barrier: top-k, workgroup 0 selects
//     the k best among the chunks' candidates (every token of the k best of
//     all is among the k best of its chunk), the others return at once;
//     min-p, every workgroup takes M as the largest of the chunks' keys and
//     emits its chunk's tokens above the threshold, counting in res[0].
// chunk and groups are the same push constants in every stage.
//   logits [n] float, penalized in place
//   plan   mode, k, nPen, pad; repeat, freq, presence, lnMinP (float32, rounded
//          down); win[0..penCap) the window's ids, win[penCap..2·penCap) counts
//   res    [0] count, [1..3] 0; then raw[penCap], pen[penCap] (float bits),
//          ids[cap], values[cap] (float bits)
//   part   [groups] candidates per chunk (top-k), [groups] largest key per
//          chunk (min-p), then ids[groups·chunk], values[groups·chunk] (float
//          bits): chunk g's candidates from g·chunk (unused in STAGE 0)
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint STAGE = 0;

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
layout(std430, binding = 2) coherent buffer R { uint res[]; };
layout(std430, binding = 3) coherent buffer Q { uint part[]; };

layout(push_constant) uniform Push {
    uint n;
    uint cap;
    uint penCap;
    uint chunk;
    uint groups;
} pc;

const uint headWords = 4u;

shared uint hist[256];
shared uint sPrefixHi, sPrefixLo, sNeed, sDone, sCount, sMax;

// What this workgroup scans: logits lo … hi−1, or (fromPart) the chunks'
// top-k candidates in part.
uint lo, hi;
bool fromPart;

// visit's work, set before each scan: a histogram pass of digit pDigit
// under the prefix (pHi, pLo), the emission of every key at or above
// (pHi, pLo) (all of them when pAll), the largest key into best, or the
// emission of every logit ≥ thr.
const uint PH_HIST = 0u, PH_EMIT = 1u, PH_MAX = 2u, PH_MINP = 3u;
uint phase, pDigit, pHi, pLo, best;
bool pAll;
float thr;

// candidateKey reports whether a logit (its bits u) can be a candidate (not
// NaN, not -Inf) and its order key: a larger logit has a larger key, -0 the
// key of +0.
bool candidateKey(uint u, out uint key) {
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
uint digitOf(uint kh, uint kl, uint p) {
    uint w = p < 4u ? kh : kl;
    return (w >> (24u - 8u * (p & 3u))) & 0xFFu;
}

// matches reports whether the top 8p bits of (kh, kl) are those of (ph, pl).
bool matches(uint kh, uint kl, uint p, uint ph, uint pl) {
    if (p == 0u) {
        return true;
    }
    if (p <= 4u) {
        uint s = 32u - 8u * p;
        return (kh >> s) == (ph >> s);
    }
    uint s = 64u - 8u * p;
    return kh == ph && (kl >> s) == (pl >> s);
}

uint partIDs() { return 2u * pc.groups; }
uint partValues() { return 2u * pc.groups + pc.groups * pc.chunk; }

// emit appends token id and its penalized logit (its exact bits u) to the
// candidates: the workgroup's region of part in STAGE 1 (never more than its
// chunk), else the result, counted in the workgroup (sCount) or, for min-p
// over chunks, across them (res[0]).
void emit(uint id, uint u) {
    if (STAGE == 1u) {
        uint slot = atomicAdd(sCount, 1u);
        uint at = gl_WorkGroupID.x * pc.chunk + slot;
        part[partIDs() + at] = id;
        part[partValues() + at] = u;
        return;
    }
    uint slot = STAGE == 2u && !fromPart ? atomicAdd(res[0], 1u) : atomicAdd(sCount, 1u);
    if (slot < pc.cap) {
        uint base = headWords + 2u * pc.penCap;
        res[base + slot] = id;
        res[base + pc.cap + slot] = u;
    }
}

void visit(uint id, uint u) {
    uint key;
    if (!candidateKey(u, key)) {
        return;
    }
    if (phase == PH_HIST) {
        if (matches(key, ~id, pDigit, pHi, pLo)) {
            atomicAdd(hist[digitOf(key, ~id, pDigit)], 1u);
        }
    } else if (phase == PH_EMIT) {
        if (pAll || key > pHi || (key == pHi && ~id >= pLo)) {
            emit(id, u);
        }
    } else if (phase == PH_MAX) {
        best = max(best, key);
    } else if (uintBitsToFloat(u) >= thr) {
        emit(id, u);
    }
}

// scan visits every element of the workgroup's domain once (each by one
// invocation).
void scan() {
    uint tid = gl_LocalInvocationID.x;
    if (fromPart) {
        for (uint g = 0u; g < pc.groups; g++) {
            uint base = g * pc.chunk;
            uint cnt = part[g];
            for (uint s = tid; s < cnt; s += gl_WorkGroupSize.x) {
                visit(part[partIDs() + base + s], part[partValues() + base + s]);
            }
        }
    } else {
        for (uint i = lo + tid; i < hi; i += gl_WorkGroupSize.x) {
            visit(i, floatBitsToUint(logits[i]));
        }
    }
}

// quotient returns x/r rounded to the nearest float, ties to even (IEEE
// division), for finite x > 0 and r > 0 (+Inf for x = +Inf), subnormals and
// overflow included: a long division of the significands in integers,
// which every device computes exactly (gpu/sample_penalty_test.go checks
// its Go twin, penaltyQuotient, against Go's division).
//   x = mx·2^(ex−150), r = mr·2^(er−150), mx, mr in [2^23, 2^24)
//   x/r = (mx/mr)·2^(ex−er), mx/mr in [1, 2) once mx is doubled where below mr
float quotient(float x, float r) {
    uint ux = floatBitsToUint(x), ur = floatBitsToUint(r);
    if (ux >= 0x7F800000u) {
        return x;
    }
    int ex = int(ux >> 23u), er = int(ur >> 23u);
    uint mx = ux & 0x7FFFFFu, mr = ur & 0x7FFFFFu;
    if (ex == 0) { // subnormal: normalize
        int s = 23 - findMSB(mx);
        mx <<= uint(s);
        ex = 1 - s;
    } else {
        mx |= 0x800000u;
    }
    if (er == 0) {
        int s = 23 - findMSB(mr);
        mr <<= uint(s);
        er = 1 - s;
    } else {
        mr |= 0x800000u;
    }
    int e = ex - er + 127; // the quotient's biased exponent
    if (mx < mr) {
        mx <<= 1u;
        e--;
    }
    // 25 bits of mx/mr (the 24 of a significand and a guard bit), then a
    // sticky bit for the remainder: q in [2^25, 2^26)
    uint q = 0u, rem = mx;
    for (int i = 0; i < 25; i++) {
        q <<= 1u;
        if (rem >= mr) {
            rem -= mr;
            q |= 1u;
        }
        rem <<= 1u;
    }
    q = (q << 1u) | (rem != 0u ? 1u : 0u);
    if (e >= 255) {
        return uintBitsToFloat(0x7F800000u);
    }
    // Round to 24 bits, or to fewer below the normal range (e ≤ 0): the
    // significand of a subnormal, the bits of its float.
    uint sh = uint(2 + max(0, 1 - e));
    if (sh > 26u) {
        return 0.0; // below half the smallest subnormal
    }
    uint kept = q >> sh, low = q & ((1u << sh) - 1u), tie = 1u << (sh - 1u);
    if (low > tie || (low == tie && (kept & 1u) != 0u)) {
        kept++;
    }
    // A normal significand's leading bit adds one to the exponent field, as
    // does a carry out of the rounding (to +Inf past the largest float).
    return uintBitsToFloat(e >= 1 ? (uint(e - 1) << 23u) + kept : kept);
}

void main() {
    uint tid = gl_LocalInvocationID.x;
    uint g = gl_WorkGroupID.x;
    lo = STAGE == 0u ? 0u : min(g * pc.chunk, pc.n);
    hi = STAGE == 0u ? pc.n : min(lo + pc.chunk, pc.n);
    fromPart = STAGE == 2u && mode == 1u;
    if (fromPart && g != 0u) {
        return; // the merge of the chunks' candidates is one workgroup's
    }

    // 1. penalties, for the window's ids in this workgroup's logits
    if (STAGE != 2u) {
        for (uint j = tid; j < nPen; j += gl_WorkGroupSize.x) {
            uint id = win[j];
            if (id < lo || id >= hi) {
                continue;
            }
            float x = logits[id];
            res[headWords + j] = floatBitsToUint(x);
            precise float y = x;
            if (repeatPen != 1.0) {
                y = x > 0.0 ? quotient(x, repeatPen) : x * repeatPen;
            }
            precise float t = float(win[pc.penCap + j]) * freq;
            precise float d = t + presence;
            precise float z = y - d;
            logits[id] = z;
            res[headWords + pc.penCap + j] = floatBitsToUint(z);
        }
    }
    if (tid == 0u) {
        sCount = 0u;
        sMax = 0u;
        sDone = 0u;
        sNeed = k;
        sPrefixHi = 0u;
        sPrefixLo = 0u;
        if (STAGE == 1u && g == 0u) {
            res[0] = 0u; // min-p's count across the chunks in STAGE 2
            res[1] = 0u;
            res[2] = 0u;
            res[3] = 0u;
        }
    }
    memoryBarrierBuffer();
    barrier();

    if (mode == 1u) {
        // 2a. top-k: sDone 1 = the prefix is found, 2 = every candidate fits.
        phase = PH_HIST;
        for (uint p = 0u; p < 8u; p++) {
            for (uint b = tid; b < 256u; b += gl_WorkGroupSize.x) {
                hist[b] = 0u;
            }
            pDigit = p;
            pHi = sPrefixHi;
            pLo = sPrefixLo;
            barrier();
            scan();
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
                                sPrefixHi = pHi | (uint(b) << (24u - 8u * p));
                            } else {
                                sPrefixLo = pLo | (uint(b) << (24u - 8u * (p - 4u)));
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
        phase = PH_EMIT;
        pHi = sPrefixHi;
        pLo = sPrefixLo;
        pAll = sDone == 2u;
        scan();
        barrier();
        if (tid == 0u) {
            if (STAGE == 1u) {
                part[g] = sCount;
            } else {
                res[0] = sCount;
                res[1] = 0u;
                res[2] = 0u;
                res[3] = 0u;
            }
        }
        return;
    }

    // 2b. min-p: the largest key, then everything above the threshold.
    best = 0u; // below every candidate's key
    if (STAGE == 2u) {
        for (uint h = tid; h < pc.groups; h += gl_WorkGroupSize.x) {
            best = max(best, part[pc.groups + h]);
        }
    } else {
        phase = PH_MAX;
        scan();
    }
    atomicMax(sMax, best);
    barrier();
    if (STAGE == 1u) {
        if (tid == 0u) {
            part[pc.groups + g] = sMax;
        }
        return;
    }
    if (sMax != 0u) {
        float m = keyFloat(sMax);
        precise float t = (m + lnMinP) - (abs(m) + abs(lnMinP)) * (1.0 / 1048576.0);
        thr = isinf(m) ? m : t;
        phase = PH_MINP;
        scan();
    }
    barrier();
    if (STAGE == 0u && tid == 0u) {
        res[0] = sCount;
        res[1] = 0u;
        res[2] = 0u;
        res[3] = 0u;
    }
}
