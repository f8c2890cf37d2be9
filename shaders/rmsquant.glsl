// rmsquant.glsl: RMSNorm and BitLinear's int8 quantization of one token's K
// values by a whole workgroup, shared by norm_quant.comp (one token per
// workgroup) and ternary_norm.comp (each workgroup of a decode step's matrix
// product quantizes its input itself): the same loops over the same lanes
// and the same reduction trees (reduce.glsl), so a token's codes and scale
// are the same bits from both at the same workgroup size.
// Include it after reduce.glsl. The includer defines before it:
//   float rqValue(uint i)          the i-th input value h_i
//   vec4  rqValue4(uint c)         h_{4c} … h_{4c+3} (REGS = 1 reads these)
//   float rqWeight(uint i)         the norm weight w_i
//   void  rqPut(uint i4, uint c)   store the packed codes of values 4·i4…4·i4+3
//
//   rmsInv:   1/sqrt(mean(h²) + eps), rounded as ggml does (rmsScale)
//   rmsValue: v_i = (h_i · inv) · w_i   (h_i when norm is false)
//   rmsQuant: m = max(1e-5, max|v|), s = 127/m correctly rounded (returned),
//             q_i = round_even(v_i·s) clamped to [−128, 127]
// Every invocation of the workgroup must call rmsInv and rmsQuant (barriers).
// K must be a multiple of 4.
//
// The includer also declares spec constants REGS and KMAX (K ≤ KMAX). With
// REGS = 1 an invocation computes its values once, in chunks of four
// (chunk c = tid + j·size, the quantize loop's chunks), all its loads issued
// before the sums, and keeps them in registers through the sum, the
// maximum and the quantization, instead of reading them again in each of
// the three loops; it sums its squares in that chunk order, the same in
// both includers. REGS = 0 walks the values three times, as before.

const uint RQ_CH = (KMAX / 4 + gl_WorkGroupSize.x - 1) / gl_WorkGroupSize.x; // chunks an invocation holds
vec4 rqv[RQ_CH];

// rqLoad computes the invocation's chunks into rqv (REGS = 1).
void rqLoad(uint K) {
    uint tid = gl_LocalInvocationID.x;
    for (uint j = 0; j < RQ_CH; j++) {
        uint c = tid + j * gl_WorkGroupSize.x;
        rqv[j] = vec4(0.0);
        if (4 * c < K) {
            rqv[j] = rqValue4(c);
        }
    }
}

float rmsInv(uint K, float eps) {
    uint tid = gl_LocalInvocationID.x;
    vec2 ss = vec2(0.0);
    if (REGS == 1) {
        rqLoad(K);
        for (uint j = 0; j < RQ_CH; j++) { // past K the chunk is zeros: adds nothing
            for (uint e = 0; e < 4; e++) {
                precise float h2 = rqv[j][e] * rqv[j][e];
                ss = ffAdd(ss, vec2(h2, 0.0));
            }
        }
        return rmsScale(wgSumFF(ss), float(K), eps);
    }
    for (uint i = tid; i < K; i += gl_WorkGroupSize.x) {
        float h = rqValue(i);
        precise float h2 = h * h;
        ss = ffAdd(ss, vec2(h2, 0.0));
    }
    return rmsScale(wgSumFF(ss), float(K), eps);
}

// rmsNormed is v_i from h = h_i.
float rmsNormed(float h, uint i, float inv, bool norm) {
    precise float v = h;
    if (norm) v = (v * inv) * rqWeight(i);
    return v;
}

float rmsValue(uint i, float inv, bool norm) {
    return rmsNormed(rqValue(i), i, inv, norm);
}

float rmsQuant(uint K, float inv, bool norm) {
    uint tid = gl_LocalInvocationID.x;
    float m = 0.0;
    if (REGS == 1) {
        if (!norm) rqLoad(K); // else rmsInv has
        for (uint j = 0; j < RQ_CH; j++) {
            uint c = tid + j * gl_WorkGroupSize.x;
            if (4 * c < K) {
                for (uint e = 0; e < 4; e++) {
                    rqv[j][e] = rmsNormed(rqv[j][e], 4 * c + e, inv, norm);
                    m = max(m, abs(rqv[j][e]));
                }
            }
        }
        m = max(wgMax(m), 1e-5);
        float sc = quantScale(m);
        for (uint j = 0; j < RQ_CH; j++) {
            uint c = tid + j * gl_WorkGroupSize.x;
            if (4 * c < K) {
                rqPut(c, pack8(quant8(rqv[j].x, sc), quant8(rqv[j].y, sc), quant8(rqv[j].z, sc), quant8(rqv[j].w, sc)));
            }
        }
        return sc;
    }
    for (uint i = tid; i < K; i += gl_WorkGroupSize.x) {
        m = max(m, abs(rmsValue(i, inv, norm)));
    }
    m = max(wgMax(m), 1e-5);
    float sc = quantScale(m);
    for (uint i4 = tid; i4 < K / 4; i4 += gl_WorkGroupSize.x) {
        int c[4];
        for (uint j = 0; j < 4; j++) {
            c[j] = quant8(rmsValue(4 * i4 + j, inv, norm), sc);
        }
        rqPut(i4, pack8(c[0], c[1], c[2], c[3]));
    }
    return sc;
}
