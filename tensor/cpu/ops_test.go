package cpu

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestExpAccuracy checks Exp against float64 math.Exp over the range it
// covers, and its edges.
func TestExpAccuracy(t *testing.T) {
	for x := float32(-87.3); x < 88.7; x += 0.00731 {
		got, want := float64(Exp(x)), math.Exp(float64(x))
		if rel := math.Abs(got-want) / want; rel > 2.5e-7 {
			t.Fatalf("Exp(%v) = %v, want %v (rel err %.3g)", x, got, want, rel)
		}
	}
	for _, c := range []struct{ x, want float32 }{
		{0, 1}, {-100, 0}, {100, float32(math.Inf(1))}, {float32(math.Inf(-1)), 0}, {float32(math.Inf(1)), float32(math.Inf(1))},
	} {
		if got := Exp(c.x); got != c.want {
			t.Errorf("Exp(%v) = %v, want %v", c.x, got, c.want)
		}
	}
	if got := Exp(float32(math.NaN())); got == got {
		t.Errorf("Exp(NaN) = %v, want NaN", got)
	}
}

// specialInputs are values at and around the edges of Exp's range.
var specialInputs = []float32{0, -0.0, 1, -1, 88.3, 88.38, 88.5, 88.72, 88.7229, 88.73, 89, 1e30,
	-87.3, -87.33, -87.3365, -87.34, -88, -1e30, 1e-30, -1e-30,
	float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())}

func testInputs(n int) []float32 {
	r := rand.New(rand.NewPCG(1, 2))
	x := append([]float32(nil), specialInputs...)
	for len(x) < n {
		x = append(x, float32(r.Float64()*200-100), float32(r.NormFloat64()*4))
	}
	return x
}

func sameBits(a, b float32) bool {
	return math.Float32bits(a) == math.Float32bits(b) || (a != a && b != b)
}

// TestKernelsMatchScalar checks that the element-wise kernels in use (vector
// ones where the CPU has them) are bit-identical to the scalar code for
// every length and offset.
func TestKernelsMatchScalar(t *testing.T) {
	t.Logf("element-wise kernels: %s", opsPath)
	x := testInputs(4099)
	up := testInputs(4099)[7:]
	for _, n := range []int{0, 1, 15, 16, 17, 33, 100, 4000} {
		for _, off := range []int{0, 3} {
			in := x[off : off+n]
			// expSub
			got, want := append([]float32(nil), in...), append([]float32(nil), in...)
			expSub(got, 0.75)
			expSubScalar(want, 0.75)
			for i := range got {
				if !sameBits(got[i], want[i]) {
					t.Fatalf("expSub n=%d off=%d: [%d] exp(%v) = %v, scalar %v", n, off, i, in[i]-0.75, got[i], want[i])
				}
			}
			// siluMul
			got, want = append([]float32(nil), in...), append([]float32(nil), in...)
			siluMul(got, up[:n])
			siluMulScalar(want, up[:n])
			for i := range got {
				if !sameBits(got[i], want[i]) {
					t.Fatalf("siluMul n=%d off=%d: [%d] silu(%v)·%v = %v, scalar %v", n, off, i, in[i], up[i], got[i], want[i])
				}
			}
			// maxOf and scaleBy on finite values
			fin := make([]float32, n)
			for i := range fin {
				fin[i] = float32(math.Sin(float64(i*7 + off)))
			}
			if g, w := maxOf(fin), maxOfScalar(fin); g != w {
				t.Fatalf("maxOf n=%d: %v, scalar %v", n, g, w)
			}
			// the float64 reductions and RMSNorm's scaling
			// (Any NaN matches any NaN: Inf + -Inf gives a NaN whose sign the
			// compiler's operand order decides, e.g. under -race.)
			same64 := func(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) || a != a && b != b }
			if g, w := sumSq(in), sumSqScalar(in); !same64(g, w) {
				t.Fatalf("sumSq n=%d off=%d: %v, scalar %v", n, off, g, w)
			}
			if g, w := sum64(in), sum64Scalar(in); !same64(g, w) {
				t.Fatalf("sum64 n=%d off=%d: %v, scalar %v", n, off, g, w)
			}
			if m := float64(maxOfScalar(fin)); n > 0 {
				if g, w := expSum64(fin, m), expSum64Scalar(fin, m); !same64(g, w) {
					t.Fatalf("expSum64 n=%d off=%d: %v, scalar %v", n, off, g, w)
				}
			}
			got, want = make([]float32, n), make([]float32, n)
			mulBoth(got, up[:n], in, 0.37)
			mulBothScalar(want, up[:n], in, 0.37)
			for i := range got {
				if !sameBits(got[i], want[i]) {
					t.Fatalf("mulBoth n=%d off=%d: [%d] %v, scalar %v", n, off, i, got[i], want[i])
				}
			}
			// rotateHalf: in and up as the halves, fin and x as cos and sin
			gotLo, gotHi := append([]float32(nil), in...), append([]float32(nil), up[:n]...)
			wantLo, wantHi := append([]float32(nil), in...), append([]float32(nil), up[:n]...)
			rotateHalf(gotLo, gotHi, fin, x[4000-n:4000])
			rotateHalfScalar(wantLo, wantHi, fin, x[4000-n:4000])
			for i := range gotLo {
				if !sameBits(gotLo[i], wantLo[i]) || !sameBits(gotHi[i], wantHi[i]) {
					t.Fatalf("rotateHalf n=%d off=%d: [%d] %v, %v, scalar %v, %v", n, off, i, gotLo[i], gotHi[i], wantLo[i], wantHi[i])
				}
			}
			got, want = append([]float32(nil), fin...), append([]float32(nil), fin...)
			scaleBy(got, 0.3)
			scaleByScalar(want, 0.3)
			for i := range got {
				if !sameBits(got[i], want[i]) {
					t.Fatalf("scaleBy n=%d: [%d] %v, scalar %v", n, i, got[i], want[i])
				}
			}
			got, want = append([]float32(nil), up[:n]...), append([]float32(nil), up[:n]...)
			add(got, in)
			addScalar(want, in)
			for i := range got {
				if !sameBits(got[i], want[i]) {
					t.Fatalf("add n=%d off=%d: [%d] %v, scalar %v", n, off, i, got[i], want[i])
				}
			}
			// scaledAdd: the product rounded, then the sum (a fused
			// multiply-add would differ in the last bit of some)
			got, want = append([]float32(nil), up[:n]...), append([]float32(nil), up[:n]...)
			scaledAdd(got, in, 0.37)
			scaledAddScalar(want, in, 0.37)
			for i := range got {
				if !sameBits(got[i], want[i]) || want[i] != up[i]+float32(in[i]*0.37) && want[i] == want[i] {
					t.Fatalf("scaledAdd n=%d off=%d: [%d] %v, scalar %v", n, off, i, got[i], want[i])
				}
			}
		}
	}
}

// TestSoftmaxRow checks probabilities against float64 and masking.
func TestSoftmaxRow(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{1, 5, 16, 37, 300} {
		s := make([]float32, n)
		for i := range s {
			s[i] = float32(r.NormFloat64() * 5)
		}
		allowed := func(j int) bool { return j%3 != 1 }
		want := make([]float64, n)
		maxv, sum := math.Inf(-1), 0.0
		for j, v := range s {
			if allowed(j) {
				maxv = math.Max(maxv, float64(v))
			}
		}
		for j, v := range s {
			if allowed(j) {
				want[j] = math.Exp(float64(v) - maxv)
				sum += want[j]
			}
		}
		SoftmaxRow(s, allowed)
		for j := range s {
			if d := math.Abs(float64(s[j]) - want[j]/sum); d > 1e-6 {
				t.Fatalf("n=%d: p[%d] = %v, want %v", n, j, s[j], want[j]/sum)
			}
		}
	}
	s := []float32{1, 2, 3}
	SoftmaxRow(s, func(int) bool { return false })
	for j, v := range s {
		if v != 0 {
			t.Errorf("fully masked row: p[%d] = %v, want 0", j, v)
		}
	}
	// A NaN score (a NaN weight in q or k) makes the row NaN, as PyTorch's
	// softmax does: one among finite scores, and the rows where every
	// visible score is NaN, which must not pass for a row that sees no key.
	nan := float32(math.NaN())
	for _, row := range [][]float32{{1, nan, 3}, {nan, nan, nan}, {nan, 2, nan}, make([]float32, 40)} {
		if len(row) == 40 {
			for j := range row {
				row[j] = nan
			}
		}
		in := slices.Clone(row)
		SoftmaxRow(row, func(j int) bool { return j != 1 || in[1] != in[1] })
		for j, v := range row {
			if v == v {
				t.Errorf("scores %v: p[%d] = %v, want NaN", in, j, v)
			}
		}
	}
}

// TestExp64: the float64 exponential of LogSumExp is within two ulps of
// math.Exp on [-708, 0] (and gives e^-708 below); the vector kernel gives
// the scalar one's bits over logits of any spread; LogSumExp matches the
// plain float64 formula and keeps NaN and infinities.
func TestExp64(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	for i := range 200000 {
		x := -708 * r.Float64()
		if i < 1000 {
			x = -float64(i) * 1e-9 // around 0, where math.Exp has its 1+x case
		}
		got, want := exp64(x), math.Exp(x)
		if d := math.Abs(got-want) / want; d > 0x1p-51 {
			t.Fatalf("exp64(%v) = %v, math.Exp %v (relative error %.3g)", x, got, want, d)
		}
	}
	if got, want := exp64(-1000), exp64(-708); got != want {
		t.Fatalf("exp64(-1000) = %v, want e^-708 = %v", got, want)
	}
	for _, spread := range []float64{1, 30, 1000} {
		x := make([]float32, 151936+7)
		for i := range x {
			x[i] = float32(spread * r.NormFloat64())
		}
		m := float64(maxOfScalar(x))
		if g, w := expSum64(x, m), expSum64Scalar(x, m); math.Float64bits(g) != math.Float64bits(w) {
			t.Fatalf("spread %v: expSum64 = %v, scalar %v", spread, g, w)
		}
		var s float64
		for _, v := range x {
			s += math.Exp(float64(v) - m)
		}
		if got, want := LogSumExp(x), m+math.Log(s); math.Abs(got-want) > 1e-12*math.Abs(want) {
			t.Fatalf("spread %v: LogSumExp = %v, plain formula %v", spread, got, want)
		}
	}
	nan := float32(math.NaN())
	inf := float32(math.Inf(1))
	for _, x := range [][]float32{{1, nan, 2}, {1, inf}, {float32(math.Inf(-1))}} {
		if got := LogSumExp(x); !math.IsNaN(got) && !math.IsInf(got, 0) {
			t.Fatalf("LogSumExp(%v) = %v, want NaN or Inf", x, got)
		}
	}
}

// TestLogSumExpNonFinite pins what the doc says of non-finite values: NaN
// for a NaN and for an infinite value alike (PyTorch gives ±∞ for the
// latter; a loss is non-finite either way).
func TestLogSumExpNonFinite(t *testing.T) {
	inf := float32(math.Inf(1))
	for _, x := range [][]float32{{inf, 0, 1}, {-inf, -inf}, {float32(math.NaN()), 1}, {0, inf, -inf}} {
		if got := LogSumExp(x); !math.IsNaN(got) {
			t.Errorf("LogSumExp(%v) = %v, want NaN", x, got)
		}
	}
}
