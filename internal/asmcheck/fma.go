package asmcheck

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// fusedOp is a fused multiply-add's mnemonic in Go's assembly (amd64's
// VFMADD231SS, arm64's FMADDS, FMLA).
var fusedOp = regexp.MustCompile(`^(V?FN?M(ADD|SUB)\w*|FML[AS]\w*)$`)

// NoFusedMultiplyAdd compiles the package in dir for arm64 and for amd64
// with GOAMD64=v3, where the Go compiler fuses a product and a sum into one
// multiply-add (one rounding instead of two) unless the product is
// converted explicitly, even across statements, and fails t for every fused
// multiply-add in the listing. Code whose bits a contract fixes (the noise,
// the update rules, which the CUDA kernels follow operation by operation)
// must round every product as written on every build. It skips without a
// go command.
func NoFusedMultiplyAdd(t testing.TB, dir string) {
	t.Helper()
	fused := regexp.MustCompile(`\)\t(V?FN?M(ADD|SUB)\w*|FML[AS]\w*)\t`)
	eachFusingBuild(t, dir, nil, func(env []string, listing string) {
		for _, line := range strings.Split(listing, "\n") {
			if fused.MatchString(line) {
				t.Errorf("%v: a fused multiply-add: %s", env, strings.TrimSpace(line))
			}
		}
	})
}

// NoFusedMultiplyAddIn is NoFusedMultiplyAdd for the functions of a
// package that also holds fused code on purpose (vector kernels whose
// contract is the fused product): it compiles the package in dir as the
// product builds it (GOEXPERIMENT=simd) and fails t for every fused
// multiply-add in a function whose symbol matches funcs, and when fewer
// than atLeast functions matched on amd64 (a renamed function must not
// silently leave the check).
func NoFusedMultiplyAddIn(t testing.TB, dir string, funcs *regexp.Regexp, atLeast int) {
	t.Helper()
	eachFusingBuild(t, dir, []string{"GOEXPERIMENT=simd"}, func(env []string, listing string) {
		var checked []string
		for _, fn := range parse(listing) {
			if !funcs.MatchString(fn.name) {
				continue
			}
			checked = append(checked, fn.name)
			for _, in := range fn.insts {
				if fusedOp.MatchString(in.op) {
					t.Errorf("%v: a fused multiply-add in %s: %s", env, fn.name, strings.TrimSpace(in.line))
				}
			}
		}
		if env[0] == "GOARCH=amd64" && len(checked) < atLeast {
			t.Fatalf("%v: checked %d functions (%v); want at least %d", env, len(checked), checked, atLeast)
		}
		t.Logf("%v: %d functions checked", env, len(checked))
	})
}

// eachFusingBuild compiles the package in dir with -gcflags=-S for the two
// builds whose compiler fuses multiply-adds, arm64 and amd64 with
// GOAMD64=v3 (with extra in the environment), and calls check with each
// build's environment and listing. It skips t without a go command.
func eachFusingBuild(t testing.TB, dir string, extra []string, check func(env []string, listing string)) {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to compile with")
	}
	for _, env := range [][]string{{"GOARCH=arm64"}, {"GOARCH=amd64", "GOAMD64=v3"}} {
		cmd := exec.Command(goTool, "build", "-gcflags=-S", "-o", os.DevNull, ".")
		cmd.Dir = dir
		cmd.Env = append(append(append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux"), extra...), env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v go build -gcflags=-S: %v\n%s", env, err, out)
		}
		check(env, string(out))
	}
}
