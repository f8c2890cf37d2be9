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
// for groups of 16 weight rows and up to 6 tiles of 16 tokens. A tile
// product TDPBUSD C += A·B multiplies unsigned bytes A (16 rows × 64) by
// signed bytes B (16 × 64, "VNNI" layout: row kk holds 16 columns of 4
// consecutive k) and accumulates 16×16 int32, 16·16·64 multiply-adds:
//
//	A = the 16 weight rows' codes c ∈ {0,1,2} over 64 k, unpacked from the
//	    ternary layout into a staging buffer (one 32-byte block of a row,
//	    broadcast to both halves of a zmm and shifted per 16-bit lane by
//	    6|4 and 2|0, gives its 128 codes in k order: two A tiles)
//	B = the activations of 16 tokens over the same 64 k, packed once per
//	    call by amxPackX into [token tile][k/64][k/4 mod 16][token][4]
//	C = tmm2…tmm7, one per token tile, over the whole row
//
// C holds row-major [weight row][token]; out wants [token][weight row], so
// each finished C tile is stored to scratch and transposed as 16×16 dwords
// (amxTranspose16: unpack dwords, unpack qwords, two rounds of 128-bit lane
// shuffles) on its way out, once per 16·16·n multiply-adds.

#include "textflag.h"

// Tile registers: tmm0 = A, tmm1 = B, tmm2…tmm7 = C.
#define LDTILECFG_AX     BYTE $0xC4; BYTE $0xE2; BYTE $0x78; BYTE $0x49; BYTE $0x00
#define TILERELEASE      BYTE $0xC4; BYTE $0xE2; BYTE $0x78; BYTE $0x49; BYTE $0xC0
#define TILEZERO(modrm)  BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x49; BYTE $modrm
// tileloadd tmm0, (SI)(CX*1); tmm1, (DX)(CX*1) / (BX)(CX*1)
#define LOAD_A_SI        BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x4B; BYTE $0x04; BYTE $0x0E
#define LOAD_B_DX        BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x4B; BYTE $0x0C; BYTE $0x0A
#define LOAD_B_BX        BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x4B; BYTE $0x0C; BYTE $0x0B
// tdpbusd tmmN, tmm0, tmm1 (modrm 0xC0 | N<<3)
#define TDPBUSD(modrm)   BYTE $0xC4; BYTE $0xE2; BYTE $0x71; BYTE $0x5E; BYTE $modrm
// tilestored (BX)(CX*1), tmmN (modrm N<<3 | 4)
#define STORE_C(modrm)   BYTE $0xC4; BYTE $0xE2; BYTE $0x7A; BYTE $0x4B; BYTE $modrm; BYTE $0x0B

// Per-16-bit-lane shift counts: low half 6 (codes of k 0-31 in bits 7:6),
// high half 4 (k 32-63); then 2 and 0 (k 64-95, 96-127).
DATA amxShift01<>+0(SB)/8, $0x0006000600060006
DATA amxShift01<>+8(SB)/8, $0x0006000600060006
DATA amxShift01<>+16(SB)/8, $0x0006000600060006
DATA amxShift01<>+24(SB)/8, $0x0006000600060006
DATA amxShift01<>+32(SB)/8, $0x0004000400040004
DATA amxShift01<>+40(SB)/8, $0x0004000400040004
DATA amxShift01<>+48(SB)/8, $0x0004000400040004
DATA amxShift01<>+56(SB)/8, $0x0004000400040004
GLOBL amxShift01<>(SB), RODATA|NOPTR, $64
DATA amxShift23<>+0(SB)/8, $0x0002000200020002
DATA amxShift23<>+8(SB)/8, $0x0002000200020002
DATA amxShift23<>+16(SB)/8, $0x0002000200020002
DATA amxShift23<>+24(SB)/8, $0x0002000200020002
DATA amxShift23<>+32(SB)/8, $0
DATA amxShift23<>+40(SB)/8, $0
DATA amxShift23<>+48(SB)/8, $0
DATA amxShift23<>+56(SB)/8, $0
GLOBL amxShift23<>(SB), RODATA|NOPTR, $64
DATA amxMask3<>+0(SB)/4, $0x03030303
GLOBL amxMask3<>(SB), RODATA|NOPTR, $4

// UNPACK_ROW(off) unpacks the 32-byte block at (R10) into the 64 codes of
// its first half at off(DI) and of its second at 1024+off(DI), then steps
// R10 to the next row.
#define UNPACK_ROW(off) \
	VBROADCASTI64X4 (R10), Z0 \
	VPSRLVW         Z28, Z0, Z1 \
	VPSRLVW         Z29, Z0, Z2 \
	VPANDD          Z30, Z1, Z1 \
	VPANDD          Z30, Z2, Z2 \
	VMOVDQU64       Z1, off(DI) \
	VMOVDQU64       Z2, 1024+off(DI) \
	ADDQ            R8, R10

// UNPACK16 unpacks the block at (R10) of 16 rows R8 bytes apart into the
// staging set at DI: the A tiles of two k chunks.
#define UNPACK16 \
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
	UNPACK_ROW(960)

// func amxTernaryTiles(w *byte, stride, n, groups int, xb *byte, nt int, out *int32, outStride, tokens int, scr *byte, cfg *byte)
TEXT ·amxTernaryTiles(SB), NOSPLIT, $0-88
	MOVQ cfg+80(FP), AX
	LDTILECFG_AX
	MOVQ $64, CX
	MOVQ stride+8(FP), R8
	MOVQ w+0(FP), R13
	MOVQ out+48(FP), R14
	MOVQ groups+24(FP), R11
	TESTQ R11, R11
	JZ   done

group:
	MOVQ         n+16(FP), R9
	SHLQ         $4, R9 // bytes of xb per token tile: 16·n
	VMOVDQU64    amxShift01<>(SB), Z28
	VMOVDQU64    amxShift23<>(SB), Z29
	VPBROADCASTD amxMask3<>(SB), Z30
	MOVQ         nt+40(FP), AX
	TILEZERO(0xD0)
	CMPQ         AX, $2
	JB           zeroed
	TILEZERO(0xD8)
	CMPQ         AX, $3
	JB           zeroed
	TILEZERO(0xE0)
	CMPQ         AX, $4
	JB           zeroed
	TILEZERO(0xE8)
	CMPQ         AX, $5
	JB           zeroed
	TILEZERO(0xF0)
	CMPQ         AX, $6
	JB           zeroed
	TILEZERO(0xF8)

zeroed:
	// Software-pipelined by one block: the codes of block b+1 are unpacked
	// (into the staging set at DI) before block b's tiles are loaded from
	// the set at SI, so the tile loads never wait on stores just made.
	MOVQ scr+72(FP), SI
	LEAQ 2048(SI), DI
	MOVQ R13, R10
	UNPACK16
	XCHGQ SI, DI
	MOVQ xb+32(FP), DX
	XORQ R12, R12 // byte offset of block b in each row

block:
	LEAQ 32(R12), AX
	MOVQ n+16(FP), R10
	SHRQ $2, R10
	CMPQ AX, R10
	JAE  unpacked
	LEAQ (R13)(AX*1), R10
	UNPACK16

unpacked:
	MOVQ nt+40(FP), AX

	// k chunk 2·block: A from SI.
	LOAD_A_SI
	LOAD_B_DX
	TDPBUSD(0xD0)
	CMPQ AX, $2
	JB   half0done
	LEAQ (DX)(R9*1), BX
	LOAD_B_BX
	TDPBUSD(0xD8)
	CMPQ AX, $3
	JB   half0done
	ADDQ R9, BX
	LOAD_B_BX
	TDPBUSD(0xE0)
	CMPQ AX, $4
	JB   half0done
	ADDQ R9, BX
	LOAD_B_BX
	TDPBUSD(0xE8)
	CMPQ AX, $5
	JB   half0done
	ADDQ R9, BX
	LOAD_B_BX
	TDPBUSD(0xF0)
	CMPQ AX, $6
	JB   half0done
	ADDQ R9, BX
	LOAD_B_BX
	TDPBUSD(0xF8)

half0done:
	ADDQ $1024, DX

	// k chunk 2·block+1: A from SI+1024.
	ADDQ $1024, SI
	LOAD_A_SI
	SUBQ $1024, SI
	LOAD_B_DX
	TDPBUSD(0xD0)
	CMPQ AX, $2
	JB   half1done
	LEAQ (DX)(R9*1), BX
	LOAD_B_BX
	TDPBUSD(0xD8)
	CMPQ AX, $3
	JB   half1done
	ADDQ R9, BX
	LOAD_B_BX
	TDPBUSD(0xE0)
	CMPQ AX, $4
	JB   half1done
	ADDQ R9, BX
	LOAD_B_BX
	TDPBUSD(0xE8)
	CMPQ AX, $5
	JB   half1done
	ADDQ R9, BX
	LOAD_B_BX
	TDPBUSD(0xF0)
	CMPQ AX, $6
	JB   half1done
	ADDQ R9, BX
	LOAD_B_BX
	TDPBUSD(0xF8)

half1done:
	ADDQ  $1024, DX
	XCHGQ SI, DI
	ADDQ  $32, R12
	MOVQ n+16(FP), AX
	SHRQ $2, AX
	CMPQ R12, AX
	JB   block

	// Store the C tiles: tile tt holds tokens 16·tt…, min(16, tokens−16·tt)
	// of them, written to out + 16·tt·outStride (int32s) on.
	MOVQ scr+72(FP), BX
	ADDQ $4096, BX
	MOVQ outStride+56(FP), R10
	SHLQ $2, R10 // bytes between tokens in out
	MOVQ tokens+64(FP), R12
	MOVQ R14, AX

	STORE_C(0x14)
	CALL amxStoreTile<>(SB)
	SUBQ $16, R12
	JBE  stored
	STORE_C(0x1C)
	CALL amxStoreTile<>(SB)
	SUBQ $16, R12
	JBE  stored
	STORE_C(0x24)
	CALL amxStoreTile<>(SB)
	SUBQ $16, R12
	JBE  stored
	STORE_C(0x2C)
	CALL amxStoreTile<>(SB)
	SUBQ $16, R12
	JBE  stored
	STORE_C(0x34)
	CALL amxStoreTile<>(SB)
	SUBQ $16, R12
	JBE  stored
	STORE_C(0x3C)
	CALL amxStoreTile<>(SB)

stored:
	MOVQ stride+8(FP), R12
	SHLQ $4, R12
	ADDQ R12, R13 // next 16 weight rows
	ADDQ $64, R14 // their 16 outputs
	DECQ R11
	JNZ  group

done:
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
	TDPBUSD(0xD0)
	TDPBUSD(0xD8)
	TDPBUSD(0xE0)
	TDPBUSD(0xE8)
	TDPBUSD(0xF0)
	TDPBUSD(0xF8)
	DECQ CX
	JNZ  loop

ldone:
	TILERELEASE
	RET
