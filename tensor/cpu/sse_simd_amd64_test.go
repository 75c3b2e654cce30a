//go:build goexperiment.simd && amd64

package cpu

import (
	"regexp"
	"testing"

	"github.com/meazo-go/meazo/internal/asmcheck"
)

// TestKernelsHaveNoLegacySSE reads the vector kernels' machine code (the
// compiler's listing) for legacy SSE instructions among AVX ones: on Intel
// cores each costs a microcode assist of hundreds of cycles (see
// ops_simd_amd64.go), which no benchmark on an AMD machine would show.
func TestKernelsHaveNoLegacySSE(t *testing.T) {
	asmcheck.NoLegacySSE(t, ".", regexp.MustCompile(`tensor/cpu\.(\w+AVX512\w*|\w+AVX2\w*|\w+Vec8?|kern\w+|exp8|exp16|exp64x8|load\w+|store\w+|bcast\w+)$`),
		// The element-wise kernels the scalar code calls return with the upper halves clean.
		regexp.MustCompile(`tensor/cpu\.(siluMul|expSub|maxOf|scaleBy|scaledAdd|sumSq|sum64|expSum64|mulBoth|rotateHalf|perturbValues|perturbPair|perturbValuesBF16|perturbPairBF16|sgdValues|sgdDirection|sgdBF16Blocks|sgdBlocks|stateBlocks|stateBF16Blocks|addScaled|encoderSums|encoderSums2|encoderNormalize|add)(AVX512|AVX2|Vec|Vec8)$`), 30)
}
