#version 450
// embed_nibbles: x[t][i] = d[id − row0][i/32] · (c[id − row0][i] − 8) for the
// tokens whose id is in this shard of a token embedding held as Q4_0 in its
// own 4.5 bits (head_nibbles' layout), rows [row0, row0+rows): exactly the
// float32 values the file decodes to.
//   W4     [rows][K/8] uint  per group of 32 four words: byte j the code of
//                            value j (low nibble) and of value j+16 (high)
//   d      [⌈rows·K/32 / 2⌉] uint  the shard's group scales, float16 pairs
//   tokens [T] uint          token ids
//   x      [T][K] float      the residual stream
// One workgroup per token; tokens outside the shard are left for another dispatch.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(std430, binding = 0) readonly buffer W4 { uint w4[]; };
layout(std430, binding = 1) readonly buffer D { uint dh[]; };
layout(std430, binding = 2) readonly buffer Tokens { uint tokens[]; };
layout(std430, binding = 3) writeonly buffer X { float x[]; };

// group is always 32 (push constants shared with the block kernels).
layout(push_constant) uniform Push {
    uint row0;
    uint rows;
    uint K;
    uint group;
} pc;

void main() {
    uint t = gl_WorkGroupID.x;
    uint id = tokens[t];
    if (id < pc.row0 || id - pc.row0 >= pc.rows) {
        return;
    }
    uint r = id - pc.row0;
    uint groups = pc.K / 32;
    // One invocation per word: its 8 values, j = 4k…4k+3 and 16+4k…16+4k+3 of group g.
    for (uint w = gl_LocalInvocationID.x; w < pc.K / 8; w += gl_WorkGroupSize.x) {
        uint g = w / 4, k = w % 4;
        uint i = r * groups + g;
        float d = unpackHalf2x16(dh[i / 2])[i % 2];
        uint c = w4[r * (pc.K / 8) + w];
        for (uint j = 0; j < 4; j++) {
            precise float lo = d * float(int((c >> (8 * j)) & 15u) - 8);
            precise float hi = d * float(int((c >> (8 * j + 4)) & 15u) - 8);
            x[t * pc.K + 32 * g + 4 * k + j] = lo;
            x[t * pc.K + 32 * g + 16 + 4 * k + j] = hi;
        }
    }
}
