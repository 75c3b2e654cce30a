package cpu

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// TestDescribeNamesUnusedVectors: an amd64 build without the SIMD kernels
// says, in the backend's description every run logs, which of the CPU's
// vector extensions it leaves unused and how to build for them; a build
// with them (or arm64's) says nothing of the kind.
func TestDescribeNamesUnusedVectors(t *testing.T) {
	d := New(Options{Threads: 1}).Describe()
	v := unusedVectors()
	if v != "" && !portableOnly {
		t.Errorf("unusedVectors() = %q in a build with SIMD kernels", v)
	}
	if got := strings.Contains(d, "GOEXPERIMENT=simd"); got != (v != "") || !strings.Contains(d, v) {
		t.Errorf("Describe() = %q; the CPU's unused vector extension: %q", d, v)
	}
	if portableOnly && cpuinfoHas("avx2", "fma") && v == "" {
		t.Errorf("a portable amd64 build on a CPU with AVX2 and FMA names nothing unused: %q", d)
	}
}

// cpuinfoHas reports whether Linux's /proc/cpuinfo lists every flag for the
// first CPU (false where there is none): the kernel's word, apart from the
// CPUID this package reads. (Under qemu it is the host's; the emulated runs,
// scripts/test_cpus.sh, are SIMD builds, for which it is not asked.)
func cpuinfoHas(flags ...string) bool {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if name, list, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(name) == "flags" {
			have := strings.Fields(list)
			for _, f := range flags {
				if !slices.Contains(have, f) {
					return false
				}
			}
			return true
		}
	}
	return false
}
