//go:build goexperiment.simd && amd64

package cpu

import "testing"

// trainablePaths are the element-wise loops' paths this CPU can run, each
// with the function that installs it; restoreTrainable installs the one in
// use again.
func trainablePaths() []trainablePath {
	var ps []trainablePath
	if cpuAVX512 {
		ps = append(ps, trainablePath{"avx512", func() { useTrainableVector(true, false) }})
	}
	if cpuAVX2 {
		ps = append(ps, trainablePath{"avx2", func() { useTrainableVector(false, true) }})
	}
	return append(ps, trainablePath{"scalar", useTrainableScalar})
}

func restoreTrainable() { useTrainableVector(cpuAVX512, cpuAVX2) }

// TestTrainablePaths runs the element-wise loops' checks on every path this
// CPU has, not only the one in use: an AVX-512 machine checks the AVX2 loops
// that CPUs without AVX-512 run.
func TestTrainablePaths(t *testing.T) {
	defer restoreTrainable()
	for _, path := range trainablePaths() {
		t.Run(path.name, func(t *testing.T) {
			path.use()
			checkTrainableOps(t)
			checkBF16Ops(t)
			checkBF16Random(t)
			checkStateRules(t)
		})
	}
}
