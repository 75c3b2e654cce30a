package cpu

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestLayerNorm checks LayerNorm against torch's formula in float64
// (weight·(x − mean)/√(var + eps) + bias, the biased variance), on rows
// with a large mean, in place and not.
func TestLayerNorm(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const rows, n, eps = 6, 77, 1e-5
	x, w, b := make([]float32, rows*n), make([]float32, n), make([]float32, n)
	for i := range x {
		x[i] = float32(5 + 3*rng.NormFloat64())
	}
	for j := range w {
		w[j], b[j] = float32(1+0.3*rng.NormFloat64()), float32(rng.NormFloat64())
	}
	got := make([]float32, rows*n)
	LayerNorm(2, got, x, w, b, rows, n, eps)
	inPlace := append([]float32(nil), x...)
	LayerNorm(1, inPlace, inPlace, w, b, rows, n, eps)
	for r := range rows {
		var mean, v float64
		for _, e := range x[r*n : (r+1)*n] {
			mean += float64(e)
		}
		mean /= n
		for _, e := range x[r*n : (r+1)*n] {
			v += (float64(e) - mean) * (float64(e) - mean)
		}
		v /= n
		for j := range n {
			want := float64(w[j])*(float64(x[r*n+j])-mean)/math.Sqrt(v+eps) + float64(b[j])
			i := r*n + j
			if d := math.Abs(float64(got[i]) - want); d > 2e-6*(1+math.Abs(want)) {
				t.Fatalf("row %d, column %d: %v, want %v", r, j, got[i], want)
			}
			if math.Float32bits(got[i]) != math.Float32bits(inPlace[i]) {
				t.Fatalf("row %d, column %d: in place %v, not in place %v", r, j, inPlace[i], got[i])
			}
		}
	}
}

// TestAddBiasReLU checks the bias add and ReLU's treatment of −0, NaN and
// negatives.
func TestAddBiasReLU(t *testing.T) {
	y := []float32{1, 2, 3, 4, 5, 6}
	AddBias(3, y, []float32{10, 20, 30, 99}, 2, 3)
	for i, want := range []float32{11, 22, 33, 14, 25, 36} {
		if y[i] != want {
			t.Fatalf("AddBias: y[%d] = %v, want %v", i, y[i], want)
		}
	}
	negZero := float32(math.Copysign(0, -1))
	x := []float32{-1, negZero, float32(math.NaN()), 2, float32(math.Inf(-1))}
	ReLU(2, x)
	if x[0] != 0 || math.Signbit(float64(x[0])) || !math.Signbit(float64(x[1])) || x[2] == x[2] || x[3] != 2 || x[4] != 0 {
		t.Fatalf("ReLU gave %v, want [0 -0 NaN 2 0]", x)
	}
}
