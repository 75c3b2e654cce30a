package main

import "testing"

// checkSum: a bandwidth loop adds every value of whole groups of 128 (the
// tail is not read), so that it reads all the memory it is timed on.
func checkSum(t *testing.T, name string, sum func([]float32) float32) {
	t.Helper()
	s := make([]float32, 128*5+17)
	for i := range s {
		s[i] = float32(i % 7)
	}
	var want float32
	for _, x := range s[:128*5] {
		want += x
	}
	if got := sum(s); got != want {
		t.Errorf("%s = %v, want %v", name, got, want)
	}
}

// TestSumLoads runs the loop this CPU gets (by CPUID: under qemu with a CPU
// model without AVX-512 or AVX, scripts/test_cpus.sh, the narrower ones) and
// the scalar one every CPU has.
func TestSumLoads(t *testing.T) {
	sum, what := sumLoads()
	t.Logf("this CPU: %s", what)
	checkSum(t, what, sum)
	checkSum(t, "sumScalar", sumScalar)
}
