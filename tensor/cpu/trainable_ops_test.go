package cpu

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestTrainableOpsMatchScalar: the element-wise loops of full-parameter
// ZO give the scalar code's bits on the path in use (a vector one where the
// CPU has it), over lengths that leave a scalar tail, and their sums too.
func TestTrainableOpsMatchScalar(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{0, 1, 7, 8, 15, 16, 17, 100, 1027} {
		w, z := make([]float32, n), make([]float32, n)
		g := make([]float64, n)
		for i := range w {
			w[i], z[i], g[i] = float32(rng.NormFloat64()*0.02), float32(rng.NormFloat64()), rng.NormFloat64()
		}
		got, want := make([]float32, n), make([]float32, n)
		perturbValues(got, w, z, -1e-3)
		perturbValuesScalar(want, w, z, -1e-3)
		a, b := append([]float32(nil), w...), append([]float32(nil), w...)
		sa, sb := sgdValues(a, g, 1e-3, 0.01), sgdValuesScalar(b, g, 1e-3, 0.01)
		ga, gb := append([]float64(nil), g...), append([]float64(nil), g...)
		addScaled(ga, z, -0.37)
		addScaledScalar(gb, z, -0.37)
		for i := range n {
			if math.Float64bits(ga[i]) != math.Float64bits(gb[i]) {
				t.Fatalf("n %d, element %d: ĝ term %v on the path in use, %v scalar", n, i, ga[i], gb[i])
			}
		}
		for i := range n {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) || math.Float32bits(a[i]) != math.Float32bits(b[i]) {
				t.Fatalf("n %d, element %d: perturbed %v/%v, stepped %v/%v (path in use / scalar)", n, i, got[i], want[i], a[i], b[i])
			}
		}
		if math.Float64bits(sa) != math.Float64bits(sb) {
			t.Errorf("n %d: Σ Δθ² %v on the path in use, %v scalar", n, sa, sb)
		}
	}
}
