//go:build goexperiment.simd && amd64

package cpu

import (
	"math"
	"simd/archsimd"
	"testing"
)

// TestAVX2KernelsMatchScalar: the AVX2 element-wise kernels give the scalar
// code's bits for every length and offset, on the inputs of
// TestKernelsMatchScalar (the ends of Exp's range, ±Inf and NaN included),
// on any CPU with AVX2: on one with AVX-512 too, where the forward runs the
// AVX-512 kernels, so that CI's machines check the kernels AVX2-only CPUs
// run.
func TestAVX2KernelsMatchScalar(t *testing.T) {
	if !cpuAVX2 {
		t.Skip("this CPU has no AVX2 with FMA")
	}
	x := testInputs(4099)
	up := testInputs(4099)[7:]
	same := func(name string, n, off int, got, want []float32) {
		t.Helper()
		for i := range got {
			if !sameBits(got[i], want[i]) {
				t.Fatalf("%s n=%d off=%d: [%d] %v, scalar %v", name, n, off, i, got[i], want[i])
			}
		}
	}
	for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 17, 33, 100, 4000} {
		for _, off := range []int{0, 3} {
			in := x[off : off+n]
			got, want := append([]float32(nil), in...), append([]float32(nil), in...)
			expSubAVX2(got, 0.75)
			expSubScalar(want, 0.75)
			same("expSub", n, off, got, want)
			got, want = append([]float32(nil), in...), append([]float32(nil), in...)
			siluMulAVX2(got, up[:n])
			siluMulScalar(want, up[:n])
			same("siluMul", n, off, got, want)
			got, want = make([]float32, n), make([]float32, n)
			mulBothAVX2(got, up[:n], in, 0.37)
			mulBothScalar(want, up[:n], in, 0.37)
			same("mulBoth", n, off, got, want)
			if g, w := sumSqAVX2(in), sumSqScalar(in); math.Float64bits(g) != math.Float64bits(w) && (g == g || w == w) {
				t.Fatalf("sumSq n=%d off=%d: %v, scalar %v", n, off, g, w)
			}
		}
	}
}

// TestExp8: exp8 is Exp, bit for bit, on 2^20 float32 values spread over
// every exponent (every 4096th bit pattern, both signs).
func TestExp8(t *testing.T) {
	if !cpuAVX2 {
		t.Skip("this CPU has no AVX2 with FMA")
	}
	var in, out [8]float32
	for b := uint64(0); b < 1<<32; b += 8 << 12 {
		for l := range in {
			in[l] = math.Float32frombits(uint32(b + uint64(l)<<12))
		}
		exp8(archsimd.LoadFloat32x8(&in)).Store(&out)
		for l, v := range in {
			if w := Exp(v); !sameBits(out[l], w) {
				t.Fatalf("exp8(%v) = %v, Exp %v", v, out[l], w)
			}
		}
	}
	archsimd.ClearAVXUpperBits()
}
