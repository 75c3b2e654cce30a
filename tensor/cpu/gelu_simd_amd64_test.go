//go:build goexperiment.simd && amd64

package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"simd/archsimd"
)

// TestErf8MatchesScalar: the vector erf gives the scalar erf's float64 bits
// (which the rounding to float32 in GELU would mostly hide), on every range
// and its edges, mixed and unmixed within a vector.
func TestErf8MatchesScalar(t *testing.T) {
	if !cpuAVX512 {
		t.Skip("the CPU has no AVX-512")
	}
	x := []float64{0, math.Copysign(0, -1), 1e-300, math.Inf(1), math.Inf(-1), math.NaN(), 7, -7, 40}
	for _, edge := range []float64{erfTiny, 0.84375, 1.25, 1 / 0.35, 6} {
		x = append(x, edge, math.Nextafter(edge, 0), math.Nextafter(edge, 10), -edge)
	}
	rng := rand.New(rand.NewPCG(7, 8))
	for _, scale := range []float64{0.01, 0.5, 1.5, 3, 5} {
		for range 4000 {
			x = append(x, rng.NormFloat64()*scale)
		}
	}
	for len(x)%8 != 0 {
		x = append(x, 1)
	}
	got := make([]float64, 8)
	for i := 0; i < len(x); i += 8 {
		erf8(archsimd.LoadFloat64x8Slice(x[i:])).StoreSlice(got)
		for j, g := range got {
			want := erf(x[i+j])
			if math.Float64bits(g) != math.Float64bits(want) && !(math.IsNaN(g) && math.IsNaN(want)) {
				t.Fatalf("erf8 lane %d: erf(%v) = %v (%#x), scalar %v (%#x)", j, x[i+j], g, math.Float64bits(g), want, math.Float64bits(want))
			}
		}
	}
}
