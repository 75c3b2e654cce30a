package noise

import "math"

// The normal transform: Box–Muller in float32.
//
// A Philox block's words (x0, x1) give elements 4b and 4b+1, (x2, x3) give
// 4b+2 and 4b+3:
//
//	r = √(−2·ln u),        u = (x0>>8 + 1)·2⁻²⁴ ∈ [2⁻²⁴, 1]
//	θ = q·π/2 + t·π/2,     q = x1>>30, t = ((x1>>6) mod 2²⁴)·2⁻²⁴ ∈ [0, 1)
//	z0 = r·cos θ,  z1 = r·sin θ
//
// ln, sin and cos are Cephes' single-precision polynomials (logf, sinf,
// cosf), evaluated in the order written below, every operation rounded to
// float32 (Go rounds each float32 operation; the explicit conversions of
// every product stop the compiler from fusing a multiply and an add, which
// it does on arm64 and with GOAMD64=v3 even across statements:
// TestNoFusedMultiplyAdd).
// sin and cos are only ever evaluated on [0, π/4]: t ≥ ½ is computed as the
// mirror angle (1−t)·π/2 with sin and cos swapped, and the quadrant q by
// swapping and negating. The square root is IEEE's, correctly rounded.
//
// Why float32 and not Go's float64 math.Log and math.Sincos: the same
// values on a GPU and in every vector width, and speed. Full-parameter ZO
// draws a normal for every weight of the model twice a step; in float64 the
// host drew about one normal per 9 ns per core on a Xeon (Cascade Lake),
// which alone would cost more than the forward passes of a step.
//
// The distribution: u takes 2²⁴ values, so |z| ≤ √(48·ln 2) ≈ 5.77 (the
// normal's mass beyond is 8e-9), and θ takes 2²⁶ equally spaced values.

// normals4 returns the normals of a block's four words.
func normals4(x [4]uint32) [4]float32 {
	c0, s0 := boxMuller(x[0], x[1])
	c1, s1 := boxMuller(x[2], x[3])
	return [4]float32{c0, s0, c1, s1}
}

// boxMuller returns r·cos θ and r·sin θ for the words (a, b).
func boxMuller(a, b uint32) (float32, float32) {
	u := float32(a>>8+1) * 0x1p-24 // exact: a 24-bit integer times a power of two
	r := sqrt32(-2 * log32(u))     // −2·x is exact
	sin, cos := sincos32(b)
	return float32(r * cos), float32(r * sin)
}

// sqrt32 is the correctly rounded float32 square root (the float64 root of
// a float32 rounds to the same float32: 53 ≥ 2·24+2 bits).
func sqrt32(x float32) float32 { return float32(math.Sqrt(float64(x))) }

// log32 is Cephes' logf for x in [2⁻²⁴, 1]: x = m·2^e with m in [½, 1),
// then m in [√½, √2) by moving a factor 2 into e, and
// ln x = f − f²/2 + f³·P(f) + e·ln 2 with f = m − 1, ln 2 in two parts.
func log32(x float32) float32 {
	bits := math.Float32bits(x)
	e := float32(int32(bits>>23) - 126)
	m := math.Float32frombits(bits&0x007FFFFF | 0x3F000000) // in [½, 1)
	var f float32
	if m < sqrtHalf {
		e--
		f = float32(m+m) - 1 // exact
	} else {
		f = m - 1 // exact
	}
	z := float32(f * f)
	p := float32(7.0376836292e-2)
	p = float32(p*f) - 1.1514610310e-1
	p = float32(p*f) + 1.1676998740e-1
	p = float32(p*f) - 1.2420140846e-1
	p = float32(p*f) + 1.4249322787e-1
	p = float32(p*f) - 1.6668057665e-1
	p = float32(p*f) + 2.0000714765e-1
	p = float32(p*f) - 2.4999993993e-1
	p = float32(p*f) + 3.3333331174e-1
	y := float32(float32(p*f) * z)
	y = y + float32(-2.12194440e-4*e)
	y = y + float32(-0.5*z)
	r := f + y
	return r + float32(0.693359375*e)
}

// sqrtHalf is √½ rounded to float32, Cephes' SQRTHF.
const sqrtHalf = float32(0.70710678118654752440)

// piOver2 is π/2 rounded to float32.
const piOver2 = float32(math.Pi / 2)

// sincos32 returns sin θ and cos θ of the angle the word b encodes.
func sincos32(b uint32) (sin, cos float32) {
	q := b >> 30
	f := b >> 6 & 0xFFFFFF
	var s, c float32
	if f < 1<<23 { // t < ½: the angle within the quadrant is t·π/2 ≤ π/4
		a := float32(float32(float32(f)*0x1p-24) * piOver2)
		s, c = sinPoly(a), cosPoly(a)
	} else { // the mirror angle (1−t)·π/2 < π/4, sin and cos swapped
		a := float32(float32(float32(1<<24-f)*0x1p-24) * piOver2) // 1−t is exact
		s, c = cosPoly(a), sinPoly(a)
	}
	switch q {
	case 0:
		return s, c
	case 1:
		return c, -s
	case 2:
		return -s, -c
	}
	return -c, s
}

// sinPoly is Cephes' sinf polynomial for a in [0, π/4].
func sinPoly(a float32) float32 {
	z := float32(a * a)
	p := float32(-1.9515295891e-4)
	p = float32(p*z) + 8.3321608736e-3
	p = float32(p*z) - 1.6666654611e-1
	return float32(float32(p*z)*a) + a
}

// cosPoly is Cephes' cosf polynomial for a in [0, π/4].
func cosPoly(a float32) float32 {
	z := float32(a * a)
	p := float32(2.443315711809948e-5)
	p = float32(p*z) - 1.388731625493765e-3
	p = float32(p*z) + 4.166664568298827e-2
	return float32(float32(float32(p*z)*z)-float32(0.5*z)) + 1
}
