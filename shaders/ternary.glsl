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
// The includer declares, before including it (after local_size_x_id):
//   spec constants NR, NT, GROUPED
//   buffers wt[] (ternary codes, see common.glsl) and groupScale[]
//   uint tRow(uint r)            the matrix row (of the bound shard) of the
//                                group's r-th row, or ~0u past the end
//   uint tAct(uint t, uint i)    word i of token t's int8 activations
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

void ternaryPartial(uint lane, uint lanes, uint K, uint row0, uint t0, uint T) {
    uint words = K / 16;              // uints per weight row
    for (uint i = 0; i < NR * NT; i++) { tAcc[i] = 0; tAccF[i] = 0.0; }
    for (uint w = lane; w < words; w += lanes) {
        uint blk = w / 8, k = w % 8;  // 128-weight block, byte quad within it
        uint codes[NR];
        for (uint r = 0; r < NR; r++) {
            uint row = tRow(r);
            codes[r] = row != ~0u ? wt[row * words + w] : 0x55555555u; // code 1: weight 0
        }
        for (uint tt = 0; tt < NT; tt++) {
            uint t = min(t0 + tt, T - 1);
            uint qb = blk * 32 + k;
            uint a0 = tAct(t, qb), a1 = tAct(t, qb + 8), a2 = tAct(t, qb + 16), a3 = tAct(t, qb + 24);
            for (uint r = 0; r < NR; r++) {
                uint c = codes[r];
                int p = dot4(ternaryBytes((c >> 6) & 0x03030303u), a0)
                      + dot4(ternaryBytes((c >> 4) & 0x03030303u), a1)
                      + dot4(ternaryBytes((c >> 2) & 0x03030303u), a2)
                      + dot4(ternaryBytes(c & 0x03030303u), a3);
                if (GROUPED == 1) {
                    uint row = tRow(r);
                    float g = row != ~0u ? groupScale[(row0 + row) * (K / 256) + w / 16] : 0.0;
                    tAccF[r * NT + tt] += float(p) * g;
                } else {
                    tAcc[r * NT + tt] += p;
                }
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
