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
