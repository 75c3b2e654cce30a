//go:build goexperiment.simd && amd64

package zo

import (
	"math"
	"simd/archsimd"
)

// Normals eight Philox blocks at a time with AVX-512. The scalar path spends
// its time in math.Log, math.Sincos and Philox, one value at a time; here each
// of them runs on eight float64 (or uint64) lanes, one lane per block.
//
// Bits. Every lane performs the float64 operations of the scalar path in the
// same order, with no fused multiply-add: Go's math.Log (the amd64 assembly
// archLog and log.go compute the same sequence), Go's math.Sincos (sincos.go,
// for arguments below 2π, which never need its large-argument reduction),
// the correctly rounded square root and the round-to-nearest float32
// conversion. So the vector path gives the scalar path's bits exactly, which
// TestFillAVX512MatchesScalar checks over many blocks, and
// TestLogSincosAVX512MatchMath at the ends of the unit interval.

// haveAVX512 reports whether normals32 may run (AVX-512 F, CD, BW, DQ, VL).
var haveAVX512 = archsimd.X86.AVX512()

// vecBlocks is the number of Philox blocks normals32 computes: 32 elements.
const vecBlocks = 8

// No legacy SSE. On Intel cores, a legacy (non-VEX) SSE instruction run
// while the upper halves of the vector registers hold AVX-512 data costs a
// microcode assist of hundreds of cycles, and the Go compiler emits such
// instructions for float64 constants and arguments (MOVSD), zeroed arrays
// (MOVUPS X15), scalar float stores (MOVSS) and shift counts (MOVQ to X);
// golang/go#80835. With them a ZO step's host work ran ten times slower on
// the Xeon of an H200 machine than on a Zen 4, which has no such assist
// (208 ns per parameter and step instead of 22; 15 on that Xeon now). So the
// code below builds every constant by integer broadcast (f64c), shifts by
// vectors, keeps no vector arrays, transposes in registers, passes the norm
// as bits, and clears the upper halves (VZEROUPPER) before it returns to
// scalar Go.
// TestVectorNoiseHasNoLegacySSE checks the machine code.

// f64c is c on eight lanes, broadcast from its bits through an integer
// register (BroadcastFloat64x8 loads c with a legacy MOVSD).
func f64c(c float64) archsimd.Float64x8 {
	return archsimd.BroadcastUint64x8(math.Float64bits(c)).AsFloat64x8()
}

// u64c and i64c are c on eight lanes.
func u64c(c uint64) archsimd.Uint64x8 { return archsimd.BroadcastUint64x8(c) }
func i64c(c int64) archsimd.Int64x8   { return archsimd.BroadcastInt64x8(c) }

// fillVector writes the len(dst)/32 groups of 32 elements starting at block
// b0 (elements 4·b0 …) of stream s: fillRange's interior. The float64 whose
// bits are normBits divides normals (1 but for Sphere noise).
func (s Stream) fillVector(dst []float32, b0 uint64, dist Dist, normBits uint64) {
	for g := 0; g+4*vecBlocks <= len(dst); g += 4 * vecBlocks {
		out := (*[4 * vecBlocks]float32)(dst[g : g+4*vecBlocks])
		b := b0 + uint64(g/4)
		switch dist {
		case Normal, Sphere:
			s.normals32(out, b, normBits)
		default:
			s.discrete32(out, b, dist == Ternary)
		}
	}
}

// normals32 writes elements 4·b0 … 4·b0+31 of the normal (or, with a norm
// other than 1, sphere) vector of s into dst, as fillRange does one block at
// a time.
func (s Stream) normals32(dst *[4 * vecBlocks]float32, b0 uint64, normBits uint64) {
	x0, x1, x2, x3 := s.philox8(b0)
	twoPi := f64c(2 * math.Pi)
	r0 := sqrtMinus2Log8(unit8(x0))
	s0, c0 := sincos8(twoPi.Mul(unit8(x1)))
	r1 := sqrtMinus2Log8(unit8(x2))
	s1, c1 := sincos8(twoPi.Mul(unit8(x3)))
	v0, v1, v2, v3 := r0.Mul(c0), r0.Mul(s0), r1.Mul(c1), r1.Mul(s1)
	if normBits != math.Float64bits(1) {
		norm := u64c(normBits).AsFloat64x8()
		v0, v1, v2, v3 = v0.Div(norm), v1.Div(norm), v2.Div(norm), v3.Div(norm)
	}
	interleave(dst, v0.ConvertToFloat32(), v1.ConvertToFloat32(), v2.ConvertToFloat32(), v3.ConvertToFloat32())
	archsimd.ClearAVXUpperBits()
}

// discrete32 writes elements 4·b0 … 4·b0+31 of the Rademacher (±1) or,
// with ternary, the ternary ({-1, 0, 1}) vector of s into dst.
func (s Stream) discrete32(dst *[4 * vecBlocks]float32, b0 uint64, ternary bool) {
	x0, x1, x2, x3 := s.philox8(b0)
	f := func(w archsimd.Uint64x8) archsimd.Float32x8 {
		var v archsimd.Int64x8
		if ternary {
			// x mod 3 − 1. The quotient is exact: x < 2³², so float64(x)/3
			// is within 2⁻²⁰ of x/3, whose fraction is 0, 1/3 or 2/3.
			q := w.ConvertToFloat64().Div(f64c(3)).TruncScaled(0).ConvertToInt64()
			v = w.AsInt64x8().Sub(q.Mul(i64c(3))).Sub(i64c(1))
		} else {
			// (x & 1)·2 − 1
			b := w.And(u64c(1)).AsInt64x8()
			v = b.Add(b).Sub(i64c(1))
		}
		return v.ConvertToFloat32()
	}
	interleave(dst, f(x0), f(x1), f(x2), f(x3))
	archsimd.ClearAVXUpperBits()
}

// interleaveIdx picks, from lanes 0-7 = v0, 8-15 = v1, 16-23 = v2 and
// 24-31 = v3, the order v0[i], v1[i], v2[i], v3[i] for i = 0…3 (first row)
// and i = 4…7 (second row).
var interleaveIdx = [2][16]uint32{
	{0, 8, 16, 24, 1, 9, 17, 25, 2, 10, 18, 26, 3, 11, 19, 27},
	{4, 12, 20, 28, 5, 13, 21, 29, 6, 14, 22, 30, 7, 15, 23, 31},
}

// interleave writes lane i of vm (block b0+i, element m) to dst[4i+m]: a
// 4×8 transpose in two two-table permutes.
func interleave(dst *[4 * vecBlocks]float32, v0, v1, v2, v3 archsimd.Float32x8) {
	var a, b archsimd.Float32x16
	a, b = a.SetLo(v0).SetHi(v1), b.SetLo(v2).SetHi(v3)
	a.ConcatPermute(b, archsimd.LoadUint32x16(&interleaveIdx[0])).Store((*[16]float32)(dst[:16]))
	a.ConcatPermute(b, archsimd.LoadUint32x16(&interleaveIdx[1])).Store((*[16]float32)(dst[16:]))
}

// philox8 is Philox4x32 of the counters of blocks b0 … b0+7 (see block), one
// block per lane; every lane holds a 32-bit word in a 64-bit element.
func (s Stream) philox8(b0 uint64) (c0, c1, c2, c3 archsimd.Uint64x8) {
	low, by32 := u64c(0xFFFFFFFF), u64c(32)
	b := u64c(b0).Add(archsimd.LoadUint64x8(&laneIndex))
	c0, c1 = b.And(low), b.ShiftRight(by32)
	c2, c3 = u64c(uint64(s.Step)), u64c(uint64(s.Dir))
	k0, k1 := uint32(s.Seed), uint32(s.Seed>>32)
	for range 10 {
		p0 := c0.Mul(u64c(0xD2511F53)) // exact: both factors are below 2³²
		p1 := c2.Mul(u64c(0xCD9E8D57))
		c0, c1, c2, c3 = p1.ShiftRight(by32).Xor(c1).Xor(u64c(uint64(k0))), p1.And(low),
			p0.ShiftRight(by32).Xor(c3).Xor(u64c(uint64(k1))), p0.And(low)
		k0 += 0x9E3779B9
		k1 += 0xBB67AE85
	}
	return c0, c1, c2, c3
}

// laneIndex is 0…7, the block offset of each lane.
var laneIndex = [8]uint64{0, 1, 2, 3, 4, 5, 6, 7}

// unit8 is unitInterval on eight lanes. (x + 0.5) / 2³² is computed as a
// product with 2⁻³², which is the same value: scaling by a power of two is
// exact for these normal numbers.
func unit8(x archsimd.Uint64x8) archsimd.Float64x8 {
	return x.ConvertToFloat64().Add(f64c(0.5)).Mul(f64c(1.0 / (1 << 32)))
}

// sqrtMinus2Log8 is math.Sqrt(-2 * math.Log(u)) for u in (0, 1): log.go's
// algorithm step by step (no special cases: u is a positive normal number).
func sqrtMinus2Log8(u archsimd.Float64x8) archsimd.Float64x8 {
	const (
		Ln2Hi = 6.93147180369123816490e-01
		Ln2Lo = 1.90821492927058770002e-10
		L1    = 6.666666666666735130e-01
		L2    = 3.999999999940941908e-01
		L3    = 2.857142874366239149e-01
		L4    = 2.222219843214978396e-01
		L5    = 1.818357216161805012e-01
		L6    = 1.531383769920937332e-01
		L7    = 1.479819860511658591e-01
	)
	bc := f64c
	// f1, ki := math.Frexp(u)
	bits := u.AsUint64x8()
	f1 := bits.And(u64c(0x000FFFFFFFFFFFFF)).Or(u64c(0x3FE0000000000000)).AsFloat64x8()
	k := bits.ShiftRight(u64c(52)).AsInt64x8().Sub(i64c(0x3FE)).ConvertToFloat64()
	// if f1 < Sqrt2/2 { f1 *= 2; ki-- } (archLog tests f1 <= Sqrt2/2; no
	// unit value has the mantissa of Sqrt2/2, so the two agree here)
	small := f1.LessEqual(bc(math.Sqrt2 / 2))
	f1 = f1.Mul(bc(2).Merge(bc(1), small))
	k = k.Sub(bc(1).Merge(bc(0), small))
	f := f1.Sub(bc(1))
	s := f.Div(bc(2).Add(f))
	s2 := s.Mul(s)
	s4 := s2.Mul(s2)
	t1 := s2.Mul(bc(L1).Add(s4.Mul(bc(L3).Add(s4.Mul(bc(L5).Add(s4.Mul(bc(L7))))))))
	t2 := s4.Mul(bc(L2).Add(s4.Mul(bc(L4).Add(s4.Mul(bc(L6))))))
	R := t1.Add(t2)
	hfsq := bc(0.5).Mul(f).Mul(f)
	log := k.Mul(bc(Ln2Hi)).Sub(hfsq.Sub(s.Mul(hfsq.Add(R)).Add(k.Mul(bc(Ln2Lo)))).Sub(f))
	return bc(-2).Mul(log).Sqrt()
}

// sincos8 is math.Sincos(x) for x in (0, 2π): sincos.go's algorithm step by
// step, with its branches as lane masks.
func sincos8(x archsimd.Float64x8) (sin, cos archsimd.Float64x8) {
	const (
		PI4A = 7.85398125648498535156e-1
		PI4B = 3.77489470793079817668e-8
		PI4C = 2.69515142907905952645e-15
	)
	bc, ibc := f64c, i64c
	// j := uint64(x * (4 / Pi)); y := float64(j); if j&1 == 1 { j++; y++ }; j &= 7
	y := x.Mul(bc(4 / math.Pi)).TruncScaled(0)
	j := y.ConvertToInt64()
	odd := j.And(ibc(1))
	j = j.Add(odd)
	y = y.Add(odd.ConvertToFloat64())
	j = j.And(ibc(7))
	z := x.Sub(y.Mul(bc(PI4A))).Sub(y.Mul(bc(PI4B))).Sub(y.Mul(bc(PI4C)))
	// if j > 3 { j -= 4; sinSign, cosSign = true, true }; if j > 1 { cosSign = !cosSign }
	// j is even here, so j > 1 means j == 2, where sin and cos swap.
	reflect := j.Greater(ibc(3))
	j = j.Sub(ibc(4).Merge(ibc(0), reflect))
	swap := j.Greater(ibc(1))
	sign := ibc(math.MinInt64)
	sinFlip := sign.Merge(ibc(0), reflect)
	cosFlip := sinFlip.Xor(sign.Merge(ibc(0), swap))

	zz := z.Mul(z)
	pc := bc(-1.13585365213876817300e-11).Mul(zz).Add(bc(2.08757008419747316778e-9))
	pc = pc.Mul(zz).Add(bc(-2.75573141792967388112e-7))
	pc = pc.Mul(zz).Add(bc(2.48015872888517045348e-5))
	pc = pc.Mul(zz).Add(bc(-1.38888888888730564116e-3))
	pc = pc.Mul(zz).Add(bc(4.16666666666665929218e-2))
	c := bc(1).Sub(bc(0.5).Mul(zz)).Add(zz.Mul(zz).Mul(pc))
	ps := bc(1.58962301576546568060e-10).Mul(zz).Add(bc(-2.50507477628578072866e-8))
	ps = ps.Mul(zz).Add(bc(2.75573136213857245213e-6))
	ps = ps.Mul(zz).Add(bc(-1.98412698295895385996e-4))
	ps = ps.Mul(zz).Add(bc(8.33333333332211858878e-3))
	ps = ps.Mul(zz).Add(bc(-1.66666666666666307295e-1))
	sn := z.Add(z.Mul(zz).Mul(ps))
	// if j == 1 || j == 2 { sin, cos = cos, sin }
	sin, cos = c.Merge(sn, swap), sn.Merge(c, swap)
	sin = sin.AsInt64x8().Xor(sinFlip).AsFloat64x8()
	cos = cos.AsInt64x8().Xor(cosFlip).AsFloat64x8()
	return sin, cos
}
