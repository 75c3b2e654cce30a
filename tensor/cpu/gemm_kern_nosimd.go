//go:build !arm64 && (!goexperiment.simd || !amd64)

package cpu

// simdPaths: this build has no SIMD kernels (build with GOEXPERIMENT=simd on
// amd64 for the AVX-512 and AVX2 paths; arm64 always has its NEON path).
func simdPaths() []*gemmPath { return nil }
