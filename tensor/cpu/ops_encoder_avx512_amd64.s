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

// encoderDots64x2 is encoderDots64 for two coefficient vectors (two
// queries' sums over the same keys or values): each 64 values of m are
// loaded once into registers and multiplied by both coefficients, half the
// loads a multiply-add of encoderDots64, whose m (a head's keys or values,
// past L1) streams from L2 at a value a multiply-add. Each sum is the same
// chain as alone: the same bits.
//
// Registers: SI coef0, R8 coef1, DX the row of m, BX its stride in bytes,
// CX the count left; Z0-Z7 out0's accumulators, Z8-Z15 out1's; Z16, Z17 the
// broadcast coefficients; Z18-Z25 the row of m; AX, then Y26, the scale.

// func encoderDots64x2(out0, out1 *float32, coef0, coef1 *uint64, n int, m *float64, stride int, scale uint32)
TEXT ·encoderDots64x2(SB), NOSPLIT, $0-60
	MOVQ coef0+16(FP), SI
	MOVQ coef1+24(FP), R8
	MOVQ n+32(FP), CX
	MOVQ m+40(FP), DX
	MOVQ stride+48(FP), BX
	SHLQ $3, BX
	VPXORQ Z0, Z0, Z0
	VPXORQ Z1, Z1, Z1
	VPXORQ Z2, Z2, Z2
	VPXORQ Z3, Z3, Z3
	VPXORQ Z4, Z4, Z4
	VPXORQ Z5, Z5, Z5
	VPXORQ Z6, Z6, Z6
	VPXORQ Z7, Z7, Z7
	VPXORQ Z8, Z8, Z8
	VPXORQ Z9, Z9, Z9
	VPXORQ Z10, Z10, Z10
	VPXORQ Z11, Z11, Z11
	VPXORQ Z12, Z12, Z12
	VPXORQ Z13, Z13, Z13
	VPXORQ Z14, Z14, Z14
	VPXORQ Z15, Z15, Z15
	TESTQ CX, CX
	JLE done2

loop2:
	VBROADCASTSD (SI), Z16
	VBROADCASTSD (R8), Z17
	VMOVUPD 0(DX), Z18
	VMOVUPD 64(DX), Z19
	VMOVUPD 128(DX), Z20
	VMOVUPD 192(DX), Z21
	VMOVUPD 256(DX), Z22
	VMOVUPD 320(DX), Z23
	VMOVUPD 384(DX), Z24
	VMOVUPD 448(DX), Z25
	VFMADD231PD Z18, Z16, Z0
	VFMADD231PD Z18, Z17, Z8
	VFMADD231PD Z19, Z16, Z1
	VFMADD231PD Z19, Z17, Z9
	VFMADD231PD Z20, Z16, Z2
	VFMADD231PD Z20, Z17, Z10
	VFMADD231PD Z21, Z16, Z3
	VFMADD231PD Z21, Z17, Z11
	VFMADD231PD Z22, Z16, Z4
	VFMADD231PD Z22, Z17, Z12
	VFMADD231PD Z23, Z16, Z5
	VFMADD231PD Z23, Z17, Z13
	VFMADD231PD Z24, Z16, Z6
	VFMADD231PD Z24, Z17, Z14
	VFMADD231PD Z25, Z16, Z7
	VFMADD231PD Z25, Z17, Z15
	ADDQ $8, SI
	ADDQ $8, R8
	ADDQ BX, DX
	DECQ CX
	JNZ loop2

done2:
	MOVL scale+56(FP), AX
	VPBROADCASTD AX, Y26
	MOVQ out0+0(FP), DI
	VCVTPD2PS Z0, Y0
	VMULPS Y26, Y0, Y0
	VMOVUPS Y0, 0(DI)
	VCVTPD2PS Z1, Y1
	VMULPS Y26, Y1, Y1
	VMOVUPS Y1, 32(DI)
	VCVTPD2PS Z2, Y2
	VMULPS Y26, Y2, Y2
	VMOVUPS Y2, 64(DI)
	VCVTPD2PS Z3, Y3
	VMULPS Y26, Y3, Y3
	VMOVUPS Y3, 96(DI)
	VCVTPD2PS Z4, Y4
	VMULPS Y26, Y4, Y4
	VMOVUPS Y4, 128(DI)
	VCVTPD2PS Z5, Y5
	VMULPS Y26, Y5, Y5
	VMOVUPS Y5, 160(DI)
	VCVTPD2PS Z6, Y6
	VMULPS Y26, Y6, Y6
	VMOVUPS Y6, 192(DI)
	VCVTPD2PS Z7, Y7
	VMULPS Y26, Y7, Y7
	VMOVUPS Y7, 224(DI)
	MOVQ out1+8(FP), DI
	VCVTPD2PS Z8, Y8
	VMULPS Y26, Y8, Y8
	VMOVUPS Y8, 0(DI)
	VCVTPD2PS Z9, Y9
	VMULPS Y26, Y9, Y9
	VMOVUPS Y9, 32(DI)
	VCVTPD2PS Z10, Y10
	VMULPS Y26, Y10, Y10
	VMOVUPS Y10, 64(DI)
	VCVTPD2PS Z11, Y11
	VMULPS Y26, Y11, Y11
	VMOVUPS Y11, 96(DI)
	VCVTPD2PS Z12, Y12
	VMULPS Y26, Y12, Y12
	VMOVUPS Y12, 128(DI)
	VCVTPD2PS Z13, Y13
	VMULPS Y26, Y13, Y13
	VMOVUPS Y13, 160(DI)
	VCVTPD2PS Z14, Y14
	VMULPS Y26, Y14, Y14
	VMOVUPS Y14, 192(DI)
	VCVTPD2PS Z15, Y15
	VMULPS Y26, Y15, Y15
	VMOVUPS Y15, 224(DI)
	VZEROUPPER
	RET
