#version 450
// argmax: the index of the largest of n logits, the lowest index on ties,
// NaNs ignored (0xFFFFFFFF when every logit is NaN): greedy sampling on the
// device, so a decode step reads back one id. One workgroup.
//   logits [..] float, read from off
//   result [0] uint
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer L { float logits[]; };
layout(std430, binding = 1) writeonly buffer R { uint result[]; };

layout(push_constant) uniform Push {
    uint n;
    uint off;
} pc;

shared float bv[gl_WorkGroupSize.x];
shared uint bi[gl_WorkGroupSize.x];

void main() {
    uint tid = gl_LocalInvocationID.x;
    float best = 0.0;
    uint bidx = 0xFFFFFFFFu;
    for (uint i = tid; i < pc.n; i += gl_WorkGroupSize.x) {
        float v = logits[pc.off + i];
        if (!isnan(v) && (bidx == 0xFFFFFFFFu || v > best)) {
            best = v;
            bidx = i;
        }
    }
    bv[tid] = best;
    bi[tid] = bidx;
    barrier();
    for (uint k = gl_WorkGroupSize.x / 2; k > 0; k >>= 1) {
        if (tid < k) {
            uint oi = bi[tid + k];
            float ov = bv[tid + k];
            if (oi != 0xFFFFFFFFu && (bi[tid] == 0xFFFFFFFFu || ov > bv[tid] || (ov == bv[tid] && oi < bi[tid]))) {
                bv[tid] = ov;
                bi[tid] = oi;
            }
        }
        barrier();
    }
    if (tid == 0) {
        result[0] = bi[0];
    }
}
