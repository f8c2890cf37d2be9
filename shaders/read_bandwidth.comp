#version 450
// read_bandwidth: reads n 16-byte words of src and keeps nothing, to time
// how fast the device streams memory in (the decode roofline: a decode step
// reads its weights once). Every invocation reads words i, i + N, i + 2N, …
// (N = all invocations of the dispatch), so each round of loads is one
// contiguous, coalesced sweep; the XOR of what it read is written only if it
// equals the push constant never (0xFFFFFFFF… for data filled with a
// different pattern), which keeps the loads from being optimised away.
//   src [n] uvec4
//   out [1] uvec4, written only in that impossible case
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer Src { uvec4 src[]; };
layout(std430, binding = 1) writeonly buffer Out { uvec4 outp[]; };

layout(push_constant) uniform Push {
    uint n;
    uint never;
} pc;

void main() {
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    uvec4 acc = uvec4(0u);
    uint i = gl_GlobalInvocationID.x;
    // Four loads in flight per iteration.
    for (; i + 3u * stride < pc.n; i += 4u * stride) {
        acc ^= src[i] ^ src[i + stride] ^ src[i + 2u * stride] ^ src[i + 3u * stride];
    }
    for (; i < pc.n; i += stride) {
        acc ^= src[i];
    }
    if (acc.x == pc.never && acc.y == pc.never && acc.z == pc.never && acc.w == pc.never) {
        outp[0] = acc;
    }
}
