//go:build goexperiment.simd && amd64

#include "textflag.h"

// Tall AVX-512 micro kernels: 12×32 and 8×32 tiles of C, for the rows of a
// GEMM that come in whole groups (the 4×32 kernel takes the rest and the
// edges). Each element is the same chain of fused multiply-adds as in the
// 4×32 kernel — from zero, in k order, then C added when acc — so the
// results are the same bits; only the number of rows sharing one load of the
// panel changes. With two FMA pipes of latency 4 (Zen 5), 8 accumulators
// leave no slack and every panel vector is read from L2 for 8 FMAs; 24
// accumulators (12 rows) hide the latency and cut panel traffic by three.
//
// Each k step also prefetches the panel 48 k steps ahead (3 KiB of bfloat16,
// 6 KiB of float32). With few rows (decoding: M = 8) a kernel streams its
// panel from memory once, and the out-of-order window alone keeps only about
// a dozen k steps of loads in flight: measured on the Zen 4 VM, one thread,
// 8 rows, 256 MiB of panels, the bfloat16 kernel went from 62-76 to 97-101
// GFLOP/s and the float32 one, bound by the memory bus, from 70-80 to 75-85.
// Where the panel is in L2 (many rows) the prefetches cost no measurable
// time. A prefetch never faults, so running past the panel's end is harmless.
//
// Register use: Z0-Z23 accumulators (row r in Z2r, Z2r+1), Z24/Z25 the panel
// at k, Z26-Z30 broadcasts of A, Z31 the bfloat16 kernels' mask. A rows are
// addressed from four bases three rows apart (SI, R8, R9, R10) plus 0, 1 or 2
// times lda (AX).

// ROW(acc0, acc1, bc, addr): two FMAs of one row with its broadcast.
#define ROW(acc0, acc1, bc, addr) \
	VBROADCASTSS addr, bc; \
	VFMADD231PS Z24, bc, acc0; \
	VFMADD231PS Z25, bc, acc1

#define PANEL(boff) \
	PREFETCHT0 boff+6144(DI); \
	PREFETCHT0 boff+6144+64(DI); \
	VMOVUPS boff(DI), Z24; \
	VMOVUPS boff+64(DI), Z25

// PANEL16 is PANEL for a bfloat16 panel (64 bytes a k), widened exactly to
// float32 in two instructions: read as 16 dwords, dword j holds columns 2j
// (low half) and 2j+1 (high half), so a shift left by 16 gives the even
// columns and clearing the low halves (Z31 = 0xffff0000 in every lane) the
// odd ones, each a float32 with the bfloat16's bits on top. Widening each
// half of the panel with VPMOVZXWD and a shift took four instructions, two
// of them shuffles, and ran 10 % slower than the float32 kernel; this runs
// within 3-4 % of it. The accumulators then hold even and odd columns (row r:
// Z2r the even, Z2r+1 the odd); UNZIP puts them back in column order before
// C is touched. Every column gets the same fused multiply-adds in the same
// order, so the bits are those of kernAVX512BF16.
#define PANEL16(boff) \
	PREFETCHT0 boff+3072(DI); \
	VPSLLD $16, boff(DI), Z24; \
	VPANDD boff(DI), Z31, Z25

// MASK16 loads PANEL16's mask; UNZIPIDX the permutations UNZIP uses.
#define MASK16 \
	MOVL $0xffff0000, R11; \
	VPBROADCASTD R11, Z31

#define UNZIPIDX \
	VMOVDQU32 ·bf16ZipLo(SB), Z24; \
	VMOVDQU32 ·bf16ZipHi(SB), Z25

// UNZIP(even, odd): a row's accumulators of even and odd columns become
// columns 0-15 and 16-31 (Z24/Z25 from UNZIPIDX; Z26 scratch).
#define UNZIP(even, odd) \
	VMOVAPS Z25, Z26; \
	VPERMI2PS odd, even, Z26; \
	VPERMT2PS odd, Z24, even; \
	VMOVAPS Z26, odd

#define UNZIP8 \
	UNZIPIDX; \
	UNZIP(Z0, Z1); \
	UNZIP(Z2, Z3); \
	UNZIP(Z4, Z5); \
	UNZIP(Z6, Z7); \
	UNZIP(Z8, Z9); \
	UNZIP(Z10, Z11); \
	UNZIP(Z12, Z13); \
	UNZIP(Z14, Z15)

#define UNZIP4HI \
	UNZIP(Z16, Z17); \
	UNZIP(Z18, Z19); \
	UNZIP(Z20, Z21); \
	UNZIP(Z22, Z23)

#define ROWS8(aoff) \
	ROW(Z0, Z1, Z26, aoff(SI)); \
	ROW(Z2, Z3, Z27, aoff(SI)(AX*1)); \
	ROW(Z4, Z5, Z28, aoff(SI)(AX*2)); \
	ROW(Z6, Z7, Z29, aoff(R8)); \
	ROW(Z8, Z9, Z30, aoff(R8)(AX*1)); \
	ROW(Z10, Z11, Z26, aoff(R8)(AX*2)); \
	ROW(Z12, Z13, Z27, aoff(R9)); \
	ROW(Z14, Z15, Z28, aoff(R9)(AX*1))

#define ROWS12(aoff) \
	ROWS8(aoff); \
	ROW(Z16, Z17, Z29, aoff(R9)(AX*2)); \
	ROW(Z18, Z19, Z30, aoff(R10)); \
	ROW(Z20, Z21, Z26, aoff(R10)(AX*1)); \
	ROW(Z22, Z23, Z27, aoff(R10)(AX*2))

// One k step of a kernel: the panel at k, then every row's two FMAs.
#define STEP8(boff, aoff) PANEL(boff); ROWS8(aoff)
#define STEP12(boff, aoff) PANEL(boff); ROWS12(aoff)
#define STEP8B(boff, aoff) PANEL16(boff); ROWS8(aoff)
#define STEP12B(boff, aoff) PANEL16(boff); ROWS12(aoff)

// Prologue shared by both kernels: A bases, panel, k count, zeroed accumulators.
#define PROLOGUE \
	MOVQ a+0(FP), SI; \
	MOVQ lda+8(FP), AX; \
	SHLQ $2, AX; \
	LEAQ (AX)(AX*2), DX; \
	LEAQ (SI)(DX*1), R8; \
	LEAQ (R8)(DX*1), R9; \
	LEAQ (R9)(DX*1), R10; \
	MOVQ b+16(FP), DI; \
	MOVQ kc+40(FP), CX

#define ADVANCE(bytes) \
	ADDQ $bytes, SI; \
	ADDQ $bytes, R8; \
	ADDQ $bytes, R9; \
	ADDQ $bytes, R10

// C bases: DX row 0, R11 row 3, R12 row 6, R13 row 9; AX = ldc bytes.
#define CBASES \
	MOVQ c+24(FP), DX; \
	MOVQ ldc+32(FP), AX; \
	SHLQ $2, AX; \
	LEAQ (AX)(AX*2), BX; \
	LEAQ (DX)(BX*1), R11; \
	LEAQ (R11)(BX*1), R12; \
	LEAQ (R12)(BX*1), R13; \
	MOVBLZX acc+48(FP), BX

#define LOADADD(acc0, acc1, addr0, addr1) \
	VADDPS addr0, acc0, acc0; \
	VADDPS addr1, acc1, acc1

#define STORE(acc0, acc1, addr0, addr1) \
	VMOVUPS acc0, addr0; \
	VMOVUPS acc1, addr1

// ZERO16 and ZERO8HI clear the accumulators of rows 0-7 and 8-11.
#define ZERO16 \
	VPXORD Z0, Z0, Z0; \
	VPXORD Z1, Z1, Z1; \
	VPXORD Z2, Z2, Z2; \
	VPXORD Z3, Z3, Z3; \
	VPXORD Z4, Z4, Z4; \
	VPXORD Z5, Z5, Z5; \
	VPXORD Z6, Z6, Z6; \
	VPXORD Z7, Z7, Z7; \
	VPXORD Z8, Z8, Z8; \
	VPXORD Z9, Z9, Z9; \
	VPXORD Z10, Z10, Z10; \
	VPXORD Z11, Z11, Z11; \
	VPXORD Z12, Z12, Z12; \
	VPXORD Z13, Z13, Z13; \
	VPXORD Z14, Z14, Z14; \
	VPXORD Z15, Z15, Z15

#define ZERO8HI \
	VPXORD Z16, Z16, Z16; \
	VPXORD Z17, Z17, Z17; \
	VPXORD Z18, Z18, Z18; \
	VPXORD Z19, Z19, Z19; \
	VPXORD Z20, Z20, Z20; \
	VPXORD Z21, Z21, Z21; \
	VPXORD Z22, Z22, Z22; \
	VPXORD Z23, Z23, Z23

// ADDC8 adds C to the accumulators of rows 0-7; STORE8 stores them.
#define ADDC8 \
	LOADADD(Z0, Z1, (DX), 64(DX)); \
	LOADADD(Z2, Z3, (DX)(AX*1), 64(DX)(AX*1)); \
	LOADADD(Z4, Z5, (DX)(AX*2), 64(DX)(AX*2)); \
	LOADADD(Z6, Z7, (R11), 64(R11)); \
	LOADADD(Z8, Z9, (R11)(AX*1), 64(R11)(AX*1)); \
	LOADADD(Z10, Z11, (R11)(AX*2), 64(R11)(AX*2)); \
	LOADADD(Z12, Z13, (R12), 64(R12)); \
	LOADADD(Z14, Z15, (R12)(AX*1), 64(R12)(AX*1))

#define STORE8 \
	STORE(Z0, Z1, (DX), 64(DX)); \
	STORE(Z2, Z3, (DX)(AX*1), 64(DX)(AX*1)); \
	STORE(Z4, Z5, (DX)(AX*2), 64(DX)(AX*2)); \
	STORE(Z6, Z7, (R11), 64(R11)); \
	STORE(Z8, Z9, (R11)(AX*1), 64(R11)(AX*1)); \
	STORE(Z10, Z11, (R11)(AX*2), 64(R11)(AX*2)); \
	STORE(Z12, Z13, (R12), 64(R12)); \
	STORE(Z14, Z15, (R12)(AX*1), 64(R12)(AX*1))

// ADDC4HI and STORE4HI: the same for rows 8-11.
#define ADDC4HI \
	LOADADD(Z16, Z17, (R12)(AX*2), 64(R12)(AX*2)); \
	LOADADD(Z18, Z19, (R13), 64(R13)); \
	LOADADD(Z20, Z21, (R13)(AX*1), 64(R13)(AX*1)); \
	LOADADD(Z22, Z23, (R13)(AX*2), 64(R13)(AX*2))

#define STORE4HI \
	STORE(Z16, Z17, (R12)(AX*2), 64(R12)(AX*2)); \
	STORE(Z18, Z19, (R13), 64(R13)); \
	STORE(Z20, Z21, (R13)(AX*1), 64(R13)(AX*1)); \
	STORE(Z22, Z23, (R13)(AX*2), 64(R13)(AX*2))

// func kernAVX512x12(a *float32, lda int, b, c *float32, ldc, kc int, acc bool)
TEXT ·kernAVX512x12(SB), NOSPLIT, $0-49
	PROLOGUE
	ZERO16
	ZERO8HI
	CMPQ CX, $4
	JLT  tail12
loop12:
	STEP12(0, 0)
	STEP12(128, 4)
	STEP12(256, 8)
	STEP12(384, 12)
	ADDQ $512, DI
	ADVANCE(16)
	SUBQ $4, CX
	CMPQ CX, $4
	JGE  loop12
tail12:
	TESTQ CX, CX
	JEQ  done12
one12:
	STEP12(0, 0)
	ADDQ $128, DI
	ADVANCE(4)
	DECQ CX
	JNZ  one12
done12:
	CBASES
	TESTQ BX, BX
	JEQ  store12
	ADDC8
	ADDC4HI
store12:
	STORE8
	STORE4HI
	VZEROUPPER
	RET

// func kernAVX512x8(a *float32, lda int, b, c *float32, ldc, kc int, acc bool)
TEXT ·kernAVX512x8(SB), NOSPLIT, $0-49
	PROLOGUE
	ZERO16
	CMPQ CX, $4
	JLT  tail8
loop8:
	STEP8(0, 0)
	STEP8(128, 4)
	STEP8(256, 8)
	STEP8(384, 12)
	ADDQ $512, DI
	ADVANCE(16)
	SUBQ $4, CX
	CMPQ CX, $4
	JGE  loop8
tail8:
	TESTQ CX, CX
	JEQ  done8
one8:
	STEP8(0, 0)
	ADDQ $128, DI
	ADVANCE(4)
	DECQ CX
	JNZ  one8
done8:
	CBASES
	TESTQ BX, BX
	JEQ  store8
	ADDC8
store8:
	STORE8
	VZEROUPPER
	RET

// func kernAVX512x12BF16(a *float32, lda int, b *uint16, c *float32, ldc, kc int, acc bool)
//
// kernAVX512x12 over a bfloat16 panel.
TEXT ·kernAVX512x12BF16(SB), NOSPLIT, $0-49
	PROLOGUE
	ZERO16
	ZERO8HI
	MASK16
	CMPQ CX, $4
	JLT  tail12
loop12:
	STEP12B(0, 0)
	STEP12B(64, 4)
	STEP12B(128, 8)
	STEP12B(192, 12)
	ADDQ $256, DI
	ADVANCE(16)
	SUBQ $4, CX
	CMPQ CX, $4
	JGE  loop12
tail12:
	TESTQ CX, CX
	JEQ  done12
one12:
	STEP12B(0, 0)
	ADDQ $64, DI
	ADVANCE(4)
	DECQ CX
	JNZ  one12
done12:
	UNZIP8
	UNZIP4HI
	CBASES
	TESTQ BX, BX
	JEQ  store12
	ADDC8
	ADDC4HI
store12:
	STORE8
	STORE4HI
	VZEROUPPER
	RET

// func kernAVX512x8BF16(a *float32, lda int, b *uint16, c *float32, ldc, kc int, acc bool)
//
// kernAVX512x8 over a bfloat16 panel.
TEXT ·kernAVX512x8BF16(SB), NOSPLIT, $0-49
	PROLOGUE
	ZERO16
	MASK16
	CMPQ CX, $4
	JLT  tail8
loop8:
	STEP8B(0, 0)
	STEP8B(64, 4)
	STEP8B(128, 8)
	STEP8B(192, 12)
	ADDQ $256, DI
	ADVANCE(16)
	SUBQ $4, CX
	CMPQ CX, $4
	JGE  loop8
tail8:
	TESTQ CX, CX
	JEQ  done8
one8:
	STEP8B(0, 0)
	ADDQ $64, DI
	ADVANCE(4)
	DECQ CX
	JNZ  one8
done8:
	UNZIP8
	CBASES
	TESTQ BX, BX
	JEQ  store8
	ADDC8
store8:
	STORE8
	VZEROUPPER
	RET
