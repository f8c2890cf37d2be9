#version 450
// int8_peak: the device's rate of int8 multiply-adds through dot4 (the
// integer dot product instruction in int8_peak_dot, plain int32 math in
// int8_peak), the peak a ternary matrix product of many tokens (a prefill)
// is held to, as read_bandwidth is the decode's. Every invocation runs
// CHAINS independent chains of iters steps each,
//     x ← dot4(x, b) + x
// (x's four bytes dotted with b's, four multiply-adds): each step needs the
// last, so no compiler can fold the loop, and CHAINS of them keep the
// arithmetic units busy rather than waiting on latency. The sum of the
// chains is written only if it equals the push constant never, which keeps
// the work from being optimised away (the sink is never read, so a chance
// match does no harm). Multiply-adds per dispatch:
// groups · local size · iters · CHAINS · 4.
//   out [1] int, written only in that impossible case
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;

const uint CHAINS = 16u;

layout(std430, binding = 0) writeonly buffer Out { int outp[]; };

layout(push_constant) uniform Push {
    uint iters;
    uint b;
    uint seed;
    uint never;
} pc;

void main() {
    uint x[CHAINS];
    for (uint c = 0u; c < CHAINS; c++) {
        x[c] = pc.seed ^ (gl_GlobalInvocationID.x * 0x9E3779B9u) ^ (c * 0x01010101u);
    }
    for (uint i = 0u; i < pc.iters; i++) {
        for (uint c = 0u; c < CHAINS; c++) {
            x[c] = uint(dot4(x[c], pc.b) + int(x[c]));
        }
    }
    uint s = 0u;
    for (uint c = 0u; c < CHAINS; c++) {
        s += x[c];
    }
    if (s == pc.never) {
        outp[0] = int(s);
    }
}
