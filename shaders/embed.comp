#version 450
// embed: x[t][i] = f32(table[tokens[t] − row0][i]) for the tokens whose id is in
// this shard of the float16 token embedding, rows [row0, row0+rows).
//   table  [rows][K/2] uint   float16 pairs, one shard of token_embd
//   tokens [T] uint           token ids
//   x      [T][K] float       the residual stream
// One workgroup per token; tokens outside the shard are left for another dispatch.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(std430, binding = 0) readonly buffer Table { uint table[]; };
layout(std430, binding = 1) readonly buffer Tokens { uint tokens[]; };
layout(std430, binding = 2) writeonly buffer X { float x[]; };

layout(push_constant) uniform Push {
    uint row0;
    uint rows;
    uint K;
} pc;

void main() {
    uint t = gl_WorkGroupID.x;
    uint id = tokens[t];
    if (id < pc.row0 || id - pc.row0 >= pc.rows) {
        return;
    }
    uint src = (id - pc.row0) * (pc.K / 2);
    for (uint w = gl_LocalInvocationID.x; w < pc.K / 2; w += gl_WorkGroupSize.x) {
        vec2 v = unpackHalf2x16(table[src + w]);
        x[t * pc.K + 2 * w] = v.x;
        x[t * pc.K + 2 * w + 1] = v.y;
    }
}
