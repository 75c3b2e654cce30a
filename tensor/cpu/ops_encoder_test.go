package cpu

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestGELU: the exact GELU against its float64 definition, at torch's
// reference points and on a sweep: one rounding from the float64 value.
func TestGELU(t *testing.T) {
	x := []float32{0, float32(math.Copysign(0, -1)), 1, -1, 3, -3, 10, -10, 1e-20, -40, 40}
	for i := 0; i < 2000; i++ {
		x = append(x, float32(i-1000)/150)
	}
	got := append([]float32(nil), x...)
	GELU(3, got)
	for i, v := range x {
		want := float32(0.5 * float64(v) * (1 + math.Erf(float64(v)/math.Sqrt2)))
		if got[i] != want && math.Abs(float64(got[i]-want)) > 1e-7*math.Abs(float64(want)) {
			t.Errorf("GELU(%v) = %v, want %v", v, got[i], want)
		}
	}
	if g := geluScalar(1); math.Abs(float64(g)-0.8413447460685429) > 1e-7 { // Φ(1)
		t.Errorf("GELU(1) = %v, want 0.841344746", g)
	}
}

// TestEncoderAttention: against a float64 softmax attention over all
// tokens (no mask), and the same bits whatever the worker count.
func TestEncoderAttention(t *testing.T) {
	const seqs, tokens, heads, hd = 3, 17, 4, 8
	width := heads * hd
	rng := rand.New(rand.NewPCG(1, 2))
	vec := func() []float32 {
		v := make([]float32, seqs*tokens*width)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	q, k, v := vec(), vec(), vec()
	scale := float32(1 / math.Sqrt(hd))
	got := make([]float32, len(q))
	EncoderAttention(1, got, q, k, v, seqs, tokens, heads, hd, scale)
	for s := 0; s < seqs; s++ {
		for h := 0; h < heads; h++ {
			for i := 0; i < tokens; i++ {
				at := func(b []float32, tok, d int) float64 { return float64(b[(s*tokens+tok)*width+h*hd+d]) }
				scores := make([]float64, tokens)
				var m float64 = math.Inf(-1)
				for j := range scores {
					for d := 0; d < hd; d++ {
						scores[j] += at(q, i, d) * at(k, j, d)
					}
					scores[j] *= float64(scale)
					m = max(m, scores[j])
				}
				var sum float64
				for j := range scores {
					scores[j] = math.Exp(scores[j] - m)
					sum += scores[j]
				}
				for d := 0; d < hd; d++ {
					var want float64
					for j := range scores {
						want += scores[j] / sum * at(v, j, d)
					}
					if g := float64(got[(s*tokens+i)*width+h*hd+d]); math.Abs(g-want) > 2e-6 {
						t.Fatalf("seq %d head %d token %d dim %d: %v, want %v", s, h, i, d, g, want)
					}
				}
			}
		}
	}
	again := make([]float32, len(q))
	EncoderAttention(5, again, q, k, v, seqs, tokens, heads, hd, scale)
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(again[i]) {
			t.Fatalf("element %d: %v with 1 worker, %v with 5", i, got[i], again[i])
		}
	}
}
