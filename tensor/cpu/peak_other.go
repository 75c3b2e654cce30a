//go:build !goexperiment.simd || !amd64

package cpu

// PeakLoop: without GOEXPERIMENT=simd on amd64 there is no vector FMA loop
// (on arm64 the NEON path's peak is not measured either).
func PeakLoop(path string) (loop func(n int) float32, lanes int, ok bool) { return nil, 0, false }
