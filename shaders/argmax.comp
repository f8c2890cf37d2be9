#version 450
// argmax: the index of the largest of n logits, the lowest index on ties,
// NaNs ignored (0xFFFFFFFF when every logit is NaN): greedy sampling on the
// device, so a decode step reads back one id. Two stages (spec constant
// STAGE), each one dispatch:
//   STAGE 0, groups workgroups: workgroup g takes logits chunk·g … chunk·g +
//     chunk − 1 (those below n) and writes its best as part[2g] (the value's
//     bits) and part[2g+1] (its index, 0xFFFFFFFF for none), so a
//     vocabulary is read by many workgroups at once instead of one;
//   STAGE 1, one workgroup: the best of the groups partials into result[0].
// chunk and groups are the same push constants in both stages. With one
// group, stage 0 writes result[0] itself and stage 1 is not run (a CPU
// device, where a dispatch costs more than the scan).
// Either stage keeps the lowest index among equal values: an invocation
// scans its indices in increasing order and takes only a greater value, and
// every merge prefers the lower index on a tie.
//   logits [..] float, read from off
//   part   [2·groups] uint
//   result [0] uint
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint STAGE = 0;

layout(std430, binding = 0) readonly buffer L { float logits[]; };
layout(std430, binding = 1) buffer P { uint part[]; };
layout(std430, binding = 2) writeonly buffer R { uint result[]; };

layout(push_constant) uniform Push {
    uint n;
    uint off;
    uint chunk;
    uint groups;
} pc;

shared float bv[gl_WorkGroupSize.x];
shared uint bi[gl_WorkGroupSize.x];

const uint NONE = 0xFFFFFFFFu;

// better says whether (ov, oi) beats (v, i): a value beats none, a greater
// value beats a smaller one, and the lower index wins a tie.
bool better(float ov, uint oi, float v, uint i) {
    return oi != NONE && (i == NONE || ov > v || (ov == v && oi < i));
}

void main() {
    uint tid = gl_LocalInvocationID.x;
    float best = 0.0;
    uint bidx = NONE;
    if (STAGE == 0) {
        uint lo = gl_WorkGroupID.x * pc.chunk;
        uint hi = min(pc.n, lo + pc.chunk);
        for (uint i = lo + tid; i < hi; i += gl_WorkGroupSize.x) {
            float v = logits[pc.off + i];
            if (!isnan(v) && (bidx == NONE || v > best)) {
                best = v;
                bidx = i;
            }
        }
    } else {
        for (uint g = tid; g < pc.groups; g += gl_WorkGroupSize.x) {
            float v = uintBitsToFloat(part[2 * g]);
            uint i = part[2 * g + 1];
            if (better(v, i, best, bidx)) {
                best = v;
                bidx = i;
            }
        }
    }
    bv[tid] = best;
    bi[tid] = bidx;
    barrier();
    for (uint k = gl_WorkGroupSize.x / 2; k > 0; k >>= 1) {
        if (tid < k && better(bv[tid + k], bi[tid + k], bv[tid], bi[tid])) {
            bv[tid] = bv[tid + k];
            bi[tid] = bi[tid + k];
        }
        barrier();
    }
    if (tid == 0) {
        if (STAGE == 0 && pc.groups > 1) {
            part[2 * gl_WorkGroupID.x] = floatBitsToUint(bv[0]);
            part[2 * gl_WorkGroupID.x + 1] = bi[0];
        } else {
            result[0] = bi[0];
        }
    }
}
