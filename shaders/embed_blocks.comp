#version 450
// embed_blocks: x[t][i] = gscale[id − row0][i/G] · code[id − row0][i] for the
// tokens whose id is in this shard of a token embedding stored as a block type
// (nn.HeadBlocks: Q8_0, Q4_0 with G = 32; Q6_K with G = 16), rows
// [row0, row0+rows): exactly the float32 values the file decodes to.
//   codes  [rows][K/4] uint   int8 codes, one shard
//   gscale [rows][K/G] float  the shard's group scales
//   tokens [T] uint           token ids
//   x      [T][K] float       the residual stream
// One workgroup per token; tokens outside the shard are left for another dispatch.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(std430, binding = 0) readonly buffer Codes { uint codes[]; };
layout(std430, binding = 1) readonly buffer GS { float gscale[]; };
layout(std430, binding = 2) readonly buffer Tokens { uint tokens[]; };
layout(std430, binding = 3) writeonly buffer X { float x[]; };

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
    uint groups = pc.K / pc.group;
    for (uint w = gl_LocalInvocationID.x; w < pc.K / 4; w += gl_WorkGroupSize.x) {
        int c = int(codes[r * (pc.K / 4) + w]);
        for (uint j = 0; j < 4; j++) {
            uint i = 4 * w + j;
            precise float v = gscale[r * groups + i / pc.group] * float(bitfieldExtract(c, int(8 * j), 8));
            x[t * pc.K + i] = v;
        }
    }
}
