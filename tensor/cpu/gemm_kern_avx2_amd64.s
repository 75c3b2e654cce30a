//go:build goexperiment.simd && amd64

#include "textflag.h"
#include "gemm_kern_amd64.h"

// func kernAVX2asm(a *float32, lda, rows int, b, c *float32, ldc, kc int, acc bool)
// func kernAVX2BF16asm(a *float32, lda, rows int, b *uint16, c *float32, ldc, kc int, acc bool)
//
// kernAVX2 and kernAVX2BF16 (gemm_kern_simd_amd64.go) in assembly: the 4×32
// tile as two 4×16 halves, each in eight ymm accumulators Y0-Y7 (row r,
// columns 8j..8j+7 of the half in Y(2r+j); the bfloat16 kernel's even and
// odd columns until UNZIP4), with the same fused multiply-adds in the same k
// order (so the same bits): per k the half's panel (two loads of float32, or
// one of bfloat16 widened by a shift and a mask), four broadcasts straight
// from the A rows, eight VFMADD231PS; the k loop unrolled four times.
//
// Registers: SI, R8, R9, R10 the A rows (rows past the valid ones alias the
// last valid one); DI the half's panel columns, DX its C columns; R11 the C
// row stride in bytes; CX kc; R12-R15, AX, BX the running A rows, panel
// pointer and k count of a half.

// PROLOGUE: the A rows, the panel, C, its row stride and kc.
#define PROLOGUE \
	A4ROWS; \
	MOVQ b+24(FP), DI; \
	MOVQ c+32(FP), DX; \
	MOVQ ldc+40(FP), R11; \
	SHLQ $2, R11; \
	MOVQ kc+48(FP), CX

// HALF: zeroed accumulators and the running pointers of a half.
#define HALF \
	VXORPS Y0, Y0, Y0; \
	VXORPS Y1, Y1, Y1; \
	VXORPS Y2, Y2, Y2; \
	VXORPS Y3, Y3, Y3; \
	VXORPS Y4, Y4, Y4; \
	VXORPS Y5, Y5, Y5; \
	VXORPS Y6, Y6, Y6; \
	VXORPS Y7, Y7, Y7; \
	MOVQ SI, R12; \
	MOVQ R8, R13; \
	MOVQ R9, R14; \
	MOVQ R10, R15; \
	MOVQ DI, AX; \
	MOVQ CX, BX

// FMAS(aoff): the four rows' broadcasts and eight FMAs with the panel in Y8/Y9.
#define FMAS(aoff) \
	VBROADCASTSS aoff(R12), Y10; \
	VBROADCASTSS aoff(R13), Y11; \
	VBROADCASTSS aoff(R14), Y12; \
	VBROADCASTSS aoff(R15), Y13; \
	VFMADD231PS Y8, Y10, Y0; \
	VFMADD231PS Y9, Y10, Y1; \
	VFMADD231PS Y8, Y11, Y2; \
	VFMADD231PS Y9, Y11, Y3; \
	VFMADD231PS Y8, Y12, Y4; \
	VFMADD231PS Y9, Y12, Y5; \
	VFMADD231PS Y8, Y13, Y6; \
	VFMADD231PS Y9, Y13, Y7

// STEP: one k of a float32 panel (128 bytes a k). Each k step prefetches the
// panel 48 k steps ahead, as the AVX-512 kernels do
// (gemm_kern_avx512_tall_amd64.s says why): both cache lines of a k, the
// second half's too, so that it finds its panel in the cache. Prefetching
// only the half's own line was slower than none (one thread, 8 rows as two
// tiles, 256 MiB of panels: 38-42 against 42-46 GFLOP/s); both lines, 57-58.
#define STEP(boff, aoff) \
	PREFETCHT0 boff+6144(AX); \
	PREFETCHT0 boff+6144+64(AX); \
	VMOVUPS boff(AX), Y8; \
	VMOVUPS boff+32(AX), Y9; \
	FMAS(aoff)

// STEP16: one k of a bfloat16 panel (64 bytes a k, one line), widened
// exactly as kernAVX2x6BF16 does (gemm_kern_avx2_tall_amd64.s, PANEL6B): Y8
// the half's even columns, Y9 its odd ones (Y15 the mask); UNZIP4 puts the
// accumulators back in column order.
#define STEP16(boff, aoff) \
	PREFETCHT0 boff+3072(AX); \
	VMOVDQU boff(AX), Y9; \
	VPSLLD $16, Y9, Y8; \
	VPAND Y15, Y9, Y9; \
	FMAS(aoff)

// UNZIP4: the half's even and odd columns of each row back in order (UNZIPY
// in gemm_kern_amd64.h; Y8, Y9 scratch).
#define UNZIP4 \
	UNZIPY(Y0, Y1, Y8, Y9); \
	UNZIPY(Y2, Y3, Y8, Y9); \
	UNZIPY(Y4, Y5, Y8, Y9); \
	UNZIPY(Y6, Y7, Y8, Y9)

#define ADVANCE(bytes) \
	ADDQ $bytes, R12; \
	ADDQ $bytes, R13; \
	ADDQ $bytes, R14; \
	ADDQ $bytes, R15

// STOREHALF: C added when acc, the half's 4×16 stored.
#define STOREHALF \
	LEAQ (DX)(R11*1), R12; \
	LEAQ (DX)(R11*2), R13; \
	LEAQ (R12)(R11*2), R14; \
	MOVBLZX acc+56(FP), AX; \
	TESTQ AX, AX; \
	JEQ  store; \
	VADDPS (DX), Y0, Y0; \
	VADDPS 32(DX), Y1, Y1; \
	VADDPS (R12), Y2, Y2; \
	VADDPS 32(R12), Y3, Y3; \
	VADDPS (R13), Y4, Y4; \
	VADDPS 32(R13), Y5, Y5; \
	VADDPS (R14), Y6, Y6; \
	VADDPS 32(R14), Y7, Y7; \
store: \
	VMOVUPS Y0, (DX); \
	VMOVUPS Y1, 32(DX); \
	VMOVUPS Y2, (R12); \
	VMOVUPS Y3, 32(R12); \
	VMOVUPS Y4, (R13); \
	VMOVUPS Y5, 32(R13); \
	VMOVUPS Y6, (R14); \
	VMOVUPS Y7, 32(R14)

TEXT ·kernAVX2asm(SB), NOSPLIT, $0-57
	PROLOGUE
half:
	HALF
	CMPQ BX, $4
	JLT  tail
loop4:
	STEP(0, 0)
	STEP(128, 4)
	STEP(256, 8)
	STEP(384, 12)
	ADDQ $512, AX
	ADVANCE(16)
	SUBQ $4, BX
	CMPQ BX, $4
	JGE  loop4
tail:
	TESTQ BX, BX
	JEQ  done
loop1:
	STEP(0, 0)
	ADDQ $128, AX
	ADVANCE(4)
	DECQ BX
	JNZ  loop1
done:
	STOREHALF
	// Next: the second half (panel and C columns 16-31), unless done.
	ADDQ $64, DI
	ADDQ $64, DX
	MOVQ b+24(FP), AX
	ADDQ $64, AX
	CMPQ DI, AX
	JEQ  half
	VZEROUPPER
	RET

TEXT ·kernAVX2BF16asm(SB), NOSPLIT, $0-57
	PROLOGUE
	MOVL $0xffff0000, BX
	VMOVQ BX, X15
	VPBROADCASTD X15, Y15
half:
	HALF
	CMPQ BX, $4
	JLT  tail
loop4:
	STEP16(0, 0)
	STEP16(64, 4)
	STEP16(128, 8)
	STEP16(192, 12)
	ADDQ $256, AX
	ADVANCE(16)
	SUBQ $4, BX
	CMPQ BX, $4
	JGE  loop4
tail:
	TESTQ BX, BX
	JEQ  done
loop1:
	STEP16(0, 0)
	ADDQ $64, AX
	ADVANCE(4)
	DECQ BX
	JNZ  loop1
done:
	UNZIP4
	STOREHALF
	// Next: the second half (panel columns 16-31 start 32 bytes in, C
	// columns 64 bytes in), unless done.
	ADDQ $32, DI
	ADDQ $64, DX
	MOVQ b+24(FP), AX
	ADDQ $32, AX
	CMPQ DI, AX
	JEQ  half
	VZEROUPPER
	RET
