//go:build !goexperiment.simd || !amd64

package main

// readBandwidth is measured with 16-lane loads only (GOEXPERIMENT=simd on
// amd64); 0: not measured.
func readBandwidth(threads int) float64 { return 0 }
