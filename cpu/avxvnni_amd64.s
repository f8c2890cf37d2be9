//go:build !purego

// The avxvnni set's ternary row kernel (AVX-VNNI: VEX-encoded vpdpbusd on
// ymm, for CPUs that have it without AVX-512, such as Intel's Alder Lake
// and later desktop and laptop cores). Written by hand, not by
// tools/asmgen: the Go assembler encodes VPDPBUSD only as EVEX (AVX-512
// VNNI), which those CPUs fault on, so each vpdpbusd here is a macro of
// its VEX bytes (checked against GNU as's "{vex} vpdpbusd"), with its
// registers fixed. cpu/avxvnni_amd64.go holds the Go side; the contract is
// ternaryRows's in kernels.go.
//
// ternaryRowsAVXVNNI: out[r] = Σ_i c(w[r·stride:], i)·x[i], exact. Rows i
// and Q+i (Q = rows/2: two streams, as dotBlockRows pairs them), then the
// odd last row alone. Each 32-byte block of a row holds 128 codes: byte j
// has the codes of x[j], x[32+j], x[64+j], x[96+j] in bits 7:6, 5:4, 3:2,
// 1:0. The masks 0xC0, 0x30, 0x0C, 0x03 give them scaled by 64, 16, 4, 1
// (unsigned bytes), one vpdpbusd each against the signed activations from
// memory into its own accumulator, each accumulator shifted right by its
// scale at the end (exact: every lane is a multiple of it), as
// ternaryRowsVNNI does in zmm. Two blocks (one 64-byte line of each row,
// one PREFETCHT1 16 KiB ahead) per step, then an odd last block.
//
// Registers: AX row 0, R11 row 1, BX the bytes between them, CX the bytes
// of a row, DX the bytes in whole steps, SI x, R10 x + 4·offset + 128 (so
// every activation operand is a disp8), DI out, R12 the bytes between the
// two rows' outputs, R8 the stride, R9 the offset in the rows, R13 the
// pairs left. Y0-Y3 row 0's accumulators, Y4-Y7 row 1's, Y8/Y9 the rows'
// blocks, Y10/Y11 masked codes, Y12-Y15 the masks.

#include "textflag.h"

DATA avxvnniMasks<>+0(SB)/4, $0xC0C0C0C0
DATA avxvnniMasks<>+4(SB)/4, $0x30303030
DATA avxvnniMasks<>+8(SB)/4, $0x0C0C0C0C
DATA avxvnniMasks<>+12(SB)/4, $0x03030303
GLOBL avxvnniMasks<>(SB), RODATA|NOPTR, $16

// DPB(vex2, modrm, disp): {vex} vpdpbusd disp(R10), Yt, Yacc: Yacc += the
// unsigned bytes of Yt times the signed bytes at disp(R10), four to a
// dword lane. vex2 names Yt (0x2D: Y10, 0x25: Y11); modrm names Yacc
// (0x42 + 8·k: Yk, k < 8) with a disp8 from R10.
#define DPB(vex2, modrm, disp) BYTE $0xC4; BYTE $0xC2; BYTE $vex2; BYTE $0x50; BYTE $modrm; BYTE $disp

// ROW0(d0, d1, d2, d3) multiplies the block in Y8 into Y0-Y3, its four
// scales' activations at d0…d3 from R10; ROW1 the block in Y9 into Y4-Y7.
#define ROW0(d0, d1, d2, d3) VPAND Y12, Y8, Y10; DPB(0x2D, 0x42, d0); VPAND Y13, Y8, Y11; DPB(0x25, 0x4A, d1); VPAND Y14, Y8, Y10; DPB(0x2D, 0x52, d2); VPAND Y15, Y8, Y11; DPB(0x25, 0x5A, d3)
#define ROW1(d0, d1, d2, d3) VPAND Y12, Y9, Y10; DPB(0x2D, 0x62, d0); VPAND Y13, Y9, Y11; DPB(0x25, 0x6A, d1); VPAND Y14, Y9, Y10; DPB(0x2D, 0x72, d2); VPAND Y15, Y9, Y11; DPB(0x25, 0x7A, d3)

// The activations of the block at offset R9 start at R10 − 128 (disp8s
// 0x80, 0xA0, 0xC0, 0xE0), those of the next at R10 (0x00 … 0x60).

// SUM(a0, a1, a2, a3, x0, x1) leaves Σ (a0>>6 + a1>>4 + a2>>2 + a3) over
// the lanes in the low dword of x0 (a0's xmm), x1 a scratch xmm.
#define SUM(a0, a1, a2, a3, x0, x1) VPSRAD $6, a0, a0; VPSRAD $4, a1, a1; VPSRAD $2, a2, a2; VPADDD a1, a0, a0; VPADDD a3, a2, a2; VPADDD a2, a0, a0; VEXTRACTI128 $1, a0, x1; VPADDD x1, x0, x0; VPSHUFD $0x4E, x0, x1; VPADDD x1, x0, x0; VPSHUFD $0xB1, x0, x1; VPADDD x1, x0, x0

// ZERO8 clears the accumulators Y0-Y7.
#define ZERO8 VPXOR Y0, Y0, Y0; VPXOR Y1, Y1, Y1; VPXOR Y2, Y2, Y2; VPXOR Y3, Y3, Y3; VPXOR Y4, Y4, Y4; VPXOR Y5, Y5, Y5; VPXOR Y6, Y6, Y6; VPXOR Y7, Y7, Y7

// ROWS(NEAR0, NEAR1) is the body of ternaryRowsAVXVNNI and
// ternaryRowsAVXVNNITwo, which differ only in their prefetches: NEAR0 and
// NEAR1 follow the prefetches into L2 of row 0's and row 1's line (AX and
// R11 at offset R9), empty in the first and PREFETCHT0 2 KiB ahead in the
// second.
#define ROWS(NEAR0, NEAR1) \
	MOVQ         w_base+0(FP), AX; \
	MOVQ         stride+24(FP), R8; \
	MOVQ         x_base+32(FP), SI; \
	MOVQ         x_len+40(FP), CX; \
	SHRQ         $2, CX; \
	MOVQ         CX, DX; \
	ANDQ         $-64, DX; \
	MOVQ         out_base+56(FP), DI; \
	VPBROADCASTD avxvnniMasks<>+0(SB), Y12; \
	VPBROADCASTD avxvnniMasks<>+4(SB), Y13; \
	VPBROADCASTD avxvnniMasks<>+8(SB), Y14; \
	VPBROADCASTD avxvnniMasks<>+12(SB), Y15; \
	MOVQ         out_len+64(FP), R13; \
	SHRQ         $1, R13; \
	JZ           single; \
	MOVQ         R13, BX; \
	IMULQ        R8, BX; \
	MOVQ         R13, R12; \
	SHLQ         $2, R12; \
pairs: \
	LEAQ  (AX)(BX*1), R11; \
	ZERO8; \
	XORQ  R9, R9; \
	LEAQ  128(SI), R10; \
	CMPQ  R9, DX; \
	JAE   pairsodd; \
pairsloop: \
	PREFETCHT1 16384(AX)(R9*1); \
	NEAR0; \
	PREFETCHT1 16384(R11)(R9*1); \
	NEAR1; \
	VMOVDQU    (AX)(R9*1), Y8; \
	VMOVDQU    (R11)(R9*1), Y9; \
	ROW0(0x80, 0xA0, 0xC0, 0xE0); \
	ROW1(0x80, 0xA0, 0xC0, 0xE0); \
	VMOVDQU    32(AX)(R9*1), Y8; \
	VMOVDQU    32(R11)(R9*1), Y9; \
	ROW0(0x00, 0x20, 0x40, 0x60); \
	ROW1(0x00, 0x20, 0x40, 0x60); \
	ADDQ       $64, R9; \
	ADDQ       $256, R10; \
	CMPQ       R9, DX; \
	JB         pairsloop; \
pairsodd: \
	CMPQ    R9, CX; \
	JAE     pairsdone; \
	VMOVDQU (AX)(R9*1), Y8; \
	VMOVDQU (R11)(R9*1), Y9; \
	ROW0(0x80, 0xA0, 0xC0, 0xE0); \
	ROW1(0x80, 0xA0, 0xC0, 0xE0); \
pairsdone: \
	SUM(Y0, Y1, Y2, Y3, X0, X1); \
	SUM(Y4, Y5, Y6, Y7, X4, X5); \
	VMOVD X0, (DI); \
	VMOVD X4, (DI)(R12*1); \
	ADDQ  R8, AX; \
	ADDQ  $4, DI; \
	DECQ  R13; \
	JNZ   pairs; \
	ADDQ  BX, AX; \
	ADDQ  R12, DI; \
single: \
	MOVQ  out_len+64(FP), R13; \
	TESTQ $1, R13; \
	JZ    done; \
	VPXOR Y0, Y0, Y0; \
	VPXOR Y1, Y1, Y1; \
	VPXOR Y2, Y2, Y2; \
	VPXOR Y3, Y3, Y3; \
	XORQ  R9, R9; \
	LEAQ  128(SI), R10; \
	CMPQ  R9, DX; \
	JAE   singleodd; \
singleloop: \
	PREFETCHT1 16384(AX)(R9*1); \
	NEAR0; \
	VMOVDQU    (AX)(R9*1), Y8; \
	ROW0(0x80, 0xA0, 0xC0, 0xE0); \
	VMOVDQU    32(AX)(R9*1), Y8; \
	ROW0(0x00, 0x20, 0x40, 0x60); \
	ADDQ       $64, R9; \
	ADDQ       $256, R10; \
	CMPQ       R9, DX; \
	JB         singleloop; \
singleodd: \
	CMPQ    R9, CX; \
	JAE     singledone; \
	VMOVDQU (AX)(R9*1), Y8; \
	ROW0(0x80, 0xA0, 0xC0, 0xE0); \
singledone: \
	SUM(Y0, Y1, Y2, Y3, X0, X1); \
	VMOVD X0, (DI); \
done: \
	VZEROUPPER; \
	RET

// MMARGS(done) loads ternaryMatMul8AVXVNNI's and ternaryMatMul12AVXVNNI's
// arguments into their registers (CX w, DX rows, SI x, R8 xStride, R11-R13
// 3, 5 and 7 of it, DI out, R9 outStride in bytes), jumping to done for no
// rows.
#define MMARGS(done) MOVQ w_base+0(FP), CX; MOVQ rows+32(FP), DX; TESTQ DX, DX; JZ done; MOVQ x_base+40(FP), SI; MOVQ xStride+64(FP), R8; LEAQ (R8)(R8*2), R11; LEAQ (R8)(R8*4), R12; LEAQ (R11)(R8*4), R13; MOVQ out_base+80(FP), DI; MOVQ outStride+104(FP), R9; SHLQ $2, R9

#define NONEAR
#define NEARAX PREFETCHT0 2048(AX)(R9*1)
#define NEARR11 PREFETCHT0 2048(R11)(R9*1)

// func ternaryRowsAVXVNNI(w []byte, stride int, x []int8, out []int32)
TEXT ·ternaryRowsAVXVNNI(SB), NOSPLIT, $0-80
	ROWS(NONEAR, NONEAR)

// ternaryRowsAVXVNNITwo is ternaryRowsAVXVNNI (the same bits) prefetching
// each 64-byte line of its rows twice: 16 KiB ahead into L2, as it does,
// and 2 KiB ahead into L1, as the avx512vnni set's Two kernels do on
// Intel's cores (the only ones with AVX-VNNI and no AVX-512): a load that
// hits L2 rather than L1 holds the operations waiting on it in the
// scheduler, and fewer lines are then in flight than the memory needs.

// func ternaryRowsAVXVNNITwo(w []byte, stride int, x []int8, out []int32)
TEXT ·ternaryRowsAVXVNNITwo(SB), NOSPLIT, $0-80
	ROWS(NEARAX, NEARR11)

// ternaryMatMul8AVXVNNI: out[t·outStride + r] = Σ_i c(w[r·stride:], i)·x[t·xStride + i]
// for r < rows and exactly 8 tokens t, exact (added to out instead when
// add is nonzero: a call over a span of the columns, whose sums add up to
// the same bits): prefill's ternaryMatMul for the avxvnni set, a tile of
// 1 row × 8 tokens. A block's 32 bytes give its
// codes at scale 1 (shift and mask, as ternaryMatMulAVX2 does): Y8-Y11 the
// codes of x[0:32], x[32:64], x[64:96], x[96:128]. Each code vector meets
// each token's 32 activations in one vpdpbusd from memory into the
// token's accumulator (Y0-Y7): 32 per block, 1024 multiply-adds, where
// avx2's vpmaddubsw takes three instructions for 32.
//
// Registers: CX the row's weights, AX the block, BX the blocks left, DX
// the rows left, SI x, R10 x + 128·block, R8 xStride (token 1: R10 + R8,
// 2: R10 + 2·R8, 3: R10 + R11, 4: R10 + 4·R8, 5: R10 + R12, 6: R10 +
// 2·R11, 7: R10 + R13), R11-R13 3, 5 and 7 strides, DI out (token 0 of
// the row), R9 outStride in bytes, Y15 the mask 0x03.

// DPT0(vex2, disp): {vex} vpdpbusd disp(R10), Yk, Y0 (vex2 names Yk: 0x3D
// Y8, 0x35 Y9, 0x2D Y10, 0x25 Y11). DPTS(vex2, modrm, sib, disp): the same
// from disp(R10)(index*scale) into Yt (modrm 0x44 + 8·t, sib the index).
#define DPT0(vex2, disp) BYTE $0xC4; BYTE $0xC2; BYTE $vex2; BYTE $0x50; BYTE $0x42; BYTE $disp
#define DPTS(vex2, modrm, sib, disp) BYTE $0xC4; BYTE $0x82; BYTE $vex2; BYTE $0x50; BYTE $modrm; BYTE $sib; BYTE $disp

// CODE(vex2, disp): one code vector's vpdpbusd into every token's
// accumulator (eight independent chains between one token's four).
#define CODE(vex2, disp) DPT0(vex2, disp); DPTS(vex2, 0x4C, 0x02, disp); DPTS(vex2, 0x54, 0x42, disp); DPTS(vex2, 0x5C, 0x1A, disp); DPTS(vex2, 0x64, 0x82, disp); DPTS(vex2, 0x6C, 0x22, disp); DPTS(vex2, 0x74, 0x5A, disp); DPTS(vex2, 0x7C, 0x2A, disp)

// HALVES(y, x, t): x (y's low half) += y's high half, t a scratch xmm.
#define HALVES(y, x, t) VEXTRACTI128 $1, y, t; VPADDD t, x, x

// SUM4(a0, a1, a2, a3, x0, x1, x2, x3, t0, t1, t2, t3) leaves the sums of
// the accumulators a0-a3 (four tokens' 8 lanes each; x0-x3 their low
// halves) in x0's dwords 0-3: halves, then two rounds of pairs; t0-t3 are
// scratch xmm.
#define SUM4(a0, a1, a2, a3, x0, x1, x2, x3, t0, t1, t2, t3) HALVES(a0, x0, t0); HALVES(a1, x1, t1); HALVES(a2, x2, t2); HALVES(a3, x3, t3); VPHADDD x1, x0, x0; VPHADDD x3, x2, x2; VPHADDD x2, x0, x0

// STORE4(x) stores x's four dwords at BX, BX+R9, BX+2·R9 and BX+3·R9 (four
// tokens' outputs of one row), leaving BX at the last.
#define STORE4(x) VMOVD x, (BX); ADDQ R9, BX; VPEXTRD $1, x, (BX); ADDQ R9, BX; VPEXTRD $2, x, (BX); ADDQ R9, BX; VPEXTRD $3, x, (BX)

// ADD4(x) adds x's four dwords to the int32s at BX, BX+R9, BX+2·R9 and
// BX+3·R9, leaving BX at the last (AX a scratch).
#define ADD4(x) VMOVD x, AX; ADDL AX, (BX); ADDQ R9, BX; VPEXTRD $1, x, AX; ADDL AX, (BX); ADDQ R9, BX; VPEXTRD $2, x, AX; ADDL AX, (BX); ADDQ R9, BX; VPEXTRD $3, x, AX; ADDL AX, (BX)

// func ternaryMatMul8AVXVNNI(w []byte, stride int, rows int, x []int8, xStride int, n int, out []int32, outStride int, add int)
TEXT ·ternaryMatMul8AVXVNNI(SB), NOSPLIT, $0-120
	MMARGS(mm8done)
	VPBROADCASTD avxvnniMasks<>+12(SB), Y15

mm8row:
	ZERO8
	MOVQ  CX, AX
	MOVQ  SI, R10
	MOVQ  n+72(FP), BX
	SHRQ  $7, BX
	JZ    mm8sum

mm8block:
	VMOVDQU (AX), Y11
	VPSRLW  $6, Y11, Y8
	VPAND   Y15, Y8, Y8
	VPSRLW  $4, Y11, Y9
	VPAND   Y15, Y9, Y9
	VPSRLW  $2, Y11, Y10
	VPAND   Y15, Y10, Y10
	VPAND   Y15, Y11, Y11
	CODE(0x3D, 0x00)
	CODE(0x35, 0x20)
	CODE(0x2D, 0x40)
	CODE(0x25, 0x60)
	ADDQ    $32, AX
	ADDQ    $128, R10
	DECQ    BX
	JNZ     mm8block

mm8sum:
	// X0 = the sums of tokens 0-3, X4 those of 4-7.
	SUM4(Y0, Y1, Y2, Y3, X0, X1, X2, X3, X8, X9, X10, X11)
	SUM4(Y4, Y5, Y6, Y7, X4, X5, X6, X7, X8, X9, X10, X11)
	MOVQ         DI, BX
	CMPQ         add+112(FP), $0
	JNE          mm8add
	STORE4(X0)
	ADDQ         R9, BX
	STORE4(X4)
	JMP          mm8next

mm8add:
	ADD4(X0)
	ADDQ R9, BX
	ADD4(X4)

mm8next:
	ADDQ         $4, DI
	ADDQ         stride+24(FP), CX
	DECQ         DX
	JNZ          mm8row

mm8done:
	VZEROUPPER
	RET

// ternaryMatMul12AVXVNNI is ternaryMatMul8AVXVNNI for exactly 12 tokens.
// Eight accumulators cannot keep vpdpbusd's two ports busy:
// each takes a block's four code vectors in turn, and on Golden Cove a
// vpdpbusd waits 5 cycles for the one before it in its chain, so eight
// chains issue 1.6 a cycle at most (a register-only loop of eight chains
// ran at 152 GMAC/s on the Intel Xeon VM, of ten or twelve at 188-192).
// Twelve tokens make twelve chains, and the unpacking (4 loads' worth of
// shifts and masks a block) spreads over 48 vpdpbusd instead of 32. The
// registers: Y0-Y11 the tokens' accumulators, Y12-Y15 the codes of
// x[0:32], x[32:64], x[64:96], x[96:128], the mask 0x03 from memory; CX,
// AX, BX, DX, SI, R8-R13, DI as in ternaryMatMul8AVXVNNI, and R14 =
// R10 + 8·xStride, the base of tokens 8-11 (8: R14, 9: R14 + R8, 10: R14
// + 2·R8, 11: R14 + R11).

DATA avxvnniLow2<>+0(SB)/8, $0x0303030303030303
DATA avxvnniLow2<>+8(SB)/8, $0x0303030303030303
DATA avxvnniLow2<>+16(SB)/8, $0x0303030303030303
DATA avxvnniLow2<>+24(SB)/8, $0x0303030303030303
GLOBL avxvnniLow2<>(SB), RODATA|NOPTR, $32

// DPN(b1, vex2, modrm, disp): {vex} vpdpbusd disp(base), Yk, Yacc without
// an index; DPX(b1, vex2, modrm, sib, disp) with one. b1 is the VEX
// byte of R̄X̄B̄ (0xC2: Yacc < 8, no index; 0x82: Yacc < 8, an index ≥ R8;
// 0x42 and 0x02 the same for Yacc ≥ 8; the bases R10, R14 are ≥ R8), vex2
// names Yk (0x1D Y12, 0x15 Y13, 0x0D Y14, 0x05 Y15), modrm 0x40 + 8·(acc
// mod 8) + 2 (R10) or 6 (R14), or + 4 with a sib (scale, index, base).
// Checked against GNU as's "{vex} vpdpbusd".
#define DPN(b1, vex2, modrm, disp) BYTE $0xC4; BYTE $b1; BYTE $vex2; BYTE $0x50; BYTE $modrm; BYTE $disp
#define DPX(b1, vex2, modrm, sib, disp) BYTE $0xC4; BYTE $b1; BYTE $vex2; BYTE $0x50; BYTE $modrm; BYTE $sib; BYTE $disp

// CODE12(vex2, disp): one code vector's vpdpbusd into each of the 12
// tokens' accumulators.
#define CODE12(vex2, disp) DPN(0xC2, vex2, 0x42, disp); DPX(0x82, vex2, 0x4C, 0x02, disp); DPX(0x82, vex2, 0x54, 0x42, disp); DPX(0x82, vex2, 0x5C, 0x1A, disp); DPX(0x82, vex2, 0x64, 0x82, disp); DPX(0x82, vex2, 0x6C, 0x22, disp); DPX(0x82, vex2, 0x74, 0x5A, disp); DPX(0x82, vex2, 0x7C, 0x2A, disp); DPN(0x42, vex2, 0x46, disp); DPX(0x02, vex2, 0x4C, 0x06, disp); DPX(0x02, vex2, 0x54, 0x46, disp); DPX(0x02, vex2, 0x5C, 0x1E, disp)

// ZERO12 clears the accumulators Y0-Y11.
#define ZERO12 ZERO8; VPXOR Y8, Y8, Y8; VPXOR Y9, Y9, Y9; VPXOR Y10, Y10, Y10; VPXOR Y11, Y11, Y11

// UNPACK(m) loads the block at m and leaves its codes at scale 1 in
// Y12-Y15 (x[0:32], x[32:64], x[64:96], x[96:128]).
#define UNPACK(m) VMOVDQU m, Y15; VPSRLW $6, Y15, Y12; VPAND avxvnniLow2<>(SB), Y12, Y12; VPSRLW $4, Y15, Y13; VPAND avxvnniLow2<>(SB), Y13, Y13; VPSRLW $2, Y15, Y14; VPAND avxvnniLow2<>(SB), Y14, Y14; VPAND avxvnniLow2<>(SB), Y15, Y15

// func ternaryMatMul12AVXVNNI(w []byte, stride int, rows int, x []int8, xStride int, n int, out []int32, outStride int, add int)
TEXT ·ternaryMatMul12AVXVNNI(SB), NOSPLIT, $0-120
	MMARGS(mm12done)

mm12row:
	ZERO12
	MOVQ CX, AX
	MOVQ SI, R10
	LEAQ (SI)(R8*8), R14
	MOVQ n+72(FP), BX
	SHRQ $7, BX
	JZ   mm12sum

mm12block:
	UNPACK((AX))
	CODE12(0x1D, 0x00)
	CODE12(0x15, 0x20)
	CODE12(0x0D, 0x40)
	CODE12(0x05, 0x60)
	ADDQ    $32, AX
	ADDQ    $128, R10
	ADDQ    $128, R14
	DECQ    BX
	JNZ     mm12block

mm12sum:
	// Each token's 8 lanes to one sum, as ternaryMatMul8AVXVNNI: X0, X4
	// and X8 the sums of tokens 0-3, 4-7 and 8-11.
	SUM4(Y0, Y1, Y2, Y3, X0, X1, X2, X3, X12, X13, X14, X15)
	SUM4(Y4, Y5, Y6, Y7, X4, X5, X6, X7, X12, X13, X14, X15)
	SUM4(Y8, Y9, Y10, Y11, X8, X9, X10, X11, X12, X13, X14, X15)
	MOVQ    DI, BX
	CMPQ    add+112(FP), $0
	JNE     mm12add
	STORE4(X0)
	ADDQ    R9, BX
	STORE4(X4)
	ADDQ    R9, BX
	STORE4(X8)
	JMP     mm12next

mm12add:
	ADD4(X0)
	ADDQ R9, BX
	ADD4(X4)
	ADDQ R9, BX
	ADD4(X8)

mm12next:
	ADDQ $4, DI
	ADDQ stride+24(FP), CX
	DECQ DX
	JNZ  mm12row

mm12done:
	VZEROUPPER
	RET

// ternaryMatMul4AVXVNNI is ternaryMatMul8AVXVNNI for exactly 4 tokens and
// rows a multiple of 3 (the caller runs the rest), in tiles of 3 rows × 4
// tokens: twelve chains, as in ternaryMatMul12AVXVNNI, where a tile of 1
// row × 4 tokens would have four. The passes of a few tokens (a
// speculative verification, a step of several streams) read their rows
// from DRAM, so each line of the three rows is prefetched twice, 16 KiB
// ahead into L2 and 1 KiB ahead into L1, as the set's Two kernels do on
// Intel's cores (the only ones that run this set). Each row's block is
// unpacked into Y12-Y15 in turn and meets the 4 tokens' activations from
// memory (each read three times, from L1). Registers: CX the group's
// first row, R13 its block, R8 the stride (rows 1 and 2: R13 + R8, R13 +
// 2·R8), DX the groups left, BX the blocks left, SI x, R10 x + 128 + the
// step's offset (a step is two blocks: the first at disp8s 0x80-0xE0,
// the second at 0x00-0x60), R11 xStride and R12 3·xStride (tokens 1-3:
// R10 + R11, R10 + 2·R11, R10 + R12), DI the group's outputs of token 0,
// R9 outStride in bytes, Y0-Y3, Y4-Y7, Y8-Y11 the three rows' four
// tokens' accumulators.

// R4ROWr(vex2, disp): one code vector (vex2 as in CODE12) into row r's
// four accumulators, the tokens' activations at disp.
#define R4ROW0(vex2, disp) DPN(0xC2, vex2, 0x42, disp); DPX(0x82, vex2, 0x4C, 0x1A, disp); DPX(0x82, vex2, 0x54, 0x5A, disp); DPX(0x82, vex2, 0x5C, 0x22, disp)
#define R4ROW1(vex2, disp) DPN(0xC2, vex2, 0x62, disp); DPX(0x82, vex2, 0x6C, 0x1A, disp); DPX(0x82, vex2, 0x74, 0x5A, disp); DPX(0x82, vex2, 0x7C, 0x22, disp)
#define R4ROW2(vex2, disp) DPN(0x42, vex2, 0x42, disp); DPX(0x02, vex2, 0x4C, 0x1A, disp); DPX(0x02, vex2, 0x54, 0x5A, disp); DPX(0x02, vex2, 0x5C, 0x22, disp)

// R4BLOCK(m0, m1, m2, d0, d1, d2, d3): the three rows' blocks at m0-m2
// against the activations at d0-d3.
#define R4BLOCK(m0, m1, m2, d0, d1, d2, d3) UNPACK(m0); R4ROW0(0x1D, d0); R4ROW0(0x15, d1); R4ROW0(0x0D, d2); R4ROW0(0x05, d3); UNPACK(m1); R4ROW1(0x1D, d0); R4ROW1(0x15, d1); R4ROW1(0x0D, d2); R4ROW1(0x05, d3); UNPACK(m2); R4ROW2(0x1D, d0); R4ROW2(0x15, d1); R4ROW2(0x0D, d2); R4ROW2(0x05, d3)

// func ternaryMatMul4AVXVNNI(w []byte, stride int, rows int, x []int8, xStride int, n int, out []int32, outStride int, add int)
TEXT ·ternaryMatMul4AVXVNNI(SB), NOSPLIT, $0-120
	MOVQ w_base+0(FP), CX
	MOVQ stride+24(FP), R8
	MOVQ rows+32(FP), DX
	MOVQ $0x5555555555555556, AX // DX = rows/3 (rows < 2³²)
	MULQ DX
	TESTQ DX, DX
	JZ   mm4done
	MOVQ x_base+40(FP), SI
	MOVQ xStride+64(FP), R11
	LEAQ (R11)(R11*2), R12
	MOVQ out_base+80(FP), DI
	MOVQ outStride+104(FP), R9
	SHLQ $2, R9

mm4group:
	ZERO12
	MOVQ CX, R13
	LEAQ 128(SI), R10
	MOVQ n+72(FP), BX
	SHRQ $7, BX

mm4pair:
	CMPQ        BX, $2
	JB          mm4odd
	PREFETCHT1  16384(R13)
	PREFETCHT1  16384(R13)(R8*1)
	PREFETCHT1  16384(R13)(R8*2)
	PREFETCHT0  1024(R13)
	PREFETCHT0  1024(R13)(R8*1)
	PREFETCHT0  1024(R13)(R8*2)
	R4BLOCK((R13), (R13)(R8*1), (R13)(R8*2), 0x80, 0xA0, 0xC0, 0xE0)
	R4BLOCK(32(R13), 32(R13)(R8*1), 32(R13)(R8*2), 0x00, 0x20, 0x40, 0x60)
	ADDQ        $64, R13
	ADDQ        $256, R10
	SUBQ        $2, BX
	JMP         mm4pair

mm4odd:
	TESTQ BX, BX
	JZ    mm4sum
	R4BLOCK((R13), (R13)(R8*1), (R13)(R8*2), 0x80, 0xA0, 0xC0, 0xE0)

mm4sum:
	SUM4(Y0, Y1, Y2, Y3, X0, X1, X2, X3, X12, X13, X14, X15)
	SUM4(Y4, Y5, Y6, Y7, X4, X5, X6, X7, X12, X13, X14, X15)
	SUM4(Y8, Y9, Y10, Y11, X8, X9, X10, X11, X12, X13, X14, X15)
	CMPQ add+112(FP), $0
	JNE  mm4add
	MOVQ DI, BX
	STORE4(X0)
	LEAQ 4(DI), BX
	STORE4(X4)
	LEAQ 8(DI), BX
	STORE4(X8)
	JMP  mm4next

mm4add:
	MOVQ DI, BX
	ADD4(X0)
	LEAQ 4(DI), BX
	ADD4(X4)
	LEAQ 8(DI), BX
	ADD4(X8)

mm4next:
	ADDQ $12, DI
	LEAQ (CX)(R8*2), CX
	ADDQ R8, CX
	DECQ DX
	JNZ  mm4group

mm4done:
	VZEROUPPER
	RET

// ternaryMatMul3AVXVNNI is ternaryMatMul4AVXVNNI for exactly 3 tokens and
// rows a multiple of 4: tiles of 4 rows × 3 tokens, twelve chains again.
// Registers as there, but for R14 = 3·stride (row 3: R13 + R14), the
// rows' accumulators Y0-Y2, Y3-Y5, Y6-Y8 and Y9-Y11, and no R12.

// R3ROWr(vex2, disp): one code vector into row r's three accumulators.
#define R3ROW0(vex2, disp) DPN(0xC2, vex2, 0x42, disp); DPX(0x82, vex2, 0x4C, 0x1A, disp); DPX(0x82, vex2, 0x54, 0x5A, disp)
#define R3ROW1(vex2, disp) DPN(0xC2, vex2, 0x5A, disp); DPX(0x82, vex2, 0x64, 0x1A, disp); DPX(0x82, vex2, 0x6C, 0x5A, disp)
#define R3ROW2(vex2, disp) DPN(0xC2, vex2, 0x72, disp); DPX(0x82, vex2, 0x7C, 0x1A, disp); DPX(0x02, vex2, 0x44, 0x5A, disp)
#define R3ROW3(vex2, disp) DPN(0x42, vex2, 0x4A, disp); DPX(0x02, vex2, 0x54, 0x1A, disp); DPX(0x02, vex2, 0x5C, 0x5A, disp)

// R3BLOCK(m0, m1, m2, m3, d0, d1, d2, d3): the four rows' blocks at m0-m3
// against the activations at d0-d3.
#define R3BLOCK(m0, m1, m2, m3, d0, d1, d2, d3) UNPACK(m0); R3ROW0(0x1D, d0); R3ROW0(0x15, d1); R3ROW0(0x0D, d2); R3ROW0(0x05, d3); UNPACK(m1); R3ROW1(0x1D, d0); R3ROW1(0x15, d1); R3ROW1(0x0D, d2); R3ROW1(0x05, d3); UNPACK(m2); R3ROW2(0x1D, d0); R3ROW2(0x15, d1); R3ROW2(0x0D, d2); R3ROW2(0x05, d3); UNPACK(m3); R3ROW3(0x1D, d0); R3ROW3(0x15, d1); R3ROW3(0x0D, d2); R3ROW3(0x05, d3)

// R3SUM(a0, a1, a2, x0, x1, x2) leaves the three tokens' sums of one row
// in x0's dwords 0-2.
#define R3SUM(a0, a1, a2, x0, x1, x2) HALVES(a0, x0, X12); HALVES(a1, x1, X13); HALVES(a2, x2, X14); VPHADDD x1, x0, x0; VPHADDD x2, x2, x2; VPHADDD x2, x0, x0

// STORE3(x), ADD3(x): STORE4 and ADD4 for three tokens.
#define STORE3(x) VMOVD x, (BX); ADDQ R9, BX; VPEXTRD $1, x, (BX); ADDQ R9, BX; VPEXTRD $2, x, (BX)
#define ADD3(x) VMOVD x, AX; ADDL AX, (BX); ADDQ R9, BX; VPEXTRD $1, x, AX; ADDL AX, (BX); ADDQ R9, BX; VPEXTRD $2, x, AX; ADDL AX, (BX)

// func ternaryMatMul3AVXVNNI(w []byte, stride int, rows int, x []int8, xStride int, n int, out []int32, outStride int, add int)
TEXT ·ternaryMatMul3AVXVNNI(SB), NOSPLIT, $0-120
	MOVQ w_base+0(FP), CX
	MOVQ stride+24(FP), R8
	LEAQ (R8)(R8*2), R14
	MOVQ rows+32(FP), DX
	SHRQ $2, DX
	JZ   mm3done
	MOVQ x_base+40(FP), SI
	MOVQ xStride+64(FP), R11
	MOVQ out_base+80(FP), DI
	MOVQ outStride+104(FP), R9
	SHLQ $2, R9

mm3group:
	ZERO12
	MOVQ CX, R13
	LEAQ 128(SI), R10
	MOVQ n+72(FP), BX
	SHRQ $7, BX

mm3pair:
	CMPQ       BX, $2
	JB         mm3odd
	PREFETCHT1 16384(R13)
	PREFETCHT1 16384(R13)(R8*1)
	PREFETCHT1 16384(R13)(R8*2)
	PREFETCHT1 16384(R13)(R14*1)
	PREFETCHT0 1024(R13)
	PREFETCHT0 1024(R13)(R8*1)
	PREFETCHT0 1024(R13)(R8*2)
	PREFETCHT0 1024(R13)(R14*1)
	R3BLOCK((R13), (R13)(R8*1), (R13)(R8*2), (R13)(R14*1), 0x80, 0xA0, 0xC0, 0xE0)
	R3BLOCK(32(R13), 32(R13)(R8*1), 32(R13)(R8*2), 32(R13)(R14*1), 0x00, 0x20, 0x40, 0x60)
	ADDQ       $64, R13
	ADDQ       $256, R10
	SUBQ       $2, BX
	JMP        mm3pair

mm3odd:
	TESTQ BX, BX
	JZ    mm3sum
	R3BLOCK((R13), (R13)(R8*1), (R13)(R8*2), (R13)(R14*1), 0x80, 0xA0, 0xC0, 0xE0)

mm3sum:
	R3SUM(Y0, Y1, Y2, X0, X1, X2)
	R3SUM(Y3, Y4, Y5, X3, X4, X5)
	R3SUM(Y6, Y7, Y8, X6, X7, X8)
	R3SUM(Y9, Y10, Y11, X9, X10, X11)
	CMPQ add+112(FP), $0
	JNE  mm3add
	MOVQ DI, BX
	STORE3(X0)
	LEAQ 4(DI), BX
	STORE3(X3)
	LEAQ 8(DI), BX
	STORE3(X6)
	LEAQ 12(DI), BX
	STORE3(X9)
	JMP  mm3next

mm3add:
	MOVQ DI, BX
	ADD3(X0)
	LEAQ 4(DI), BX
	ADD3(X3)
	LEAQ 8(DI), BX
	ADD3(X6)
	LEAQ 12(DI), BX
	ADD3(X9)

mm3next:
	ADDQ $16, DI
	LEAQ (CX)(R8*4), CX
	DECQ DX
	JNZ  mm3group

mm3done:
	VZEROUPPER
	RET

// int8LoopAVXVNNI: iters iterations of 12 independent {vex} vpdpbusd Y13,
// Y12, Yk (k < 12; 384 multiply-adds each), registers only: the avxvnni
// set's int8 peak probe, on the instruction its ternary products run on.
#define PK(b1, modrm) BYTE $0xC4; BYTE $b1; BYTE $0x1D; BYTE $0x50; BYTE $modrm

// func int8LoopAVXVNNI(iters int)
TEXT ·int8LoopAVXVNNI(SB), NOSPLIT, $0-8
	MOVQ  iters+0(FP), CX
	TESTQ CX, CX
	JLE   pkdone

pkloop:
	PK(0xC2, 0xC5)
	PK(0xC2, 0xCD)
	PK(0xC2, 0xD5)
	PK(0xC2, 0xDD)
	PK(0xC2, 0xE5)
	PK(0xC2, 0xED)
	PK(0xC2, 0xF5)
	PK(0xC2, 0xFD)
	PK(0x42, 0xC5)
	PK(0x42, 0xCD)
	PK(0x42, 0xD5)
	PK(0x42, 0xDD)
	DECQ  CX
	JNZ   pkloop

pkdone:
	VZEROUPPER
	RET
