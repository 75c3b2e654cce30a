//go:build goexperiment.simd && amd64

package cpu

import (
	"slices"
	"testing"
)

// TestEncoderSums2AVX512Lengths: the kernel writes out1 and reads coef1 as
// far as out0 and coef0, so a shorter out1 (or coef1) is refused before the
// call, not written past its length into its backing array (a check of a
// reslice, out1[:len(out0)], passes within the capacity).
func TestEncoderSums2AVX512Lengths(t *testing.T) {
	if !cpuAVX512 {
		t.Skip("no AVX-512")
	}
	n, width := 2, 64
	m := make([]float64, n*width)
	for i := range m {
		m[i] = 1
	}
	coef := []uint64{0x3ff0000000000000, 0x3ff0000000000000} // 1, 1
	for _, tc := range []struct {
		name        string
		out1Len     int
		coef1Len    int
		out1Written bool
	}{{"a shorter out1", 8, n, true}, {"a shorter coef1", width, 1, false}} {
		t.Run(tc.name, func(t *testing.T) {
			backing := make([]float32, width)
			out0, out1 := make([]float32, width), backing[:tc.out1Len]
			defer func() {
				if recover() == nil {
					t.Errorf("not refused")
				}
				if tc.out1Written && slices.ContainsFunc(backing[tc.out1Len:], func(x float32) bool { return x != 0 }) {
					t.Errorf("written past out1's length: %v", backing[tc.out1Len:])
				}
			}()
			encoderSums2AVX512(out0, out1, coef, coef[:tc.coef1Len], m, width, one32)
		})
	}
}
