//go:build goexperiment.simd && amd64

#include "textflag.h"
#include "gemm_kern_amd64.h"

// func kernAVX2x6(a *float32, lda int, b, c *float32, ldc, kc int, acc bool)
//
// The tall AVX2 tile: 6×32 as two 6×16 halves, each in twelve ymm
// accumulators Y0-Y11 (row r, columns 8j..8j+7 of the half in Y(2r+j)); the
// same fused multiply-adds in the same k order as kernAVX2asm, so the same
// bits. The 4-row kernel keeps 8 accumulators, exactly what two FMA pipes of
// latency 4 need, with no slack; 12 leave some and share each panel load
// among 6 rows. AVX2 has 16 ymm registers: 12 accumulators, Y12/Y13 the
// panel at k, Y15 the broadcasts, Y14 the bfloat16 kernel's mask. All six
// rows must be valid.
//
// Registers: SI and R8 the A rows 0 and 3 (rows 1, 2 and 4, 5 are AX and
// 2·AX bytes further); DI the half's panel columns, DX its C columns; R11 the
// C row stride in bytes; CX kc; R12, R13, R9, BX the running A bases, panel
// pointer and k count of a half.

// ROW6: the two FMAs of one row with its broadcast.
#define ROW6(acc0, acc1, bc, addr) \
	VBROADCASTSS addr, bc; \
	VFMADD231PS Y12, bc, acc0; \
	VFMADD231PS Y13, bc, acc1

// Each k step prefetches the half's own line of the panel 48 k steps ahead
// (a bfloat16 k is one line, both halves'). kernAVX2asm prefetches both
// lines of a k (gemm_kern_avx2_amd64.s says why: 8 decoding rows stream
// the panels from memory); here the tile's rows (6 or more, prefill and
// training) read a slice of 32 KiB a half from L2, and fetching the other
// half's line too brought it into L1 long before that half ran, evicting
// lines still in use: on a Zen 3 (32 KiB of L1) the products at M = 1,024
// ran about 10 % faster with the own line alone (18 of 18 shapes and
// rounds), a forward 8×128 of Qwen3-0.6B about 7 %.
#define PANEL6(boff) \
	PREFETCHT0 boff+6144(R9); \
	VMOVUPS boff(R9), Y12; \
	VMOVUPS boff+32(R9), Y13

// PANEL6B is PANEL6 for a bfloat16 panel, widened exactly as the AVX-512
// kernels do (gemm_kern_avx512_tall_amd64.s, PANEL16): the half's 16 values
// read as 8 dwords, a shift left by 16 gives the even columns (Y12) and
// clearing the low halves (Y14 = 0xffff0000 in every lane) the odd ones (Y13).
// The accumulators then hold even and odd columns; UNZIP6 puts them back in
// order before C is touched.
#define PANEL6B(boff) \
	PREFETCHT0 boff+3072(R9); \
	VMOVDQU boff(R9), Y13; \
	VPSLLD $16, Y13, Y12; \
	VPAND Y14, Y13, Y13

#define ROWS6(aoff) \
	ROW6(Y0, Y1, Y15, aoff(R12)); \
	ROW6(Y2, Y3, Y15, aoff(R12)(AX*1)); \
	ROW6(Y4, Y5, Y15, aoff(R12)(AX*2)); \
	ROW6(Y6, Y7, Y15, aoff(R13)); \
	ROW6(Y8, Y9, Y15, aoff(R13)(AX*1)); \
	ROW6(Y10, Y11, Y15, aoff(R13)(AX*2))

#define STEP6(boff, aoff) PANEL6(boff); ROWS6(aoff)
#define STEP6B(boff, aoff) PANEL6B(boff); ROWS6(aoff)

// PROLOGUE6: A rows 0 and 3, panel, C, C row stride, kc.
#define PROLOGUE6 \
	MOVQ a+0(FP), SI; \
	MOVQ lda+8(FP), AX; \
	SHLQ $2, AX; \
	LEAQ (AX)(AX*2), R8; \
	ADDQ SI, R8; \
	MOVQ b+16(FP), DI; \
	MOVQ c+24(FP), DX; \
	MOVQ ldc+32(FP), R11; \
	SHLQ $2, R11; \
	MOVQ kc+40(FP), CX

// UNZIP6: each row's even and odd columns of the half back in order
// (UNZIPY in gemm_kern_amd64.h; Y12, Y13 scratch).
#define UNZIP6 \
	UNZIPY(Y0, Y1, Y12, Y13); \
	UNZIPY(Y2, Y3, Y12, Y13); \
	UNZIPY(Y4, Y5, Y12, Y13); \
	UNZIPY(Y6, Y7, Y12, Y13); \
	UNZIPY(Y8, Y9, Y12, Y13); \
	UNZIPY(Y10, Y11, Y12, Y13)

// ZERO6 clears the twelve accumulators of a half.
#define ZERO6 \
	VXORPS Y0, Y0, Y0; \
	VXORPS Y1, Y1, Y1; \
	VXORPS Y2, Y2, Y2; \
	VXORPS Y3, Y3, Y3; \
	VXORPS Y4, Y4, Y4; \
	VXORPS Y5, Y5, Y5; \
	VXORPS Y6, Y6, Y6; \
	VXORPS Y7, Y7, Y7; \
	VXORPS Y8, Y8, Y8; \
	VXORPS Y9, Y9, Y9; \
	VXORPS Y10, Y10, Y10; \
	VXORPS Y11, Y11, Y11

// ADDC6 adds the half's C columns to the accumulators (C row 3 in R10); STORE6 stores them.
#define ADDC6 \
	VADDPS (DX), Y0, Y0; \
	VADDPS 32(DX), Y1, Y1; \
	VADDPS (DX)(R11*1), Y2, Y2; \
	VADDPS 32(DX)(R11*1), Y3, Y3; \
	VADDPS (DX)(R11*2), Y4, Y4; \
	VADDPS 32(DX)(R11*2), Y5, Y5; \
	VADDPS (R10), Y6, Y6; \
	VADDPS 32(R10), Y7, Y7; \
	VADDPS (R10)(R11*1), Y8, Y8; \
	VADDPS 32(R10)(R11*1), Y9, Y9; \
	VADDPS (R10)(R11*2), Y10, Y10; \
	VADDPS 32(R10)(R11*2), Y11, Y11

#define STORE6 \
	VMOVUPS Y0, (DX); \
	VMOVUPS Y1, 32(DX); \
	VMOVUPS Y2, (DX)(R11*1); \
	VMOVUPS Y3, 32(DX)(R11*1); \
	VMOVUPS Y4, (DX)(R11*2); \
	VMOVUPS Y5, 32(DX)(R11*2); \
	VMOVUPS Y6, (R10); \
	VMOVUPS Y7, 32(R10); \
	VMOVUPS Y8, (R10)(R11*1); \
	VMOVUPS Y9, 32(R10)(R11*1); \
	VMOVUPS Y10, (R10)(R11*2); \
	VMOVUPS Y11, 32(R10)(R11*2)


// kernAVX2x6, described at the top of the file.
TEXT ·kernAVX2x6(SB), NOSPLIT, $0-49
	PROLOGUE6

half6:
	ZERO6
	MOVQ SI, R12
	MOVQ R8, R13
	MOVQ DI, R9
	MOVQ CX, BX
	CMPQ BX, $4
	JLT  tail6
loop6:
	STEP6(0, 0)
	STEP6(128, 4)
	STEP6(256, 8)
	STEP6(384, 12)
	ADDQ $512, R9
	ADDQ $16, R12
	ADDQ $16, R13
	SUBQ $4, BX
	CMPQ BX, $4
	JGE  loop6
tail6:
	TESTQ BX, BX
	JEQ  done6
one6:
	STEP6(0, 0)
	ADDQ $128, R9
	ADDQ $4, R12
	ADDQ $4, R13
	DECQ BX
	JNZ  one6
done6:
	LEAQ (R11)(R11*2), R10
	ADDQ DX, R10             // C row 3
	MOVBLZX acc+48(FP), BX
	TESTQ BX, BX
	JEQ  store6
	ADDC6
store6:
	STORE6
	// Next: the second half (panel and C columns 16-31), unless done.
	ADDQ $64, DI
	ADDQ $64, DX
	MOVQ b+16(FP), BX
	ADDQ $64, BX
	CMPQ DI, BX
	JEQ  half6
	VZEROUPPER
	RET

// func kernAVX2x6BF16(a *float32, lda int, b *uint16, c *float32, ldc, kc int, acc bool)
//
// kernAVX2x6 over a bfloat16 panel (64 bytes a k; the second half starts 32
// bytes in).
TEXT ·kernAVX2x6BF16(SB), NOSPLIT, $0-49
	PROLOGUE6
	MOVL $0xffff0000, BX
	VMOVQ BX, X14
	VPBROADCASTD X14, Y14

half6:
	ZERO6
	MOVQ SI, R12
	MOVQ R8, R13
	MOVQ DI, R9
	MOVQ CX, BX
	CMPQ BX, $4
	JLT  tail6
loop6:
	STEP6B(0, 0)
	STEP6B(64, 4)
	STEP6B(128, 8)
	STEP6B(192, 12)
	ADDQ $256, R9
	ADDQ $16, R12
	ADDQ $16, R13
	SUBQ $4, BX
	CMPQ BX, $4
	JGE  loop6
tail6:
	TESTQ BX, BX
	JEQ  done6
one6:
	STEP6B(0, 0)
	ADDQ $64, R9
	ADDQ $4, R12
	ADDQ $4, R13
	DECQ BX
	JNZ  one6
done6:
	UNZIP6
	LEAQ (R11)(R11*2), R10
	ADDQ DX, R10             // C row 3
	MOVBLZX acc+48(FP), BX
	TESTQ BX, BX
	JEQ  store6
	ADDC6
store6:
	STORE6
	// Next: the second half (panel and C columns 16-31), unless done.
	ADDQ $32, DI
	ADDQ $64, DX
	MOVQ b+16(FP), BX
	ADDQ $32, BX
	CMPQ DI, BX
	JEQ  half6
	VZEROUPPER
	RET
