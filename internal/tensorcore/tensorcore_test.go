package tensorcore

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestTF32(t *testing.T) {
	for _, c := range []struct{ in, want uint32 }{
		{0x3f800000, 0x3f800000}, // 1
		{0x3f800fff, 0x3f800000}, // below half an ulp: down
		{0x3f801000, 0x3f802000}, // a tie: away from zero
		{0xbf801000, 0xbf802000}, // the same, negative
		{0x3fffffff, 0x40000000}, // carries into the exponent
		{0x7f800000, 0x7f800000}, // +Inf
		{0x7fc00001, 0x7fc00001}, // NaN as it is
	} {
		if got := math.Float32bits(TF32(math.Float32frombits(c.in))); got != c.want {
			t.Errorf("TF32(%#x) = %#x, want %#x", c.in, got, c.want)
		}
	}
}

// TestStep checks the tensor-core step on sums it must give exactly and on
// its truncations: of a product below the accumulator's 25 fractional bits,
// and of the sum to float32 (toward zero, not to nearest).
func TestStep(t *testing.T) {
	ones := []float32{1, 1, 1, 1, 1, 1, 1, 1}
	ints := []float32{1, 2, 3, 4, 5, 6, 7, 8}
	tiny := []float32{0x1p-14, 0, 0, 0, 0, 0, 0, 0} // products 2^-28 of 1 with ones: below 2^-25
	for _, c := range []struct {
		name string
		c    float32
		a, b []float32
		want float32
	}{
		{"exact", 0.5, ints, ones, 36.5},
		{"zero", 0, make([]float32, 8), ones, 0},
		{"a product below the accumulator's bits", 1, tiny, []float32{0x1p-14, 0, 0, 0, 0, 0, 0, 0}, 1},
		{"a negative one: truncated toward zero, not subtracted", 1, []float32{-0x1p-14, 0, 0, 0, 0, 0, 0, 0}, []float32{0x1p-14, 0, 0, 0, 0, 0, 0, 0}, 1},
		{"the sum truncated to float32", 1, []float32{0x1p-12, 0, 0, 0, 0, 0, 0, 0}, []float32{0x1.8p-12, 0, 0, 0, 0, 0, 0, 0}, 1},
	} {
		if got := Step(c.c, c.a, c.b); got != c.want {
			t.Errorf("%s: Step = %g (%#x), want %g", c.name, got, math.Float32bits(got), c.want)
		}
	}
}

// TestModelMatchesH100 ties the model to the hardware: 3xTF32 never
// promoted, as dev/cuda/gemm_tf32x3.cu multiplied, had an rms error of 7e-6
// of the outputs' at k = 1,024 on an H100 (docs/bench/2026-11-26-h100,
// run14); the model's must be within a sample's spread of it, and promoting
// every 4 steps (gemm_3xtf32) must bring it below 4e-7.
func TestModelMatchesH100(t *testing.T) {
	const k, outputs = 1024, 300
	rng := rand.New(rand.NewPCG(1, 2))
	x, w := make([]float32, k), make([]float32, k)
	var never, every4, ref2 float64
	for range outputs {
		for i := range k {
			x[i] = float32(rng.NormFloat64())
			w[i] = float32(rng.NormFloat64() / math.Sqrt(k))
		}
		ref := 0.0
		for i := range k {
			ref += float64(x[i]) * float64(w[i])
		}
		d0, d4 := float64(Dot3xTF32(x, w, 0))-ref, float64(Dot3xTF32(x, w, 4))-ref
		never, every4, ref2 = never+d0*d0, every4+d4*d4, ref2+ref*ref
	}
	never, every4 = math.Sqrt(never/ref2), math.Sqrt(every4/ref2)
	t.Logf("k = %d: rms error never promoted %.2e (the H100: 7e-6), every 4 steps %.2e", k, never, every4)
	if never < 5.5e-6 || never > 9e-6 || every4 > 4e-7 {
		t.Errorf("rms errors %.2e and %.2e: want 5.5e-6 to 9e-6 (the H100's 7e-6) and below 4e-7", never, every4)
	}
}

// TestDot3xTF32Split: one slice is Dot3xTF32 promoted every tile; three
// of seven tiles are tiles [0, 2), [2, 4) and [4, 7), each its own
// Dot3xTF32, added in order in float32.
func TestDot3xTF32Split(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	x, w := make([]float32, 7*32), make([]float32, 7*32)
	for i := range x {
		x[i], w[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
	}
	if a, b := Dot3xTF32Split(x, w, 1), Dot3xTF32(x, w, 4); math.Float32bits(a) != math.Float32bits(b) {
		t.Errorf("one slice: %g, Dot3xTF32 %g", a, b)
	}
	want := Dot3xTF32(x[:64], w[:64], 4)
	want += Dot3xTF32(x[64:128], w[64:128], 4)
	want += Dot3xTF32(x[128:], w[128:], 4)
	if got := Dot3xTF32Split(x, w, 3); math.Float32bits(got) != math.Float32bits(want) {
		t.Errorf("three slices: %g, want %g", got, want)
	}
}
