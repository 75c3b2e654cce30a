//go:build goexperiment.simd && amd64

package cpu

import (
	"os/exec"
	"regexp"
	"testing"

	"github.com/meazo-go/meazo/internal/asmcheck"
)

// TestKernelsHaveNoLegacySSE reads the vector kernels' machine code (the
// compiler's listing) for legacy SSE instructions among AVX ones: on Intel
// cores each costs a microcode assist of hundreds of cycles (see
// ops_simd_amd64.go), which no benchmark on an AMD machine would show.
func TestKernelsHaveNoLegacySSE(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command to compile the package's assembly listing with")
	}
	checked, found, err := asmcheck.Check(".", regexp.MustCompile(`tensor/cpu\.(\w+AVX512\w*|\w+AVX2\w*|\w+Vec|kern\w+|exp16|exp64x8|load\w+|store\w+|bcast\w+)$`))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		t.Errorf("legacy SSE instruction among AVX code: %v", f)
	}
	if len(checked) < 10 {
		t.Fatalf("checked only %v", checked)
	}
	t.Logf("%d kernels checked", len(checked))
}
