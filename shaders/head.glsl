// head.glsl: the float sums of the output-head kernels (head_f16,
// head_blocks, head_nibbles, head_six). Each invocation holds its share of
// the partial sums of its workgroup's NR rows × NT tokens in acc (index
// r·NT + t); headReduce sums them over the workgroup by one shared-memory
// tree, the same in every head, and returns to invocation tid < NR·NT the
// sum of row tid/NT and token tid%NT, which it stores. Every invocation must
// call it (it holds barriers). Include it after NR's and NT's declarations
// and the local_size layout.

shared float headRed[NR * NT * gl_WorkGroupSize.x];
float acc[NR * NT];

float headReduce() {
    uint tid = gl_LocalInvocationID.x;
    for (uint i = 0; i < NR * NT; i++) headRed[i * gl_WorkGroupSize.x + tid] = acc[i];
    barrier();
    for (uint h = gl_WorkGroupSize.x / 2; h > 0; h >>= 1) {
        if (tid < h) {
            for (uint i = 0; i < NR * NT; i++) headRed[i * gl_WorkGroupSize.x + tid] += headRed[i * gl_WorkGroupSize.x + tid + h];
        }
        barrier();
    }
    return tid < NR * NT ? headRed[tid * gl_WorkGroupSize.x] : 0.0;
}
