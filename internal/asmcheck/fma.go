package asmcheck

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

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
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to compile with")
	}
	fused := regexp.MustCompile(`\)\t(V?FN?M(ADD|SUB)\w*|FML[AS]\w*)\t`)
	for _, env := range [][]string{{"GOARCH=arm64"}, {"GOARCH=amd64", "GOAMD64=v3"}} {
		cmd := exec.Command(goTool, "build", "-gcflags=-S", "-o", os.DevNull, ".")
		cmd.Dir = dir
		cmd.Env = append(append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux"), env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v go build -gcflags=-S: %v\n%s", env, err, out)
		}
		for _, line := range strings.Split(string(out), "\n") {
			if fused.MatchString(line) {
				t.Errorf("%v: a fused multiply-add: %s", env, strings.TrimSpace(line))
			}
		}
	}
}
