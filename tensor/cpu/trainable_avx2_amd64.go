//go:build goexperiment.simd && amd64

package cpu

import (
	"math"
	"simd/archsimd"
	"unsafe"

	"github.com/meazo-go/meazo/update"
)

// AVX2 versions of trainable_ops.go's float32 loops, for the CPUs without
// AVX-512 (Zen 1 to 3, Intel's client cores before Ice Lake): four float64
// lanes instead of eight, the same operations per element (no fused
// multiply-add) and the same 16 partial sums, four vectors of four. The
// bfloat16 loops' AVX2 versions are in trainable_bf16_avx2_amd64.go.

func useTrainableAVX2() {
	perturbValues = func(dst, w, z []float32, scale float64) {
		perturbValuesAVX2(dst, w, z, math.Float64bits(scale))
	}
	perturbPair = func(plus, minus, w, z []float32, scale float64) {
		perturbPairAVX2(plus, minus, w, z, math.Float64bits(scale))
	}
	addScaled = func(g []float64, z []float32, w float64) {
		addScaledAVX2(g, z, math.Float64bits(w))
	}
	useSGDVector(sgdBlocksAVX2)
	stateValues = func(r *update.Rule, theta []float32, ghat []float64, m, v []float32) float64 {
		return stateValuesVector(r, theta, ghat, m, v, stateBlocksAVX2)
	}
	useBF16Vector(perturbValuesBF16AVX2, perturbPairBF16AVX2, sgdBF16BlocksAVX2, stateBF16BlocksAVX2)
}

// The loops below read and write through pointers (load4, store4) rather
// than archsimd's slice loads: with the slice forms, the compiler's bounds
// checks and index arithmetic, and the spills they cost, took most of each
// iteration (forming W ± εZ ran at the scalar loop's rate on a Zen 3,
// 1.5 ns a weight; 0.5-0.65 ns with pointers, the update's loop 1.25-2.1x as
// fast). Each reads only within the slices its caller resliced to length.

// load4 is the four float32 at off bytes past p.
func load4(p unsafe.Pointer, off uintptr) archsimd.Float32x4 {
	return archsimd.LoadFloat32x4((*[4]float32)(unsafe.Add(p, off)))
}

// store4 writes v at off bytes past p.
func store4(v archsimd.Float32x4, p unsafe.Pointer, off uintptr) {
	v.Store((*[4]float32)(unsafe.Add(p, off)))
}

// load4d is the four float64 at off bytes past p.
func load4d(p unsafe.Pointer, off uintptr) archsimd.Float64x4 {
	return archsimd.LoadFloat64x4((*[4]float64)(unsafe.Add(p, off)))
}

// base is the address of s's first element (s may be empty: it is then
// never read).
func base[T any](s []T) unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(s)) }

// sgdSource is where the vector loops of plain SGD read ĝ for n weights:
// ghat's address (pz nil), or with ghat nil that of the noise z whose w·z
// stands for it (pg nil), checked to hold n.
func sgdSource(n int, ghat []float64, z []float32) (pg, pz unsafe.Pointer) {
	if ghat != nil {
		return base(ghat[:n]), nil
	}
	return nil, base(z[:n])
}

// stateBlocks is what the vector loops of the rules with state read: the
// number of weights in whole blocks of 16, and the addresses of θ, ĝ, m and
// v (m or v nil where the rule keeps no such state), each checked to hold
// that many.
func stateBlocks[T any](theta []T, ghat []float64, m, v []float32) (n int, pt, pg, pm, pv unsafe.Pointer) {
	n = len(theta) / 16 * 16
	pt, pg = base(theta), base(ghat[:n])
	if m != nil {
		pm = base(m[:n])
	}
	if v != nil {
		pv = base(v[:n])
	}
	return n, pt, pg, pm, pv
}

func perturbValuesAVX2(dst, w, z []float32, scaleBits uint64) {
	n := len(dst)
	w, z = w[:n], z[:n]
	s := archsimd.BroadcastUint64x4(scaleBits).AsFloat64x4()
	pd, pw, pz := base(dst), base(w), base(z)
	i := 0
	for ; i+8 <= n; i += 8 {
		o := uintptr(4 * i)
		store4(load4(pw, o).ConvertToFloat64().Add(s.Mul(load4(pz, o).ConvertToFloat64())).ConvertToFloat32(), pd, o)
		store4(load4(pw, o+16).ConvertToFloat64().Add(s.Mul(load4(pz, o+16).ConvertToFloat64())).ConvertToFloat32(), pd, o+16)
	}
	archsimd.ClearAVXUpperBits()
	perturbValuesScalar(dst[i:], w[i:], z[i:], math.Float64frombits(scaleBits))
}

func perturbPairAVX2(plus, minus, w, z []float32, scaleBits uint64) {
	n := len(plus)
	w, z, minus = w[:n], z[:n], minus[:n]
	s := archsimd.BroadcastUint64x4(scaleBits).AsFloat64x4()
	pp, pm, pw, pz := base(plus), base(minus), base(w), base(z)
	i := 0
	for ; i+8 <= n; i += 8 {
		o := uintptr(4 * i)
		w0, w1 := load4(pw, o).ConvertToFloat64(), load4(pw, o+16).ConvertToFloat64()
		z0, z1 := s.Mul(load4(pz, o).ConvertToFloat64()), s.Mul(load4(pz, o+16).ConvertToFloat64())
		store4(w0.Add(z0).ConvertToFloat32(), pp, o)
		store4(w1.Add(z1).ConvertToFloat32(), pp, o+16)
		store4(w0.Sub(z0).ConvertToFloat32(), pm, o)
		store4(w1.Sub(z1).ConvertToFloat32(), pm, o+16)
	}
	archsimd.ClearAVXUpperBits()
	perturbPairScalar(plus[i:], minus[i:], w[i:], z[i:], math.Float64frombits(scaleBits))
}

func addScaledAVX2(g []float64, z []float32, wBits uint64) {
	n := len(g)
	z = z[:n]
	w := archsimd.BroadcastUint64x4(wBits).AsFloat64x4()
	pg, pz := base(g), base(z)
	i := 0
	for ; i+4 <= n; i += 4 {
		g4 := (*[4]float64)(unsafe.Add(pg, uintptr(8*i)))
		archsimd.LoadFloat64x4(g4).Add(w.Mul(load4(pz, uintptr(4*i)).ConvertToFloat64())).Store(g4)
	}
	archsimd.ClearAVXUpperBits()
	addScaledScalar(g[i:], z[i:], math.Float64frombits(wBits))
}

// sgdBlocksAVX2 is an sgdBlocks, four weights a vector.
func sgdBlocksAVX2(p *[16]float64, theta []float32, ghat []float64, z []float32, wBits, lrBits, wdBits uint64) int {
	w := archsimd.BroadcastUint64x4(wBits).AsFloat64x4()
	lr := archsimd.BroadcastUint64x4(lrBits).AsFloat64x4()
	wd := archsimd.BroadcastUint64x4(wdBits).AsFloat64x4()
	var zero, a0, a1, a2, a3 archsimd.Float64x4
	n := len(theta) / 16 * 16
	pt := base(theta)
	if ghat != nil {
		pg := base(ghat[:n])
		for i := 0; i < n; i += 16 {
			o, og := uintptr(4*i), uintptr(8*i)
			a0 = a0.Add(sgdQuad(pt, o, load4d(pg, og), lr, wd))
			a1 = a1.Add(sgdQuad(pt, o+16, load4d(pg, og+32), lr, wd))
			a2 = a2.Add(sgdQuad(pt, o+32, load4d(pg, og+64), lr, wd))
			a3 = a3.Add(sgdQuad(pt, o+48, load4d(pg, og+96), lr, wd))
		}
	} else {
		pz := base(z[:n])
		for i := 0; i < n; i += 16 {
			o := uintptr(4 * i)
			// ĝ = 0 + w·z, as addScaled makes it on a cleared buffer (−0 becomes +0).
			a0 = a0.Add(sgdQuad(pt, o, zero.Add(w.Mul(load4(pz, o).ConvertToFloat64())), lr, wd))
			a1 = a1.Add(sgdQuad(pt, o+16, zero.Add(w.Mul(load4(pz, o+16).ConvertToFloat64())), lr, wd))
			a2 = a2.Add(sgdQuad(pt, o+32, zero.Add(w.Mul(load4(pz, o+32).ConvertToFloat64())), lr, wd))
			a3 = a3.Add(sgdQuad(pt, o+48, zero.Add(w.Mul(load4(pz, o+48).ConvertToFloat64())), lr, wd))
		}
	}
	storePartialsAVX2(p, a0, a1, a2, a3)
	return n
}

// sgdQuad moves the four weights at off bytes past t by ĝ g, as sgdElem
// does, and returns their squared changes.
func sgdQuad(t unsafe.Pointer, off uintptr, g, lr, wd archsimd.Float64x4) archsimd.Float64x4 {
	x := load4(t, off).ConvertToFloat64()
	n := x.Sub(lr.Mul(g.Add(wd.Mul(x)))).ConvertToFloat32()
	store4(n, t, off)
	d := n.ConvertToFloat64().Sub(x)
	return d.Mul(d)
}

// stateBlocksAVX2 is stateBlocksAVX512 four weights at a time, through
// pointers as the loops above.
func stateBlocksAVX2(p *[16]float64, kind update.Kind, theta []float32, ghat []float64, m, v []float32, c *[10]uint64) int {
	bc := func(k int) archsimd.Float64x4 { return archsimd.BroadcastUint64x4(c[k]).AsFloat64x4() }
	lr, wd, mu, b1, b1c, b2, b2c, c1, c2, eps := bc(0), bc(1), bc(2), bc(3), bc(4), bc(5), bc(6), bc(7), bc(8), bc(9)
	n, pt, pg, pm, pv := stateBlocks(theta, ghat, m, v)
	var a0, a1, a2, a3 archsimd.Float64x4
	for i := 0; i < n; i += 16 {
		for q := range 4 {
			o := uintptr(4 * (i + 4*q))
			x, g := load4(pt, o).ConvertToFloat64(), load4d(pg, 2*o)
			var nx archsimd.Float64x4
			switch {
			case kind == update.SGD: // with momentum
				b := mu.Mul(load4(pm, o).ConvertToFloat64()).Add(g.Add(wd.Mul(x)))
				store4(b.ConvertToFloat32(), pm, o)
				nx = x.Sub(lr.Mul(b))
			case kind == update.Adam:
				mh := g
				if pm != nil {
					mm := b1.Mul(load4(pm, o).ConvertToFloat64()).Add(b1c.Mul(g))
					store4(mm.ConvertToFloat32(), pm, o)
					mh = mm.Div(c1)
				}
				vv := b2.Mul(load4(pv, o).ConvertToFloat64()).Add(b2c.Mul(g).Mul(g))
				store4(vv.ConvertToFloat32(), pv, o)
				nx = x.Sub(lr.Mul(mh).Div(vv.Div(c2).Sqrt().Add(eps)))
			default: // R-AdaZO
				mm := b1.Mul(load4(pm, o).ConvertToFloat64()).Add(b1c.Mul(g))
				vv := b2.Mul(load4(pv, o).ConvertToFloat64()).Add(b2c.Mul(mm).Mul(mm))
				store4(mm.ConvertToFloat32(), pm, o)
				store4(vv.ConvertToFloat32(), pv, o)
				nx = x.Sub(lr.Mul(mm.Div(c1)).Div(vv.Div(c2).Sqrt().Add(eps)))
			}
			n32 := nx.ConvertToFloat32()
			d := n32.ConvertToFloat64().Sub(x)
			switch q {
			case 0:
				a0 = a0.Add(d.Mul(d))
			case 1:
				a1 = a1.Add(d.Mul(d))
			case 2:
				a2 = a2.Add(d.Mul(d))
			default:
				a3 = a3.Add(d.Mul(d))
			}
			store4(n32, pt, o)
		}
	}
	storePartialsAVX2(p, a0, a1, a2, a3)
	return n
}
