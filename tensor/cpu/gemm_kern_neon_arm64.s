//go:build arm64

#include "textflag.h"

// The arm64 micro kernels: the 4×32 tile of microKernel (gemm_path.go) as two
// 4×16 halves (NEON has 32 registers of 4 floats; a whole 4×32 tile would
// need all of them for accumulators). A half keeps its 4×16 tile in V0-V15
// (row r, columns 4j..4j+3 of the half in V(4r+j)). Per k, the four panel
// vectors V16-V19 are multiplied by lane k%4 of the rows' A vectors V20-V23
// (four consecutive k of one row, loaded once per four k) and added with
// FMLA (by element): one fused multiply-add per element per k, from zero, in
// k order, which is the contract of microKernel. For the last kc%4 steps the
// A values are broadcast (LD1R) and FMLA (vector) does the same fused
// operation. With acc, C is added at the end (FADD), as on amd64.
// kernFMARef (gemm_kern_ref_test.go) is the Go transcription these kernels
// are tested against, bit for bit.
//
// Registers: R0, R3, R4, R5 the four A rows (rows past the valid ones alias
// the last valid one); R6 the half's panel columns, R7 its C columns; R8 the
// C row stride in bytes; R9 kc; R10 acc; R21 halves left; R11-R14, R15, R19:
// the running A rows, panel pointer and k count of a half, then the C rows.
//
// The Go assembler knows neither FMLA (by element) nor FADD (vector): they are
// WORDs below (encodings checked against llvm-mc -triple=aarch64).

// FMLAE: V(d).4S += V(n).4S * V(m).S[i]
#define FMLAE(d, n, m, i) WORD $(0x4F801000 | ((i&1)<<21) | ((i>>1)<<11) | (m<<16) | (n<<5) | d)

// FADD4: V(d).4S = V(n).4S + V(m).4S
#define FADD4(d, n, m) WORD $(0x4E20D400 | (m<<16) | (n<<5) | d)

// TILE16E: the 16 accumulators += panel vectors V16-V19 × lane i of V20-V23.
#define TILE16E(i) \
	FMLAE(0, 16, 20, i); FMLAE(1, 17, 20, i); FMLAE(2, 18, 20, i); FMLAE(3, 19, 20, i); \
	FMLAE(4, 16, 21, i); FMLAE(5, 17, 21, i); FMLAE(6, 18, 21, i); FMLAE(7, 19, 21, i); \
	FMLAE(8, 16, 22, i); FMLAE(9, 17, 22, i); FMLAE(10, 18, 22, i); FMLAE(11, 19, 22, i); \
	FMLAE(12, 16, 23, i); FMLAE(13, 17, 23, i); FMLAE(14, 18, 23, i); FMLAE(15, 19, 23, i)

// TILE16B: the same with V20-V23 holding broadcast A values.
#define TILE16B \
	VFMLA V16.S4, V20.S4, V0.S4; VFMLA V17.S4, V20.S4, V1.S4; VFMLA V18.S4, V20.S4, V2.S4; VFMLA V19.S4, V20.S4, V3.S4; \
	VFMLA V16.S4, V21.S4, V4.S4; VFMLA V17.S4, V21.S4, V5.S4; VFMLA V18.S4, V21.S4, V6.S4; VFMLA V19.S4, V21.S4, V7.S4; \
	VFMLA V16.S4, V22.S4, V8.S4; VFMLA V17.S4, V22.S4, V9.S4; VFMLA V18.S4, V22.S4, V10.S4; VFMLA V19.S4, V22.S4, V11.S4; \
	VFMLA V16.S4, V23.S4, V12.S4; VFMLA V17.S4, V23.S4, V13.S4; VFMLA V18.S4, V23.S4, V14.S4; VFMLA V19.S4, V23.S4, V15.S4

// PANEL32: V16-V19 = the half's 16 panel floats at k; next k.
#define PANEL32 \
	VLD1 (R15), [V16.S4, V17.S4, V18.S4, V19.S4]; \
	ADD  $128, R15, R15

// PANEL16: the same from bfloat16 panels (32 values per k, 64 bytes): each
// value becomes the high half of a float32 whose low half is zero (V31 = 0).
#define PANEL16 \
	VLD1 (R15), [V24.H8, V25.H8]; \
	ADD  $64, R15, R15; \
	VZIP1 V24.H8, V31.H8, V16.H8; \
	VZIP2 V24.H8, V31.H8, V17.H8; \
	VZIP1 V25.H8, V31.H8, V18.H8; \
	VZIP2 V25.H8, V31.H8, V19.H8

// ROWS: R0, R3, R4, R5 = the four A rows; R6-R10, R21 as above.
#define ROWS \
	MOVD a+0(FP), R0; \
	MOVD lda+8(FP), R1; \
	LSL  $2, R1, R1; \
	MOVD rows+16(FP), R2; \
	SUB  $1, R2, R2; \
	ADD  R1, R0, R11; \
	CMP  $1, R2; \
	CSEL GE, R11, R0, R3; \
	ADD  R1, R3, R11; \
	CMP  $2, R2; \
	CSEL GE, R11, R3, R4; \
	ADD  R1, R4, R11; \
	CMP  $3, R2; \
	CSEL GE, R11, R4, R5; \
	MOVD b+24(FP), R6; \
	MOVD c+32(FP), R7; \
	MOVD ldc+40(FP), R8; \
	LSL  $2, R8, R8; \
	MOVD kc+48(FP), R9; \
	MOVBU acc+56(FP), R10; \
	MOVD $2, R21

// ZERO16: clear the accumulators; start a half's A, panel and k registers.
#define ZERO16 \
	VEOR V0.B16, V0.B16, V0.B16; VEOR V1.B16, V1.B16, V1.B16; VEOR V2.B16, V2.B16, V2.B16; VEOR V3.B16, V3.B16, V3.B16; \
	VEOR V4.B16, V4.B16, V4.B16; VEOR V5.B16, V5.B16, V5.B16; VEOR V6.B16, V6.B16, V6.B16; VEOR V7.B16, V7.B16, V7.B16; \
	VEOR V8.B16, V8.B16, V8.B16; VEOR V9.B16, V9.B16, V9.B16; VEOR V10.B16, V10.B16, V10.B16; VEOR V11.B16, V11.B16, V11.B16; \
	VEOR V12.B16, V12.B16, V12.B16; VEOR V13.B16, V13.B16, V13.B16; VEOR V14.B16, V14.B16, V14.B16; VEOR V15.B16, V15.B16, V15.B16; \
	MOVD R0, R11; \
	MOVD R3, R12; \
	MOVD R4, R13; \
	MOVD R5, R14; \
	MOVD R6, R15; \
	MOVD R9, R19

// LOADA4: four k values of each row into V20-V23.
#define LOADA4 \
	VLD1.P 16(R11), [V20.S4]; \
	VLD1.P 16(R12), [V21.S4]; \
	VLD1.P 16(R13), [V22.S4]; \
	VLD1.P 16(R14), [V23.S4]

// LOADA1: one k value of each row, broadcast into V20-V23.
#define LOADA1 \
	VLD1R.P 4(R11), [V20.S4]; \
	VLD1R.P 4(R12), [V21.S4]; \
	VLD1R.P 4(R13), [V22.S4]; \
	VLD1R.P 4(R14), [V23.S4]

// CROWS: R11-R14 = the half's four C rows.
#define CROWS \
	MOVD R7, R11; \
	ADD  R8, R11, R12; \
	ADD  R8, R12, R13; \
	ADD  R8, R13, R14

// ADDC: the accumulators += the half's 4×16 tile of C.
#define ADDC \
	VLD1 (R11), [V16.S4, V17.S4, V18.S4, V19.S4]; \
	FADD4(0, 0, 16); FADD4(1, 1, 17); FADD4(2, 2, 18); FADD4(3, 3, 19); \
	VLD1 (R12), [V16.S4, V17.S4, V18.S4, V19.S4]; \
	FADD4(4, 4, 16); FADD4(5, 5, 17); FADD4(6, 6, 18); FADD4(7, 7, 19); \
	VLD1 (R13), [V16.S4, V17.S4, V18.S4, V19.S4]; \
	FADD4(8, 8, 16); FADD4(9, 9, 17); FADD4(10, 10, 18); FADD4(11, 11, 19); \
	VLD1 (R14), [V16.S4, V17.S4, V18.S4, V19.S4]; \
	FADD4(12, 12, 16); FADD4(13, 13, 17); FADD4(14, 14, 18); FADD4(15, 15, 19)

// STORE: the half's 4×16 tile to C.
#define STORE \
	VST1 [V0.S4, V1.S4, V2.S4, V3.S4], (R11); \
	VST1 [V4.S4, V5.S4, V6.S4, V7.S4], (R12); \
	VST1 [V8.S4, V9.S4, V10.S4, V11.S4], (R13); \
	VST1 [V12.S4, V13.S4, V14.S4, V15.S4], (R14)

// func kernNEON(a *float32, lda, rows int, b, c *float32, ldc, kc int, acc bool)
TEXT ·kernNEON(SB), NOSPLIT, $0-57
	ROWS
half:
	ZERO16
	CMP  $4, R19
	BLT  tail
loop4:
	LOADA4
	PANEL32
	TILE16E(0)
	PANEL32
	TILE16E(1)
	PANEL32
	TILE16E(2)
	PANEL32
	TILE16E(3)
	SUB  $4, R19, R19
	CMP  $4, R19
	BGE  loop4
tail:
	CBZ  R19, done
loop1:
	LOADA1
	PANEL32
	TILE16B
	SUB  $1, R19, R19
	CBNZ R19, loop1
done:
	CROWS
	CBZ  R10, store
	ADDC
store:
	STORE
	ADD  $64, R6, R6  // the second half: panel columns 16-31
	ADD  $64, R7, R7  // and C columns 16-31
	SUB  $1, R21, R21
	CBNZ R21, half
	RET

// func kernNEONBF16(a *float32, lda, rows int, b *uint16, c *float32, ldc, kc int, acc bool)
TEXT ·kernNEONBF16(SB), NOSPLIT, $0-57
	ROWS
	VEOR V31.B16, V31.B16, V31.B16
half:
	ZERO16
	CMP  $4, R19
	BLT  tail
loop4:
	LOADA4
	PANEL16
	TILE16E(0)
	PANEL16
	TILE16E(1)
	PANEL16
	TILE16E(2)
	PANEL16
	TILE16E(3)
	SUB  $4, R19, R19
	CMP  $4, R19
	BGE  loop4
tail:
	CBZ  R19, done
loop1:
	LOADA1
	PANEL16
	TILE16B
	SUB  $1, R19, R19
	CBNZ R19, loop1
done:
	CROWS
	CBZ  R10, store
	ADDC
store:
	STORE
	ADD  $32, R6, R6  // the second half: panel columns 16-31 (bfloat16)
	ADD  $64, R7, R7  // and C columns 16-31
	SUB  $1, R21, R21
	CBNZ R21, half
	RET
