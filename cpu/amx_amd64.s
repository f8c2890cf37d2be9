//go:build !purego

// AMX kernels (Intel Advanced Matrix Extensions, AMX-TILE + AMX-INT8:
// Sapphire Rapids and later). Written by hand, not by tools/asmgen: neither
// avo nor the Go assembler knows the AMX instructions, so each one is a
// macro of its bytes (checked against GNU as), with its registers fixed.
// cpu/amx_amd64.go holds the Go side and the contract; docs/KERNELS.md the
// measurements.
//
// amxTernaryTiles: the ternary matrix product ternaryMatMul of kernels.go,
//
//	out[t·outStride + r] = Σ_k c(w[r·stride:], k)·x[t][k]     (exact, int32)
//
// in blocks of 32 weight rows × 32 tokens. A tile product TDPBUSD
// C += A·B multiplies unsigned bytes A (16 rows × 64) by signed bytes B
// (16 × 64 in the "VNNI" layout: row kk holds 16 columns of 4 consecutive
// k) into 16×16 int32, 16·16·64 multiply-adds. Eight tile registers:
//
//	tmm0, tmm1  A: the codes c ∈ {0,1,2} of weight rows 0-15 and 16-31 of
//	            the block over 64 k, unpacked from the ternary layout into
//	            a staging set: one 32-byte block of a row, broadcast to both
//	            halves of a zmm, gives its 128 codes in k order (two k
//	            chunks) by two GF2P8AFFINEQB, each byte's bits 7:6 | 5:4
//	            and 3:2 | 1:0 (low | high half) moved to bits 1:0 by the
//	            bit matrices of amxCodes01 and amxCodes23 (one operation
//	            where a per-lane shift and a mask took two: 3-8% faster)
//	tmm2, tmm3  B: tokens 0-15 and 16-31 over the same 64 k, packed once
//	            per call by amxPackX ([token tile][k/64][k/4 mod 16][token][4])
//	tmm4…tmm7   C: the four 16×16 products, over the whole row
//
// Each k chunk loads 2 A tiles (just unpacked, from L1) and 2 B tiles (from
// L2) for 4 products: half a KiB of B per product, against a whole KiB for
// one A tile against six B tiles (0-12% faster from 64 tokens on, 17% slower
// at 16, which pads to 32). The unpacking runs one block ahead of the tile
// loads, into the other of two staging sets, so a tile load does not wait
// on the stores just made (1.2-3x).
// C holds [weight row][token]; out wants [token][weight row], so each
// finished C tile is stored to scratch and transposed as 16×16 dwords
// (amxTranspose16) on its way out, once per 16·16·n multiply-adds.
//
// amxTernaryFew: the same for 1-16 tokens (a speculative verification, a
// server step of several streams), one B tile per k chunk for two
// products. Its weights come from DRAM once per call, so it prefetches
// the next group of 32 rows into L2 as it unpacks this one (PREFETCHT1;
// the hardware does not follow 32 interleaved row streams): from DRAM
// 10 GB/s on the Intel Xeon VM, 7 without, 12 for the one-token VNNI row
// kernel; PREFETCHT0, or two groups ahead, 20-30% slower. The first pair
// of token tiles of amxTernaryTiles prefetches the same way (6912 × 2560
// from DRAM, 17 and 32 tokens 25% faster, 64 15%, 128 3-5%).

#include "textflag.h"

#define LDTILECFG_AX    BYTE $0xC4; BYTE $0xE2; BYTE $0x78; BYTE $0x49; BYTE $0x00
#define TILERELEASE     BYTE $0xC4; BYTE $0xE2; BYTE $0x78; BYTE $0x49; BYTE $0xC0
#define TILEZERO(modrm) BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x49; BYTE $modrm
// tileloadd tmm0, (SI)(CX*1); tmm1, (BX)(CX*1); tmm2, (DX)(CX*1); tmm3, (BX)(CX*1)
#define LOAD_A0_SI      BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x4B; BYTE $0x04; BYTE $0x0E
#define LOAD_A1_BX      BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x4B; BYTE $0x0C; BYTE $0x0B
#define LOAD_B0_DX      BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x4B; BYTE $0x14; BYTE $0x0A
#define LOAD_B1_BX      BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x4B; BYTE $0x1C; BYTE $0x0B
// tdpbusd tmm4, tmm0, tmm2; tmm5, tmm0, tmm3; tmm6, tmm1, tmm2; tmm7, tmm1, tmm3
#define TDP_C00         BYTE $0xC4; BYTE $0xE2; BYTE $0x69; BYTE $0x5E; BYTE $0xE0
#define TDP_C01         BYTE $0xC4; BYTE $0xE2; BYTE $0x61; BYTE $0x5E; BYTE $0xE8
#define TDP_C10         BYTE $0xC4; BYTE $0xE2; BYTE $0x69; BYTE $0x5E; BYTE $0xF1
#define TDP_C11         BYTE $0xC4; BYTE $0xE2; BYTE $0x61; BYTE $0x5E; BYTE $0xF9
// tdpbusd tmmN, tmm0, tmm1 (modrm 0xC0 | N<<3): the peak probe
#define TDP_PROBE(modrm) BYTE $0xC4; BYTE $0xE2; BYTE $0x71; BYTE $0x5E; BYTE $modrm
// tilestored (BX)(CX*1), tmmN (modrm N<<3 | 4)
#define STORE_C(modrm)  BYTE $0xC4; BYTE $0xE2; BYTE $0x7A; BYTE $0x4B; BYTE $modrm; BYTE $0x0B

// GF2P8AFFINEQB bit matrices, one per qword: output bit b of a byte is the
// parity of (matrix byte 7−b) AND the byte. amxCodes01: bits 7:6 → 1:0 in
// the low half (codes of k 0-31), bits 5:4 → 1:0 in the high half (k
// 32-63); amxCodes23: bits 3:2 and 1:0 (k 64-95, 96-127).
DATA amxCodes01<>+0(SB)/8, $0x4080000000000000
DATA amxCodes01<>+8(SB)/8, $0x4080000000000000
DATA amxCodes01<>+16(SB)/8, $0x4080000000000000
DATA amxCodes01<>+24(SB)/8, $0x4080000000000000
DATA amxCodes01<>+32(SB)/8, $0x1020000000000000
DATA amxCodes01<>+40(SB)/8, $0x1020000000000000
DATA amxCodes01<>+48(SB)/8, $0x1020000000000000
DATA amxCodes01<>+56(SB)/8, $0x1020000000000000
GLOBL amxCodes01<>(SB), RODATA|NOPTR, $64
DATA amxCodes23<>+0(SB)/8, $0x0408000000000000
DATA amxCodes23<>+8(SB)/8, $0x0408000000000000
DATA amxCodes23<>+16(SB)/8, $0x0408000000000000
DATA amxCodes23<>+24(SB)/8, $0x0408000000000000
DATA amxCodes23<>+32(SB)/8, $0x0102000000000000
DATA amxCodes23<>+40(SB)/8, $0x0102000000000000
DATA amxCodes23<>+48(SB)/8, $0x0102000000000000
DATA amxCodes23<>+56(SB)/8, $0x0102000000000000
GLOBL amxCodes23<>(SB), RODATA|NOPTR, $64

// UNPACK_ROW(off) unpacks the 32-byte block at (R10) into the 64 codes of
// its first half at off(DI) and of its second at 1024+off(DI), then steps
// R10 to the next row. (Prefetching each row 256 bytes ahead gained
// nothing at 128 tokens, where each group is read from L1 and L2 for every
// pair of token tiles; a pass that streams the group once gains from
// prefetching the next group: UNPACK_ROW_PF.)
#define UNPACK_ROW(off) \
	VBROADCASTI64X4 (R10), Z0 \
	VGF2P8AFFINEQB  $0, Z28, Z0, Z1 \
	VGF2P8AFFINEQB  $0, Z29, Z0, Z2 \
	VMOVDQU64       Z1, off(DI) \
	VMOVDQU64       Z2, 1024+off(DI) \
	ADDQ            R8, R10

// UNPACK32 unpacks the block at (R10) of 32 rows R8 bytes apart into the
// staging set at DI: [A0 chunk 0][A0 chunk 1][A1 chunk 0][A1 chunk 1].
#define UNPACK32 \
	UNPACK_ROW(0) \
	UNPACK_ROW(64) \
	UNPACK_ROW(128) \
	UNPACK_ROW(192) \
	UNPACK_ROW(256) \
	UNPACK_ROW(320) \
	UNPACK_ROW(384) \
	UNPACK_ROW(448) \
	UNPACK_ROW(512) \
	UNPACK_ROW(576) \
	UNPACK_ROW(640) \
	UNPACK_ROW(704) \
	UNPACK_ROW(768) \
	UNPACK_ROW(832) \
	UNPACK_ROW(896) \
	UNPACK_ROW(960) \
	UNPACK_ROW(2048) \
	UNPACK_ROW(2112) \
	UNPACK_ROW(2176) \
	UNPACK_ROW(2240) \
	UNPACK_ROW(2304) \
	UNPACK_ROW(2368) \
	UNPACK_ROW(2432) \
	UNPACK_ROW(2496) \
	UNPACK_ROW(2560) \
	UNPACK_ROW(2624) \
	UNPACK_ROW(2688) \
	UNPACK_ROW(2752) \
	UNPACK_ROW(2816) \
	UNPACK_ROW(2880) \
	UNPACK_ROW(2944) \
	UNPACK_ROW(3008)

// UNPACK_ROW_PF(off) is UNPACK_ROW(off) that also prefetches into L2 the
// same bytes of the row 32 rows on (R11 = 32·stride): the next group's.
// A 64-byte line holds two blocks of a row, so the kernels prefetch with
// the even blocks only (5-10% faster than with every block).
#define UNPACK_ROW_PF(off) \
	PREFETCHT1      (R10)(R11*1) \
	UNPACK_ROW(off)

// UNPACK32PF is UNPACK32 with UNPACK_ROW_PF: it also prefetches the
// block's bytes of the next group of 32 rows.
#define UNPACK32PF \
	UNPACK_ROW_PF(0) \
	UNPACK_ROW_PF(64) \
	UNPACK_ROW_PF(128) \
	UNPACK_ROW_PF(192) \
	UNPACK_ROW_PF(256) \
	UNPACK_ROW_PF(320) \
	UNPACK_ROW_PF(384) \
	UNPACK_ROW_PF(448) \
	UNPACK_ROW_PF(512) \
	UNPACK_ROW_PF(576) \
	UNPACK_ROW_PF(640) \
	UNPACK_ROW_PF(704) \
	UNPACK_ROW_PF(768) \
	UNPACK_ROW_PF(832) \
	UNPACK_ROW_PF(896) \
	UNPACK_ROW_PF(960) \
	UNPACK_ROW_PF(2048) \
	UNPACK_ROW_PF(2112) \
	UNPACK_ROW_PF(2176) \
	UNPACK_ROW_PF(2240) \
	UNPACK_ROW_PF(2304) \
	UNPACK_ROW_PF(2368) \
	UNPACK_ROW_PF(2432) \
	UNPACK_ROW_PF(2496) \
	UNPACK_ROW_PF(2560) \
	UNPACK_ROW_PF(2624) \
	UNPACK_ROW_PF(2688) \
	UNPACK_ROW_PF(2752) \
	UNPACK_ROW_PF(2816) \
	UNPACK_ROW_PF(2880) \
	UNPACK_ROW_PF(2944) \
	UNPACK_ROW_PF(3008)

// TILES_ENTER(done) is the entry of the tile kernels: the tile
// configuration, CX = 64 (the staging and B tiles' row stride), the first
// group's weights and outputs and the groups left in the frame; to done
// when there are none.
#define TILES_ENTER(done) \
	MOVQ  cfg+72(FP), AX \
	LDTILECFG_AX \
	MOVQ  $64, CX \
	MOVQ  w+0(FP), AX \
	MOVQ  AX, wg-8(SP) \
	MOVQ  out+48(FP), AX \
	MOVQ  AX, outg-16(SP) \
	MOVQ  groups+24(FP), AX \
	MOVQ  AX, left-24(SP) \
	TESTQ AX, AX \
	JZ    done

// UNPACK_NEXT(plain, unpacked) unpacks block b+1 (byte offset R12+32 in
// each row of the group at wg) into the staging set at DI, if the rows
// have one, prefetching the next group with it when R11 ≠ 0 and the
// block is even; the labels plain and unpacked are the caller's own.
#define UNPACK_NEXT(plain, unpacked) \
	LEAQ  32(R12), AX \
	MOVQ  n+16(FP), R10 \
	SHRQ  $2, R10 \
	CMPQ  AX, R10 \
	JAE   unpacked \
	MOVQ  wg-8(SP), R10 \
	ADDQ  AX, R10 \
	TESTQ R11, R11 \
	JZ    plain \
	TESTQ $32, AX \
	JNZ   plain \
	UNPACK32PF \
	JMP   unpacked \
plain: \
	UNPACK32 \
unpacked:

// CHUNK multiplies one k chunk: A tiles at SI and SI+2048, B tiles at DX
// and DX+R9, into the four C tiles; then steps DX to the next chunk.
#define CHUNK \
	LOAD_A0_SI \
	LEAQ 2048(SI), BX \
	LOAD_A1_BX \
	LOAD_B0_DX \
	LEAQ (DX)(R9*1), BX \
	LOAD_B1_BX \
	TDP_C00 \
	TDP_C01 \
	TDP_C10 \
	TDP_C11 \
	ADDQ $1024, DX

// func amxTernaryTiles(w *byte, stride, n, groups int, xb *byte, tokens int, out *int32, outStride int, scr *byte, cfg *byte)
//
// groups blocks of 32 rows; xb holds ⌈tokens/32⌉·2 token tiles (a zero
// tile after an odd last one); scr 9 KiB: two staging sets of 4 KiB, then
// the C store scratch.
TEXT ·amxTernaryTiles(SB), NOSPLIT, $48-80
	TILES_ENTER(done)

group:
	MOVQ xb+32(FP), AX
	MOVQ AX, xbp-32(SP) // this pair's first B tile
	MOVQ outg-16(SP), AX
	MOVQ AX, outp-40(SP) // this pair's first token's outputs
	MOVQ tokens+40(FP), AX
	MOVQ AX, tleft-48(SP) // tokens from this pair on

pair:
	VMOVDQU64    amxCodes01<>(SB), Z28
	VMOVDQU64    amxCodes23<>(SB), Z29
	TILEZERO(0xE0)
	TILEZERO(0xE8)
	TILEZERO(0xF0)
	TILEZERO(0xF8)
	MOVQ stride+8(FP), R8
	MOVQ n+16(FP), R9
	SHLQ $4, R9 // bytes of xb per token tile: 16·n

	// The first pair reads the group from memory: it prefetches the next
	// group as amxTernaryFew does (R11 = 32·stride); the others find it
	// in L1 and L2 (R11 = 0).
	XORQ R11, R11
	MOVQ tleft-48(SP), AX
	MOVQ tokens+40(FP), BX
	CMPQ AX, BX
	JNE  later
	MOVQ R8, R11
	SHLQ $5, R11

later:

	// Unpack block 0 into the set at SI; then block b+1 into the other
	// while block b is multiplied.
	MOVQ  scr+64(FP), DI
	LEAQ  4096(DI), SI
	MOVQ  wg-8(SP), R10
	UNPACK32
	XCHGQ SI, DI
	MOVQ  xbp-32(SP), DX
	XORQ  R12, R12 // byte offset of block b in each row

block:
	UNPACK_NEXT(plain, unpacked)
	// k chunk 2b: A from SI, SI+2048; then chunk 2b+1: A from SI+1024,
	// SI+3072.
	CHUNK
	ADDQ $1024, SI
	CHUNK
	SUBQ $1024, SI

	XCHGQ SI, DI
	ADDQ  $32, R12
	MOVQ  n+16(FP), AX
	SHRQ  $2, AX
	CMPQ  R12, AX
	JB    block

	// Store: C00 and C10 hold tokens 0-15 of the pair for rows 0-15 and
	// 16-31, C01 and C11 tokens 16-31; R12 tokens are left.
	MOVQ scr+64(FP), BX
	ADDQ $8192, BX
	MOVQ outStride+56(FP), R10
	SHLQ $2, R10 // bytes between tokens in out
	MOVQ tleft-48(SP), R12
	MOVQ outp-40(SP), AX
	STORE_C(0x24)
	CALL amxStoreTile<>(SB)
	MOVQ outp-40(SP), AX
	ADDQ $64, AX
	STORE_C(0x34)
	CALL amxStoreTile<>(SB)
	SUBQ $16, R12
	JBE  pairdone
	MOVQ R10, AX
	SHLQ $4, AX
	ADDQ outp-40(SP), AX
	STORE_C(0x2C)
	CALL amxStoreTile<>(SB)
	MOVQ R10, AX
	SHLQ $4, AX
	ADDQ outp-40(SP), AX
	ADDQ $64, AX
	STORE_C(0x3C)
	CALL amxStoreTile<>(SB)
	SUBQ $16, R12
	JBE  pairdone

	// The next 32 tokens.
	MOVQ R12, tleft-48(SP)
	MOVQ R10, AX
	SHLQ $5, AX
	ADDQ AX, outp-40(SP)
	MOVQ n+16(FP), AX
	SHLQ $5, AX
	ADDQ AX, xbp-32(SP)
	JMP  pair

pairdone:
	MOVQ stride+8(FP), AX
	SHLQ $5, AX
	ADDQ AX, wg-8(SP)     // next 32 weight rows
	ADDQ $128, outg-16(SP) // their 32 outputs
	DECQ left-24(SP)
	JNZ  group

done:
	TILERELEASE
	VZEROUPPER
	RET

// CHUNK16 multiplies one k chunk for at most 16 tokens: A tiles at SI and
// SI+2048, the B tile at DX, into C00 and C10; then steps DX to the next
// chunk.
#define CHUNK16 \
	LOAD_A0_SI \
	LEAQ 2048(SI), BX \
	LOAD_A1_BX \
	LOAD_B0_DX \
	TDP_C00 \
	TDP_C10 \
	ADDQ $1024, DX

// func amxTernaryFew(w *byte, stride, n, groups int, xb *byte, tokens int, out *int32, outStride int, scr *byte, cfg *byte)
//
// amxTernaryTiles for 1-16 tokens: xb holds one token tile, and each k
// chunk loads it once for two products (C00 and C10), not two B tiles for
// four, half of them on a zero tile.
TEXT ·amxTernaryFew(SB), NOSPLIT, $24-80
	TILES_ENTER(fdone)

fgroup:
	VMOVDQU64 amxCodes01<>(SB), Z28
	VMOVDQU64 amxCodes23<>(SB), Z29
	TILEZERO(0xE0)
	TILEZERO(0xF0)
	MOVQ      stride+8(FP), R8
	MOVQ      R8, R11
	SHLQ      $5, R11
	MOVQ      scr+64(FP), DI
	LEAQ      4096(DI), SI
	MOVQ      wg-8(SP), R10
	UNPACK32
	XCHGQ     SI, DI
	MOVQ      xb+32(FP), DX
	XORQ      R12, R12

fblock:
	UNPACK_NEXT(fplain, funpacked)
	CHUNK16
	ADDQ $1024, SI
	CHUNK16
	SUBQ $1024, SI

	XCHGQ SI, DI
	ADDQ  $32, R12
	MOVQ  n+16(FP), AX
	SHRQ  $2, AX
	CMPQ  R12, AX
	JB    fblock

	MOVQ scr+64(FP), BX
	ADDQ $8192, BX
	MOVQ outStride+56(FP), R10
	SHLQ $2, R10
	MOVQ tokens+40(FP), R12
	MOVQ outg-16(SP), AX
	STORE_C(0x24)
	CALL amxStoreTile<>(SB)
	MOVQ outg-16(SP), AX
	ADDQ $64, AX
	STORE_C(0x34)
	CALL amxStoreTile<>(SB)

	MOVQ stride+8(FP), AX
	SHLQ $5, AX
	ADDQ AX, wg-8(SP)
	ADDQ $128, outg-16(SP)
	DECQ left-24(SP)
	JNZ  fgroup

fdone:
	TILERELEASE
	VZEROUPPER
	RET

// amxStoreTile transposes the 16×16 int32 tile at (BX) ([weight row][token])
// and writes token m's 16 sums to AX + m·R10 for m < min(R12, 16), leaving
// AX at the next tile's first token (AX + 16·R10). Clobbers Z0-Z31, DX, R9.
TEXT amxStoreTile<>(SB), NOSPLIT, $0-0
	VMOVDQU64 0(BX), Z0
	VMOVDQU64 64(BX), Z1
	VMOVDQU64 128(BX), Z2
	VMOVDQU64 192(BX), Z3
	VMOVDQU64 256(BX), Z4
	VMOVDQU64 320(BX), Z5
	VMOVDQU64 384(BX), Z6
	VMOVDQU64 448(BX), Z7
	VMOVDQU64 512(BX), Z8
	VMOVDQU64 576(BX), Z9
	VMOVDQU64 640(BX), Z10
	VMOVDQU64 704(BX), Z11
	VMOVDQU64 768(BX), Z12
	VMOVDQU64 832(BX), Z13
	VMOVDQU64 896(BX), Z14
	VMOVDQU64 960(BX), Z15
	CALL      amxTranspose16<>(SB)
	MOVQ      R12, DX
	CMPQ      DX, $16
	JBE       2(PC)
	MOVQ      $16, DX
	MOVQ      AX, R9
	VMOVDQU32 Z0, (R9)
	DECQ      DX
	JZ        st
	ADDQ      R10, R9
	VMOVDQU32 Z1, (R9)
	DECQ      DX
	JZ        st
	ADDQ      R10, R9
	VMOVDQU32 Z2, (R9)
	DECQ      DX
	JZ        st
	ADDQ      R10, R9
	VMOVDQU32 Z3, (R9)
	DECQ      DX
	JZ        st
	ADDQ      R10, R9
	VMOVDQU32 Z4, (R9)
	DECQ      DX
	JZ        st
	ADDQ      R10, R9
	VMOVDQU32 Z5, (R9)
	DECQ      DX
	JZ        st
	ADDQ      R10, R9
	VMOVDQU32 Z6, (R9)
	DECQ      DX
	JZ        st
	ADDQ      R10, R9
	VMOVDQU32 Z7, (R9)
	DECQ      DX
	JZ        st
	ADDQ      R10, R9
	VMOVDQU32 Z8, (R9)
	DECQ      DX
	JZ        st
	ADDQ      R10, R9
	VMOVDQU32 Z9, (R9)
	DECQ      DX
	JZ        st
	ADDQ      R10, R9
	VMOVDQU32 Z10, (R9)
	DECQ      DX
	JZ        st
	ADDQ      R10, R9
	VMOVDQU32 Z11, (R9)
	DECQ      DX
	JZ        st
	ADDQ      R10, R9
	VMOVDQU32 Z12, (R9)
	DECQ      DX
	JZ        st
	ADDQ      R10, R9
	VMOVDQU32 Z13, (R9)
	DECQ      DX
	JZ        st
	ADDQ      R10, R9
	VMOVDQU32 Z14, (R9)
	DECQ      DX
	JZ        st
	ADDQ      R10, R9
	VMOVDQU32 Z15, (R9)

st:
	MOVQ R10, DX
	SHLQ $4, DX
	ADDQ DX, AX
	RET

// amxTranspose16 transposes the 16×16 dwords in Z0…Z15 (row i in Zi) in
// place, through Z16…Z31: dwords of row pairs interleaved, then qwords of
// row quads (Z(4q+j) holds, in each 128-bit lane L, column 4L+j of rows
// 4q…4q+3), then 128-bit lanes gathered in two rounds of vshufi32x4.
TEXT amxTranspose16<>(SB), NOSPLIT, $0-0
	VPUNPCKLDQ Z1, Z0, Z16
	VPUNPCKHDQ Z1, Z0, Z17
	VPUNPCKLDQ Z3, Z2, Z18
	VPUNPCKHDQ Z3, Z2, Z19
	VPUNPCKLDQ Z5, Z4, Z20
	VPUNPCKHDQ Z5, Z4, Z21
	VPUNPCKLDQ Z7, Z6, Z22
	VPUNPCKHDQ Z7, Z6, Z23
	VPUNPCKLDQ Z9, Z8, Z24
	VPUNPCKHDQ Z9, Z8, Z25
	VPUNPCKLDQ Z11, Z10, Z26
	VPUNPCKHDQ Z11, Z10, Z27
	VPUNPCKLDQ Z13, Z12, Z28
	VPUNPCKHDQ Z13, Z12, Z29
	VPUNPCKLDQ Z15, Z14, Z30
	VPUNPCKHDQ Z15, Z14, Z31
	VPUNPCKLQDQ Z18, Z16, Z0
	VPUNPCKHQDQ Z18, Z16, Z1
	VPUNPCKLQDQ Z19, Z17, Z2
	VPUNPCKHQDQ Z19, Z17, Z3
	VPUNPCKLQDQ Z22, Z20, Z4
	VPUNPCKHQDQ Z22, Z20, Z5
	VPUNPCKLQDQ Z23, Z21, Z6
	VPUNPCKHQDQ Z23, Z21, Z7
	VPUNPCKLQDQ Z26, Z24, Z8
	VPUNPCKHQDQ Z26, Z24, Z9
	VPUNPCKLQDQ Z27, Z25, Z10
	VPUNPCKHQDQ Z27, Z25, Z11
	VPUNPCKLQDQ Z30, Z28, Z12
	VPUNPCKHQDQ Z30, Z28, Z13
	VPUNPCKLQDQ Z31, Z29, Z14
	VPUNPCKHQDQ Z31, Z29, Z15
	VSHUFI32X4 $0x88, Z4, Z0, Z16
	VSHUFI32X4 $0xDD, Z4, Z0, Z20
	VSHUFI32X4 $0x88, Z12, Z8, Z24
	VSHUFI32X4 $0xDD, Z12, Z8, Z28
	VSHUFI32X4 $0x88, Z5, Z1, Z17
	VSHUFI32X4 $0xDD, Z5, Z1, Z21
	VSHUFI32X4 $0x88, Z13, Z9, Z25
	VSHUFI32X4 $0xDD, Z13, Z9, Z29
	VSHUFI32X4 $0x88, Z6, Z2, Z18
	VSHUFI32X4 $0xDD, Z6, Z2, Z22
	VSHUFI32X4 $0x88, Z14, Z10, Z26
	VSHUFI32X4 $0xDD, Z14, Z10, Z30
	VSHUFI32X4 $0x88, Z7, Z3, Z19
	VSHUFI32X4 $0xDD, Z7, Z3, Z23
	VSHUFI32X4 $0x88, Z15, Z11, Z27
	VSHUFI32X4 $0xDD, Z15, Z11, Z31
	VSHUFI32X4 $0x88, Z24, Z16, Z0
	VSHUFI32X4 $0xDD, Z24, Z16, Z8
	VSHUFI32X4 $0x88, Z28, Z20, Z4
	VSHUFI32X4 $0xDD, Z28, Z20, Z12
	VSHUFI32X4 $0x88, Z25, Z17, Z1
	VSHUFI32X4 $0xDD, Z25, Z17, Z9
	VSHUFI32X4 $0x88, Z29, Z21, Z5
	VSHUFI32X4 $0xDD, Z29, Z21, Z13
	VSHUFI32X4 $0x88, Z26, Z18, Z2
	VSHUFI32X4 $0xDD, Z26, Z18, Z10
	VSHUFI32X4 $0x88, Z30, Z22, Z6
	VSHUFI32X4 $0xDD, Z30, Z22, Z14
	VSHUFI32X4 $0x88, Z27, Z19, Z3
	VSHUFI32X4 $0xDD, Z27, Z19, Z11
	VSHUFI32X4 $0x88, Z31, Z23, Z7
	VSHUFI32X4 $0xDD, Z31, Z23, Z15
	RET

// func amxPackX(x *int8, xStride, n, tokens int, xb *byte)
//
// amxPackX writes the B tiles of tokens tokens (n a multiple of 64): for
// token tile tt and k chunk kc, the 1024 bytes at xb + (tt·n/64 + kc)·1024
// hold row kk = 0…15 of 16 tokens × x[16·tt+m][64·kc+4·kk : +4], zeros for
// tokens past the last.
TEXT ·amxPackX(SB), NOSPLIT, $0-40
	MOVQ  x+0(FP), SI
	MOVQ  xStride+8(FP), R8
	MOVQ  n+16(FP), R11
	MOVQ  tokens+24(FP), R12
	MOVQ  xb+32(FP), DI
	TESTQ R11, R11
	JZ    pdone
	TESTQ R12, R12
	JZ    pdone

ptile:
	XORQ R10, R10

pchunk:
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	LEAQ (SI)(R10*1), AX
	MOVQ R12, DX
	CMPQ DX, $16
	JBE  2(PC)
	MOVQ $16, DX
	VMOVDQU64 (AX), Z0
	DECQ DX
	JZ   ploaded
	ADDQ R8, AX
	VMOVDQU64 (AX), Z1
	DECQ DX
	JZ   ploaded
	ADDQ R8, AX
	VMOVDQU64 (AX), Z2
	DECQ DX
	JZ   ploaded
	ADDQ R8, AX
	VMOVDQU64 (AX), Z3
	DECQ DX
	JZ   ploaded
	ADDQ R8, AX
	VMOVDQU64 (AX), Z4
	DECQ DX
	JZ   ploaded
	ADDQ R8, AX
	VMOVDQU64 (AX), Z5
	DECQ DX
	JZ   ploaded
	ADDQ R8, AX
	VMOVDQU64 (AX), Z6
	DECQ DX
	JZ   ploaded
	ADDQ R8, AX
	VMOVDQU64 (AX), Z7
	DECQ DX
	JZ   ploaded
	ADDQ R8, AX
	VMOVDQU64 (AX), Z8
	DECQ DX
	JZ   ploaded
	ADDQ R8, AX
	VMOVDQU64 (AX), Z9
	DECQ DX
	JZ   ploaded
	ADDQ R8, AX
	VMOVDQU64 (AX), Z10
	DECQ DX
	JZ   ploaded
	ADDQ R8, AX
	VMOVDQU64 (AX), Z11
	DECQ DX
	JZ   ploaded
	ADDQ R8, AX
	VMOVDQU64 (AX), Z12
	DECQ DX
	JZ   ploaded
	ADDQ R8, AX
	VMOVDQU64 (AX), Z13
	DECQ DX
	JZ   ploaded
	ADDQ R8, AX
	VMOVDQU64 (AX), Z14
	DECQ DX
	JZ   ploaded
	ADDQ R8, AX
	VMOVDQU64 (AX), Z15

ploaded:
	CALL amxTranspose16<>(SB)
	VMOVDQU64 Z0, 0(DI)
	VMOVDQU64 Z1, 64(DI)
	VMOVDQU64 Z2, 128(DI)
	VMOVDQU64 Z3, 192(DI)
	VMOVDQU64 Z4, 256(DI)
	VMOVDQU64 Z5, 320(DI)
	VMOVDQU64 Z6, 384(DI)
	VMOVDQU64 Z7, 448(DI)
	VMOVDQU64 Z8, 512(DI)
	VMOVDQU64 Z9, 576(DI)
	VMOVDQU64 Z10, 640(DI)
	VMOVDQU64 Z11, 704(DI)
	VMOVDQU64 Z12, 768(DI)
	VMOVDQU64 Z13, 832(DI)
	VMOVDQU64 Z14, 896(DI)
	VMOVDQU64 Z15, 960(DI)
	ADDQ $1024, DI
	ADDQ $64, R10
	CMPQ R10, R11
	JB   pchunk
	MOVQ R8, AX
	SHLQ $4, AX
	ADDQ AX, SI
	SUBQ $16, R12
	JA   ptile

pdone:
	VZEROUPPER
	RET

// func amxLoop(iters int, cfg *byte)
//
// amxLoop runs iters × 6 tile products (tdpbusd tmm2…tmm7 += tmm0·tmm1,
// 16·16·64 multiply-adds each) on zeroed tiles: the AMX int8 peak probe.
TEXT ·amxLoop(SB), NOSPLIT, $0-16
	MOVQ cfg+8(FP), AX
	LDTILECFG_AX
	TILEZERO(0xC0)
	TILEZERO(0xC8)
	TILEZERO(0xD0)
	TILEZERO(0xD8)
	TILEZERO(0xE0)
	TILEZERO(0xE8)
	TILEZERO(0xF0)
	TILEZERO(0xF8)
	MOVQ  iters+0(FP), CX
	TESTQ CX, CX
	JZ    ldone

loop:
	TDP_PROBE(0xD0)
	TDP_PROBE(0xD8)
	TDP_PROBE(0xE0)
	TDP_PROBE(0xE8)
	TDP_PROBE(0xF0)
	TDP_PROBE(0xF8)
	DECQ CX
	JNZ  loop

ldone:
	TILERELEASE
	RET
