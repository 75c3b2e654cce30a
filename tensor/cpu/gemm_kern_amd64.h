// Macros shared by the assembly micro kernels.

// A4ROWS (the 4-row kernels, whose frames begin a, lda, rows) sets SI, R8,
// R9, R10 to the four A rows of the tile; rows past the valid ones alias the
// last valid row, so they compute a copy of it that is never stored. AX is
// left holding lda in bytes; BX is clobbered.
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

// UNZIPY(even, odd, t0, t1): the AVX2 bfloat16 kernels' accumulators of a row
// of a half, its 8 even and 8 odd columns, become its columns 0-7 and 8-15
// (t0, t1 scratch): the in-lane interleaves give columns 0-3 and 8-11 (t0)
// and 4-7 and 12-15 (t1), the lane selects put them in order.
#define UNZIPY(even, odd, t0, t1) \
	VUNPCKLPS odd, even, t0; \
	VUNPCKHPS odd, even, t1; \
	VPERM2F128 $0x20, t1, t0, even; \
	VPERM2F128 $0x31, t1, t0, odd
