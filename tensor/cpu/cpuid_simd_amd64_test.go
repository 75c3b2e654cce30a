//go:build goexperiment.simd && amd64

package cpu

import (
	"os"
	"testing"
)

// TestPathsFollowCPU: the kernels a CPU gets are the ones its features
// allow, chosen by CPUID, whatever the build: AVX-512 paths only with
// AVX-512, the AVX2 GEMM only with AVX2 and FMA, the portable code
// otherwise. scripts/test_cpus.sh runs the tests under qemu with CPU models
// that lack features and says which it emulates in MEAZO_EXPECT_CPU
// (avx512, avx2, avx or sse), so that a run whose CPU model silently had
// more features than meant fails here instead of passing on the fast path.
func TestPathsFollowCPU(t *testing.T) {
	want := map[string]struct{ gemm, ops string }{
		"avx512": {"avx512", "avx512"},
		"avx2":   {"avx2", "avx2"},
		"avx":    {"portable", "scalar"},
		"sse":    {"portable", "scalar"},
	}
	level := os.Getenv("MEAZO_EXPECT_CPU")
	if level == "" {
		t.Skipf("MEAZO_EXPECT_CPU not set (scripts/test_cpus.sh sets it); this CPU: GEMM %s, element-wise kernels %s", GEMMPaths()[0], opsPath)
	}
	w, ok := want[level]
	if !ok {
		t.Fatalf("MEAZO_EXPECT_CPU=%q: want avx512, avx2, avx or sse", level)
	}
	if got := GEMMPaths()[0]; got != w.gemm || opsPath != w.ops {
		t.Fatalf("CPU level %s: GEMM path %s and element-wise kernels %s, want %s and %s (paths available: %v)",
			level, got, opsPath, w.gemm, w.ops, GEMMPaths())
	}
	if err := SetGEMMPath("avx512"); (err == nil) != (level == "avx512") {
		t.Errorf("CPU level %s: SetGEMMPath(avx512) = %v", level, err)
	}
	defer SetGEMMPath("")
}
