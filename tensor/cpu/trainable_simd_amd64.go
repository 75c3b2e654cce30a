//go:build goexperiment.simd && amd64

package cpu

import (
	"math"
	"simd/archsimd"
	"unsafe"

	"github.com/meazo-go/meazo/update"
)

// AVX-512 versions of trainable_ops.go's loops: the same float64
// operations per element (no fused multiply-add), the same 16 partial sums.
// No legacy SSE among them (see ops_simd_amd64.go): the scale and rates
// reach the vector registers as bits through integer registers.

func init() { useTrainableVector(cpuAVX512, cpuAVX2) }

// useTrainableVector installs the widest vector loops the flags allow over
// the scalar ones (a loop with no version of that width stays scalar).
// Tests call it to run every path the CPU has.
func useTrainableVector(avx512, avx2 bool) {
	useTrainableScalar()
	switch {
	case avx512:
		useTrainableAVX512()
	case avx2:
		useTrainableAVX2()
	}
}

func useTrainableAVX512() {
	perturbValues = func(dst, w, z []float32, scale float64) {
		perturbValuesAVX512(dst, w, z, math.Float64bits(scale))
	}
	perturbPair = func(plus, minus, w, z []float32, scale float64) {
		perturbPairAVX512(plus, minus, w, z, math.Float64bits(scale))
	}
	addScaled = func(g []float64, z []float32, wd float64) {
		addScaledAVX512(g, z, math.Float64bits(wd))
	}
	sgdValues = func(theta []float32, ghat []float64, lr, wd float64) float64 {
		return sgdValuesAVX512(theta, ghat, nil, 0, math.Float64bits(lr), math.Float64bits(wd))
	}
	useBF16Vector(perturbValuesBF16AVX512, perturbPairBF16AVX512, sgdBF16BlocksAVX512, stateBF16BlocksAVX512)
	sgdDirection = func(theta, z []float32, w, lr, wd float64) float64 {
		return sgdValuesAVX512(theta, nil, z, math.Float64bits(w), math.Float64bits(lr), math.Float64bits(wd))
	}
	stateValues = func(r *update.Rule, theta []float32, ghat []float64, m, v []float32) float64 {
		return stateValuesVector(r, theta, ghat, m, v, stateBlocksAVX512)
	}
}

func perturbValuesAVX512(dst, w, z []float32, scaleBits uint64) {
	w, z = w[:len(dst)], z[:len(dst)]
	s := archsimd.BroadcastUint64x8(scaleBits).AsFloat64x8()
	i := 0
	for ; i+8 <= len(dst); i += 8 {
		wv := archsimd.LoadFloat32x8Slice(w[i:]).ConvertToFloat64()
		zv := archsimd.LoadFloat32x8Slice(z[i:]).ConvertToFloat64()
		wv.Add(s.Mul(zv)).ConvertToFloat32().StoreSlice(dst[i:])
	}
	archsimd.ClearAVXUpperBits()
	perturbValuesScalar(dst[i:], w[i:], z[i:], math.Float64frombits(scaleBits))
}

func perturbPairAVX512(plus, minus, w, z []float32, scaleBits uint64) {
	w, z, minus = w[:len(plus)], z[:len(plus)], minus[:len(plus)]
	s := archsimd.BroadcastUint64x8(scaleBits).AsFloat64x8()
	i := 0
	for ; i+8 <= len(plus); i += 8 {
		wv := archsimd.LoadFloat32x8Slice(w[i:]).ConvertToFloat64()
		sz := s.Mul(archsimd.LoadFloat32x8Slice(z[i:]).ConvertToFloat64())
		wv.Add(sz).ConvertToFloat32().StoreSlice(plus[i:])
		wv.Sub(sz).ConvertToFloat32().StoreSlice(minus[i:])
	}
	archsimd.ClearAVXUpperBits()
	perturbPairScalar(plus[i:], minus[i:], w[i:], z[i:], math.Float64frombits(scaleBits))
}

func addScaledAVX512(g []float64, z []float32, wdBits uint64) {
	z = z[:len(g)]
	wd := archsimd.BroadcastUint64x8(wdBits).AsFloat64x8()
	i := 0
	for ; i+8 <= len(g); i += 8 {
		zv := archsimd.LoadFloat32x8Slice(z[i:]).ConvertToFloat64()
		archsimd.LoadFloat64x8Slice(g[i:]).Add(wd.Mul(zv)).StoreSlice(g[i:])
	}
	archsimd.ClearAVXUpperBits()
	addScaledScalar(g[i:], z[i:], math.Float64frombits(wdBits))
}

// sgdValuesAVX512 is sgdValuesScalar (ghat) or, with ghat nil,
// sgdDirectionScalar (w·z), 16 weights at a time.
func sgdValuesAVX512(theta []float32, ghat []float64, z []float32, wBits, lrBits, wdBits uint64) float64 {
	if ghat != nil {
		ghat = ghat[:len(theta)]
	} else {
		z = z[:len(theta)]
	}
	var p [16]float64
	i := 0
	if len(theta) >= 16 {
		w := archsimd.BroadcastUint64x8(wBits).AsFloat64x8()
		lr := archsimd.BroadcastUint64x8(lrBits).AsFloat64x8()
		wd := archsimd.BroadcastUint64x8(wdBits).AsFloat64x8()
		var zero, a0, a1 archsimd.Float64x8
		for ; i+16 <= len(theta); i += 16 {
			var g0, g1 archsimd.Float64x8
			if ghat != nil {
				g0, g1 = archsimd.LoadFloat64x8Slice(ghat[i:]), archsimd.LoadFloat64x8Slice(ghat[i+8:])
			} else {
				g0 = zero.Add(w.Mul(archsimd.LoadFloat32x8Slice(z[i:]).ConvertToFloat64()))
				g1 = zero.Add(w.Mul(archsimd.LoadFloat32x8Slice(z[i+8:]).ConvertToFloat64()))
			}
			x0 := archsimd.LoadFloat32x8Slice(theta[i:]).ConvertToFloat64()
			x1 := archsimd.LoadFloat32x8Slice(theta[i+8:]).ConvertToFloat64()
			n0 := x0.Sub(lr.Mul(g0.Add(wd.Mul(x0)))).ConvertToFloat32()
			n1 := x1.Sub(lr.Mul(g1.Add(wd.Mul(x1)))).ConvertToFloat32()
			d0, d1 := n0.ConvertToFloat64().Sub(x0), n1.ConvertToFloat64().Sub(x1)
			a0, a1 = a0.Add(d0.Mul(d0)), a1.Add(d1.Mul(d1))
			n0.StoreSlice(theta[i:])
			n1.StoreSlice(theta[i+8:])
		}
		a0.StoreSlice(p[:8])
		a1.StoreSlice(p[8:])
		archsimd.ClearAVXUpperBits()
	}
	w, lr, wd := math.Float64frombits(wBits), math.Float64frombits(lrBits), math.Float64frombits(wdBits)
	for ; i < len(theta); i++ {
		if ghat != nil {
			sgdElem(&p, theta, i, ghat[i], lr, wd)
		} else {
			sgdElem(&p, theta, i, 0+float64(w*float64(z[i])), lr, wd) // ĝ as on a cleared buffer
		}
	}
	return sumPartials(&p)
}

// stateValuesVector is stateValuesScalar with whole blocks of 16 weights
// moved by a vector loop (stateBlocksAVX512, stateBlocksAVX2), the tail by
// the scalar code. ZO-Adam's divisions and square root cost the scalar code
// about 9.5 ns of a thread a weight on the newer Xeon; eight at a time, the
// update is bound by its memory pass (BenchmarkUpdateWeight/adam, 2 threads:
// 119 → 60 ms for 25 M weights).
func stateValuesVector(r *update.Rule, theta []float32, ghat []float64, m, v []float32,
	blocks func(p *[16]float64, kind update.Kind, theta []float32, ghat []float64, m, v []float32, c *[10]uint64) int) float64 {
	if r.Kind == update.SGD && m == nil { // no state: the blocks' SGD reads m
		return sgdValues(theta, ghat, r.LR, r.WeightDecay)
	}
	ghat = ghat[:len(theta)]
	if m != nil {
		m = m[:len(theta)]
	}
	if v != nil {
		v = v[:len(theta)]
	}
	bits := ruleBits(r)
	var p [16]float64
	i := blocks(&p, r.Kind, theta, ghat, m, v, &bits)
	for ; i < len(theta); i++ {
		stateElem(&p, r, theta, m, v, i, ghat[i])
	}
	return sumPartials(&p)
}

// stateBlocksAVX512 moves θ, m and v by the rule of kind (its constants'
// bits in c: η, λ, μ, β1, 1−β1, β2, 1−β2, C1, C2, eps), 16 weights at a
// time from the start while 16 are left, writes the squared changes'
// partial sums into p (lane j: weights ≡ j mod 16) and returns the number
// of weights it moved.
func stateBlocksAVX512(p *[16]float64, kind update.Kind, theta []float32, ghat []float64, m, v []float32, c *[10]uint64) int {
	bc := func(k int) archsimd.Float64x8 { return archsimd.BroadcastUint64x8(c[k]).AsFloat64x8() }
	lr, wd, mu, b1, b1c, b2, b2c, c1, c2, eps := bc(0), bc(1), bc(2), bc(3), bc(4), bc(5), bc(6), bc(7), bc(8), bc(9)
	load := func(s []float32, j int) archsimd.Float64x8 {
		return archsimd.LoadFloat32x8Slice(s[j:]).ConvertToFloat64()
	}
	var a0, a1 archsimd.Float64x8
	i := 0
	for ; i+16 <= len(theta); i += 16 {
		for h := range 2 {
			j := i + 8*h
			x, g := load(theta, j), archsimd.LoadFloat64x8Slice(ghat[j:])
			var nx archsimd.Float64x8
			switch {
			case kind == update.SGD: // with momentum
				b := mu.Mul(load(m, j)).Add(g.Add(wd.Mul(x)))
				b.ConvertToFloat32().StoreSlice(m[j:])
				nx = x.Sub(lr.Mul(b))
			case kind == update.Adam:
				mh := g
				if m != nil {
					mm := b1.Mul(load(m, j)).Add(b1c.Mul(g))
					mm.ConvertToFloat32().StoreSlice(m[j:])
					mh = mm.Div(c1)
				}
				vv := b2.Mul(load(v, j)).Add(b2c.Mul(g).Mul(g))
				vv.ConvertToFloat32().StoreSlice(v[j:])
				nx = x.Sub(lr.Mul(mh).Div(vv.Div(c2).Sqrt().Add(eps)))
			default: // R-AdaZO
				mm := b1.Mul(load(m, j)).Add(b1c.Mul(g))
				vv := b2.Mul(load(v, j)).Add(b2c.Mul(mm).Mul(mm))
				mm.ConvertToFloat32().StoreSlice(m[j:])
				vv.ConvertToFloat32().StoreSlice(v[j:])
				nx = x.Sub(lr.Mul(mm.Div(c1)).Div(vv.Div(c2).Sqrt().Add(eps)))
			}
			n32 := nx.ConvertToFloat32()
			d := n32.ConvertToFloat64().Sub(x)
			if h == 0 {
				a0 = a0.Add(d.Mul(d))
			} else {
				a1 = a1.Add(d.Mul(d))
			}
			n32.StoreSlice(theta[j:])
		}
	}
	a0.StoreSlice(p[:8])
	a1.StoreSlice(p[8:])
	archsimd.ClearAVXUpperBits()
	return i
}

// widenBF16 is the 8 bfloat16 weights (bits) at w as float64 (the GEMM
// kernels' loadBF16x8, widened again).
func widenBF16(w []uint16) archsimd.Float64x8 {
	return loadBF16x8(unsafe.Pointer(unsafe.SliceData(w[:8])), 0).ConvertToFloat64()
}

func perturbValuesBF16AVX512(dst []float32, w []uint16, z []float32, scaleBits uint64) {
	w, z = w[:len(dst)], z[:len(dst)]
	s := archsimd.BroadcastUint64x8(scaleBits).AsFloat64x8()
	i := 0
	for ; i+8 <= len(dst); i += 8 {
		zv := archsimd.LoadFloat32x8Slice(z[i:]).ConvertToFloat64()
		widenBF16(w[i:]).Add(s.Mul(zv)).ConvertToFloat32().StoreSlice(dst[i:])
	}
	archsimd.ClearAVXUpperBits()
	perturbValuesBF16Scalar(dst[i:], w[i:], z[i:], math.Float64frombits(scaleBits))
}

func perturbPairBF16AVX512(plus, minus []float32, w []uint16, z []float32, scaleBits uint64) {
	w, z, minus = w[:len(plus)], z[:len(plus)], minus[:len(plus)]
	s := archsimd.BroadcastUint64x8(scaleBits).AsFloat64x8()
	i := 0
	for ; i+8 <= len(plus); i += 8 {
		wv := widenBF16(w[i:])
		sz := s.Mul(archsimd.LoadFloat32x8Slice(z[i:]).ConvertToFloat64())
		wv.Add(sz).ConvertToFloat32().StoreSlice(plus[i:])
		wv.Sub(sz).ConvertToFloat32().StoreSlice(minus[i:])
	}
	archsimd.ClearAVXUpperBits()
	perturbPairBF16Scalar(plus[i:], minus[i:], w[i:], z[i:], math.Float64frombits(scaleBits))
}

// sgdBF16Blocks is the vector loop of sgdBF16Vector (sgdBF16BlocksAVX512,
// sgdBF16BlocksAVX2): it updates theta 16 weights at a time from its start
// (ĝ from ghat, or w·z with ghat nil), stops before a block where a new
// value is NaN or where fewer than 16 are left, writes the squared changes'
// partial sums into p (lane j: weights ≡ j mod 16) and returns the number
// of weights it updated.
type sgdBF16Blocks func(p *[16]float64, theta []uint16, ghat []float64, z []float32, rnd []uint32, wBits, lrBits, wdBits uint64) int

// sgdBF16Vector is sgdBF16Scalar (ghat) or, with ghat nil,
// sgdDirectionBF16Scalar (w·z): whole blocks of 16 by the vector loop
// blocks, a block where a new value is NaN (a diverged step) and the tail
// by the scalar code, whose rounding keeps NaN's bits. (It is scalar Go
// around the vector loop, which returns with the upper halves clean.)
func sgdBF16Vector(theta []uint16, ghat []float64, z []float32, rnd []uint32, w, lr, wd float64, blocks sgdBF16Blocks) float64 {
	rnd = rnd[:len(theta)]
	if ghat != nil {
		ghat = ghat[:len(theta)]
	} else {
		z = z[:len(theta)]
	}
	elem := func(p *[16]float64, i int) {
		if ghat != nil {
			sgdElemBF16(p, theta, rnd, i, ghat[i], lr, wd)
		} else {
			sgdElemBF16(p, theta, rnd, i, 0+float64(w*float64(z[i])), lr, wd) // ĝ as on a cleared buffer
		}
	}
	return bf16Vector(len(theta), func(q *[16]float64, i int) int {
		var zi []float32
		var gi []float64
		if ghat != nil {
			gi = ghat[i:]
		} else {
			zi = z[i:]
		}
		return blocks(q, theta[i:], gi, zi, rnd[i:], math.Float64bits(w), math.Float64bits(lr), math.Float64bits(wd))
	}, elem)
}

// bf16Vector runs an update of n bfloat16 weights: blocks (a vector loop
// from weight i that stops before a block of 16 whose new values include a
// NaN, or where fewer than 16 are left, and returns how many it moved, their
// squared changes' partial sums in q) as far as it goes, then each block it
// stopped before and the tail by elem (the scalar code, whose rounding
// keeps NaN's bits); it returns Σ Δθ².
func bf16Vector(n int, blocks func(q *[16]float64, i int) int, elem func(p *[16]float64, i int)) float64 {
	var p [16]float64
	i := 0
	for n-i >= 16 {
		var q [16]float64
		i += blocks(&q, i)
		for j := range p {
			p[j] += q[j]
		}
		if n-i >= 16 { // stopped before a block with a NaN
			for j := i; j < i+16; j++ {
				elem(&p, j)
			}
			i += 16
		}
	}
	for ; i < n; i++ {
		elem(&p, i)
	}
	return sumPartials(&p)
}

// sgdBF16BlocksAVX512 is an sgdBF16Blocks, eight weights a vector.
func sgdBF16BlocksAVX512(p *[16]float64, theta []uint16, ghat []float64, z []float32, rnd []uint32, wBits, lrBits, wdBits uint64) int {
	wv := archsimd.BroadcastUint64x8(wBits).AsFloat64x8()
	lr := archsimd.BroadcastUint64x8(lrBits).AsFloat64x8()
	wd := archsimd.BroadcastUint64x8(wdBits).AsFloat64x8()
	var zero, a0, a1 archsimd.Float64x8
	i := 0
	for ; i+16 <= len(theta); i += 16 {
		var g0, g1 archsimd.Float64x8
		if ghat != nil {
			g0, g1 = archsimd.LoadFloat64x8Slice(ghat[i:]), archsimd.LoadFloat64x8Slice(ghat[i+8:])
		} else {
			g0 = zero.Add(wv.Mul(archsimd.LoadFloat32x8Slice(z[i:]).ConvertToFloat64()))
			g1 = zero.Add(wv.Mul(archsimd.LoadFloat32x8Slice(z[i+8:]).ConvertToFloat64()))
		}
		x0, x1 := widenBF16(theta[i:]), widenBF16(theta[i+8:])
		n0 := x0.Sub(lr.Mul(g0.Add(wd.Mul(x0)))).ConvertToFloat32()
		n1 := x1.Sub(lr.Mul(g1.Add(wd.Mul(x1)))).ConvertToFloat32()
		if n0.Equal(n0).And(n1.Equal(n1)).ToBits() != 0xFF {
			break
		}
		s0, s1 := storeBF16AVX512(theta[i:], rnd[i:], n0, n1, x0, x1)
		a0, a1 = a0.Add(s0), a1.Add(s1)
	}
	a0.StoreSlice(p[:8])
	a1.StoreSlice(p[8:])
	archsimd.ClearAVXUpperBits()
	return i
}
