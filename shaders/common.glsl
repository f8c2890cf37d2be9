// common.glsl: helpers shared by the kernels. Every buffer is read as 32-bit
// words, so the kernels need no optional storage feature:
//   int8 values   four to a uint, element 4i+j in bits 8j..8j+7 (two's complement)
//   float16 values two to a uint, element 2i+j in bits 16j..16j+15 (unpackHalf2x16)
//   ternary codes the I2_S layout: per 128 weights of a row, 32 bytes; byte j holds
//                 weights j, 32+j, 64+j and 96+j as codes t+1 in bits 7-6, 5-4, 3-2, 1-0.
// Specialization constant 0 is always the workgroup size (local_size_x_id = 0).

#extension GL_EXT_spirv_intrinsics : enable

#ifdef SUBGROUP
// The subgroup twins (…_subgroup kernels; reduce.glsl, ternary.glsl): built
// where the device has these in compute shaders.
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_vote : require
#endif

#ifdef DOT
// OpSDotKHR on two uints holding four int8 each (PackedVectorFormat4x8Bit = 0):
// the device's integer dot product instruction (VK_KHR_shader_integer_dot_product).
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018], id = 4450)
int sdot4x8(uint a, uint b, spirv_literal int format);
int dot4(uint a, uint b) { return sdot4x8(a, b, 0); }
#else
// dot4 is Σ_j a_j·b_j over the four signed bytes of a and b, in plain int32 math.
int dot4(uint a, uint b) {
    int ia = int(a), ib = int(b);
    return bitfieldExtract(ia, 0, 8) * bitfieldExtract(ib, 0, 8)
         + bitfieldExtract(ia, 8, 8) * bitfieldExtract(ib, 8, 8)
         + bitfieldExtract(ia, 16, 8) * bitfieldExtract(ib, 16, 8)
         + bitfieldExtract(ia, 24, 8) * bitfieldExtract(ib, 24, 8);
}
#endif

// nibbleBytes turns four 4-bit codes c ∈ 0…15, one per byte (c & 0x0F0F0F0F),
// into the four signed bytes c−8 ∈ −8…7, without carries between bytes.
uint nibbleBytes(uint c) {
    return (c + 0x78787878u) ^ 0x80808080u;
}

// sixBytes turns four 6-bit codes c ∈ 0…63, one per byte, into the four signed
// bytes c−32 ∈ −32…31, without carries between bytes.
uint sixBytes(uint c) {
    return (c + 0x60606060u) ^ 0x80808080u;
}

// ternaryBytes turns four 2-bit codes c ∈ {0,1,2}, one per byte (c & 0x03030303),
// into the four signed bytes t = c−1 ∈ {−1,0,+1}, without carries between bytes.
uint ternaryBytes(uint c) {
    return ((c | 0x80808080u) - 0x01010101u) ^ 0x80808080u;
}

// quantScale returns s = 127/m rounded to the nearest float32 (ties to even),
// exactly as an IEEE division would, on any device: long division of the
// 24-bit significands in uint32. m must be a positive normal float.
float quantScale(float m) {
    uint u = floatBitsToUint(m);
    uint M = (u & 0x7FFFFFu) | 0x800000u;       // m = M·2^E, 2^23 ≤ M < 2^24
    int E = int((u >> 23) & 0xFFu) - 150;
    uint r = 127u, q = 0u;
    int n = 0;                                  // q = floor(127·2^n / M)
    while (q < 0x1000000u) {                    // until 25 significant bits (bit 24 set)
        r <<= 1;
        q <<= 1;
        if (r >= M) { r -= M; q |= 1u; }
        n++;
    }
    uint mant = q >> 1;                         // 24 bits; q & 1 is the guard bit
    if ((q & 1u) != 0u && (r != 0u || (mant & 1u) != 0u)) {
        mant++;
    }
    int e2 = -(n - 1) - E;                      // 127/m = mant·2^e2
    if (mant == 0x1000000u) { mant >>= 1; e2++; }
    return uintBitsToFloat(uint(e2 + 23 + 127) << 23 | (mant & 0x7FFFFFu));
}

// quant8 is round-half-to-even(v·s) clamped to [−128, 127], as nn/ref quantizes.
int quant8(float v, float s) {
    return int(clamp(roundEven(v * s), -128.0, 127.0));
}

// pack8 packs four int8 values into one uint.
uint pack8(int a, int b, int c, int d) {
    return (uint(a) & 0xFFu) | (uint(b) & 0xFFu) << 8 | (uint(c) & 0xFFu) << 16 | (uint(d) & 0xFFu) << 24;
}

// gateAct is the FFN's gated activation of the pair (g, u): relu(g)²·u
// (act 1, rounded after each product) or silu(g)·u (act 2), the same bits
// in norm_quant and in ternary_norm's prologue.
float gateAct(uint act, float g, float u) {
    if (act == 1u) {
        float r = max(g, 0.0);
        precise float h = (r * r) * u;
        return h;
    }
    return g / (1.0 + exp(-g)) * u;
}

// ropeRotate is RoPE's rotation of the pair (a, b) by (cos θ, sin θ):
// (a·cos − b·sin, a·sin + b·cos), each product rounded (precise: no fused
// multiply-add), so rope_kv and ternary_norm's epilogue agree bit for bit.
vec2 ropeRotate(float a, float b, vec2 cs) {
    precise float lo = a * cs.x - b * cs.y;
    precise float hi = a * cs.y + b * cs.x;
    return vec2(lo, hi);
}
