#version 450
// embed_six: x[t][i] = (d[id − row0][i/256]·sc[id − row0][i/16]) · (c[id − row0][i] − 32)
// for the tokens whose id is in this shard of a token embedding held as Q6_K in
// head_six's layout, rows [row0, row0+rows): exactly the float32 values the
// file decodes to (ggml's order: the scale d·sc first, then the code).
//   W6     [rows][3K/16] uint  per group of 16 values A0, A1 (low nibbles), H (high bits)
//   sc     [rows][K/64 + K/256] uint  the groups' int8 sc, four to a word, then the blocks' d
//   tokens [T] uint            token ids
//   x      [T][K] float        the residual stream
// One workgroup per token; tokens outside the shard are left for another dispatch.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(std430, binding = 0) readonly buffer W6 { uint w6[]; };
layout(std430, binding = 1) readonly buffer SC { uint sc[]; };
layout(std430, binding = 2) readonly buffer Tokens { uint tokens[]; };
layout(std430, binding = 3) writeonly buffer X { float x[]; };

// group is always 16 (push constants shared with the block kernels).
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
    uint scWords = pc.K / 64 + pc.K / 256;
    // One invocation per group of 16 values.
    for (uint g = gl_LocalInvocationID.x; g < pc.K / 16; g += gl_WorkGroupSize.x) {
        uint base = r * (3 * pc.K / 16) + 3 * g;
        uint a0 = w6[base], a1 = w6[base + 1], h = w6[base + 2];
        uint sb = r * scWords;
        int sg = bitfieldExtract(int(sc[sb + g / 4]), int(8 * (g % 4)), 8);
        precise float scale = uintBitsToFloat(sc[sb + pc.K / 64 + g / 16]) * float(sg);
        for (uint j = 0; j < 4; j++) {
            uint lo = j < 2 ? (j == 0 ? a0 : a1) : ((j == 2 ? a0 : a1) >> 4);
            uint c = (lo & 0x0F0F0F0Fu) | ((h >> (2 * j)) & 0x03030303u) << 4;
            for (uint b = 0; b < 4; b++) {
                precise float v = scale * float(int((c >> (8 * b)) & 63u) - 32);
                x[t * pc.K + 16 * g + 4 * j + b] = v;
            }
        }
    }
}
