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

// func ternaryRowsAVXVNNI(w []byte, stride int, x []int8, out []int32)
TEXT ·ternaryRowsAVXVNNI(SB), NOSPLIT, $0-80
	MOVQ         w_base+0(FP), AX
	MOVQ         stride+24(FP), R8
	MOVQ         x_base+32(FP), SI
	MOVQ         x_len+40(FP), CX
	SHRQ         $2, CX
	MOVQ         CX, DX
	ANDQ         $-64, DX
	MOVQ         out_base+56(FP), DI
	VPBROADCASTD avxvnniMasks<>+0(SB), Y12
	VPBROADCASTD avxvnniMasks<>+4(SB), Y13
	VPBROADCASTD avxvnniMasks<>+8(SB), Y14
	VPBROADCASTD avxvnniMasks<>+12(SB), Y15
	MOVQ         out_len+64(FP), R13
	SHRQ         $1, R13
	JZ           single
	MOVQ         R13, BX
	IMULQ        R8, BX
	MOVQ         R13, R12
	SHLQ         $2, R12

pairs:
	LEAQ  (AX)(BX*1), R11
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3
	VPXOR Y4, Y4, Y4
	VPXOR Y5, Y5, Y5
	VPXOR Y6, Y6, Y6
	VPXOR Y7, Y7, Y7
	XORQ  R9, R9
	LEAQ  128(SI), R10
	CMPQ  R9, DX
	JAE   pairsodd

pairsloop:
	PREFETCHT1 16384(AX)(R9*1)
	PREFETCHT1 16384(R11)(R9*1)
	VMOVDQU    (AX)(R9*1), Y8
	VMOVDQU    (R11)(R9*1), Y9
	ROW0(0x80, 0xA0, 0xC0, 0xE0)
	ROW1(0x80, 0xA0, 0xC0, 0xE0)
	VMOVDQU    32(AX)(R9*1), Y8
	VMOVDQU    32(R11)(R9*1), Y9
	ROW0(0x00, 0x20, 0x40, 0x60)
	ROW1(0x00, 0x20, 0x40, 0x60)
	ADDQ       $64, R9
	ADDQ       $256, R10
	CMPQ       R9, DX
	JB         pairsloop

pairsodd:
	CMPQ    R9, CX
	JAE     pairsdone
	VMOVDQU (AX)(R9*1), Y8
	VMOVDQU (R11)(R9*1), Y9
	ROW0(0x80, 0xA0, 0xC0, 0xE0)
	ROW1(0x80, 0xA0, 0xC0, 0xE0)

pairsdone:
	SUM(Y0, Y1, Y2, Y3, X0, X1)
	SUM(Y4, Y5, Y6, Y7, X4, X5)
	VMOVD X0, (DI)
	VMOVD X4, (DI)(R12*1)
	ADDQ  R8, AX
	ADDQ  $4, DI
	DECQ  R13
	JNZ   pairs
	ADDQ  BX, AX
	ADDQ  R12, DI

single:
	MOVQ  out_len+64(FP), R13
	TESTQ $1, R13
	JZ    done
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3
	XORQ  R9, R9
	LEAQ  128(SI), R10
	CMPQ  R9, DX
	JAE   singleodd

singleloop:
	PREFETCHT1 16384(AX)(R9*1)
	VMOVDQU    (AX)(R9*1), Y8
	ROW0(0x80, 0xA0, 0xC0, 0xE0)
	VMOVDQU    32(AX)(R9*1), Y8
	ROW0(0x00, 0x20, 0x40, 0x60)
	ADDQ       $64, R9
	ADDQ       $256, R10
	CMPQ       R9, DX
	JB         singleloop

singleodd:
	CMPQ    R9, CX
	JAE     singledone
	VMOVDQU (AX)(R9*1), Y8
	ROW0(0x80, 0xA0, 0xC0, 0xE0)

singledone:
	SUM(Y0, Y1, Y2, Y3, X0, X1)
	VMOVD X0, (DI)

done:
	VZEROUPPER
	RET
