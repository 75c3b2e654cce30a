//go:build goexperiment.simd && amd64

package cpu

import "testing"

// TestTrainablePaths runs the element-wise loops' checks on every vector
// path this CPU has, not only the one in use: an AVX-512 machine checks the
// AVX2 loops that CPUs without AVX-512 run.
func TestTrainablePaths(t *testing.T) {
	defer useTrainableVector(cpuAVX512, cpuAVX2)
	for _, path := range []struct {
		name        string
		avx512, has bool
	}{{"avx512", true, cpuAVX512}, {"avx2", false, cpuAVX2}} {
		t.Run(path.name, func(t *testing.T) {
			if !path.has {
				t.Skipf("this CPU has no %s", path.name)
			}
			useTrainableVector(path.avx512, !path.avx512)
			checkTrainableOps(t)
			checkBF16Ops(t)
			checkStateRules(t)
		})
	}
}
