#include "textflag.h"

// func prefetchL2(p unsafe.Pointer, n int)
// One PREFETCHT1 (into L2 and the outer levels) per 64-byte line of
// [p, p+n). A prefetch never faults and changes no value.
TEXT ·prefetchL2(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), SI
	MOVQ n+8(FP), CX
	ADDQ SI, CX
loop:
	CMPQ SI, CX
	JAE done
	PREFETCHT1 (SI)
	ADDQ $64, SI
	JMP loop
done:
	RET
