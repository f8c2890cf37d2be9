// reduce.glsl: sums and maxima over a whole workgroup through shared memory
// (a power-of-two workgroup size), the same tree in every kernel that
// normalizes a row, so a row normed by norm_quant and by a fused epilogue
// comes out the same. Every invocation must call them (they hold barriers).
// Include it after `layout(local_size_x_id = 0) in;`: before it,
// gl_WorkGroupSize is still (1, 1, 1) and the array would hold one value.
// Compiled with -DSUBGROUP, wgMax reduces each subgroup in registers and
// then the subgroups' maxima (two barriers instead of a tree): a maximum is
// the same in any order, so the result is the tree's bit for bit. Sums keep
// the tree, whose order is the same on every device and in every kernel.

shared float wgRed[gl_WorkGroupSize.x];
shared float wgRedLo[gl_WorkGroupSize.x];

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
#ifdef SUBGROUP
    float sm = subgroupMax(v);
    if (subgroupElect()) wgRed[gl_SubgroupID] = sm;
    barrier();
    float m = wgRed[0];
    for (uint i = 1; i < gl_NumSubgroups; i++) m = max(m, wgRed[i]);
    barrier();
    return m;
#endif
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

// Float-float arithmetic: a value held as hi + lo, |lo| ≤ ulp(hi)/2, which
// keeps a sum of a few thousand float32 terms to ~2^-44 of its size, as the
// float64 sums of ggml's RMSNorm (and so bitnet.cpp's and the CPU
// backend's) do. precise keeps the compiler from reassociating or fusing.

// twoSum returns (s, e) with s = fl(a + b) and s + e = a + b exactly.
vec2 twoSum(float a, float b) {
    precise float s = a + b;
    precise float bb = s - a;
    precise float e = (a - (s - bb)) + (b - bb);
    return vec2(s, e);
}

// split returns a = hi + lo with hi holding a's upper 12 significant bits
// (Dekker), so that products of halves are exact in float32.
vec2 split(float a) {
    precise float c = 4097.0 * a; // 2^12 + 1
    precise float hi = c - (c - a);
    precise float lo = a - hi;
    return vec2(hi, lo);
}

// twoProd returns (p, e) with p = fl(a·b) and p + e = a·b exactly.
vec2 twoProd(float a, float b) {
    precise float p = a * b;
    vec2 as = split(a), bs = split(b);
    precise float e = ((as.x * bs.x - p) + as.x * bs.y + as.y * bs.x) + as.y * bs.y;
    return vec2(p, e);
}

// ffAdd returns x + y for float-float x and y.
vec2 ffAdd(vec2 x, vec2 y) {
    vec2 s = twoSum(x.x, y.x);
    precise float lo = (s.y + x.y) + y.y;
    return twoSum(s.x, lo);
}

// ffMean returns (hi + lo)/n rounded to float32 (but for near ties): the
// quotient of hi, corrected by the exact remainder (an exact fma) and lo.
float ffMean(vec2 v, float n) {
    precise float q = v.x / n;
    // r = v.x − q·n exactly: q·n as a float-float product (Dekker's split,
    // no fma, whose fusing a device need not guarantee).
    vec2 p = twoProd(q, n);
    precise float r = (v.x - p.x) - p.y;
    precise float m = q + (r + v.y) / n;
    return m;
}

// wgSumFF is wgSum in float-float.
vec2 wgSumFF(vec2 v) {
    uint tid = gl_LocalInvocationID.x;
    wgRed[tid] = v.x;
    wgRedLo[tid] = v.y;
    barrier();
    for (uint k = gl_WorkGroupSize.x / 2; k > 0; k >>= 1) {
        if (tid < k) {
            vec2 r = ffAdd(vec2(wgRed[tid], wgRedLo[tid]), vec2(wgRed[tid + k], wgRedLo[tid + k]));
            wgRed[tid] = r.x;
            wgRedLo[tid] = r.y;
        }
        barrier();
    }
    vec2 r = vec2(wgRed[0], wgRedLo[0]);
    barrier();
    return r;
}

// rmsScale is RMSNorm's scale from Σx² (float-float) over n values, rounded
// as ggml rounds it: mean = float32(Σ/n), then 1/sqrtf(mean + eps), each
// step in float32 (sqrt and division correctly rounded where the device
// rounds them so, as lavapipe and CPUs do).
float rmsScale(vec2 ss, float n, float eps) {
    float mean = ffMean(ss, n);
    precise float y = mean + eps;
    precise float r = sqrt(y);
    precise float inv = 1.0 / r;
    return inv;
}
