//go:build goexperiment.simd && amd64

package cpu

import (
	"math"
	"simd/archsimd"
	"unsafe"

	"github.com/meazo-go/meazo/update"
)

// AVX2 versions of trainable_ops.go's bfloat16 loops, for the CPUs without
// AVX-512: the AVX-512 loops' operations four float64 lanes at a time, with
// the same drivers around them (sgdBF16Vector, stateBF16Vector, which leave
// a block with a NaN and the tail to the scalar code). AVX2 has no
// narrowing move (TruncateToUint16's VPMOVDW is AVX-512's), so the rounded
// words are packed to bfloat16 by VPACKUSDW (SaturateToUint16Concat), which
// is exact: they are below 2¹⁶ once shifted. TestAVX2KernelsHaveNoAVX512
// reads the machine code for AVX-512 instructions.

// wideBF16AVX2 is the 8 bfloat16 weights (bits) at off bytes past p as
// float64, the first four and the last four (loadBF16x8, widened again a
// half at a time).
func wideBF16AVX2(p unsafe.Pointer, off uintptr) (lo, hi archsimd.Float64x4) {
	f := loadBF16x8(p, off)
	return f.GetLo().ConvertToFloat64(), f.GetHi().ConvertToFloat64()
}

func perturbValuesBF16AVX2(dst []float32, w []uint16, z []float32, scaleBits uint64) {
	n := len(dst)
	w, z = w[:n], z[:n]
	s := archsimd.BroadcastUint64x4(scaleBits).AsFloat64x4()
	pd, pw, pz := base(dst), base(w), base(z)
	i := 0
	for ; i+8 <= n; i += 8 { // through pointers, as trainable_avx2_amd64.go's loops
		o := uintptr(4 * i)
		lo, hi := wideBF16AVX2(pw, o/2)
		store4(lo.Add(s.Mul(load4(pz, o).ConvertToFloat64())).ConvertToFloat32(), pd, o)
		store4(hi.Add(s.Mul(load4(pz, o+16).ConvertToFloat64())).ConvertToFloat32(), pd, o+16)
	}
	archsimd.ClearAVXUpperBits()
	perturbValuesBF16Scalar(dst[i:], w[i:], z[i:], math.Float64frombits(scaleBits))
}

func perturbPairBF16AVX2(plus, minus []float32, w []uint16, z []float32, scaleBits uint64) {
	n := len(plus)
	w, z, minus = w[:n], z[:n], minus[:n]
	s := archsimd.BroadcastUint64x4(scaleBits).AsFloat64x4()
	pp, pm, pw, pz := base(plus), base(minus), base(w), base(z)
	i := 0
	for ; i+8 <= n; i += 8 {
		o := uintptr(4 * i)
		lo, hi := wideBF16AVX2(pw, o/2)
		sl := s.Mul(load4(pz, o).ConvertToFloat64())
		sh := s.Mul(load4(pz, o+16).ConvertToFloat64())
		store4(lo.Add(sl).ConvertToFloat32(), pp, o)
		store4(hi.Add(sh).ConvertToFloat32(), pp, o+16)
		store4(lo.Sub(sl).ConvertToFloat32(), pm, o)
		store4(hi.Sub(sh).ConvertToFloat32(), pm, o+16)
	}
	archsimd.ClearAVXUpperBits()
	perturbPairBF16Scalar(plus[i:], minus[i:], w[i:], z[i:], math.Float64frombits(scaleBits))
}

// sgdBF16BlocksAVX2 is an sgdBF16Blocks, four weights a vector.
func sgdBF16BlocksAVX2(p *[16]float64, theta []uint16, ghat []float64, z []float32, rnd []uint32, wBits, lrBits, wdBits uint64) int {
	wv := archsimd.BroadcastUint64x4(wBits).AsFloat64x4()
	lr := archsimd.BroadcastUint64x4(lrBits).AsFloat64x4()
	wd := archsimd.BroadcastUint64x4(wdBits).AsFloat64x4()
	n := len(theta) / 16 * 16
	pt, pr := base(theta), base(rnd[:n])
	pg, pz := sgdSource(n, ghat, z)
	// step is the new value of the four weights x at o bytes into the
	// float32 arrays, as float32.
	step := func(x archsimd.Float64x4, o uintptr) archsimd.Float32x4 {
		var g archsimd.Float64x4
		if pg != nil {
			g = load4d(pg, 2*o)
		} else {
			var zero archsimd.Float64x4
			g = zero.Add(wv.Mul(load4(pz, o).ConvertToFloat64()))
		}
		return x.Sub(lr.Mul(g.Add(wd.Mul(x)))).ConvertToFloat32()
	}
	var a0, a1, a2, a3 archsimd.Float64x4
	i := 0
	for ; i < n; i += 16 {
		o := uintptr(4 * i) // bytes to the block's float32 (z, rnd); its ĝ at 2o, its weights at o/2
		x0, x1 := wideBF16AVX2(pt, o/2)
		x2, x3 := wideBF16AVX2(pt, o/2+16)
		n0, n1, n2, n3 := step(x0, o), step(x1, o+16), step(x2, o+32), step(x3, o+48)
		if hasNaNAVX2(n0, n1, n2, n3) {
			break
		}
		s0, s1 := storeBF16AVX2(pt, pr, o, n0, n1, x0, x1)
		s2, s3 := storeBF16AVX2(pt, pr, o+32, n2, n3, x2, x3)
		a0, a1, a2, a3 = a0.Add(s0), a1.Add(s1), a2.Add(s2), a3.Add(s3)
	}
	storePartialsAVX2(p, a0, a1, a2, a3)
	return i
}

// stateBF16BlocksAVX2 is a stateBF16Blocks, four weights a vector.
func stateBF16BlocksAVX2(p *[16]float64, kind update.Kind, theta []uint16, ghat []float64, m, v []float32, rnd []uint32, c *[10]uint64) int {
	bc := func(k int) archsimd.Float64x4 { return archsimd.BroadcastUint64x4(c[k]).AsFloat64x4() }
	lr, wd, mu, b1, b1c, b2, b2c, c1, c2, eps := bc(0), bc(1), bc(2), bc(3), bc(4), bc(5), bc(6), bc(7), bc(8), bc(9)
	n, pt, pg, pm, pv := stateBlocks(theta, ghat, m, v)
	pr := base(rnd[:n])
	load := func(s unsafe.Pointer, o uintptr) archsimd.Float64x4 {
		if s == nil {
			return archsimd.Float64x4{}
		}
		return load4(s, o).ConvertToFloat64()
	}
	// step is update.Rule.Target on the four weights x at o bytes into the
	// float32 arrays: the new value as float32, m and v.
	step := func(x archsimd.Float64x4, o uintptr) (n archsimd.Float32x4, mm, vv archsimd.Float64x4) {
		g, mo, vo := load4d(pg, 2*o), load(pm, o), load(pv, o)
		var nx archsimd.Float64x4
		switch {
		case kind == update.SGD: // with momentum
			mm = mu.Mul(mo).Add(g.Add(wd.Mul(x)))
			nx = x.Sub(lr.Mul(mm))
		case kind == update.Adam:
			mh := g
			if pm != nil {
				mm = b1.Mul(mo).Add(b1c.Mul(g))
				mh = mm.Div(c1)
			}
			vv = b2.Mul(vo).Add(b2c.Mul(g).Mul(g))
			nx = x.Sub(lr.Mul(mh).Div(vv.Div(c2).Sqrt().Add(eps)))
		default: // R-AdaZO
			mm = b1.Mul(mo).Add(b1c.Mul(g))
			vv = b2.Mul(vo).Add(b2c.Mul(mm).Mul(mm))
			nx = x.Sub(lr.Mul(mm.Div(c1)).Div(vv.Div(c2).Sqrt().Add(eps)))
		}
		return nx.ConvertToFloat32(), mm, vv
	}
	// keep stores the state of the four weights at o bytes.
	keep := func(o uintptr, mm, vv archsimd.Float64x4) {
		if pm != nil {
			store4(mm.ConvertToFloat32(), pm, o)
		}
		if pv != nil {
			store4(vv.ConvertToFloat32(), pv, o)
		}
	}
	var a0, a1, a2, a3 archsimd.Float64x4
	i := 0
	for ; i < n; i += 16 {
		o := uintptr(4 * i) // bytes to the block's float32 (m, v, rnd); its ĝ at 2o, its weights at o/2
		x0, x1 := wideBF16AVX2(pt, o/2)
		x2, x3 := wideBF16AVX2(pt, o/2+16)
		n0, m0, v0 := step(x0, o)
		n1, m1, v1 := step(x1, o+16)
		n2, m2, v2 := step(x2, o+32)
		n3, m3, v3 := step(x3, o+48)
		if hasNaNAVX2(n0, n1, n2, n3) {
			break
		}
		keep(o, m0, v0)
		keep(o+16, m1, v1)
		keep(o+32, m2, v2)
		keep(o+48, m3, v3)
		s0, s1 := storeBF16AVX2(pt, pr, o, n0, n1, x0, x1)
		s2, s3 := storeBF16AVX2(pt, pr, o+32, n2, n3, x2, x3)
		a0, a1, a2, a3 = a0.Add(s0), a1.Add(s1), a2.Add(s2), a3.Add(s3)
	}
	storePartialsAVX2(p, a0, a1, a2, a3)
	return i
}

// hasNaNAVX2 reports whether a block's 16 new values hold a NaN.
func hasNaNAVX2(n0, n1, n2, n3 archsimd.Float32x4) bool {
	return n0.Equal(n0).And(n1.Equal(n1)).And(n2.Equal(n2)).And(n3.Equal(n3)).ToBits() != 0xF
}

// storeBF16AVX2 is storeBF16AVX512 on 8 new values (n0, n1: four each):
// it rounds them to bfloat16 stochastically as update.StochasticBF16 does,
// stores them at o/2 bytes past theta (their random words at o bytes past
// rnd) and returns their squared changes from the old values x0, x1. (No
// NaN among the new values.)
func storeBF16AVX2(theta, rnd unsafe.Pointer, o uintptr, n0, n1 archsimd.Float32x4, x0, x1 archsimd.Float64x4) (archsimd.Float64x4, archsimd.Float64x4) {
	low, sixteen := archsimd.BroadcastUint32x4(0xFFFF), archsimd.BroadcastUint32x4(16)
	r0 := archsimd.LoadUint32x4((*[4]uint32)(unsafe.Add(rnd, o)))
	r1 := archsimd.LoadUint32x4((*[4]uint32)(unsafe.Add(rnd, o+16)))
	b0 := n0.AsUint32x4().Add(r0.And(low)).ShiftRight(sixteen)
	b1 := n1.AsUint32x4().Add(r1.And(low)).ShiftRight(sixteen)
	b0.AsInt32x4().SaturateToUint16Concat(b1.AsInt32x4()).Store((*[8]uint16)(unsafe.Add(theta, o/2)))
	d0 := b0.ShiftAllLeft(16).AsFloat32x4().ConvertToFloat64().Sub(x0)
	d1 := b1.ShiftAllLeft(16).AsFloat32x4().ConvertToFloat64().Sub(x1)
	return d0.Mul(d0), d1.Mul(d1)
}

// storePartialsAVX2 writes the four accumulators of squared changes into
// p (a0: lanes 0–3, a3: 12–15) and clears the upper halves for the scalar
// code after it.
func storePartialsAVX2(p *[16]float64, a0, a1, a2, a3 archsimd.Float64x4) {
	a0.StoreSlice(p[0:4])
	a1.StoreSlice(p[4:8])
	a2.StoreSlice(p[8:12])
	a3.StoreSlice(p[12:16])
	archsimd.ClearAVXUpperBits()
}
