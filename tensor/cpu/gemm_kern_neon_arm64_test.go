//go:build arm64

package cpu

import "testing"

// TestKernNEONMatchesRef: the arm64 assembly kernels give kernFMARef's bits.
func TestKernNEONMatchesRef(t *testing.T) {
	checkKernMatches(t, kernNEON, kernFMARef)
	checkKernBF16Matches(t, kernNEONBF16, kernFMARefBF16)
}
