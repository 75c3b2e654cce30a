// Shared by the 4-row assembly kernels (gemm_kern_avx512_amd64.s,
// gemm_kern_avx2_amd64.s), whose frames begin a, lda, rows.

// A4ROWS sets SI, R8, R9, R10 to the four A rows of the tile; rows past the
// valid ones alias the last valid row, so they compute a copy of it that is
// never stored. AX is left holding lda in bytes; BX is clobbered.
#define A4ROWS \
	MOVQ a+0(FP), SI; \
	MOVQ lda+8(FP), AX; \
	SHLQ $2, AX; \
	MOVQ rows+16(FP), BX; \
	DECQ BX; \
	MOVQ SI, R8; \
	CMPQ BX, $1; \
	JLT  row2; \
	ADDQ AX, R8; \
row2: \
	MOVQ R8, R9; \
	CMPQ BX, $2; \
	JLT  row3; \
	ADDQ AX, R9; \
row3: \
	MOVQ R9, R10; \
	CMPQ BX, $3; \
	JLT  rowsdone; \
	ADDQ AX, R10; \
rowsdone:

// bf16ZipLo and bf16ZipHi interleave two vectors of 16 lanes, even lanes from
// the first and odd ones from the second (VPERMT2PS/VPERMI2PS indexes: 0-15
// the first table, 16-31 the second): lanes 0-7 of each give 0-15, lanes 8-15
// give 16-31. Included by the AVX-512 kernel files that use them (a <> symbol
// is each file's own).
DATA bf16ZipLo<>+0(SB)/4, $0
DATA bf16ZipLo<>+4(SB)/4, $16
DATA bf16ZipLo<>+8(SB)/4, $1
DATA bf16ZipLo<>+12(SB)/4, $17
DATA bf16ZipLo<>+16(SB)/4, $2
DATA bf16ZipLo<>+20(SB)/4, $18
DATA bf16ZipLo<>+24(SB)/4, $3
DATA bf16ZipLo<>+28(SB)/4, $19
DATA bf16ZipLo<>+32(SB)/4, $4
DATA bf16ZipLo<>+36(SB)/4, $20
DATA bf16ZipLo<>+40(SB)/4, $5
DATA bf16ZipLo<>+44(SB)/4, $21
DATA bf16ZipLo<>+48(SB)/4, $6
DATA bf16ZipLo<>+52(SB)/4, $22
DATA bf16ZipLo<>+56(SB)/4, $7
DATA bf16ZipLo<>+60(SB)/4, $23
GLOBL bf16ZipLo<>(SB), RODATA|NOPTR, $64
DATA bf16ZipHi<>+0(SB)/4, $8
DATA bf16ZipHi<>+4(SB)/4, $24
DATA bf16ZipHi<>+8(SB)/4, $9
DATA bf16ZipHi<>+12(SB)/4, $25
DATA bf16ZipHi<>+16(SB)/4, $10
DATA bf16ZipHi<>+20(SB)/4, $26
DATA bf16ZipHi<>+24(SB)/4, $11
DATA bf16ZipHi<>+28(SB)/4, $27
DATA bf16ZipHi<>+32(SB)/4, $12
DATA bf16ZipHi<>+36(SB)/4, $28
DATA bf16ZipHi<>+40(SB)/4, $13
DATA bf16ZipHi<>+44(SB)/4, $29
DATA bf16ZipHi<>+48(SB)/4, $14
DATA bf16ZipHi<>+52(SB)/4, $30
DATA bf16ZipHi<>+56(SB)/4, $15
DATA bf16ZipHi<>+60(SB)/4, $31
GLOBL bf16ZipHi<>(SB), RODATA|NOPTR, $64
