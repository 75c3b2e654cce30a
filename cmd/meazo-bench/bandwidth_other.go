//go:build !goexperiment.simd || !amd64

package main

// sumLoads is the bandwidth probe's summing loop and what it loads: scalar
// loads in this build (vector ones need GOEXPERIMENT=simd on amd64).
func sumLoads() (func([]float32) float32, string) {
	return sumScalar, "scalar loads (no vector loop in this build)"
}
