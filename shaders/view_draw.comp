#version 450
// view_draw: one layer of a bitvk view frame. Items are filled rectangles
// and 5×7 glyphs scaled by an integer; workgroup g draws items
// first + g, first + g + G, … (G = the dispatch's workgroups) of the layer,
// its invocations striding over the item's pixels. Layers are separate
// dispatches with a barrier between, so later layers cover earlier ones.
//   pixels [height][width] uint: a pixel's bytes R, G, B, A in memory
//          (B, G, R, A when the BGRA specialization constant is 1)
//   items  [8 + 4n] uint: the first item of each layer, then the end of the
//          last (at most 7 layers); then per item x | y<<16, w | h<<16 (rectangle) or glyph | scale<<16,
//          colour (R in the low byte), kind (0 rectangle, 1 glyph)
//   font   [96][2] uint: a glyph's ink, bit 5·row + column of the pair
// view/canvas.go writes the items and holds the reference rasterizer.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint BGRA = 0;

layout(std430, binding = 0) writeonly buffer Pixels { uint pixels[]; };
layout(std430, binding = 1) readonly buffer Items { uint items[]; };
layout(std430, binding = 2) readonly buffer Font { uint font[]; };

layout(push_constant) uniform Push {
    uint width;
    uint height;
    uint layer;
} pc;

void put(uint x, uint y, uint c) {
    if (x < pc.width && y < pc.height) {
        if (BGRA == 1u) {
            c = (c & 0xff00ff00u) | ((c & 0xffu) << 16) | ((c >> 16) & 0xffu);
        }
        pixels[y * pc.width + x] = c;
    }
}

void main() {
    uint first = items[pc.layer];
    uint end = items[pc.layer + 1u];
    for (uint i = first + gl_WorkGroupID.x; i < end; i += gl_NumWorkGroups.x) {
        uint base = 8u + 4u * i;
        uint x0 = items[base] & 0xffffu;
        uint y0 = items[base] >> 16;
        uint size = items[base + 1u];
        uint c = items[base + 2u];
        if (items[base + 3u] == 0u) {
            uint w = size & 0xffffu;
            uint n = w * (size >> 16);
            for (uint p = gl_LocalInvocationID.x; p < n; p += gl_WorkGroupSize.x) {
                put(x0 + p % w, y0 + p / w, c);
            }
        } else {
            uint g = size & 0xffffu;
            uint s = max(size >> 16, 1u);
            uint lo = font[2u * g];
            uint hi = font[2u * g + 1u];
            uint w = 5u * s;
            uint n = w * 7u * s;
            for (uint p = gl_LocalInvocationID.x; p < n; p += gl_WorkGroupSize.x) {
                uint x = p % w;
                uint y = p / w;
                uint bit = 5u * (y / s) + x / s;
                uint word = bit < 32u ? lo : hi;
                if (((word >> (bit & 31u)) & 1u) != 0u) {
                    put(x0 + x, y0 + y, c);
                }
            }
        }
    }
}
