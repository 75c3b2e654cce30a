//go:build amd64 && !purego

package noise

import (
	"os"
	"testing"
)

// TestKernelsFollowCPU: under scripts/test_cpus.sh (qemu with a CPU model
// that lacks features; MEAZO_EXPECT_CPU says which it has) the kernels
// chosen are the ones that CPU can run, so that a model with more features
// than meant cannot pass on the fast kernels.
func TestKernelsFollowCPU(t *testing.T) {
	want := map[string][2]bool{"avx512": {true, true}, "avx2": {false, true}, "avx": {false, false}, "sse": {false, false}}
	level := os.Getenv("MEAZO_EXPECT_CPU")
	if level == "" {
		t.Skipf("MEAZO_EXPECT_CPU not set (scripts/test_cpus.sh sets it); this CPU: AVX-512 kernels %v, AVX2 kernels %v", cpuAVX512, cpuAVX2)
	}
	w, ok := want[level]
	if !ok {
		t.Fatalf("MEAZO_EXPECT_CPU=%q: want avx512, avx2, avx or sse", level)
	}
	if cpuAVX512 != w[0] || cpuAVX2 != w[1] {
		t.Fatalf("CPU level %s: AVX-512 kernels %v, AVX2 kernels %v; want %v, %v", level, cpuAVX512, cpuAVX2, w[0], w[1])
	}
}
