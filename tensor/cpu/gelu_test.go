package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// geluInputs covers every range of erf's at x/√2 and its edges: both
// zeros, the tiny range, each boundary one float32 either side, the
// saturated tails, ±Inf and NaN, and normal samples at three scales.
func geluInputs() []float32 {
	x := []float32{0, float32(math.Copysign(0, -1)), 1e-30, -1e-30, 1e-45, 1, -1, 3, -3, 10, -10, 40, -40,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())}
	for _, edge := range []float64{erfTiny, 0.84375, 1.25, 1 / 0.35, 6} {
		b := float32(edge / sqrt1_2)
		for _, v := range []float32{b, math.Nextafter32(b, 0), math.Nextafter32(b, 100)} {
			x = append(x, v, -v)
		}
	}
	for i := -1000; i < 1000; i++ {
		x = append(x, float32(i)/150)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for _, scale := range []float64{0.1, 1, 4} {
		for range 20000 {
			x = append(x, float32(rng.NormFloat64()*scale))
		}
	}
	return x
}

// TestGELU: against torch's definition x·½·(1 + erf(x/√2)) with Go's
// math.Erf, rounded once: equal, or one float32 ulp apart where math.Erf
// and erf differ by a float64 ulp across a rounding boundary; and erf
// itself within one float64 ulp of math.Erf everywhere.
func TestGELU(t *testing.T) {
	x := geluInputs()
	got := append([]float32(nil), x...)
	GELU(3, got)
	off := 0
	for i, v := range x {
		want := float32(0.5 * float64(v) * (1 + math.Erf(float64(v)*sqrt1_2)))
		switch {
		case math.IsNaN(float64(want)) && math.IsNaN(float64(got[i])):
		case math.Float32bits(got[i]) == math.Float32bits(want):
		case math.Abs(float64(got[i]-want)) <= float64(math.Nextafter32(float32(math.Abs(float64(want))), 1e30)-float32(math.Abs(float64(want)))):
			off++
		default:
			t.Errorf("GELU(%v) = %v, want %v", v, got[i], want)
			if t.Failed() && i > 20 {
				t.FailNow()
			}
		}
		e, me := erf(float64(v)*sqrt1_2), math.Erf(float64(v)*sqrt1_2)
		if e != me && math.Abs(e-me) > math.Nextafter(math.Abs(me), 2)-math.Abs(me) {
			t.Errorf("erf(%v) = %v, math.Erf %v: more than an ulp apart", float64(v)*sqrt1_2, e, me)
		}
	}
	if off > len(x)/1000 {
		t.Errorf("%d of %d results an ulp from math.Erf's: more than roundings across a boundary", off, len(x))
	}
	t.Logf("%d of %d results one float32 ulp from the math.Erf version's, the rest equal", off, len(x))
	if g := geluScalar(1); math.Abs(float64(g)-0.8413447460685429) > 1e-7 { // Φ(1)
		t.Errorf("GELU(1) = %v, want 0.841344746", g)
	}
}

// TestGELUBlockMatchesScalar: the GELU in use (AVX-512 where the CPU has
// it) gives geluScalar's bits on every input, whole vectors and tails.
func TestGELUBlockMatchesScalar(t *testing.T) {
	x := geluInputs()
	for _, n := range []int{len(x), 7, 9, 16} {
		got := append([]float32(nil), x[:n]...)
		geluBlock(got)
		for i, v := range x[:n] {
			want := geluScalar(v)
			if math.Float32bits(got[i]) != math.Float32bits(want) && !(math.IsNaN(float64(want)) && math.IsNaN(float64(got[i]))) {
				t.Fatalf("n = %d: GELU(%v) = %v (%#x), geluScalar %v (%#x)", n, v, got[i], math.Float32bits(got[i]), want, math.Float32bits(want))
			}
		}
	}
}

// BenchmarkGELU: 16,384 normal samples at σ = 1 and σ = 4 (where nearly
// every vector has a lane in erf's costly tail), by the GELU in use, the
// scalar code and the math.Erf version it replaced.
func BenchmarkGELU(b *testing.B) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, sigma := range []float64{1, 4} {
		src := make([]float32, 1<<14)
		for i := range src {
			src[i] = float32(rng.NormFloat64() * sigma)
		}
		x := make([]float32, len(src))
		for _, c := range []struct {
			name string
			f    func([]float32)
		}{{"in-use", geluBlock}, {"go", geluGo}, {"math.Erf", func(x []float32) {
			for i, v := range x {
				x[i] = float32(0.5 * float64(v) * (1 + math.Erf(float64(v)*sqrt1_2)))
			}
		}}} {
			b.Run(fmt.Sprintf("sigma=%g/%s", sigma, c.name), func(b *testing.B) {
				b.SetBytes(int64(4 * len(x)))
				for b.Loop() {
					copy(x, src)
					c.f(x)
				}
			})
		}
	}
}
