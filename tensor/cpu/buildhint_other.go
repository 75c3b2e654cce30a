//go:build !amd64 || goexperiment.simd

package cpu

// portableOnly is false: amd64 with GOEXPERIMENT=simd and arm64 build their
// vector kernels (chosen by CPUID at start); the other architectures have
// only the portable kernel and no vector kernel to leave out.
const portableOnly = false

// unusedVectors is "": this build leaves out no vector kernel it has.
func unusedVectors() string { return "" }
