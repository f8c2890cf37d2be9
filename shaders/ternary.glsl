// ternary.glsl: the body of BitLinear's ternary matrix product, shared by
// ternary.comp (T tokens from the q buffer) and ternary_norm.comp (a decode
// step's one token, quantized by the workgroup itself), so that a row comes
// out of both with the same bits, block-scaled (GROUPED) float sums
// included: the same words per lane, the same order, the same tree.
//
// A row group is `lanes` consecutive invocations (lane 0…lanes−1) computing
// NR rows × NT tokens: lane l takes the row's words l, l + lanes, … and the
// group sums its lanes in shared memory, in a tree. A workgroup holds one
// row group (ternary.comp) or several (ternary_norm.comp).
//
// With VEC = 4 a lane takes four words at a time, one 16-byte load a row
// (quads l, l + lanes, …): more bytes in flight per load, fewer loop trips.
// The integer sums are the same in any order; block-scaled float sums then
// add in another order than with VEC = 1 (the same in both includers).
//
// With PRE = 1 the includer calls ternaryPreload first (before a prologue
// of its own, ternary_norm's norm): a lane's first words of every row come
// into registers while the prologue runs, and ternaryPartial's first trip
// takes them from there (the same words, the same sums).
//
// The includer declares, before including it (after local_size_x_id):
//   spec constants NR, NT, GROUPED, VEC (1 or 4), and PRE (0 or 1)
//   buffers wt[] (ternary codes, see common.glsl), wt4[] (the same
//   binding as uvec4s) and groupScale[]
//   uint tRow(uint r)            the matrix row (of the bound shard) of the
//                                group's r-th row, or ~0u past the end
//   uint tAct(uint t, uint i)    word i of token t's int8 activations
//   uvec4 tAct4(uint t, uint i)  words i…i+3 of them (i a multiple of 4)
// and gets, per (row r, token tt), slot i = r·NT + tt:
//   ternaryPartial(lane, lanes, K, row0, t0, T)  this lane's partial sums
//                                          (row0: the shard's first row
//                                          in groupScale)
//   ternaryReduce(group, lane, lanes)      the group's sums (every
//                                          invocation calls it: barriers)
//   tSum(group, lanes, i)                  the sum of slot i, after that
//   (int bits; float bits when GROUPED, each group's sum with its scale)

shared int tRed[NR * NT * gl_WorkGroupSize.x];
int tAcc[NR * NT];
float tAccF[NR * NT];
uint tPre[NR];   // PRE = 1, VEC = 1: a lane's first word of each row
uvec4 tPre4[NR]; // PRE = 1, VEC = 4: its first quad

// ternaryPreload loads the words of ternaryPartial's first trip (word or
// quad `lane` of each row) into tPre or tPre4.
void ternaryPreload(uint lane, uint K) {
    uint words = K / 16;
    for (uint r = 0; r < NR; r++) {
        uint row = tRow(r);
        tPre[r] = 0x55555555u;
        tPre4[r] = uvec4(0x55555555u);
        if (row != ~0u) { // loads under a branch, not a ?: (see ternary_mm.comp)
            if (VEC == 4) {
                if (lane < words / 4) tPre4[r] = wt4[row * (words / 4) + lane];
            } else if (lane < words) {
                tPre[r] = wt[row * words + lane];
            }
        }
    }
}

// tAdd adds a row's partial sum p over words of weight group g (the group
// scale's column) to slot r·NT + tt.
void tAdd(uint r, uint tt, int p, uint K, uint row0, uint g) {
    if (GROUPED == 1) {
        uint row = tRow(r);
        float gs = row != ~0u ? groupScale[(row0 + row) * (K / 256) + g] : 0.0;
        // precise: every pipeline built from this body (decode, prompt,
        // fused) rounds the product and the sum apart, never as one FMA in
        // some and not others (batch invariance compares them bit for bit).
        precise float sum = tAccF[r * NT + tt] + float(p) * gs;
        tAccF[r * NT + tt] = sum;
    } else {
        tAcc[r * NT + tt] += p;
    }
}

// tDot is a word of codes c against the activation words a0…a3 of its
// 128-weight block (the block's words k, k + 8, k + 16, k + 24).
int tDot(uint c, uint a0, uint a1, uint a2, uint a3) {
    return dot4(ternaryBytes((c >> 6) & 0x03030303u), a0)
         + dot4(ternaryBytes((c >> 4) & 0x03030303u), a1)
         + dot4(ternaryBytes((c >> 2) & 0x03030303u), a2)
         + dot4(ternaryBytes(c & 0x03030303u), a3);
}

void ternaryPartial(uint lane, uint lanes, uint K, uint row0, uint t0, uint T) {
    uint words = K / 16;              // uints per weight row
    for (uint i = 0; i < NR * NT; i++) { tAcc[i] = 0; tAccF[i] = 0.0; }
    if (VEC == 4) {
        uint quads = words / 4;       // K is a multiple of 128: whole quads, each in one block
        for (uint w4 = lane; w4 < quads; w4 += lanes) {
            uint blk = w4 / 2, k = (w4 % 2) * 4; // the block, its first word of the quad
            uvec4 codes[NR];
            for (uint r = 0; r < NR; r++) {
                uint row = tRow(r);
                if (PRE == 1 && w4 == lane) {
                    codes[r] = tPre4[r];
                } else {
                    codes[r] = row != ~0u ? wt4[row * quads + w4] : uvec4(0x55555555u);
                }
            }
            for (uint tt = 0; tt < NT; tt++) {
                uint t = min(t0 + tt, T - 1);
                uint qb = blk * 32 + k;
                uvec4 a0 = tAct4(t, qb), a1 = tAct4(t, qb + 8), a2 = tAct4(t, qb + 16), a3 = tAct4(t, qb + 24);
                for (uint r = 0; r < NR; r++) {
                    uvec4 c = codes[r];
                    int p = tDot(c.x, a0.x, a1.x, a2.x, a3.x) + tDot(c.y, a0.y, a1.y, a2.y, a3.y)
                          + tDot(c.z, a0.z, a1.z, a2.z, a3.z) + tDot(c.w, a0.w, a1.w, a2.w, a3.w);
                    tAdd(r, tt, p, K, row0, w4 / 4);
                }
            }
        }
        return;
    }
    for (uint w = lane; w < words; w += lanes) {
        uint blk = w / 8, k = w % 8;  // 128-weight block, byte quad within it
        uint codes[NR];
        for (uint r = 0; r < NR; r++) {
            uint row = tRow(r);
            if (PRE == 1 && w == lane) {
                codes[r] = tPre[r];
            } else {
                codes[r] = row != ~0u ? wt[row * words + w] : 0x55555555u; // code 1: weight 0
            }
        }
        for (uint tt = 0; tt < NT; tt++) {
            uint t = min(t0 + tt, T - 1);
            uint qb = blk * 32 + k;
            uint a0 = tAct(t, qb), a1 = tAct(t, qb + 8), a2 = tAct(t, qb + 16), a3 = tAct(t, qb + 24);
            for (uint r = 0; r < NR; r++) {
                tAdd(r, tt, tDot(codes[r], a0, a1, a2, a3), K, row0, w / 16);
            }
        }
    }
}

void ternaryReduce(uint group, uint lane, uint lanes) {
    uint base = group * NR * NT * lanes;
#ifdef SUBGROUP
    // Integer sums in any order: each subgroup adds its lanes in registers
    // and one lane adds that to the group's slot (every lane its own where a
    // subgroup spans two row groups), two barriers instead of a tree.
    // Block-scaled float sums keep the tree below, the same on every device.
    if (GROUPED == 0) {
        if (lane == 0) {
            for (uint i = 0; i < NR * NT; i++) tRed[base + i * lanes] = 0;
        }
        barrier();
        bool whole = subgroupAllEqual(group);
        for (uint i = 0; i < NR * NT; i++) {
            if (whole) {
                int s = subgroupAdd(tAcc[i]);
                if (subgroupElect()) atomicAdd(tRed[base + i * lanes], s);
            } else {
                atomicAdd(tRed[base + i * lanes], tAcc[i]);
            }
        }
        barrier();
        return;
    }
#endif
    for (uint i = 0; i < NR * NT; i++) {
        tRed[base + i * lanes + lane] = GROUPED == 1 ? floatBitsToInt(tAccF[i]) : tAcc[i];
    }
    barrier();
    for (uint h = lanes / 2; h > 0; h >>= 1) {
        if (lane < h) {
            for (uint i = 0; i < NR * NT; i++) {
                uint a = base + i * lanes + lane;
                if (GROUPED == 1) {
                    tRed[a] = floatBitsToInt(intBitsToFloat(tRed[a]) + intBitsToFloat(tRed[a + h]));
                } else {
                    tRed[a] += tRed[a + h];
                }
            }
        }
        barrier();
    }
}

int tSum(uint group, uint lanes, uint i) {
    return tRed[(group * NR * NT + i) * lanes];
}

// tOut is BitLinear's output from a slot's sum: float32(float32(Σ)/s)·scale,
// as bitnet.cpp rounds it (precise: no fused multiply-add with a residual);
// the block-scaled sum is already scaled.
float tOut(int sum, float s, float rowScale) {
    precise float y = GROUPED == 1 ? intBitsToFloat(sum) / s : (float(sum) / s) * rowScale;
    return y;
}
