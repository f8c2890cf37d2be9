// attn_combine.glsl: split-K attention's combination of the chunks'
// partials (attention.comp), shared by attention_reduce.comp and
// ternary_norm.comp's prologue (ACT = 3) so that both give the same bits.
// The includer declares the partials as partial[] ([T][heads][chunks][hd + 2]
// float: acc[hd], then m, then l).

// attnCombine returns the values 4·i4 … 4·i4+3 of token t's attention output
// (heads·hd values, hd a multiple of 4; head h = 4·i4/hd) over the nc chunks
// the token sees, chunks per head in the partials:
//   M = max_c m_c,   L = Σ_c l_c·e^{m_c − M},   o = Σ_c acc_c·e^{m_c − M} / L
vec4 attnCombine(uint t, uint i4, uint nc, uint heads, uint hd, uint chunks) {
    uint stride = hd + 2;
    uint h = 4 * i4 / hd, d = 4 * i4 % hd;
    uint base = (t * heads + h) * chunks * stride;
    float M = partial[base + hd];
    for (uint c = 1; c < nc; c++) M = max(M, partial[base + c * stride + hd]);
    // precise: the includers are separate pipelines, and a compiler free to
    // fuse these multiplies and adds might fuse them differently in each
    // (their bits must agree).
    precise float L = 0.0;
    precise vec4 o = vec4(0.0);
    for (uint c = 0; c < nc; c++) {
        uint b = base + c * stride;
        float e = exp(partial[b + hd] - M);
        L += partial[b + hd + 1] * e;
        o += vec4(partial[b + d], partial[b + d + 1], partial[b + d + 2], partial[b + d + 3]) * e;
    }
    precise vec4 r = o / L;
    return r;
}
