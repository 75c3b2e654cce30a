//go:build goexperiment.simd && amd64

package cpu

import (
	"regexp"
	"testing"

	"github.com/meazo-go/meazo/internal/asmcheck"
)

// TestAVX2KernelsHaveNoAVX512 reads the AVX2 paths' machine code (the
// compiler's listing) for AVX-512 instructions, which fault on the CPUs
// those paths are for: this machine may have AVX-512 and run them without
// a fault. (scripts/test_cpus.sh runs them on an emulated AVX2 CPU.)
func TestAVX2KernelsHaveNoAVX512(t *testing.T) {
	asmcheck.NoAVX512(t, ".", regexp.MustCompile(`tensor/cpu\.(\w+AVX2\w*|load8|store8|bcast8|loadBF16x8)$`), 25)
}
