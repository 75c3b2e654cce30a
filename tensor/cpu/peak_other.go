//go:build !arm64 && !(goexperiment.simd && amd64)

package cpu

// PeakLoop: without GOEXPERIMENT=simd on amd64 (and off arm64) there is no
// vector FMA loop.
func PeakLoop(path string) (loop func(n int) float32, lanes, chains int, ok bool) {
	return nil, 0, 0, false
}
