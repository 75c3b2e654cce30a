//go:build !goexperiment.simd || !amd64

package cpu

// simdPaths: this build has no SIMD kernels (build with GOEXPERIMENT=simd on
// amd64 for the AVX-512 and AVX2 paths).
func simdPaths() []*gemmPath { return nil }
