//go:build goexperiment.simd && amd64

package cpu

import (
	"math"
	"simd/archsimd"

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
	addScaled = func(g []float64, z []float32, wd float64) {
		addScaledAVX2(g, z, math.Float64bits(wd))
	}
	sgdValues = func(theta []float32, ghat []float64, lr, wd float64) float64 {
		var p [16]float64
		i := sgdBlocksAVX2(&p, theta, ghat, nil, 0, math.Float64bits(lr), math.Float64bits(wd))
		for ; i < len(theta); i++ {
			sgdElem(&p, theta, i, ghat[i], lr, wd)
		}
		return sumPartials(&p)
	}
	sgdDirection = func(theta, z []float32, w, lr, wd float64) float64 {
		var p [16]float64
		i := sgdBlocksAVX2(&p, theta, nil, z, math.Float64bits(w), math.Float64bits(lr), math.Float64bits(wd))
		for ; i < len(theta); i++ {
			sgdElem(&p, theta, i, 0+float64(w*float64(z[i])), lr, wd) // ĝ as on a cleared buffer
		}
		return sumPartials(&p)
	}
	stateValues = func(r *update.Rule, theta []float32, ghat []float64, m, v []float32) float64 {
		return stateValuesVector(r, theta, ghat, m, v, stateBlocksAVX2)
	}
	useBF16Vector(perturbValuesBF16AVX2, perturbPairBF16AVX2, sgdBF16BlocksAVX2, stateBF16BlocksAVX2)
}

func perturbValuesAVX2(dst, w, z []float32, scaleBits uint64) {
	w, z = w[:len(dst)], z[:len(dst)]
	s := archsimd.BroadcastUint64x4(scaleBits).AsFloat64x4()
	i := 0
	for ; i+4 <= len(dst); i += 4 {
		wv := archsimd.LoadFloat32x4Slice(w[i:]).ConvertToFloat64()
		zv := archsimd.LoadFloat32x4Slice(z[i:]).ConvertToFloat64()
		wv.Add(s.Mul(zv)).ConvertToFloat32().StoreSlice(dst[i:])
	}
	archsimd.ClearAVXUpperBits()
	perturbValuesScalar(dst[i:], w[i:], z[i:], math.Float64frombits(scaleBits))
}

func perturbPairAVX2(plus, minus, w, z []float32, scaleBits uint64) {
	w, z, minus = w[:len(plus)], z[:len(plus)], minus[:len(plus)]
	s := archsimd.BroadcastUint64x4(scaleBits).AsFloat64x4()
	i := 0
	for ; i+4 <= len(plus); i += 4 {
		wv := archsimd.LoadFloat32x4Slice(w[i:]).ConvertToFloat64()
		sz := s.Mul(archsimd.LoadFloat32x4Slice(z[i:]).ConvertToFloat64())
		wv.Add(sz).ConvertToFloat32().StoreSlice(plus[i:])
		wv.Sub(sz).ConvertToFloat32().StoreSlice(minus[i:])
	}
	archsimd.ClearAVXUpperBits()
	perturbPairScalar(plus[i:], minus[i:], w[i:], z[i:], math.Float64frombits(scaleBits))
}

func addScaledAVX2(g []float64, z []float32, wdBits uint64) {
	z = z[:len(g)]
	wd := archsimd.BroadcastUint64x4(wdBits).AsFloat64x4()
	i := 0
	for ; i+4 <= len(g); i += 4 {
		zv := archsimd.LoadFloat32x4Slice(z[i:]).ConvertToFloat64()
		archsimd.LoadFloat64x4Slice(g[i:]).Add(wd.Mul(zv)).StoreSlice(g[i:])
	}
	archsimd.ClearAVXUpperBits()
	addScaledScalar(g[i:], z[i:], math.Float64frombits(wdBits))
}

// sgdBlocksAVX2 is sgdValuesScalar (ghat) or, with ghat nil,
// sgdDirectionScalar (w·z) on whole blocks of 16 weights from the start:
// it writes the squared changes' partial sums into p (lane j: weights ≡ j
// mod 16) and returns the number of weights it moved.
func sgdBlocksAVX2(p *[16]float64, theta []float32, ghat []float64, z []float32, wBits, lrBits, wdBits uint64) int {
	w := archsimd.BroadcastUint64x4(wBits).AsFloat64x4()
	lr := archsimd.BroadcastUint64x4(lrBits).AsFloat64x4()
	wd := archsimd.BroadcastUint64x4(wdBits).AsFloat64x4()
	var zero, a0, a1, a2, a3 archsimd.Float64x4
	i := 0
	for ; i+16 <= len(theta); i += 16 {
		for q := range 4 {
			j := i + 4*q
			var g archsimd.Float64x4
			if ghat != nil {
				g = archsimd.LoadFloat64x4Slice(ghat[j:])
			} else {
				g = zero.Add(w.Mul(archsimd.LoadFloat32x4Slice(z[j:]).ConvertToFloat64()))
			}
			x := archsimd.LoadFloat32x4Slice(theta[j:]).ConvertToFloat64()
			n := x.Sub(lr.Mul(g.Add(wd.Mul(x)))).ConvertToFloat32()
			d := n.ConvertToFloat64().Sub(x)
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
			n.StoreSlice(theta[j:])
		}
	}
	storePartialsAVX2(p, a0, a1, a2, a3)
	return i
}

// stateBlocksAVX2 is stateBlocksAVX512 four weights at a time.
func stateBlocksAVX2(p *[16]float64, kind update.Kind, theta []float32, ghat []float64, m, v []float32, c *[10]uint64) int {
	bc := func(k int) archsimd.Float64x4 { return archsimd.BroadcastUint64x4(c[k]).AsFloat64x4() }
	lr, wd, mu, b1, b1c, b2, b2c, c1, c2, eps := bc(0), bc(1), bc(2), bc(3), bc(4), bc(5), bc(6), bc(7), bc(8), bc(9)
	load := func(s []float32, j int) archsimd.Float64x4 {
		return archsimd.LoadFloat32x4Slice(s[j:]).ConvertToFloat64()
	}
	var a0, a1, a2, a3 archsimd.Float64x4
	i := 0
	for ; i+16 <= len(theta); i += 16 {
		for q := range 4 {
			j := i + 4*q
			x, g := load(theta, j), archsimd.LoadFloat64x4Slice(ghat[j:])
			var nx archsimd.Float64x4
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
			n32.StoreSlice(theta[j:])
		}
	}
	storePartialsAVX2(p, a0, a1, a2, a3)
	return i
}
