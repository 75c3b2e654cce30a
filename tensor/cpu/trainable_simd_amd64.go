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
	addScaled = func(g []float64, z []float32, w float64) {
		addScaledAVX512(g, z, math.Float64bits(w))
	}
	useSGDVector(sgdBlocksAVX512)
	useBF16Vector(perturbValuesBF16AVX512, perturbPairBF16AVX512, sgdBF16BlocksAVX512, stateBF16BlocksAVX512)
	stateValues = func(r *update.Rule, theta []float32, ghat []float64, m, v []float32) float64 {
		return stateValuesVector(r, theta, ghat, m, v, stateBlocksAVX512)
	}
}

// The loops below read and write through pointers (the GEMM kernels' load8
// and store8, the AVX2 file's base) as the AVX2 loops do, for the same
// reason: with archsimd's slice loads, bounds checks, index arithmetic and
// their spills took most of each iteration. Each reads only within the
// slices its caller resliced to length.

// load8d is the eight float64 at off bytes past p.
func load8d(p unsafe.Pointer, off uintptr) archsimd.Float64x8 {
	return archsimd.LoadFloat64x8((*[8]float64)(unsafe.Add(p, off)))
}

// wide8 is the eight float32 at off bytes past p, widened to float64.
func wide8(p unsafe.Pointer, off uintptr) archsimd.Float64x8 {
	return load8(p, off).ConvertToFloat64()
}

func perturbValuesAVX512(dst, w, z []float32, scaleBits uint64) {
	n := len(dst)
	w, z = w[:n], z[:n]
	s := archsimd.BroadcastUint64x8(scaleBits).AsFloat64x8()
	pd, pw, pz := base(dst), base(w), base(z)
	i := 0
	for ; i+16 <= n; i += 16 {
		o := uintptr(4 * i)
		store8(wide8(pw, o).Add(s.Mul(wide8(pz, o))).ConvertToFloat32(), pd, o)
		store8(wide8(pw, o+32).Add(s.Mul(wide8(pz, o+32))).ConvertToFloat32(), pd, o+32)
	}
	archsimd.ClearAVXUpperBits()
	perturbValuesScalar(dst[i:], w[i:], z[i:], math.Float64frombits(scaleBits))
}

// storePair16 writes the 16 weights w0, w1 plus and minus their scaled
// noise z0, z1, as float32, at o bytes past plus (pp) and minus (pm).
func storePair16(pp, pm unsafe.Pointer, o uintptr, w0, w1, z0, z1 archsimd.Float64x8) {
	store8(w0.Add(z0).ConvertToFloat32(), pp, o)
	store8(w1.Add(z1).ConvertToFloat32(), pp, o+32)
	store8(w0.Sub(z0).ConvertToFloat32(), pm, o)
	store8(w1.Sub(z1).ConvertToFloat32(), pm, o+32)
}

func perturbPairAVX512(plus, minus, w, z []float32, scaleBits uint64) {
	n := len(plus)
	w, z, minus = w[:n], z[:n], minus[:n]
	s := archsimd.BroadcastUint64x8(scaleBits).AsFloat64x8()
	pp, pm, pw, pz := base(plus), base(minus), base(w), base(z)
	i := 0
	for ; i+16 <= n; i += 16 {
		o := uintptr(4 * i)
		w0, w1 := wide8(pw, o), wide8(pw, o+32)
		z0, z1 := s.Mul(wide8(pz, o)), s.Mul(wide8(pz, o+32))
		storePair16(pp, pm, o, w0, w1, z0, z1)
	}
	archsimd.ClearAVXUpperBits()
	perturbPairScalar(plus[i:], minus[i:], w[i:], z[i:], math.Float64frombits(scaleBits))
}

func addScaledAVX512(g []float64, z []float32, wBits uint64) {
	n := len(g)
	z = z[:n]
	w := archsimd.BroadcastUint64x8(wBits).AsFloat64x8()
	pg, pz := base(g), base(z)
	i := 0
	for ; i+8 <= n; i += 8 {
		g8 := (*[8]float64)(unsafe.Add(pg, uintptr(8*i)))
		archsimd.LoadFloat64x8(g8).Add(w.Mul(wide8(pz, uintptr(4*i)))).Store(g8)
	}
	archsimd.ClearAVXUpperBits()
	addScaledScalar(g[i:], z[i:], math.Float64frombits(wBits))
}

// sgdBlocks is the vector loop of plain SGD on float32 weights
// (sgdBlocksAVX512, sgdBlocksAVX2): it moves theta by ĝ from ghat, or with
// ghat nil by w·z, in whole blocks of 16 weights from the start, writes the
// squared changes' partial sums into p (lane j: weights ≡ j mod 16) and
// returns the number of weights it moved.
type sgdBlocks func(p *[16]float64, theta []float32, ghat []float64, z []float32, wBits, lrBits, wdBits uint64) int

// useSGDVector installs sgdValues and sgdDirection as the vector loop
// blocks with the scalar code for the tail.
func useSGDVector(blocks sgdBlocks) {
	sgdValues = func(theta []float32, ghat []float64, lr, wd float64) float64 {
		var p [16]float64
		i := blocks(&p, theta, ghat, nil, 0, math.Float64bits(lr), math.Float64bits(wd))
		for ; i < len(theta); i++ {
			sgdElem(&p, theta, i, ghat[i], lr, wd)
		}
		return sumPartials(&p)
	}
	sgdDirection = func(theta, z []float32, w, lr, wd float64) float64 {
		var p [16]float64
		i := blocks(&p, theta, nil, z, math.Float64bits(w), math.Float64bits(lr), math.Float64bits(wd))
		for ; i < len(theta); i++ {
			sgdElem(&p, theta, i, 0+float64(w*float64(z[i])), lr, wd) // ĝ as on a cleared buffer
		}
		return sumPartials(&p)
	}
}

// sgdBlocksAVX512 is an sgdBlocks, eight weights a vector.
func sgdBlocksAVX512(p *[16]float64, theta []float32, ghat []float64, z []float32, wBits, lrBits, wdBits uint64) int {
	w := archsimd.BroadcastUint64x8(wBits).AsFloat64x8()
	lr := archsimd.BroadcastUint64x8(lrBits).AsFloat64x8()
	wd := archsimd.BroadcastUint64x8(wdBits).AsFloat64x8()
	var zero, a0, a1 archsimd.Float64x8
	n := len(theta) / 16 * 16
	pt := base(theta)
	if ghat != nil {
		pg := base(ghat[:n])
		for i := 0; i < n; i += 16 {
			o, og := uintptr(4*i), uintptr(8*i)
			a0 = a0.Add(sgdOctet(pt, o, load8d(pg, og), lr, wd))
			a1 = a1.Add(sgdOctet(pt, o+32, load8d(pg, og+64), lr, wd))
		}
	} else {
		pz := base(z[:n])
		for i := 0; i < n; i += 16 {
			o := uintptr(4 * i)
			// ĝ = 0 + w·z, as addScaled makes it on a cleared buffer (−0 becomes +0).
			a0 = a0.Add(sgdOctet(pt, o, zero.Add(w.Mul(wide8(pz, o))), lr, wd))
			a1 = a1.Add(sgdOctet(pt, o+32, zero.Add(w.Mul(wide8(pz, o+32))), lr, wd))
		}
	}
	a0.Store((*[8]float64)(p[:8]))
	a1.Store((*[8]float64)(p[8:]))
	archsimd.ClearAVXUpperBits()
	return n
}

// sgdOctet moves the eight weights at off bytes past t by ĝ g, as sgdElem
// does, and returns their squared changes.
func sgdOctet(t unsafe.Pointer, off uintptr, g, lr, wd archsimd.Float64x8) archsimd.Float64x8 {
	x := wide8(t, off)
	n := x.Sub(lr.Mul(g.Add(wd.Mul(x)))).ConvertToFloat32()
	store8(n, t, off)
	d := n.ConvertToFloat64().Sub(x)
	return d.Mul(d)
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
	n, pt, pg, pm, pv := stateBlocks(theta, ghat, m, v)
	var a0, a1 archsimd.Float64x8
	for i := 0; i < n; i += 16 {
		for h := range 2 {
			o := uintptr(4 * (i + 8*h))
			x, g := wide8(pt, o), load8d(pg, 2*o)
			var nx archsimd.Float64x8
			switch {
			case kind == update.SGD: // with momentum
				b := mu.Mul(wide8(pm, o)).Add(g.Add(wd.Mul(x)))
				store8(b.ConvertToFloat32(), pm, o)
				nx = x.Sub(lr.Mul(b))
			case kind == update.Adam:
				mh := g
				if pm != nil {
					mm := b1.Mul(wide8(pm, o)).Add(b1c.Mul(g))
					store8(mm.ConvertToFloat32(), pm, o)
					mh = mm.Div(c1)
				}
				vv := b2.Mul(wide8(pv, o)).Add(b2c.Mul(g).Mul(g))
				store8(vv.ConvertToFloat32(), pv, o)
				nx = x.Sub(lr.Mul(mh).Div(vv.Div(c2).Sqrt().Add(eps)))
			default: // R-AdaZO
				mm := b1.Mul(wide8(pm, o)).Add(b1c.Mul(g))
				vv := b2.Mul(wide8(pv, o)).Add(b2c.Mul(mm).Mul(mm))
				store8(mm.ConvertToFloat32(), pm, o)
				store8(vv.ConvertToFloat32(), pv, o)
				nx = x.Sub(lr.Mul(mm.Div(c1)).Div(vv.Div(c2).Sqrt().Add(eps)))
			}
			n32 := nx.ConvertToFloat32()
			d := n32.ConvertToFloat64().Sub(x)
			if h == 0 {
				a0 = a0.Add(d.Mul(d))
			} else {
				a1 = a1.Add(d.Mul(d))
			}
			store8(n32, pt, o)
		}
	}
	a0.Store((*[8]float64)(p[:8]))
	a1.Store((*[8]float64)(p[8:]))
	archsimd.ClearAVXUpperBits()
	return n
}

// wideBF16 is the 8 bfloat16 weights (bits) at off bytes past p as
// float64 (the GEMM kernels' loadBF16x8, widened again).
func wideBF16(p unsafe.Pointer, off uintptr) archsimd.Float64x8 {
	return loadBF16x8(p, off).ConvertToFloat64()
}

func perturbValuesBF16AVX512(dst []float32, w []uint16, z []float32, scaleBits uint64) {
	n := len(dst)
	w, z = w[:n], z[:n]
	s := archsimd.BroadcastUint64x8(scaleBits).AsFloat64x8()
	pd, pw, pz := base(dst), base(w), base(z)
	i := 0
	for ; i+16 <= n; i += 16 {
		o, ow := uintptr(4*i), uintptr(2*i)
		store8(wideBF16(pw, ow).Add(s.Mul(wide8(pz, o))).ConvertToFloat32(), pd, o)
		store8(wideBF16(pw, ow+16).Add(s.Mul(wide8(pz, o+32))).ConvertToFloat32(), pd, o+32)
	}
	archsimd.ClearAVXUpperBits()
	perturbValuesBF16Scalar(dst[i:], w[i:], z[i:], math.Float64frombits(scaleBits))
}

func perturbPairBF16AVX512(plus, minus []float32, w []uint16, z []float32, scaleBits uint64) {
	n := len(plus)
	w, z, minus = w[:n], z[:n], minus[:n]
	s := archsimd.BroadcastUint64x8(scaleBits).AsFloat64x8()
	pp, pm, pw, pz := base(plus), base(minus), base(w), base(z)
	i := 0
	for ; i+16 <= n; i += 16 {
		o, ow := uintptr(4*i), uintptr(2*i)
		w0, w1 := wideBF16(pw, ow), wideBF16(pw, ow+16)
		z0, z1 := s.Mul(wide8(pz, o)), s.Mul(wide8(pz, o+32))
		storePair16(pp, pm, o, w0, w1, z0, z1)
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
	n := len(theta) / 16 * 16
	pt, pr := base(theta), base(rnd[:n])
	pg, pz := sgdSource(n, ghat, z)
	var zero, a0, a1 archsimd.Float64x8
	i := 0
	for ; i < n; i += 16 {
		o := uintptr(4 * i) // bytes to the block's float32 (rnd); its ĝ at 2o, its weights at o/2
		var g0, g1 archsimd.Float64x8
		if pg != nil {
			g0, g1 = load8d(pg, 2*o), load8d(pg, 2*o+64)
		} else {
			g0, g1 = zero.Add(wv.Mul(wide8(pz, o))), zero.Add(wv.Mul(wide8(pz, o+32)))
		}
		x0, x1 := wideBF16(pt, o/2), wideBF16(pt, o/2+16)
		n0 := x0.Sub(lr.Mul(g0.Add(wd.Mul(x0)))).ConvertToFloat32()
		n1 := x1.Sub(lr.Mul(g1.Add(wd.Mul(x1)))).ConvertToFloat32()
		if n0.Equal(n0).And(n1.Equal(n1)).ToBits() != 0xFF {
			break
		}
		s0, s1 := storeBF16AVX512(pt, pr, o, n0, n1, x0, x1)
		a0, a1 = a0.Add(s0), a1.Add(s1)
	}
	a0.Store((*[8]float64)(p[:8]))
	a1.Store((*[8]float64)(p[8:]))
	archsimd.ClearAVXUpperBits()
	return i
}
