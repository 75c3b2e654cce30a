package cpu

import "math"

// The exact GELU (HF's "gelu", torch's erf GELU), x·½·(1 + erf(x/√2)),
// evaluated in float64 and rounded once to float32. Its erf is FreeBSD's
// s_erf.c (the algorithm and coefficients of Go's math.Erf; the notice
// below), with the two exponentials of its tail computed by exp64 (ops.go:
// the pure-Go algorithm of math.Exp) rather than by math.Exp itself, whose
// amd64 assembly uses fused multiply-adds where the CPU has them: here every
// product is rounded before it is added (the float64(...) conversions
// forbid the compiler to fuse), so that the AVX-512 version
// (gelu_simd_amd64.go), which computes every branch on eight lanes with
// the same operations, gives the same bits, on every CPU and architecture.
// It differs from math.Erf by at most an ulp of float64 where it differs
// at all, which the rounding to float32 almost never shows.
//
// ====================================================
// Copyright (C) 1993 by Sun Microsystems, Inc. All rights reserved.
//
// Developed at SunPro, a Sun Microsystems, Inc. business.
// Permission to use, copy, modify, and distribute this
// software is freely granted, provided that this notice
// is preserved.
// ====================================================

// sqrt1_2 is 1/√2 rounded to float64 (C's M_SQRT1_2, which torch's GELU
// and the CUDA kernel multiply by).
const sqrt1_2 = 0.70710678118654752440084436210484903928483593768847

// The coefficients of s_erf.c, by range of |x|: pp/qq below 0.84375, pa/qa
// up to 1.25, ra/sa up to 1/0.35, rb/sb up to 6 (above, erf is ±1).
const (
	erx = 8.45062911510467529297e-01
	efx = 1.28379167095512586316e-01

	pp0, pp1, pp2, pp3, pp4 = 1.28379167095512558561e-01, -3.25042107247001499370e-01, -2.84817495755985104766e-02,
		-5.77027029648944159157e-03, -2.37630166566501626084e-05
	qq1, qq2, qq3, qq4, qq5 = 3.97917223959155352819e-01, 6.50222499887672944485e-02, 5.08130628187576562776e-03,
		1.32494738004321644526e-04, -3.96022827877536812320e-06

	pa0, pa1, pa2, pa3, pa4, pa5, pa6 = -2.36211856075265944077e-03, 4.14856118683748331666e-01,
		-3.72207876035701323847e-01, 3.18346619901161753674e-01, -1.10894694282396677476e-01,
		3.54783043256182359371e-02, -2.16637559486879084300e-03
	qa1, qa2, qa3, qa4, qa5, qa6 = 1.06420880400844228286e-01, 5.40397917702171048937e-01,
		7.18286544141962662868e-02, 1.26171219808761642112e-01, 1.36370839120290507362e-02,
		1.19844998467991074170e-02

	ra0, ra1, ra2, ra3, ra4, ra5, ra6, ra7 = -9.86494403484714822705e-03, -6.93858572707181764372e-01,
		-1.05586262253232909814e+01, -6.23753324503260060396e+01, -1.62396669462573470355e+02,
		-1.84605092906711035994e+02, -8.12874355063065934246e+01, -9.81432934416914548592e+00
	sa1, sa2, sa3, sa4, sa5, sa6, sa7, sa8 = 1.96512716674392571292e+01, 1.37657754143519042600e+02,
		4.34565877475229228821e+02, 6.45387271733267880336e+02, 4.29008140027567833386e+02,
		1.08635005541779435134e+02, 6.57024977031928170135e+00, -6.04244152148580987438e-02

	rb0, rb1, rb2, rb3, rb4, rb5, rb6 = -9.86494292470009928597e-03, -7.99283237680523006574e-01,
		-1.77579549177547519889e+01, -1.60636384855821916062e+02, -6.37566443368389627722e+02,
		-1.02509513161107724954e+03, -4.83519191608651397019e+02
	sb1, sb2, sb3, sb4, sb5, sb6, sb7 = 3.03380607434824582924e+01, 3.25792512996573918826e+02,
		1.53672958608443695994e+03, 3.19985821950859553908e+03, 2.55305040643316442583e+03,
		4.74528541206955367215e+02, -2.24409524465858183362e+01

	erfTiny = 1.0 / (1 << 28) // below: erf(x) = x + efx·x
)

// geluScalar is the exact GELU of x.
func geluScalar(x float32) float32 {
	v := float64(x)
	return float32(float64(0.5*v) * (1 + erf(float64(v*sqrt1_2))))
}

// GELU applies geluScalar to every element of x (geluBlock: eight at a
// time where the CPU has AVX-512).
func GELU(wk Workers, x []float32) {
	const chunk = 1 << 14
	wk.For((len(x)+chunk-1)/chunk, func(lo, hi int) {
		geluBlock(x[lo*chunk : min(hi*chunk, len(x))])
	})
}

// geluBlock is GELU on one worker's share.
var geluBlock = geluGo

func geluGo(x []float32) {
	for i, v := range x {
		x[i] = geluScalar(v)
	}
}

// erf is s_erf.c's erf(x) with exp64's exponentials (ops.go).
func erf(x float64) float64 {
	switch {
	case math.IsNaN(x):
		return x
	case math.IsInf(x, 1):
		return 1
	case math.IsInf(x, -1):
		return -1
	}
	a := math.Abs(x)
	var e float64
	switch {
	case a < erfTiny:
		e = a + float64(efx*a)
	case a < 0.84375:
		e = erfSmall(a)
	case a < 1.25:
		e = erfMiddle(a)
	case a < 6:
		e = erfTail(a)
	default:
		e = 1
	}
	return math.Copysign(e, x) // erf is odd: erf(−0) = −0, as math.Erf's
}

// erfSmall is erf(a) for 2⁻²⁸ ≤ a < 0.84375: a + a·P(a²)/Q(a²).
func erfSmall(a float64) float64 {
	z := float64(a * a)
	r := pp0 + float64(z*(pp1+float64(z*(pp2+float64(z*(pp3+float64(z*pp4)))))))
	s := 1 + float64(z*(qq1+float64(z*(qq2+float64(z*(qq3+float64(z*(qq4+float64(z*qq5)))))))))
	return a + float64(a*(r/s))
}

// erfMiddle is erf(a) for 0.84375 ≤ a < 1.25: erx + P(a−1)/Q(a−1).
func erfMiddle(a float64) float64 {
	s := a - 1
	p := pa0 + float64(s*(pa1+float64(s*(pa2+float64(s*(pa3+float64(s*(pa4+float64(s*(pa5+float64(s*pa6)))))))))))
	q := 1 + float64(s*(qa1+float64(s*(qa2+float64(s*(qa3+float64(s*(qa4+float64(s*(qa5+float64(s*qa6)))))))))))
	return erx + p/q
}

// erfTail is erf(a) for 1.25 ≤ a < 6: 1 − exp(−z² − 0.5625)·exp((z−a)(z+a) + R/S)/a,
// z being a with its low 32 bits cleared (so that z² is exact).
func erfTail(a float64) float64 {
	s := 1 / float64(a*a)
	var r, q float64
	if a < 1/0.35 {
		r = ra0 + float64(s*(ra1+float64(s*(ra2+float64(s*(ra3+float64(s*(ra4+float64(s*(ra5+float64(s*(ra6+float64(s*ra7)))))))))))))
		q = 1 + float64(s*(sa1+float64(s*(sa2+float64(s*(sa3+float64(s*(sa4+float64(s*(sa5+float64(s*(sa6+float64(s*(sa7+float64(s*sa8)))))))))))))))
	} else {
		r = rb0 + float64(s*(rb1+float64(s*(rb2+float64(s*(rb3+float64(s*(rb4+float64(s*(rb5+float64(s*rb6)))))))))))
		q = 1 + float64(s*(sb1+float64(s*(sb2+float64(s*(sb3+float64(s*(sb4+float64(s*(sb5+float64(s*(sb6+float64(s*sb7)))))))))))))
	}
	z := math.Float64frombits(math.Float64bits(a) &^ (1<<32 - 1))
	u := float64(exp64(-0.5625-float64(z*z)) * exp64(float64((z-a)*(z+a))+r/q))
	return 1 - u/a
}
