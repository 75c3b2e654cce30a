//go:build !amd64 || goexperiment.simd

package cpu

// unusedVectors is "": this build has the kernels of every vector extension
// it can use (arm64's NEON is always built).
func unusedVectors() string { return "" }
