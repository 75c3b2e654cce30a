//go:build !amd64 || goexperiment.simd

package cpu

// portableOnly: this build has vector kernels (chosen by CPUID at start).
const portableOnly = false

// unusedVectors is "": this build has the kernels of every vector extension
// it can use (arm64's NEON is always built).
func unusedVectors() string { return "" }
