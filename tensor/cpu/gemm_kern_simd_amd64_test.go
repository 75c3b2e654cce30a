//go:build goexperiment.simd && amd64

package cpu

import "testing"

// TestKernAVX512AsmMatchesGo: the assembly micro kernels (float32 and
// bfloat16 panels) give the same bits as the Go ones they transcribe, for
// every row count, k count (unrolled loop and tail), with and without
// accumulation into C, and write nothing but their 4×32 tile.
func TestKernAVX512AsmMatchesGo(t *testing.T) {
	if !cpuAVX512 {
		t.Skip("the CPU has no AVX-512")
	}
	checkKernMatches(t, kernAVX512asm, kernAVX512)
	checkKernBF16Matches(t, kernAVX512BF16asm, kernAVX512BF16)
}

// TestKernAVX2AsmMatchesGo: the AVX2 assembly kernels give the bits of the
// Go kernels they transcribe (kernAVX2, kernAVX2BF16), under the same checks.
func TestKernAVX2AsmMatchesGo(t *testing.T) {
	if !cpuAVX2 {
		t.Skip("the CPU has no AVX2+FMA")
	}
	checkKernMatches(t, kernAVX2asm, kernAVX2)
	checkKernBF16Matches(t, kernAVX2BF16asm, kernAVX2BF16)
}

// TestKernFMARefMatchesAVX checks the Go reference of the FMA kernels
// (kernFMARef, which the arm64 kernels are held to) against the hardware's
// fused multiply-adds: the AVX-512 and AVX2 kernels compute the same chains.
func TestKernFMARefMatchesAVX(t *testing.T) {
	if cpuAVX512 {
		checkKernMatches(t, kernAVX512, kernFMARef)
		checkKernBF16Matches(t, kernAVX512BF16, kernFMARefBF16)
	}
	if cpuAVX2 {
		checkKernMatches(t, kernAVX2, kernFMARef)
		checkKernBF16Matches(t, kernAVX2BF16, kernFMARefBF16)
	}
}
