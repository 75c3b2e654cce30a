//go:build goexperiment.simd && amd64

#include "textflag.h"

// func kernAVX512asm(a *float32, lda, rows int, b, c *float32, ldc, kc int, acc bool)
//
// The 4×32 micro kernel of gemm_kern_simd_amd64.go written out in assembly:
// the same eight zmm accumulators and the same fused multiply-adds in the
// same k order (so the same bits), with the broadcasts read straight from
// memory and the k loop unrolled four times, which the compiler does not do.
TEXT ·kernAVX512asm(SB), NOSPLIT, $0-57
	MOVQ a+0(FP), SI
	MOVQ lda+8(FP), AX
	SHLQ $2, AX              // bytes between A rows
	MOVQ rows+16(FP), BX
	DECQ BX                  // last valid row
	// Rows past the valid ones alias the last valid row.
	MOVQ SI, R8
	CMPQ BX, $1
	JLT  row2
	ADDQ AX, R8
row2:
	MOVQ R8, R9
	CMPQ BX, $2
	JLT  row3
	ADDQ AX, R9
row3:
	MOVQ R9, R10
	CMPQ BX, $3
	JLT  rowsdone
	ADDQ AX, R10
rowsdone:
	MOVQ b+24(FP), DI
	MOVQ kc+48(FP), CX
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7

#define STEP(boff, aoff) \
	VMOVUPS boff(DI), Z8; \
	VMOVUPS boff+64(DI), Z9; \
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

	CMPQ CX, $4
	JLT  tail
loop4:
	STEP(0, 0)
	STEP(128, 4)
	STEP(256, 8)
	STEP(384, 12)
	ADDQ $512, DI
	ADDQ $16, SI
	ADDQ $16, R8
	ADDQ $16, R9
	ADDQ $16, R10
	SUBQ $4, CX
	CMPQ CX, $4
	JGE  loop4
tail:
	TESTQ CX, CX
	JEQ  done
loop1:
	STEP(0, 0)
	ADDQ $128, DI
	ADDQ $4, SI
	ADDQ $4, R8
	ADDQ $4, R9
	ADDQ $4, R10
	DECQ CX
	JNZ  loop1
done:
	MOVQ c+32(FP), DX
	MOVQ ldc+40(FP), R11
	SHLQ $2, R11
	LEAQ (DX)(R11*1), R12    // row 1
	LEAQ (DX)(R11*2), R13    // row 2
	LEAQ (R12)(R11*2), R14   // row 3
	MOVBLZX acc+56(FP), AX
	TESTQ AX, AX
	JEQ  store
	VADDPS (DX), Z0, Z0
	VADDPS 64(DX), Z1, Z1
	VADDPS (R12), Z2, Z2
	VADDPS 64(R12), Z3, Z3
	VADDPS (R13), Z4, Z4
	VADDPS 64(R13), Z5, Z5
	VADDPS (R14), Z6, Z6
	VADDPS 64(R14), Z7, Z7
store:
	VMOVUPS Z0, (DX)
	VMOVUPS Z1, 64(DX)
	VMOVUPS Z2, (R12)
	VMOVUPS Z3, 64(R12)
	VMOVUPS Z4, (R13)
	VMOVUPS Z5, 64(R13)
	VMOVUPS Z6, (R14)
	VMOVUPS Z7, 64(R14)
	VZEROUPPER
	RET
