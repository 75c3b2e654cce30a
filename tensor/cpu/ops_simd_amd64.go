//go:build goexperiment.simd && amd64

package cpu

import (
	"math"
	"simd/archsimd"
)

// AVX-512 versions of the element-wise kernels in ops.go. They perform the
// same float32 operations in the same order as the scalar code (no fused
// multiply-adds), so a value's result does not depend on whether it falls in
// a vector lane or in the scalar tail.
//
// No legacy SSE among the vector code: on Intel cores a legacy (non-VEX)
// SSE instruction run while the vector registers' upper halves are dirty
// costs a microcode assist of hundreds of cycles, and the Go compiler emits
// them for float constants (MOVSS/MOVSD), zeroed arrays and shift counts
// (golang/go#80835). So constants are broadcast from their bits through an
// integer register (f32c, f64c), shifts take vector counts, and every kernel
// clears the upper halves (ClearAVXUpperBits, VZEROUPPER) before its scalar
// tail. TestKernelsHaveNoLegacySSE checks the machine code.

func init() {
	if cpuAVX512 {
		initExp64c()
		opsPath = "avx512"
		siluMul = siluMulAVX512
		expSub = expSubAVX512
		maxOf = maxOfAVX512
		scaleBy = scaleByAVX512
		scaledAdd = scaledAddAVX512
		add = addAVX512
		sumSq = sumSqAVX512
		sum64 = sum64AVX512
		expSum64 = expSum64AVX512
		mulBoth = mulBothAVX512
		rotateHalf = rotateHalfAVX512
	}
}

// f32c and f64c are c on every lane, broadcast from its bits through an
// integer register (BroadcastFloat32x16 loads c with a legacy MOVSS).
func f32c(c float32) archsimd.Float32x16 {
	return archsimd.BroadcastUint32x16(math.Float32bits(c)).AsFloat32x16()
}

func f64c(c float64) archsimd.Float64x8 {
	return archsimd.BroadcastUint64x8(math.Float64bits(c)).AsFloat64x8()
}

// exp16 is Exp on 16 lanes.
func exp16(x archsimd.Float32x16) archsimd.Float32x16 {
	bc := f32c
	hi, lo := bc(88.72283), bc(-87.33654)
	xc := x.Min(hi).Max(lo) // NaN lanes become lo here and are restored below
	k := xc.Mul(bc(1.44269504088896341)).Add(bc(0.5)).FloorScaled(0)
	r := xc.Sub(k.Mul(bc(0.693359375))).Sub(k.Mul(bc(-2.12194440e-4)))
	p := bc(1.9875691500e-4)
	p = p.Mul(r).Add(bc(1.3981999507e-3))
	p = p.Mul(r).Add(bc(8.3334519073e-3))
	p = p.Mul(r).Add(bc(4.1665795894e-2))
	p = p.Mul(r).Add(bc(1.6666665459e-1))
	p = p.Mul(r).Add(bc(5.0000001201e-1))
	p = p.Mul(r).Mul(r).Add(r).Add(bc(1))
	e := p.Scale(k) // p·2^k, exact as the scalar code's multiplication by 2^k
	// a.Merge(b, m) is a where m, b elsewhere.
	e = bc(float32(math.Inf(1))).Merge(e, x.Greater(hi))
	e = bc(0).Merge(e, x.Less(lo))
	return x.Merge(e, x.IsNaN()) // NaN stays NaN
}

func siluMulAVX512(gate, up []float32) {
	up = up[:len(gate)]
	one, zero := f32c(1), f32c(0)
	i := 0
	for ; i+16 <= len(gate); i += 16 {
		g := archsimd.LoadFloat32x16Slice(gate[i:])
		u := archsimd.LoadFloat32x16Slice(up[i:])
		g.Div(one.Add(exp16(zero.Sub(g)))).Mul(u).StoreSlice(gate[i:])
	}
	archsimd.ClearAVXUpperBits()
	siluMulScalar(gate[i:], up[i:])
}

func expSubAVX512(x []float32, m float32) {
	i := expSubVec(x, math.Float32bits(m))
	expSubScalar(x[i:], m)
}

// expSubVec does expSubAVX512's whole vectors and returns where it stopped.
// The scalar argument comes as bits and the scalar tail stays in the
// caller, so no float register is spilled or reloaded among the vector code
// (inlined, the compiler spills m just before VZEROUPPER).
//
//go:noinline
func expSubVec(x []float32, mb uint32) int {
	mv := archsimd.BroadcastUint32x16(mb).AsFloat32x16()
	i := 0
	for ; i+16 <= len(x); i += 16 {
		exp16(archsimd.LoadFloat32x16Slice(x[i:]).Sub(mv)).StoreSlice(x[i:])
	}
	archsimd.ClearAVXUpperBits()
	return i
}

func maxOfAVX512(x []float32) float32 {
	if len(x) < 16 {
		return maxOfScalar(x)
	}
	acc := archsimd.LoadFloat32x16Slice(x)
	i := 16
	for ; i+16 <= len(x); i += 16 {
		acc = acc.Max(archsimd.LoadFloat32x16Slice(x[i:]))
	}
	var lanes [16]float32
	acc.Store(&lanes)
	archsimd.ClearAVXUpperBits()
	return max(maxOfScalar(lanes[:]), maxOfScalar(x[i:]))
}

func scaleByAVX512(x []float32, s float32) {
	i := scaleByVec(x, math.Float32bits(s))
	scaleByScalar(x[i:], s)
}

// scaleByVec does scaleByAVX512's whole vectors (see expSubVec).
//
//go:noinline
func scaleByVec(x []float32, sb uint32) int {
	sv := archsimd.BroadcastUint32x16(sb).AsFloat32x16()
	i := 0
	for ; i+16 <= len(x); i += 16 {
		archsimd.LoadFloat32x16Slice(x[i:]).Mul(sv).StoreSlice(x[i:])
	}
	archsimd.ClearAVXUpperBits()
	return i
}

// scaledAddAVX512 is scaledAddScalar on 16 lanes: a multiply, then an add
// (not fused), as the scalar code rounds.
func scaledAddAVX512(dst, src []float32, s float32) {
	src = src[:len(dst)]
	i := scaledAddVec(dst, src, math.Float32bits(s))
	scaledAddScalar(dst[i:], src[i:], s)
}

// scaledAddVec does scaledAddAVX512's whole vectors (see expSubVec).
//
//go:noinline
func scaledAddVec(dst, src []float32, sb uint32) int {
	sv := archsimd.BroadcastUint32x16(sb).AsFloat32x16()
	i := 0
	for ; i+16 <= len(dst); i += 16 {
		x := archsimd.LoadFloat32x16Slice(src[i:]).Mul(sv)
		archsimd.LoadFloat32x16Slice(dst[i:]).Add(x).StoreSlice(dst[i:])
	}
	archsimd.ClearAVXUpperBits()
	return i
}

// addAVX512 is addScalar on 16 lanes.
func addAVX512(dst, src []float32) {
	src = src[:len(dst)]
	i := addVec(dst, src)
	addScalar(dst[i:], src[i:])
}

// addVec does addAVX512's whole vectors (see expSubVec).
//
//go:noinline
func addVec(dst, src []float32) int {
	i := 0
	for ; i+16 <= len(dst); i += 16 {
		archsimd.LoadFloat32x16Slice(dst[i:]).Add(archsimd.LoadFloat32x16Slice(src[i:])).StoreSlice(dst[i:])
	}
	archsimd.ClearAVXUpperBits()
	return i
}

// sumSqAVX512 is sumSqScalar with partial sum j in lane j of two 8-lane
// float64 accumulators.
func sumSqAVX512(x []float32) float64 {
	var p [16]float64
	i := 0
	if len(x) >= 16 {
		var a0, a1 archsimd.Float64x8
		for ; i+16 <= len(x); i += 16 {
			v0 := archsimd.LoadFloat32x8Slice(x[i:]).ConvertToFloat64()
			v1 := archsimd.LoadFloat32x8Slice(x[i+8:]).ConvertToFloat64()
			a0 = a0.Add(v0.Mul(v0))
			a1 = a1.Add(v1.Mul(v1))
		}
		a0.StoreSlice(p[:8])
		a1.StoreSlice(p[8:])
		archsimd.ClearAVXUpperBits()
	}
	for ; i < len(x); i++ {
		p[i%16] += float64(x[i]) * float64(x[i])
	}
	return sumPartials(&p)
}

// sum64AVX512 is sum64Scalar on vector lanes, as sumSqAVX512.
func sum64AVX512(x []float32) float64 {
	var p [16]float64
	i := 0
	if len(x) >= 16 {
		var a0, a1 archsimd.Float64x8
		for ; i+16 <= len(x); i += 16 {
			a0 = a0.Add(archsimd.LoadFloat32x8Slice(x[i:]).ConvertToFloat64())
			a1 = a1.Add(archsimd.LoadFloat32x8Slice(x[i+8:]).ConvertToFloat64())
		}
		a0.StoreSlice(p[:8])
		a1.StoreSlice(p[8:])
		archsimd.ClearAVXUpperBits()
	}
	for ; i < len(x); i++ {
		p[i%16] += float64(x[i])
	}
	return sumPartials(&p)
}

// exp64x8 is exp64 on 8 lanes: the same float64 operations in the same order.
func exp64x8(x archsimd.Float64x8) archsimd.Float64x8 {
	c := &exp64c
	x = x.Max(c.min)
	k := c.zero.Sub(c.half.Sub(x.Mul(c.log2e)).FloorScaled(0))
	hi := x.Sub(k.Mul(c.ln2Hi))
	lo := k.Mul(c.ln2Lo)
	r := hi.Sub(lo)
	t := r.Mul(r)
	q := t.Mul(c.p[4])
	q = t.Mul(c.p[3].Add(q))
	q = t.Mul(c.p[2].Add(q))
	q = t.Mul(c.p[1].Add(q))
	q = t.Mul(c.p[0].Add(q))
	cc := r.Sub(q)
	y := c.one.Sub(lo.Sub(r.Mul(cc).Div(c.two.Sub(cc))).Sub(hi))
	scale := k.ConvertToInt64().Add(c.bias).ShiftLeft(c.shift).AsFloat64x8()
	return y.Mul(scale)
}

// exp64c holds exp64x8's constants (exp64's), broadcast once in init where
// the CPU has AVX-512: broadcasts in the function cost more than its
// arithmetic (the GELU's erf calls it twice a vector).
var exp64c struct {
	min, zero, half, log2e, ln2Hi, ln2Lo, one, two archsimd.Float64x8
	p                                              [5]archsimd.Float64x8
	bias, shift                                    archsimd.Int64x8
}

func initExp64c() {
	c := &exp64c
	c.min, c.zero, c.half, c.one, c.two = f64c(-708), f64c(0), f64c(0.5), f64c(1), f64c(2)
	c.log2e, c.ln2Hi, c.ln2Lo = f64c(1.44269504088896338700e+00), f64c(6.93147180369123816490e-01), f64c(1.90821492927058770002e-10)
	for i, v := range []float64{1.66666666666666657415e-01, -2.77777777770155933842e-03, 6.61375632143793436117e-05,
		-1.65339022054652515390e-06, 4.13813679705723846039e-08} {
		c.p[i] = f64c(v)
	}
	c.bias, c.shift = archsimd.BroadcastInt64x8(1023), archsimd.BroadcastInt64x8(52)
}

// expSum64AVX512 is expSum64Scalar on vector lanes, as sum64AVX512.
func expSum64AVX512(x []float32, m float64) float64 {
	var p [16]float64
	i := expSum64Vec(x, math.Float64bits(m), &p)
	for ; i < len(x); i++ {
		p[i%16] += exp64(float64(x[i]) - m)
	}
	return sumPartials(&p)
}

// expSum64Vec adds expSum64AVX512's whole vectors into p and returns where
// it stopped (see expSubVec).
//
//go:noinline
func expSum64Vec(x []float32, mb uint64, p *[16]float64) int {
	i := 0
	if len(x) >= 16 {
		mv := archsimd.BroadcastUint64x8(mb).AsFloat64x8()
		var a0, a1 archsimd.Float64x8
		for ; i+16 <= len(x); i += 16 {
			a0 = a0.Add(exp64x8(archsimd.LoadFloat32x8Slice(x[i:]).ConvertToFloat64().Sub(mv)))
			a1 = a1.Add(exp64x8(archsimd.LoadFloat32x8Slice(x[i+8:]).ConvertToFloat64().Sub(mv)))
		}
		a0.StoreSlice(p[:8])
		a1.StoreSlice(p[8:])
		archsimd.ClearAVXUpperBits()
	}
	return i
}

func mulBothAVX512(dst, w, x []float32, s float32) {
	w, x = w[:len(dst)], x[:len(dst)]
	i := mulBothVec(dst, w, x, math.Float32bits(s))
	mulBothScalar(dst[i:], w[i:], x[i:], s)
}

// mulBothVec does mulBothAVX512's whole vectors (see expSubVec).
//
//go:noinline
func mulBothVec(dst, w, x []float32, sb uint32) int {
	w, x = w[:len(dst)], x[:len(dst)]
	sv := archsimd.BroadcastUint32x16(sb).AsFloat32x16()
	i := 0
	for ; i+16 <= len(dst); i += 16 {
		wv := archsimd.LoadFloat32x16Slice(w[i:])
		wv.Mul(archsimd.LoadFloat32x16Slice(x[i:]).Mul(sv)).StoreSlice(dst[i:])
	}
	archsimd.ClearAVXUpperBits()
	return i
}

func rotateHalfAVX512(lo, hi, cos, sin []float32) {
	hi, cos, sin = hi[:len(lo)], cos[:len(lo)], sin[:len(lo)]
	i := rotateHalfVec(lo, hi, cos, sin)
	rotateHalfScalar(lo[i:], hi[i:], cos[i:], sin[i:])
}

// rotateHalfVec does rotateHalfAVX512's whole vectors: the scalar code's
// products and sums, each rounded (no fused multiply-adds).
//
//go:noinline
func rotateHalfVec(lo, hi, cos, sin []float32) int {
	hi, cos, sin = hi[:len(lo)], cos[:len(lo)], sin[:len(lo)]
	i := 0
	for ; i+16 <= len(lo); i += 16 {
		a, b := archsimd.LoadFloat32x16Slice(lo[i:]), archsimd.LoadFloat32x16Slice(hi[i:])
		c, s := archsimd.LoadFloat32x16Slice(cos[i:]), archsimd.LoadFloat32x16Slice(sin[i:])
		a.Mul(c).Sub(b.Mul(s)).StoreSlice(lo[i:])
		b.Mul(c).Add(a.Mul(s)).StoreSlice(hi[i:])
	}
	archsimd.ClearAVXUpperBits()
	return i
}
