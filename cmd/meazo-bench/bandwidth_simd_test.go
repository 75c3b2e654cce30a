//go:build goexperiment.simd && amd64

package main

import (
	"os"
	"simd/archsimd"
	"strings"
	"testing"
)

// TestVectorSums runs each vector loop the CPU supports (an AVX-512 machine
// runs both), and only those: a 16-lane loop on a CPU without AVX-512 is a
// SIGILL.
func TestVectorSums(t *testing.T) {
	if !archsimd.X86.AVX2() {
		t.Skip("no AVX2 on this CPU: the scalar loop only (TestSumLoads)")
	}
	checkSum(t, "sum8", sum8)
	if archsimd.X86.AVX512() {
		checkSum(t, "sum16", sum16)
	}
}

// TestLoadsFollowCPU: under scripts/test_cpus.sh (MEAZO_EXPECT_CPU names the
// emulated CPU's widest vectors) the probe picks the loads that CPU has.
func TestLoadsFollowCPU(t *testing.T) {
	want := map[string]string{"avx512": "16-lane", "avx2": "8-lane", "avx": "scalar", "sse": "scalar"}
	level := os.Getenv("MEAZO_EXPECT_CPU")
	if level == "" {
		t.Skip("MEAZO_EXPECT_CPU not set (scripts/test_cpus.sh sets it)")
	}
	if _, what := sumLoads(); want[level] == "" || !strings.HasPrefix(what, want[level]) {
		t.Fatalf("CPU level %q: the probe uses %s, want %s loads", level, what, want[level])
	}
}
