//go:build goexperiment.simd && amd64

package cpu

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestKernAVX512AsmMatchesGo: the assembly micro kernel gives the same bits
// as the Go one it transcribes, for every row count, k count (unrolled loop
// and tail), with and without accumulation into C, and writes nothing but
// its 4×32 tile.
func TestKernAVX512AsmMatchesGo(t *testing.T) {
	if !cpuAVX512 {
		t.Skip("the CPU has no AVX-512")
	}
	r := rand.New(rand.NewPCG(9, 10))
	const lda, ldc = 700, 40
	for _, kc := range []int{0, 1, 3, 4, 5, 8, 17, 512} {
		a, b := randMat(r, 4*lda), randMat(r, kc*nr+1)
		for rows := 1; rows <= 4; rows++ {
			for _, acc := range []bool{false, true} {
				start := randMat(r, 4*ldc+8)
				goC, asmC := append([]float32(nil), start...), append([]float32(nil), start...)
				kernAVX512(&a[0], lda, rows, &b[0], &goC[0], ldc, kc, acc)
				kernAVX512asm(&a[0], lda, rows, &b[0], &asmC[0], ldc, kc, acc)
				for i := range goC {
					if math.Float32bits(goC[i]) != math.Float32bits(asmC[i]) {
						t.Fatalf("kc=%d rows=%d acc=%v: c[%d] = %v in assembly, %v in Go", kc, rows, acc, i, asmC[i], goC[i])
					}
				}
			}
		}
	}
}

// TestKernAVX2AsmMatchesGo: the AVX2 assembly kernel gives the bits of the
// Go kernel it transcribes (kernAVX2), under the same checks.
func TestKernAVX2AsmMatchesGo(t *testing.T) {
	if !cpuAVX2 {
		t.Skip("the CPU has no AVX2+FMA")
	}
	checkKernMatches(t, kernAVX2asm, kernAVX2)
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
