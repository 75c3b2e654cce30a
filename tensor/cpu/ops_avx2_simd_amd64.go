//go:build goexperiment.simd && amd64

package cpu

import (
	"math"
	"simd/archsimd"
)

// AVX2 versions of the element-wise kernels a forward spends the most time
// in after the GEMM, for CPUs without AVX-512 (Zen 1 to 3, Intel before
// Skylake-SP and its client cores): SiLU·up, the softmax's exponentials,
// and RMSNorm's sum of squares and scaling. Before them these ran one
// element at a time there, about 8 % of a forward's CPU time on a Zen 3.
// Like the AVX-512 kernels (ops_simd_amd64.go, which says why: no fused
// multiply-adds, no legacy SSE, VZEROUPPER before the scalar tail) they
// perform the scalar code's float32 operations in its order, 8 lanes at a
// time, so the results are bit-identical to it.

func init() {
	if cpuAVX2 && !cpuAVX512 {
		opsPath = "avx2"
		siluMul = siluMulAVX2
		expSub = expSubAVX2
		sumSq = sumSqAVX2
		mulBoth = mulBothAVX2
	}
}

// f32c8 is c on 8 lanes, broadcast from its bits through an integer
// register (as f32c).
func f32c8(c float32) archsimd.Float32x8 {
	return archsimd.BroadcastUint32x8(math.Float32bits(c)).AsFloat32x8()
}

// exp8 is Exp on 8 lanes. AVX2 has no VSCALEFPS, so p·2^k multiplies by
// 2^k made from its exponent bits, as the scalar code does, and in two
// steps, p·2·2^127, where k is 128.
func exp8(x archsimd.Float32x8) archsimd.Float32x8 {
	bc := f32c8
	hi, lo := bc(88.72283), bc(-87.33654)
	xc := x.Min(hi).Max(lo) // NaN lanes are restored below
	k := xc.Mul(bc(1.44269504088896341)).Add(bc(0.5)).Floor()
	r := xc.Sub(k.Mul(bc(0.693359375))).Sub(k.Mul(bc(-2.12194440e-4)))
	p := bc(1.9875691500e-4)
	p = p.Mul(r).Add(bc(1.3981999507e-3))
	p = p.Mul(r).Add(bc(8.3334519073e-3))
	p = p.Mul(r).Add(bc(4.1665795894e-2))
	p = p.Mul(r).Add(bc(1.6666665459e-1))
	p = p.Mul(r).Add(bc(5.0000001201e-1))
	p = p.Mul(r).Mul(r).Add(r).Add(bc(1))
	top := bc(127)
	p = p.Add(p).Merge(p, k.Greater(top)) // p·2, exact, where k is 128
	pow := k.Min(top).ConvertToInt32().Add(archsimd.BroadcastInt32x8(127)).ShiftAllLeft(23).AsFloat32x8()
	e := p.Mul(pow)
	// a.Merge(b, m) is a where m, b elsewhere.
	e = bc(float32(math.Inf(1))).Merge(e, x.Greater(hi))
	e = bc(0).Merge(e, x.Less(lo))
	return x.Merge(e, x.IsNaN())
}

func siluMulAVX2(gate, up []float32) {
	up = up[:len(gate)]
	one, zero := f32c8(1), f32c8(0)
	i := 0
	for ; i+8 <= len(gate); i += 8 {
		g := archsimd.LoadFloat32x8Slice(gate[i:])
		u := archsimd.LoadFloat32x8Slice(up[i:])
		g.Div(one.Add(exp8(zero.Sub(g)))).Mul(u).StoreSlice(gate[i:])
	}
	archsimd.ClearAVXUpperBits()
	siluMulScalar(gate[i:], up[i:])
}

func expSubAVX2(x []float32, m float32) {
	i := expSubVec8(x, math.Float32bits(m))
	expSubScalar(x[i:], m)
}

// expSubVec8 does expSubAVX2's whole vectors and returns where it stopped
// (m as bits, the tail left to the caller: expSubVec says why).
//
//go:noinline
func expSubVec8(x []float32, mb uint32) int {
	mv := archsimd.BroadcastUint32x8(mb).AsFloat32x8()
	i := 0
	for ; i+8 <= len(x); i += 8 {
		exp8(archsimd.LoadFloat32x8Slice(x[i:]).Sub(mv)).StoreSlice(x[i:])
	}
	archsimd.ClearAVXUpperBits()
	return i
}

// sumSqAVX2 is sumSqScalar with partial sum j in lane j mod 4 of the
// (j / 4)th of four 4-lane float64 accumulators.
func sumSqAVX2(x []float32) float64 {
	var p [16]float64
	i := 0
	if len(x) >= 16 {
		var a [4]archsimd.Float64x4
		for ; i+16 <= len(x); i += 16 {
			for q := range a {
				v := archsimd.LoadFloat32x4Slice(x[i+4*q:]).ConvertToFloat64()
				a[q] = a[q].Add(v.Mul(v))
			}
		}
		for q := range a {
			a[q].StoreSlice(p[4*q:])
		}
		archsimd.ClearAVXUpperBits()
	}
	for ; i < len(x); i++ {
		p[i%16] += float64(x[i]) * float64(x[i])
	}
	return sumPartials(&p)
}

func mulBothAVX2(dst, w, x []float32, s float32) {
	i := mulBothVec8(dst, w, x, math.Float32bits(s))
	mulBothScalar(dst[i:], w[i:], x[i:], s)
}

// mulBothVec8 does mulBothAVX2's whole vectors and returns where it
// stopped (s as bits, as expSubVec8's m).
//
//go:noinline
func mulBothVec8(dst, w, x []float32, sb uint32) int {
	w, x = w[:len(dst)], x[:len(dst)]
	sv := archsimd.BroadcastUint32x8(sb).AsFloat32x8()
	i := 0
	for ; i+8 <= len(dst); i += 8 {
		wv := archsimd.LoadFloat32x8Slice(w[i:])
		wv.Mul(archsimd.LoadFloat32x8Slice(x[i:]).Mul(sv)).StoreSlice(dst[i:])
	}
	archsimd.ClearAVXUpperBits()
	return i
}
