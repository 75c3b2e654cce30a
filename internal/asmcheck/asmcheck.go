// Package asmcheck finds, in the Go compiler's assembly listing of a package,
// legacy (non-VEX) SSE instructions that run while the upper halves of the
// vector registers hold AVX data.
//
// On Intel cores such an instruction costs a microcode assist of hundreds of
// cycles (the AVX-SSE transition), and the Go compiler emits them amid
// simd/archsimd code for float constants and arguments (MOVSS, MOVSD), zeroed
// arrays (MOVUPS X15) and shift counts (MOVQ to X) — golang/go#80835. AMD
// cores pay nothing, so a benchmark on an AMD machine never shows it; this
// package lets a test read the machine code instead. The rules it checks: after
// an AVX instruction and before the next VZEROUPPER (ClearAVXUpperBits), no
// legacy SSE instruction, on any path through the function's jumps; and the
// functions that scalar code calls return with the upper halves clean, so
// that the caller's scalar float code (all legacy SSE in Go) pays nothing.
// Calls are not followed: a function that calls AVX code is checked as if
// the call left the upper halves as they were, so list its callees as entries
// too. It also finds AVX-512 instructions in code meant for CPUs without
// AVX-512 (NoAVX512), and fused multiply-adds in code whose bits are fixed
// (NoFusedMultiplyAdd).
package asmcheck

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// Finding is one legacy SSE instruction, or one return, reached with dirty
// upper halves.
type Finding struct {
	Func string // the function's symbol
	What string // "legacy SSE instruction among AVX code" or "return with dirty upper halves"
	Inst string // the listing's line: offset, source position, instruction
}

func (f Finding) String() string { return f.What + ": " + f.Func + ": " + f.Inst }

// Check compiles the package in dir with GOEXPERIMENT=simd and -gcflags=-S
// (go must be on the PATH) and checks every function whose symbol matches
// funcs for legacy SSE among AVX code, and those that also match entries
// (the ones scalar code calls; nil for none) for a dirty return. It returns
// the functions checked and what it found.
func Check(dir string, funcs, entries *regexp.Regexp) (checked []string, found []Finding, err error) {
	fns, err := compile(dir)
	if err != nil {
		return nil, nil, err
	}
	for _, fn := range fns {
		if !funcs.MatchString(fn.name) {
			continue
		}
		checked = append(checked, fn.name)
		legacy, rets := fn.legacyWhileDirty()
		for _, i := range legacy {
			found = append(found, Finding{fn.name, "legacy SSE instruction among AVX code", fn.insts[i].line})
		}
		if entries != nil && entries.MatchString(fn.name) {
			for _, i := range rets {
				found = append(found, Finding{fn.name, "return with dirty upper halves", fn.insts[i].line})
			}
		}
	}
	return checked, found, nil
}

// compile compiles the package in dir with GOEXPERIMENT=simd and
// -gcflags=-S (go must be on the PATH) and returns its functions.
func compile(dir string) ([]function, error) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		return nil, fmt.Errorf("asmcheck: no go command: %w", err)
	}
	cmd := exec.Command(goTool, "build", "-gcflags=-S", "-o", os.DevNull, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOEXPERIMENT=simd")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("asmcheck: go build -gcflags=-S in %s: %v\n%s", dir, err, out)
	}
	return parse(string(out)), nil
}

// NoLegacySSE is Check as a test: it fails t for every finding, and when
// fewer than atLeast functions matched (a renamed kernel must not silently
// leave the check). Without a go command it skips t.
func NoLegacySSE(t testing.TB, dir string, funcs, entries *regexp.Regexp, atLeast int) {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command to compile the package's assembly listing with")
	}
	checked, found, err := Check(dir, funcs, entries)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		t.Errorf("%v", f)
	}
	if len(checked) < atLeast {
		t.Fatalf("checked %d functions (%v); want at least %d", len(checked), checked, atLeast)
	}
	t.Logf("%d functions checked", len(checked))
}

// inst is one instruction of the listing.
type inst struct {
	pc       int    // offset in the function
	op, args string // mnemonic and operands
	line     string
}

type function struct {
	name  string
	insts []inst
	code  []byte // the machine code, from the listing's hex dump
}

var vecReg = regexp.MustCompile(`\b[XYZ]([0-9]|[12][0-9]|3[01])\b`)

// parse splits a -S listing into functions. An instruction's line is
// "\t0x002e 00046 (file.go:86)\tMOVUPS\tX15, (DX)"; after them, the
// function's code is dumped 16 bytes a line, "\t0x0010 83 fe 04 … 48  .H",
// the bytes 3 characters each (blanks past the end), two spaces, the text.
func parse(listing string) []function {
	var fns []function
	for line := range strings.Lines(listing) {
		if name, _, ok := strings.Cut(line, " STEXT "); ok && !strings.HasPrefix(line, "\t") {
			fns = append(fns, function{name: name})
			continue
		}
		f := strings.Split(strings.TrimSpace(line), "\t")
		if len(fns) == 0 || !strings.HasPrefix(f[0], "0x") {
			continue
		}
		if len(f) == 1 {
			fns[len(fns)-1].code = appendDump(fns[len(fns)-1].code, f[0])
			continue
		}
		pos := strings.Fields(f[0])
		if len(pos) < 2 {
			continue
		}
		pc, err := strconv.Atoi(pos[1])
		if err != nil {
			continue
		}
		in := inst{pc: pc, op: f[1], line: strings.TrimSpace(line)}
		if len(f) > 2 {
			in.args = strings.Join(f[2:], " ")
		}
		fns[len(fns)-1].insts = append(fns[len(fns)-1].insts, in)
	}
	return fns
}

// appendDump appends to code the bytes of one line of a hex dump, from its
// offset on ("0x0010 83 fe 04  ..."); a line that is not one (its offset
// is not len(code)) leaves code as it is.
func appendDump(code []byte, line string) []byte {
	off, rest, _ := strings.Cut(line, " ")
	if o, err := strconv.ParseInt(off, 0, 64); err != nil || o != int64(len(code)) {
		return code
	}
	rest = " " + rest
	for len(rest) >= 3 && rest[0] == ' ' {
		b, err := strconv.ParseUint(rest[1:3], 16, 8)
		if err != nil {
			break
		}
		code = append(code, byte(b))
		rest = rest[3:]
	}
	return code
}

// legacyWhileDirty returns the indices of the legacy SSE instructions, and
// of the returns, that some path reaches after an AVX instruction with no
// VZEROUPPER between: a data flow over the function's instructions
// (fall-through and jumps) until nothing changes.
func (fn function) legacyWhileDirty() (legacy, rets []int) {
	byPC := map[int]int{}
	for i, in := range fn.insts {
		byPC[in.pc] = i
	}
	dirtyIn := make([]bool, len(fn.insts)) // dirty when instruction i starts
	for changed := true; changed; {
		changed = false
		for i, in := range fn.insts {
			dirty := dirtyIn[i]
			switch {
			case in.op == "VZEROUPPER" || in.op == "VZEROALL":
				dirty = false
			case strings.HasPrefix(in.op, "V") && vecReg.MatchString(in.args):
				dirty = true
			}
			if !dirty {
				continue
			}
			var next []int
			if !noReturn(in) && i+1 < len(fn.insts) {
				next = append(next, i+1)
			}
			if t, ok := jumpTarget(in, byPC); ok {
				next = append(next, t)
			}
			for _, j := range next {
				if !dirtyIn[j] {
					dirtyIn[j], changed = true, true
				}
			}
		}
	}
	for i, in := range fn.insts {
		switch {
		case !dirtyIn[i]:
		case in.op == "RET":
			rets = append(rets, i)
		case !strings.HasPrefix(in.op, "V") && vecReg.MatchString(in.args):
			legacy = append(legacy, i)
		}
	}
	return legacy, rets
}

// noReturn reports whether the next instruction is not reached from in: an
// unconditional jump, a return, or a call of a runtime panic (bounds checks
// and the like, laid out after the vector code).
func noReturn(in inst) bool {
	return in.op == "JMP" || in.op == "RET" || in.op == "UD2" ||
		in.op == "CALL" && strings.HasPrefix(in.args, "runtime.panic")
}

// jumpTarget returns the index a jump goes to.
func jumpTarget(in inst, byPC map[int]int) (int, bool) {
	if !strings.HasPrefix(in.op, "J") {
		return 0, false
	}
	pc, err := strconv.Atoi(strings.TrimSpace(in.args))
	if err != nil {
		return 0, false
	}
	t, ok := byPC[pc]
	return t, ok
}
