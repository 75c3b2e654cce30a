//go:build goexperiment.simd && amd64

#include "textflag.h"
#include "gemm_kern_amd64.h"

// The 4×32 micro kernels of gemm_kern_simd_amd64.go written out in assembly:
// the same eight zmm accumulators and the same fused multiply-adds in the
// same k order (so the same bits), with the broadcasts read straight from
// memory and the k loop unrolled four times, which the compiler does not do.
// kernAVX512asm reads a float32 panel, kernAVX512BF16asm a bfloat16 one.
//
// Each k step prefetches the panel 48 k steps ahead, as the tall kernels do
// (gemm_kern_avx512_tall_amd64.s says why).
//
// Registers: SI, R8, R9, R10 the A rows (rows past the valid ones alias the
// last valid one); DI the panel; CX the k count; Z0-Z7 the accumulators (row
// r in Z2r, Z2r+1); Z8/Z9 the panel at k; Z10-Z13 the broadcasts of A; Z15
// the bfloat16 kernel's mask.

// PROLOGUE4: the A rows, the panel, kc, and zeroed accumulators.
#define PROLOGUE4 \
	A4ROWS; \
	MOVQ b+24(FP), DI; \
	MOVQ kc+48(FP), CX; \
	VPXORD Z0, Z0, Z0; \
	VPXORD Z1, Z1, Z1; \
	VPXORD Z2, Z2, Z2; \
	VPXORD Z3, Z3, Z3; \
	VPXORD Z4, Z4, Z4; \
	VPXORD Z5, Z5, Z5; \
	VPXORD Z6, Z6, Z6; \
	VPXORD Z7, Z7, Z7

// FMAS4(aoff): the four rows' broadcasts and eight FMAs with the panel in Z8/Z9.
#define FMAS4(aoff) \
	VBROADCASTSS aoff(SI), Z10; \
	VBROADCASTSS aoff(R8), Z11; \
	VBROADCASTSS aoff(R9), Z12; \
	VBROADCASTSS aoff(R10), Z13; \
	VFMADD231PS Z8, Z10, Z0; \
	VFMADD231PS Z9, Z10, Z1; \
	VFMADD231PS Z8, Z11, Z2; \
	VFMADD231PS Z9, Z11, Z3; \
	VFMADD231PS Z8, Z12, Z4; \
	VFMADD231PS Z9, Z12, Z5; \
	VFMADD231PS Z8, Z13, Z6; \
	VFMADD231PS Z9, Z13, Z7

// STEP: one k of a float32 panel (128 bytes a k).
#define STEP(boff, aoff) \
	PREFETCHT0 boff+6144(DI); \
	PREFETCHT0 boff+6144+64(DI); \
	VMOVUPS boff(DI), Z8; \
	VMOVUPS boff+64(DI), Z9; \
	FMAS4(aoff)

// STEP16: one k of a bfloat16 panel (64 bytes a k), widened exactly in two
// instructions as the tall kernels do (gemm_kern_avx512_tall_amd64.s, PANEL16):
// Z8 gets the even columns, Z9 the odd ones (Z15 the mask), so the
// accumulators hold even and odd columns until UNZIP4 puts them in order.
#define STEP16(boff, aoff) \
	PREFETCHT0 boff+3072(DI); \
	VPSLLD $16, boff(DI), Z8; \
	VPANDD boff(DI), Z15, Z9; \
	FMAS4(aoff)

// UNZIP4: each row's accumulators of even and odd columns become columns
// 0-15 and 16-31 (Z16 scratch).
#define UNZIP4ROW(even, odd) \
	VMOVAPS Z14, Z16; \
	VPERMI2PS odd, even, Z16; \
	VPERMT2PS odd, Z13, even; \
	VMOVAPS Z16, odd

#define UNZIP4 \
	VMOVDQU32 ·bf16ZipLo(SB), Z13; \
	VMOVDQU32 ·bf16ZipHi(SB), Z14; \
	UNZIP4ROW(Z0, Z1); \
	UNZIP4ROW(Z2, Z3); \
	UNZIP4ROW(Z4, Z5); \
	UNZIP4ROW(Z6, Z7)

#define ADVANCE4(bytes) \
	ADDQ $bytes, SI; \
	ADDQ $bytes, R8; \
	ADDQ $bytes, R9; \
	ADDQ $bytes, R10

// EPILOGUE4: C added when acc, the tile stored.
#define EPILOGUE4 \
	MOVQ c+32(FP), DX; \
	MOVQ ldc+40(FP), R11; \
	SHLQ $2, R11; \
	LEAQ (DX)(R11*1), R12; \
	LEAQ (DX)(R11*2), R13; \
	LEAQ (R12)(R11*2), R14; \
	MOVBLZX acc+56(FP), AX; \
	TESTQ AX, AX; \
	JEQ  store; \
	VADDPS (DX), Z0, Z0; \
	VADDPS 64(DX), Z1, Z1; \
	VADDPS (R12), Z2, Z2; \
	VADDPS 64(R12), Z3, Z3; \
	VADDPS (R13), Z4, Z4; \
	VADDPS 64(R13), Z5, Z5; \
	VADDPS (R14), Z6, Z6; \
	VADDPS 64(R14), Z7, Z7; \
store: \
	VMOVUPS Z0, (DX); \
	VMOVUPS Z1, 64(DX); \
	VMOVUPS Z2, (R12); \
	VMOVUPS Z3, 64(R12); \
	VMOVUPS Z4, (R13); \
	VMOVUPS Z5, 64(R13); \
	VMOVUPS Z6, (R14); \
	VMOVUPS Z7, 64(R14); \
	VZEROUPPER

// func kernAVX512asm(a *float32, lda, rows int, b, c *float32, ldc, kc int, acc bool)
TEXT ·kernAVX512asm(SB), NOSPLIT, $0-57
	PROLOGUE4
	CMPQ CX, $4
	JLT  tail
loop4:
	STEP(0, 0)
	STEP(128, 4)
	STEP(256, 8)
	STEP(384, 12)
	ADDQ $512, DI
	ADVANCE4(16)
	SUBQ $4, CX
	CMPQ CX, $4
	JGE  loop4
tail:
	TESTQ CX, CX
	JEQ  done
loop1:
	STEP(0, 0)
	ADDQ $128, DI
	ADVANCE4(4)
	DECQ CX
	JNZ  loop1
done:
	EPILOGUE4
	RET

// func kernAVX512BF16asm(a *float32, lda, rows int, b *uint16, c *float32, ldc, kc int, acc bool)
TEXT ·kernAVX512BF16asm(SB), NOSPLIT, $0-57
	PROLOGUE4
	MOVL $0xffff0000, R11
	VPBROADCASTD R11, Z15
	CMPQ CX, $4
	JLT  tail
loop4:
	STEP16(0, 0)
	STEP16(64, 4)
	STEP16(128, 8)
	STEP16(192, 12)
	ADDQ $256, DI
	ADVANCE4(16)
	SUBQ $4, CX
	CMPQ CX, $4
	JGE  loop4
tail:
	TESTQ CX, CX
	JEQ  done
loop1:
	STEP16(0, 0)
	ADDQ $64, DI
	ADVANCE4(4)
	DECQ CX
	JNZ  loop1
done:
	UNZIP4
	EPILOGUE4
	RET

// bf16ZipLo and bf16ZipHi interleave two vectors of 16 lanes, even lanes from
// the first and odd ones from the second (VPERMT2PS/VPERMI2PS indexes: 0-15
// the first table, 16-31 the second): lanes 0-7 of each give 0-15, lanes 8-15
// give 16-31. The tall kernels (gemm_kern_avx512_tall_amd64.s) use them too.
DATA ·bf16ZipLo+0(SB)/4, $0
DATA ·bf16ZipLo+4(SB)/4, $16
DATA ·bf16ZipLo+8(SB)/4, $1
DATA ·bf16ZipLo+12(SB)/4, $17
DATA ·bf16ZipLo+16(SB)/4, $2
DATA ·bf16ZipLo+20(SB)/4, $18
DATA ·bf16ZipLo+24(SB)/4, $3
DATA ·bf16ZipLo+28(SB)/4, $19
DATA ·bf16ZipLo+32(SB)/4, $4
DATA ·bf16ZipLo+36(SB)/4, $20
DATA ·bf16ZipLo+40(SB)/4, $5
DATA ·bf16ZipLo+44(SB)/4, $21
DATA ·bf16ZipLo+48(SB)/4, $6
DATA ·bf16ZipLo+52(SB)/4, $22
DATA ·bf16ZipLo+56(SB)/4, $7
DATA ·bf16ZipLo+60(SB)/4, $23
GLOBL ·bf16ZipLo(SB), RODATA|NOPTR, $64
DATA ·bf16ZipHi+0(SB)/4, $8
DATA ·bf16ZipHi+4(SB)/4, $24
DATA ·bf16ZipHi+8(SB)/4, $9
DATA ·bf16ZipHi+12(SB)/4, $25
DATA ·bf16ZipHi+16(SB)/4, $10
DATA ·bf16ZipHi+20(SB)/4, $26
DATA ·bf16ZipHi+24(SB)/4, $11
DATA ·bf16ZipHi+28(SB)/4, $27
DATA ·bf16ZipHi+32(SB)/4, $12
DATA ·bf16ZipHi+36(SB)/4, $28
DATA ·bf16ZipHi+40(SB)/4, $13
DATA ·bf16ZipHi+44(SB)/4, $29
DATA ·bf16ZipHi+48(SB)/4, $14
DATA ·bf16ZipHi+52(SB)/4, $30
DATA ·bf16ZipHi+56(SB)/4, $15
DATA ·bf16ZipHi+60(SB)/4, $31
GLOBL ·bf16ZipHi(SB), RODATA|NOPTR, $64
