// Command asmgen writes the noise package's amd64 kernels,
// kernels_avx512_amd64.s and kernels_avx2_amd64.s:
//
//	go generate ./noise          (runs go run ./internal/asmgen in noise/)
//
// Why a generator: latency. One Philox block is a chain of about 65 cycles
// of dependent instructions, one normal about 130 (the logarithm's Horner
// polynomial alone is 68), while a core starts two 512-bit operations a
// cycle. Only several independent chains in flight keep it busy, and the
// out-of-order scheduler (97 entries on a Skylake-SP core) sees only
// instructions near each other, so the kernels run groups of blocks side by
// side, their chains interleaved instruction by instruction. Each chain is
// written once below, in normal.go's order of operations; the generator
// assigns each group its registers and interleaves. TestGeneratedFiles
// checks that the committed files are this program's output.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	dir := flag.String("dir", ".", "the noise package's directory")
	flag.Parse()
	for name, text := range files() {
		if err := os.WriteFile(filepath.Join(*dir, name), text, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "asmgen:", err)
			os.Exit(1)
		}
	}
}

// files returns the generated files by name.
func files() map[string][]byte {
	return map[string][]byte{
		"kernels_avx512_amd64.s": avx512(),
		"kernels_avx2_amd64.s":   avx2(),
		"consts_amd64.go":        constsGo(),
		"noise_amd64.h":          headerH(),
	}
}

// chain is a sequence of dependent instructions of one group.
type chain []string

// op formats one instruction in Go assembler order (sources first).
func op(mnemonic string, operands ...string) string {
	s := mnemonic
	for i, o := range operands {
		if i == 0 {
			s += " " + o
		} else {
			s += ", " + o
		}
	}
	return s
}

// interleave merges independent chains, each advancing at the same pace
// in proportion to its length.
func interleave(cs ...chain) chain { return stagger(0, cs...) }

// stagger merges independent chains like interleave, but chain i runs lag
// of a chain's length behind chain i−1 (lag 0: in step): the chains are
// then at different stages at any moment (one in Philox's multiplications,
// one in the logarithm's long dependent polynomial, ...), so the scheduler
// finds ready instructions of several kinds.
func stagger(lag float64, cs ...chain) chain {
	var out chain
	pos := make([]int, len(cs))
	for {
		best, key := -1, 0.0
		for i, c := range cs {
			if pos[i] == len(c) {
				continue
			}
			// How far chain i is along, with the later chains held back.
			k := float64(pos[i])/float64(len(c)) + float64(i)*lag
			if best < 0 || k < key {
				best, key = i, k
			}
		}
		if best < 0 {
			return out
		}
		out = append(out, cs[best][pos[best]])
		pos[best]++
	}
}

// The float32 arithmetic both instruction sets share, normal.go's
// operations in its order. bcst is the suffix of an instruction whose
// operand is a constant in memory: ".BCST" (AVX-512 broadcasts the first
// copy) or "" (AVX2 reads the whole vector).

// logPoly is log32 from f = m − 1 (in f) and the exponent e (a float, in
// e) on: z = f² (into z), logf's polynomial p in Horner's order (p), the
// two parts of e·ln 2, then the radius √(−2·ln u) in p; t is a temporary.
func logPoly(bcst, f, e, z, p, t string) chain {
	c := chain{
		op("VMULPS", f, f, z),
		op("VMULPS"+bcst, "C_LOG(0)", f, p),
	}
	for i := 1; i <= 8; i++ {
		c = append(c, op("VADDPS"+bcst, fmt.Sprintf("C_LOG(%d)", i), p, p), op("VMULPS", f, p, p))
	}
	return append(c,
		op("VMULPS", z, p, p), // y = p·f·z
		op("VMULPS"+bcst, "C_LOGQ1", e, t),
		op("VADDPS", t, p, p),
		op("VMULPS"+bcst, "C_MHALF", z, t),
		op("VADDPS", t, p, p),
		op("VADDPS", f, p, p), // r = f + y
		op("VMULPS"+bcst, "C_LOGQ2", e, t),
		op("VADDPS", t, p, p), // ln u
		op("VMULPS"+bcst, "C_MTWO", p, p),
		op("VSQRTPS", p, p))
}

// sinCosPolys is sinPoly (into s) and cosPoly (into c) of the angle a from
// its angle bits (in a, an integer) on: a itself, z = a² (into z); a is
// the temporary once the sine no longer needs it.
func sinCosPolys(bcst, a, z, s, c string) chain {
	return chain{
		op("VCVTDQ2PS", a, a),
		op("VMULPS"+bcst, "C_PIO2S", a, a),
		op("VMULPS", a, a, z),
		op("VMULPS"+bcst, "C_SIN(0)", z, s),
		op("VADDPS"+bcst, "C_SIN(1)", s, s),
		op("VMULPS", z, s, s),
		op("VADDPS"+bcst, "C_SIN(2)", s, s),
		op("VMULPS", z, s, s),
		op("VMULPS", a, s, s),
		op("VADDPS", a, s, s),
		op("VMULPS"+bcst, "C_COS(0)", z, c),
		op("VADDPS"+bcst, "C_COS(1)", c, c),
		op("VMULPS", z, c, c),
		op("VADDPS"+bcst, "C_COS(2)", c, c),
		op("VMULPS", z, c, c),
		op("VMULPS", z, c, c),
		op("VMULPS"+bcst, "C_HALFF", z, a),
		op("VSUBPS", a, c, c),
		op("VADDPS"+bcst, "C_ONEF", c, c),
	}
}

// file accumulates an assembly file.
type file struct{ b bytes.Buffer }

func (f *file) line(format string, args ...any) { fmt.Fprintf(&f.b, format+"\n", args...) }

// ins writes instructions, one a line.
func (f *file) ins(c ...string) {
	for _, s := range c {
		f.line("\t%s", s)
	}
}

func (f *file) label(l string) { f.line("%s:", l) }

// text starts a function: its Go declaration as a comment, then TEXT.
func (f *file) text(decl, name string, frame int, args int) {
	f.line("")
	f.line("// %s", decl)
	f.line("TEXT ·%s(SB), NOSPLIT, $%d-%d", name, frame, args)
}

const header = `// Code generated by go run ./internal/asmgen; DO NOT EDIT.

//go:build amd64 && !purego

#include "textflag.h"
#include "noise_amd64.h"
`
