#version 450
// attention_reduce: the second half of split-K attention (see attention.comp).
// One workgroup per (token t, query head h) combines the partials of the
// ⌈n_t/CHUNK⌉ chunks that token t sees (n_t = pos0 + t + 1):
//   M = max_c m_c,   L = Σ_c l_c·e^{m_c − M},   o = Σ_c acc_c·e^{m_c − M} / L
//   partial [T][heads][chunks][hd + 2] float   acc[hd], then m, then l
//   out     [T][heads·hd] float
//   params  [0] = pos0
// Every chunk combined holds at least one position the row sees, so L ≥ 1.
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint CHUNK = 256;   // positions per chunk

layout(std430, binding = 0) readonly buffer Partial { float partial[]; };
layout(std430, binding = 1) writeonly buffer Out { float outp[]; };
layout(std430, binding = 2) readonly buffer Params { uint params[]; };

layout(push_constant) uniform Push {
    uint heads;
    uint hd;
    uint chunks;
} pc;

void main() {
    uint t = gl_WorkGroupID.x, h = gl_WorkGroupID.y;
    uint n = params[0] + t + 1;
    uint nc = (n + CHUNK - 1) / CHUNK;
    uint stride = pc.hd + 2;
    uint base = (t * pc.heads + h) * pc.chunks * stride;
    float M = partial[base + pc.hd];
    for (uint c = 1; c < nc; c++) M = max(M, partial[base + c * stride + pc.hd]);
    float L = 0.0;
    for (uint c = 0; c < nc; c++) {
        uint b = base + c * stride + pc.hd;
        L += partial[b + 1] * exp(partial[b] - M);
    }
    for (uint d = gl_LocalInvocationID.x; d < pc.hd; d += gl_WorkGroupSize.x) {
        float o = 0.0;
        for (uint c = 0; c < nc; c++) {
            uint b = base + c * stride;
            o += partial[b + d] * exp(partial[b + pc.hd] - M);
        }
        outp[(t * pc.heads + h) * pc.hd + d] = o / L;
    }
}
