//go:build goexperiment.simd && amd64

package cpu

import (
	"math"

	"simd/archsimd"
)

// geluAVX512 is geluGo eight elements at a time: every range of erf's
// (gelu.go) computed on all eight lanes and each lane's kept, with the
// scalar code's operations in its order (a product rounded before it is
// added, IEEE division): the same bits. It does two to three times the
// scalar code's arithmetic (every range, not one) and seven divisions a
// vector, so it is 1.6-1.7× faster, not 8×.

func init() {
	if cpuAVX512 {
		geluBlock = geluAVX512
		geluC = newGeluConsts()
	}
}

// geluConsts holds erf's coefficients as vectors, each broadcast once (a
// broadcast in the loop cost more than the arithmetic).
type geluConsts struct {
	pp, qq, pa, qa, ra, sa, rb, sb []archsimd.Float64x8

	half, one, sqrt1_2, erx, efx, negC archsimd.Float64x8
	tiny, small, middle, split, six    archsimd.Float64x8 // erf's range edges
	signBit, hi32                      archsimd.Uint64x8
}

var geluC geluConsts

func newGeluConsts() geluConsts {
	v := func(c ...float64) []archsimd.Float64x8 {
		out := make([]archsimd.Float64x8, len(c))
		for i, x := range c {
			out[i] = f64x8(x)
		}
		return out
	}
	return geluConsts{
		pp: v(pp0, pp1, pp2, pp3, pp4), qq: v(1, qq1, qq2, qq3, qq4, qq5),
		pa: v(pa0, pa1, pa2, pa3, pa4, pa5, pa6), qa: v(1, qa1, qa2, qa3, qa4, qa5, qa6),
		ra: v(ra0, ra1, ra2, ra3, ra4, ra5, ra6, ra7), sa: v(1, sa1, sa2, sa3, sa4, sa5, sa6, sa7, sa8),
		rb: v(rb0, rb1, rb2, rb3, rb4, rb5, rb6), sb: v(1, sb1, sb2, sb3, sb4, sb5, sb6, sb7),

		half: f64x8(0.5), one: f64x8(1), sqrt1_2: f64x8(sqrt1_2), erx: f64x8(erx), efx: f64x8(efx),
		negC: f64x8(-0.5625), tiny: f64x8(erfTiny), small: f64x8(0.84375), middle: f64x8(1.25), split: f64x8(1 / 0.35),
		six: f64x8(6), signBit: archsimd.BroadcastUint64x8(1 << 63), hi32: archsimd.BroadcastUint64x8(^uint64(1<<32 - 1)),
	}
}

func geluAVX512(x []float32) {
	i := 0
	for ; i+8 <= len(x); i += 8 {
		v := archsimd.LoadFloat32x8Slice(x[i:]).ConvertToFloat64()
		e := erf8(v.Mul(geluC.sqrt1_2))
		geluC.half.Mul(v).Mul(geluC.one.Add(e)).ConvertToFloat32().StoreSlice(x[i:])
	}
	archsimd.ClearAVXUpperBits()
	geluGo(x[i:])
}

// f64x8 is c on eight lanes.
func f64x8(c float64) archsimd.Float64x8 { return bcast64(math.Float64bits(c)) }

// horner8 is c[0] + s·(c[1] + s·(… + s·c[n−1])), as the scalar code
// nests it, for n from 5 to 9 (written out: Go does not unroll the loop).
func horner8(s archsimd.Float64x8, c []archsimd.Float64x8) archsimd.Float64x8 {
	var p archsimd.Float64x8
	switch len(c) {
	case 9:
		p = c[7].Add(s.Mul(c[8]))
		p = c[6].Add(s.Mul(p))
		p = c[5].Add(s.Mul(p))
	case 8:
		p = c[6].Add(s.Mul(c[7]))
		p = c[5].Add(s.Mul(p))
	case 7:
		p = c[5].Add(s.Mul(c[6]))
	case 6:
		p = c[5]
	case 5:
		p = c[3].Add(s.Mul(c[4]))
		return c[0].Add(s.Mul(c[1].Add(s.Mul(c[2].Add(s.Mul(p))))))
	}
	p = c[4].Add(s.Mul(p))
	p = c[3].Add(s.Mul(p))
	return c[0].Add(s.Mul(c[1].Add(s.Mul(c[2].Add(s.Mul(p))))))
}

// erf8 is erf on eight lanes: every range's value (the tail's only where
// a lane is in it), each lane's kept.
func erf8(x archsimd.Float64x8) archsimd.Float64x8 {
	a := x.AsUint64x8().AndNot(geluC.signBit).AsFloat64x8()
	e := geluC.one
	if tail := a.Less(geluC.six).And(a.GreaterEqual(geluC.middle)); tail.ToBits() != 0 {
		w, m := erfTailArgs8(a)
		e = geluC.one.Sub(exp64x8(m).Mul(exp64x8(w)).Div(a)).Merge(e, tail)
	}
	e = erfBelow8(a).Merge(e, a.Less(geluC.middle))
	e = e.AsUint64x8().Or(x.AsUint64x8().And(geluC.signBit)).AsFloat64x8() // Copysign(e, x): e ≥ 0
	return x.Merge(e, x.IsNaN())
}

// erfBelow8 is erf(a) for a < 1.25 (a ≥ 0): the tiny, small and middle
// ranges of erf's.
func erfBelow8(a archsimd.Float64x8) archsimd.Float64x8 {
	z := a.Mul(a)
	small := a.Add(a.Mul(horner8(z, geluC.pp).Div(horner8(z, geluC.qq))))
	s := a.Sub(geluC.one)
	middle := geluC.erx.Add(horner8(s, geluC.pa).Div(horner8(s, geluC.qa)))
	e := small.Merge(middle, a.Less(geluC.small))
	return a.Add(geluC.efx.Mul(a)).Merge(e, a.Less(geluC.tiny))
}

// erfTailArgs8 gives the arguments of erfTail's two exponentials,
// (z−a)(z+a) + R/S and −0.5625 − z² (meaningful where 1.25 ≤ a < 6).
func erfTailArgs8(a archsimd.Float64x8) (w, m archsimd.Float64x8) {
	s := geluC.one.Div(a.Mul(a))
	below := a.Less(geluC.split)
	r := horner8(s, geluC.ra).Merge(horner8(s, geluC.rb), below)
	q := horner8(s, geluC.sa).Merge(horner8(s, geluC.sb), below)
	z := a.AsUint64x8().And(geluC.hi32).AsFloat64x8()
	return z.Sub(a).Mul(z.Add(a)).Add(r.Div(q)), geluC.negC.Sub(z.Mul(z))
}
