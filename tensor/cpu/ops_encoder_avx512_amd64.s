//go:build goexperiment.simd && amd64

#include "textflag.h"

// encoderDots64 is the AVX-512 encoder attention's inner loop
// (ops_encoder_simd_amd64.go): out[c] = float32(Σ_i coef[i]·m[i·stride + c])
// × scale for 64 outputs c, each sum in float64 and i in order, rounded to
// float32 and multiplied by scale in float32 (encoderSumsGo's arithmetic), eight zmm accumulators of
// eight lanes side by side, so that the fused multiply-adds' latency is
// hidden (two a cycle where the CPU has two pipes). The products are exact
// (float32 values widened), so the fused multiply-add rounds each sum as a
// separate add would. The operands of m are read straight from memory by
// the multiply-adds, where the compiled Go kept its accumulators on the
// stack between iterations.
//
// Registers: SI coef, DX the row of m, BX its stride in bytes, CX the count
// left; Z0-Z7 the accumulators; Z8 the broadcast coefficient; AX, then Y9,
// the scale.

// func encoderDots64(out *float32, coef *uint64, n int, m *float64, stride int, scale uint32)
TEXT ·encoderDots64(SB), NOSPLIT, $0-44
	MOVQ coef+8(FP), SI
	MOVQ n+16(FP), CX
	MOVQ m+24(FP), DX
	MOVQ stride+32(FP), BX
	SHLQ $3, BX
	VPXORQ Z0, Z0, Z0
	VPXORQ Z1, Z1, Z1
	VPXORQ Z2, Z2, Z2
	VPXORQ Z3, Z3, Z3
	VPXORQ Z4, Z4, Z4
	VPXORQ Z5, Z5, Z5
	VPXORQ Z6, Z6, Z6
	VPXORQ Z7, Z7, Z7
	TESTQ CX, CX
	JLE done

loop:
	VBROADCASTSD (SI), Z8
	VFMADD231PD 0(DX), Z8, Z0
	VFMADD231PD 64(DX), Z8, Z1
	VFMADD231PD 128(DX), Z8, Z2
	VFMADD231PD 192(DX), Z8, Z3
	VFMADD231PD 256(DX), Z8, Z4
	VFMADD231PD 320(DX), Z8, Z5
	VFMADD231PD 384(DX), Z8, Z6
	VFMADD231PD 448(DX), Z8, Z7
	ADDQ $8, SI
	ADDQ BX, DX
	DECQ CX
	JNZ loop

done:
	MOVQ out+0(FP), DI
	MOVL scale+40(FP), AX
	VPBROADCASTD AX, Y9
	VCVTPD2PS Z0, Y0
	VMULPS Y9, Y0, Y0
	VMOVUPS Y0, 0(DI)
	VCVTPD2PS Z1, Y1
	VMULPS Y9, Y1, Y1
	VMOVUPS Y1, 32(DI)
	VCVTPD2PS Z2, Y2
	VMULPS Y9, Y2, Y2
	VMOVUPS Y2, 64(DI)
	VCVTPD2PS Z3, Y3
	VMULPS Y9, Y3, Y3
	VMOVUPS Y3, 96(DI)
	VCVTPD2PS Z4, Y4
	VMULPS Y9, Y4, Y4
	VMOVUPS Y4, 128(DI)
	VCVTPD2PS Z5, Y5
	VMULPS Y9, Y5, Y5
	VMOVUPS Y5, 160(DI)
	VCVTPD2PS Z6, Y6
	VMULPS Y9, Y6, Y6
	VMOVUPS Y6, 192(DI)
	VCVTPD2PS Z7, Y7
	VMULPS Y9, Y7, Y7
	VMOVUPS Y7, 224(DI)
	VZEROUPPER
	RET
