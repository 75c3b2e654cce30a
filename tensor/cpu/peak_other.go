//go:build !arm64 && !(goexperiment.simd && amd64)

package cpu

// PeakLoop returns the float32 FMA peak loop of the vector width a GEMM path
// uses, for measuring what fraction of the machine's limit a kernel reaches
// (see the amd64 and arm64 builds). This build (amd64 without
// GOEXPERIMENT=simd, or another architecture than arm64) has no vector FMA
// loop: ok is always false.
func PeakLoop(path string) (loop func(n int) float32, lanes, chains int, ok bool) {
	return nil, 0, 0, false
}
