// reduce.glsl: sums and maxima over a whole workgroup through shared memory
// (a power-of-two workgroup size), the same tree in every kernel that
// normalizes a row, so a row normed by norm_quant and by a fused epilogue
// comes out the same. Every invocation must call them (they hold barriers).
// Include it after `layout(local_size_x_id = 0) in;`: before it,
// gl_WorkGroupSize is still (1, 1, 1) and the array would hold one value.

shared float wgRed[gl_WorkGroupSize.x];

float wgSum(float v) {
    uint tid = gl_LocalInvocationID.x;
    wgRed[tid] = v;
    barrier();
    for (uint k = gl_WorkGroupSize.x / 2; k > 0; k >>= 1) {
        if (tid < k) wgRed[tid] += wgRed[tid + k];
        barrier();
    }
    float r = wgRed[0];
    barrier();
    return r;
}

float wgMax(float v) {
    uint tid = gl_LocalInvocationID.x;
    wgRed[tid] = v;
    barrier();
    for (uint k = gl_WorkGroupSize.x / 2; k > 0; k >>= 1) {
        if (tid < k) wgRed[tid] = max(wgRed[tid], wgRed[tid + k]);
        barrier();
    }
    float r = wgRed[0];
    barrier();
    return r;
}
