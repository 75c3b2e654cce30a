package asmcheck

import (
	"slices"
	"testing"
)

func TestLegacyWhileDirty(t *testing.T) {
	for _, c := range []struct {
		name    string
		listing string
		want    []int // indices of the findings
	}{
		{"legacy before any AVX", "f STEXT size=1\n\t0x0 0 (a:1)\tMOVSD\tX0, 8(SP)\n\t0x4 4 (a:2)\tVADDPD\tZ1, Z2, Z3\n\t0x8 8 (a:3)\tVZEROUPPER\n\t0xc 12 (a:4)\tMOVSD\tX0, 8(SP)\n", nil},
		{"legacy after AVX", "f STEXT size=1\n\t0x0 0 (a:1)\tVADDPD\tZ1, Z2, Z3\n\t0x4 4 (a:2)\tMOVUPS\tX15, (DX)\n", []int{1}},
		{"integer code is not SSE", "f STEXT size=1\n\t0x0 0 (a:1)\tVADDPD\tZ1, Z2, Z3\n\t0x4 4 (a:2)\tMOVQ\tAX, CX\n", nil},
		{"no fall-through after JMP", "f STEXT size=1\n\t0x0 0 (a:1)\tVADDPD\tZ1, Z2, Z3\n\t0x4 4 (a:2)\tJMP\t12\n\t0x8 8 (a:3)\tMOVSD\tX0, 8(SP)\n\t0xc 12 (a:4)\tVZEROUPPER\n\t0xd 13 (a:5)\tJMP\t8\n", nil},
		{"forward jump from dirty code", "f STEXT size=1\n\t0x0 0 (a:1)\tVADDPD\tZ1, Z2, Z3\n\t0x4 4 (a:2)\tJLT\t12\n\t0x8 8 (a:3)\tVZEROUPPER\n\t0xc 12 (a:4)\tMOVSD\tX0, 8(SP)\n", []int{3}},
		{"loop: legacy at the top, AVX at the bottom", "f STEXT size=1\n\t0x0 0 (a:1)\tMOVSS\tX0, (AX)\n\t0x4 4 (a:2)\tVADDPS\tZ1, Z2, Z3\n\t0x8 8 (a:3)\tJLT\t0\n\t0xc 12 (a:4)\tVZEROUPPER\n", []int{0}},
	} {
		fns := parse(c.listing)
		if len(fns) != 1 {
			t.Fatalf("%s: parsed %d functions", c.name, len(fns))
		}
		if got, _ := fns[0].legacyWhileDirty(); !slices.Equal(got, c.want) {
			t.Errorf("%s: findings %v, want %v", c.name, got, c.want)
		}
	}
}

func TestDirtyReturn(t *testing.T) {
	for _, c := range []struct {
		name    string
		listing string
		want    []int
	}{
		{"cleared before return", "f STEXT size=1\n\t0x0 0 (a:1)\tVADDPD\tZ1, Z2, Z3\n\t0x4 4 (a:2)\tVZEROUPPER\n\t0x7 7 (a:3)\tRET\n", nil},
		{"dirty on one path", "f STEXT size=1\n\t0x0 0 (a:1)\tVADDPD\tZ1, Z2, Z3\n\t0x4 4 (a:2)\tJLT\t10\n\t0x6 6 (a:3)\tVZEROUPPER\n\t0x9 9 (a:4)\tRET\n\t0xa 10 (a:5)\tRET\n", []int{4}},
	} {
		fns := parse(c.listing)
		if _, got := fns[0].legacyWhileDirty(); !slices.Equal(got, c.want) {
			t.Errorf("%s: dirty returns %v, want %v", c.name, got, c.want)
		}
	}
}
