package asmcheck

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// NoAVX512 compiles the package in dir with GOEXPERIMENT=simd and fails t
// for every AVX-512 instruction in the functions whose symbol matches
// funcs: one with an EVEX prefix (its first byte 0x62, which starts no
// other instruction in 64-bit mode) or one on a mask register (KMOVW and
// the like). The AVX2 paths run on CPUs without AVX-512, where such an
// instruction faults; an AVX-512 machine that runs their tests would not
// see it, and a simd/archsimd method's name does not say which extension
// it needs (Uint32x8's TruncateToUint16 is AVX-512's VPMOVDW, and any
// instruction on X16–X31 is EVEX). It fails t too when fewer than atLeast
// functions matched, and skips it without a go command.
func NoAVX512(t testing.TB, dir string, funcs *regexp.Regexp, atLeast int) {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command to compile the package's assembly listing with")
	}
	fns, err := compile(dir)
	if err != nil {
		t.Fatal(err)
	}
	var checked []string
	for _, fn := range fns {
		if !funcs.MatchString(fn.name) {
			continue
		}
		checked = append(checked, fn.name)
		for _, i := range fn.avx512() {
			t.Errorf("AVX-512 instruction: %s: %s", fn.name, fn.insts[i].line)
		}
	}
	if len(checked) < atLeast {
		t.Fatalf("checked %d functions (%v); want at least %d", len(checked), checked, atLeast)
	}
	t.Logf("%d functions checked", len(checked))
}

// avx512 returns the indices of fn's AVX-512 instructions: the vector ones
// (V…) whose code starts with an EVEX prefix, and those on mask registers.
func (fn function) avx512() []int {
	var found []int
	for i, in := range fn.insts {
		evex := strings.HasPrefix(in.op, "V") && in.pc < len(fn.code) && fn.code[in.pc] == 0x62
		if evex || strings.HasPrefix(in.op, "K") {
			found = append(found, i)
		}
	}
	return found
}
