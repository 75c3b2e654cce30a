//go:build arm64

package cpu

// simdPaths: on arm64, NEON (Advanced SIMD) is part of the base architecture,
// so the assembly kernels are always available.
func simdPaths() []*gemmPath {
	return []*gemmPath{{name: "neon", kern: kernNEON, kern16: kernNEONBF16}}
}

// kernNEON is the 4×32 micro kernel in arm64 assembly
// (gemm_kern_neon_arm64.s): two 4×16 halves, each element a chain of fused
// multiply-adds from zero in k order, then C added (acc). kernFMARef
// (gemm_kern_ref_test.go) is its Go transcription; the two agree bit for bit.
//
//go:noescape
func kernNEON(a *float32, lda, rows int, b, c *float32, ldc, kc int, acc bool)

// kernNEONBF16 is kernNEON reading a bfloat16 panel (widened exactly).
//
//go:noescape
func kernNEONBF16(a *float32, lda, rows int, b *uint16, c *float32, ldc, kc int, acc bool)
