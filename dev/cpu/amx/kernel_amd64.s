//go:build amxdev && amd64 && linux

#include "textflag.h"

// AMX instructions by their bytes (Go's assembler has no AMX mnemonics).
// VEX3: C4, E2 (map 0F38, no extended registers), W/vvvv/L/pp, opcode,
// ModRM, SIB: the base register is the start, the index (BX) the row stride.
#define LDTILECFG_AX        BYTE $0xC4; BYTE $0xE2; BYTE $0x78; BYTE $0x49; BYTE $0x00
#define TILERELEASE         BYTE $0xC4; BYTE $0xE2; BYTE $0x78; BYTE $0x49; BYTE $0xC0
#define TILEZERO(modrm)     BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x49; BYTE $modrm
#define LOAD_T4_DI          BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x4B; BYTE $0x24; BYTE $0x1F
#define LOAD_T5_DI1024      BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x4B; BYTE $0xAC; BYTE $0x1F; BYTE $0x00; BYTE $0x04; BYTE $0x00; BYTE $0x00
#define LOAD_T6_SI          BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x4B; BYTE $0x34; BYTE $0x1E
#define LOAD_T7_SI1024      BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x4B; BYTE $0xBC; BYTE $0x1E; BYTE $0x00; BYTE $0x04; BYTE $0x00; BYTE $0x00
#define TDP_0_4_6           BYTE $0xC4; BYTE $0xE2; BYTE $0x4A; BYTE $0x5C; BYTE $0xC4
#define TDP_1_4_7           BYTE $0xC4; BYTE $0xE2; BYTE $0x42; BYTE $0x5C; BYTE $0xCC
#define TDP_2_5_6           BYTE $0xC4; BYTE $0xE2; BYTE $0x4A; BYTE $0x5C; BYTE $0xD5
#define TDP_3_5_7           BYTE $0xC4; BYTE $0xE2; BYTE $0x42; BYTE $0x5C; BYTE $0xDD
#define LOADC_T0_DX         BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x4B; BYTE $0x04; BYTE $0x1A
#define LOADC_T1_DX64       BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x4B; BYTE $0x4C; BYTE $0x1A; BYTE $0x40
#define LOADC_T2_AX         BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x4B; BYTE $0x14; BYTE $0x18
#define LOADC_T3_AX64       BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x4B; BYTE $0x5C; BYTE $0x18; BYTE $0x40
#define STORE_T0_DX         BYTE $0xC4; BYTE $0xE2; BYTE $0x7A; BYTE $0x4B; BYTE $0x04; BYTE $0x1A
#define STORE_T1_DX64       BYTE $0xC4; BYTE $0xE2; BYTE $0x7A; BYTE $0x4B; BYTE $0x4C; BYTE $0x1A; BYTE $0x40
#define STORE_T2_AX         BYTE $0xC4; BYTE $0xE2; BYTE $0x7A; BYTE $0x4B; BYTE $0x14; BYTE $0x18
#define STORE_T3_AX64       BYTE $0xC4; BYTE $0xE2; BYTE $0x7A; BYTE $0x4B; BYTE $0x5C; BYTE $0x18; BYTE $0x40

// func tileGEMM(a, b, c unsafe.Pointer, steps int, cfg *[64]byte, ldc int, acc bool)
// C[32×32] (float32, row stride ldc bytes) (+)= A·B: per step A's two tiles
// (rows 0–15, 16–31: 16×32 bfloat16 each, 1 KiB) and B's two (columns 0–15,
// 16–31: 16 pairs of K × 16 columns, VNNI, 1 KiB).
// The calling thread must hold the tile configuration (tileConfigure).
TEXT ·tileGEMM(SB), NOSPLIT, $0-49
	MOVQ c+16(FP), DX
	MOVQ ldc+40(FP), BX
	MOVQ BX, AX
	SHLQ $4, AX
	ADDQ DX, AX
	MOVBQZX acc+48(FP), CX
	TESTQ CX, CX
	JZ zero
	LOADC_T0_DX
	LOADC_T1_DX64
	LOADC_T2_AX
	LOADC_T3_AX64
	JMP start
zero:
	TILEZERO(0xC0)
	TILEZERO(0xC8)
	TILEZERO(0xD0)
	TILEZERO(0xD8)
start:
	MOVQ a+0(FP), DI
	MOVQ b+8(FP), SI
	MOVQ steps+24(FP), CX
	MOVQ $64, BX
loop:
	LOAD_T4_DI
	LOAD_T6_SI
	TDP_0_4_6
	LOAD_T7_SI1024
	TDP_1_4_7
	LOAD_T5_DI1024
	TDP_2_5_6
	TDP_3_5_7
	ADDQ $2048, DI
	ADDQ $2048, SI
	DECQ CX
	JNZ loop
	MOVQ ldc+40(FP), BX
	STORE_T0_DX
	STORE_T1_DX64
	STORE_T2_AX
	STORE_T3_AX64
	RET

// func tileConfigure(cfg *[64]byte)
TEXT ·tileConfigure(SB), NOSPLIT, $0-8
	MOVQ cfg+0(FP), AX
	LDTILECFG_AX
	RET

// func tileRelease()
TEXT ·tileRelease(SB), NOSPLIT, $0-0
	TILERELEASE
	RET

// func tdpOnly(n int, cfg *[64]byte)
// n rounds of the four products on whatever the tiles hold: the tile unit's
// rate with no loads at all.
TEXT ·tdpOnly(SB), NOSPLIT, $0-16
	MOVQ cfg+8(FP), AX
	LDTILECFG_AX
	TILEZERO(0xC0)
	TILEZERO(0xC8)
	TILEZERO(0xD0)
	TILEZERO(0xD8)
	TILEZERO(0xE0)
	TILEZERO(0xE8)
	TILEZERO(0xF0)
	TILEZERO(0xF8)
	MOVQ n+0(FP), CX
tloop:
	TDP_0_4_6
	TDP_1_4_7
	TDP_2_5_6
	TDP_3_5_7
	DECQ CX
	JNZ tloop
	TILERELEASE
	RET

// func loadsOnly(a unsafe.Pointer, steps, n int)
// n rounds of steps steps of the four tile loads alone (A's two, B's two
// from the same buffer): the loads' rate with no products.
TEXT ·loadsOnly(SB), NOSPLIT, $0-24
	MOVQ n+16(FP), DX
	MOVQ $64, BX
outer:
	MOVQ a+0(FP), DI
	MOVQ a+0(FP), SI
	MOVQ steps+8(FP), CX
lloop:
	LOAD_T4_DI
	LOAD_T6_SI
	LOAD_T7_SI1024
	LOAD_T5_DI1024
	ADDQ $2048, DI
	ADDQ $2048, SI
	DECQ CX
	JNZ lloop
	DECQ DX
	JNZ outer
	RET

#define LOAD_T6_SI2048      BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x4B; BYTE $0xB4; BYTE $0x1E; BYTE $0x00; BYTE $0x08; BYTE $0x00; BYTE $0x00
#define LOAD_T4_DI2048      BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x4B; BYTE $0xA4; BYTE $0x1F; BYTE $0x00; BYTE $0x08; BYTE $0x00; BYTE $0x00
#define LOAD_T5_DI3072      BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x4B; BYTE $0xAC; BYTE $0x1F; BYTE $0x00; BYTE $0x0C; BYTE $0x00; BYTE $0x00
#define LOAD_T7_SI3072      BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x4B; BYTE $0xBC; BYTE $0x1E; BYTE $0x00; BYTE $0x0C; BYTE $0x00; BYTE $0x00

// func tileGEMM2(a, b, c unsafe.Pointer, steps int, cfg *[64]byte, ldc int, acc bool)
// tileGEMM with the next step's tiles loaded as soon as this step's last
// product reading each has been issued (B0 after the two that read it, A0,
// then A1 and B1): a, b must be readable one step (2 KiB) past their end.
TEXT ·tileGEMM2(SB), NOSPLIT, $0-49
	MOVQ c+16(FP), DX
	MOVQ ldc+40(FP), BX
	MOVQ BX, AX
	SHLQ $4, AX
	ADDQ DX, AX
	MOVBQZX acc+48(FP), CX
	TESTQ CX, CX
	JZ zero2
	LOADC_T0_DX
	LOADC_T1_DX64
	LOADC_T2_AX
	LOADC_T3_AX64
	JMP start2
zero2:
	TILEZERO(0xC0)
	TILEZERO(0xC8)
	TILEZERO(0xD0)
	TILEZERO(0xD8)
start2:
	MOVQ a+0(FP), DI
	MOVQ b+8(FP), SI
	MOVQ steps+24(FP), CX
	MOVQ $64, BX
	LOAD_T4_DI
	LOAD_T5_DI1024
	LOAD_T6_SI
	LOAD_T7_SI1024
loop2:
	TDP_0_4_6
	TDP_2_5_6
	LOAD_T6_SI2048
	TDP_1_4_7
	LOAD_T4_DI2048
	TDP_3_5_7
	LOAD_T5_DI3072
	LOAD_T7_SI3072
	ADDQ $2048, DI
	ADDQ $2048, SI
	DECQ CX
	JNZ loop2
	MOVQ ldc+40(FP), BX
	STORE_T0_DX
	STORE_T1_DX64
	STORE_T2_AX
	STORE_T3_AX64
	RET
