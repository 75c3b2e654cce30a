package cpu

import (
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"
)

// fma32 is the float32 fused multiply-add x·y+z with one rounding, as the
// FMA instructions compute it. x·y is exact in float64 (48 significant
// bits); the float64 sum is rounded to odd (TwoSum gives its error), and
// rounding that to float32 is then correct: rounding the float64 result of
// math.FMA to float32 would round twice, which can be off by one ulp.
func fma32(x, y, z float32) float32 {
	p, c := float64(x)*float64(y), float64(z)
	s := p + c
	if math.IsInf(s, 0) || math.IsNaN(s) {
		return float32(s)
	}
	bb := s - p
	e := (p - (s - bb)) + (c - bb) // s + e = p + c exactly
	if e != 0 && math.Float64bits(s)&1 == 0 {
		s = math.Nextafter(s, math.Copysign(math.Inf(1), e))
	}
	return float32(s)
}

// kernFMARef is the Go reference of the FMA micro kernels (kernNEON, the
// AVX-512 and AVX2 kernels): every element of the 4×32 tile is a chain of
// fused multiply-adds from zero in k order, then C is added when acc.
func kernFMARef(a *float32, lda, rows int, b, c *float32, ldc, kc int, acc bool) {
	bs := unsafe.Slice(b, kc*nr)
	kernFMARefAt(a, lda, rows, func(k, j int) float32 { return bs[k*nr+j] }, c, ldc, kc, acc)
}

// kernFMARefBF16 is kernFMARef reading a bfloat16 panel.
func kernFMARefBF16(a *float32, lda, rows int, b *uint16, c *float32, ldc, kc int, acc bool) {
	bs := unsafe.Slice(b, kc*nr)
	kernFMARefAt(a, lda, rows, func(k, j int) float32 { return bf16ToF32(bs[k*nr+j]) }, c, ldc, kc, acc)
}

func kernFMARefAt(a *float32, lda, rows int, b func(k, j int) float32, c *float32, ldc, kc int, acc bool) {
	as := unsafe.Slice(a, (rows-1)*lda+kc)
	cs := unsafe.Slice(c, 3*ldc+nr)
	for i := range mr {
		ar := as[min(i, rows-1)*lda:]
		for j := range nr {
			var s float32
			for k := range kc {
				s = fma32(ar[k], b(k, j), s)
			}
			if acc {
				s += cs[i*ldc+j]
			}
			cs[i*ldc+j] = s
		}
	}
}

// checkKernMatches runs kern and ref on the same inputs for every row
// count, k counts that exercise unrolled loops and tails, with and without
// accumulation into C, and requires the same bits everywhere in C (so the
// kernel also writes nothing but its 4×32 tile).
func checkKernMatches(t *testing.T, kern, ref microKernel) {
	t.Helper()
	r := rand.New(rand.NewPCG(9, 10))
	const lda, ldc = 700, 40
	for _, kc := range []int{0, 1, 2, 3, 4, 5, 7, 8, 9, 17, 512} {
		a, b := randMat(r, 4*lda), randMat(r, max(kc, 1)*nr) // a whole panel row even at kc = 0: the kernels form pointers into it
		for rows := 1; rows <= mr; rows++ {
			for _, acc := range []bool{false, true} {
				start := randMat(r, 4*ldc+8)
				want, got := append([]float32(nil), start...), append([]float32(nil), start...)
				ref(&a[0], lda, rows, &b[0], &want[0], ldc, kc, acc)
				kern(&a[0], lda, rows, &b[0], &got[0], ldc, kc, acc)
				for i := range want {
					if math.Float32bits(want[i]) != math.Float32bits(got[i]) {
						t.Fatalf("kc=%d rows=%d acc=%v: c[%d] = %v, want %v", kc, rows, acc, i, got[i], want[i])
					}
				}
			}
		}
	}
}

// checkKernBF16Matches is checkKernMatches for bfloat16-panel kernels.
func checkKernBF16Matches(t *testing.T, kern, ref microKernelBF16) {
	t.Helper()
	r := rand.New(rand.NewPCG(11, 12))
	const lda, ldc = 700, 40
	for _, kc := range []int{0, 1, 3, 4, 5, 9, 512} {
		a := randMat(r, 4*lda)
		b := make([]uint16, max(kc, 1)*nr)
		for i := range b {
			b[i] = f32ToBF16(float32(r.NormFloat64()))
		}
		for rows := 1; rows <= mr; rows++ {
			for _, acc := range []bool{false, true} {
				start := randMat(r, 4*ldc+8)
				want, got := append([]float32(nil), start...), append([]float32(nil), start...)
				ref(&a[0], lda, rows, &b[0], &want[0], ldc, kc, acc)
				kern(&a[0], lda, rows, &b[0], &got[0], ldc, kc, acc)
				for i := range want {
					if math.Float32bits(want[i]) != math.Float32bits(got[i]) {
						t.Fatalf("kc=%d rows=%d acc=%v: c[%d] = %v, want %v", kc, rows, acc, i, got[i], want[i])
					}
				}
			}
		}
	}
}

// TestFMA32: single rounding where float32(math.FMA) would round twice.
func TestFMA32(t *testing.T) {
	// x·y + z = 1 + 2⁻²⁴ + 2⁻⁷⁰ rounds up to 1 + 2⁻²³ once; through
	// float64 it first becomes 1 + 2⁻²⁴, a float32 tie that rounds to 1.
	x := float32(1 + 1.0/(1<<23))
	y := float32(-(1.0 / (1 << 24)) * (1 - 1.0/(1<<23)))
	z := float32(1 + 1.0/(1<<23))
	if got, want := fma32(x, y, z), float32(1+1.0/(1<<23)); got != want {
		t.Errorf("fma32 = %v, want %v", got, want)
	}
	if d := float32(math.FMA(float64(x), float64(y), float64(z))); d != 1 {
		t.Errorf("float32(math.FMA) = %v, want 1: the case does not round twice", d)
	}
	r := rand.New(rand.NewPCG(1, 1))
	for range 10000 {
		x, y, z := float32(r.NormFloat64()), float32(r.NormFloat64()), float32(r.NormFloat64())
		if got, want := fma32(x, y, z), float32(math.FMA(float64(x), float64(y), float64(z))); got != want {
			// Possible only where float64 rounding lands on a float32 tie.
			t.Logf("fma32(%v, %v, %v) = %v, float32(math.FMA) = %v", x, y, z, got, want)
		}
	}
}
