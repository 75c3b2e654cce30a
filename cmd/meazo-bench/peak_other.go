//go:build !goexperiment.simd || !amd64

package main

// fmaPeak: without GOEXPERIMENT=simd on amd64 there is no vector FMA loop to
// measure (on arm64 the NEON path's peak is not measured either).
func fmaPeak(threads int, path string) (gflops float64, what string) {
	return 0, "n/a for path " + path + " (a peak loop needs GOEXPERIMENT=simd on amd64)"
}

// readBandwidth is measured with 16-lane loads only (GOEXPERIMENT=simd on
// amd64); 0: not measured.
func readBandwidth(threads int) float64 { return 0 }
