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

// TestAVX512: an EVEX-encoded instruction (its code's first byte 0x62) and
// one on a mask register are AVX-512; a VEX one (0xc5, 0xc4) is not. The
// code comes from the listing's hex dump, which runs past the last
// instruction and pads its last line.
func TestAVX512(t *testing.T) {
	listing := "f STEXT size=1\n" +
		"\t0x0000 00000 (a:1)\tVADDPD\tY1, Y2, Y3\n" +
		"\t0x0004 00004 (a:2)\tVPMOVDW\tY6, X5\n" +
		"\t0x000a 00010 (a:3)\tKMOVW\tK1, AX\n" +
		"\t0x000e 00014 (a:4)\tVADDPD\tY17, Y2, Y3\n" +
		"\t0x0014 00020 (a:5)\tRET\n" +
		"\t0x0000 c5 ed 58 d9 62 f2 7e 28 33 f5 c5 f8 93 c1 62 a1  ..X.b.~(3.....b.\n" +
		"\t0x0010 ed 28 58 d9 c3                                   .(X..\n" +
		"\trel 2+4 t=R_CALL x+0\n"
	fns := parse(listing)
	if len(fns) != 1 || len(fns[0].code) != 21 {
		t.Fatalf("parsed %d functions, code %x", len(fns), fns[0].code)
	}
	if got, want := fns[0].avx512(), []int{1, 2, 3}; !slices.Equal(got, want) {
		t.Errorf("AVX-512 instructions %v, want %v", got, want)
	}
}
