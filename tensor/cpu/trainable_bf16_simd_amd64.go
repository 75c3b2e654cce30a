//go:build goexperiment.simd && amd64

package cpu

import (
	"math"
	"simd/archsimd"
	"unsafe"

	"github.com/meazo-go/meazo/update"
)

// The rules with optimizer state (ZO-Adam, R-AdaZO, ZO-SGD with momentum)
// on bfloat16 weights, sixteen at a time: update.Rule.Target's float64
// operations on the widened weight, the state in float32, the new value
// rounded to float32 and then stochastically to bfloat16
// (update.StochasticBF16), as update.Rule.ApplyBF16 does.

// useBF16Vector installs the bfloat16 loops of one vector width (AVX-512,
// AVX2): its perturbation loops values and pair, and the update drivers
// (sgdBF16Vector, stateBF16Vector) around its vector loops sgd and state.
func useBF16Vector(values func(dst []float32, w []uint16, z []float32, scaleBits uint64),
	pair func(plus, minus []float32, w []uint16, z []float32, scaleBits uint64), sgd sgdBF16Blocks, state stateBF16Blocks) {
	perturbValuesBF16 = func(dst []float32, w []uint16, z []float32, scale float64) {
		values(dst, w, z, math.Float64bits(scale))
	}
	perturbPairBF16 = func(plus, minus []float32, w []uint16, z []float32, scale float64) {
		pair(plus, minus, w, z, math.Float64bits(scale))
	}
	sgdBF16 = func(theta []uint16, ghat []float64, rnd []uint32, lr, wd float64) float64 {
		return sgdBF16Vector(theta, ghat, nil, rnd, 0, lr, wd, sgd)
	}
	sgdDirectionBF16 = func(theta []uint16, z []float32, rnd []uint32, w, lr, wd float64) float64 {
		return sgdBF16Vector(theta, nil, z, rnd, w, lr, wd, sgd)
	}
	stateBF16 = func(r *update.Rule, theta []uint16, ghat []float64, m, v []float32, rnd []uint32) float64 {
		return stateBF16Vector(r, theta, ghat, m, v, rnd, state)
	}
}

// stateBF16Blocks is the vector loop of stateBF16Vector
// (stateBF16BlocksAVX512, stateBF16BlocksAVX2): it moves θ (bfloat16), m
// and v by the rule of kind (constants c as ruleBits gives them), 16
// weights at a time from the start; it stops before a block where a new
// value is NaN (nothing of that block written) or where fewer than 16 are
// left, writes the squared changes' partial sums into p (lane j: weights ≡
// j mod 16) and returns the number of weights it moved.
type stateBF16Blocks func(p *[16]float64, kind update.Kind, theta []uint16, ghat []float64, m, v []float32, rnd []uint32, c *[10]uint64) int

// stateBF16Vector is stateBF16Scalar with whole blocks of 16 by the vector
// loop blocks, a block with a NaN (a diverged step) and the tail by the
// scalar code.
func stateBF16Vector(r *update.Rule, theta []uint16, ghat []float64, m, v []float32, rnd []uint32, blocks stateBF16Blocks) float64 {
	if r.Kind == update.SGD && m == nil { // no state: the blocks' SGD reads m
		return sgdBF16(theta, ghat, rnd, r.LR, r.WeightDecay)
	}
	n := len(theta)
	ghat, rnd = ghat[:n], rnd[:n]
	from := func(s []float32, i int) []float32 {
		if s == nil {
			return nil
		}
		return s[i:n]
	}
	bits := ruleBits(r)
	return bf16Vector(n, func(q *[16]float64, i int) int {
		return blocks(q, r.Kind, theta[i:], ghat[i:], from(m, i), from(v, i), rnd[i:], &bits)
	}, func(p *[16]float64, i int) { stateElemBF16(p, r, theta, m, v, rnd, i, ghat[i]) })
}

// stateBF16BlocksAVX512 is a stateBF16Blocks, eight weights a vector.
func stateBF16BlocksAVX512(p *[16]float64, kind update.Kind, theta []uint16, ghat []float64, m, v []float32, rnd []uint32, c *[10]uint64) int {
	bc := func(k int) archsimd.Float64x8 { return archsimd.BroadcastUint64x8(c[k]).AsFloat64x8() }
	lr, wd, mu, b1, b1c, b2, b2c, c1, c2, eps := bc(0), bc(1), bc(2), bc(3), bc(4), bc(5), bc(6), bc(7), bc(8), bc(9)
	n, pt, pg, pm, pv := stateBlocks(theta, ghat, m, v)
	pr := base(rnd[:n])
	load := func(s unsafe.Pointer, off uintptr) archsimd.Float64x8 {
		if s == nil {
			return archsimd.Float64x8{}
		}
		return wide8(s, off)
	}
	// step is update.Rule.Target on eight weights: the new value, m and v.
	step := func(x, g, mo, vo archsimd.Float64x8) (nx, mm, vv archsimd.Float64x8) {
		switch {
		case kind == update.SGD: // with momentum
			mm = mu.Mul(mo).Add(g.Add(wd.Mul(x)))
			return x.Sub(lr.Mul(mm)), mm, vv
		case kind == update.Adam:
			mh := g
			if m != nil {
				mm = b1.Mul(mo).Add(b1c.Mul(g))
				mh = mm.Div(c1)
			}
			vv = b2.Mul(vo).Add(b2c.Mul(g).Mul(g))
			return x.Sub(lr.Mul(mh).Div(vv.Div(c2).Sqrt().Add(eps))), mm, vv
		}
		mm = b1.Mul(mo).Add(b1c.Mul(g)) // R-AdaZO
		vv = b2.Mul(vo).Add(b2c.Mul(mm).Mul(mm))
		return x.Sub(lr.Mul(mm.Div(c1)).Div(vv.Div(c2).Sqrt().Add(eps))), mm, vv
	}
	var a0, a1 archsimd.Float64x8
	i := 0
	for ; i < n; i += 16 {
		o := uintptr(4 * i) // bytes to the block's float32 (m, v, rnd); its ĝ at 2o, its weights at o/2
		x0, x1 := wideBF16(pt, o/2), wideBF16(pt, o/2+16)
		nx0, m0, v0 := step(x0, load8d(pg, 2*o), load(pm, o), load(pv, o))
		nx1, m1, v1 := step(x1, load8d(pg, 2*o+64), load(pm, o+32), load(pv, o+32))
		n0, n1 := nx0.ConvertToFloat32(), nx1.ConvertToFloat32()
		if n0.Equal(n0).And(n1.Equal(n1)).ToBits() != 0xFF {
			break
		}
		if pm != nil {
			store8(m0.ConvertToFloat32(), pm, o)
			store8(m1.ConvertToFloat32(), pm, o+32)
		}
		if pv != nil {
			store8(v0.ConvertToFloat32(), pv, o)
			store8(v1.ConvertToFloat32(), pv, o+32)
		}
		s0, s1 := storeBF16AVX512(pt, pr, o, n0, n1, x0, x1)
		a0, a1 = a0.Add(s0), a1.Add(s1)
	}
	a0.Store((*[8]float64)(p[:8]))
	a1.Store((*[8]float64)(p[8:]))
	archsimd.ClearAVXUpperBits()
	return i
}

// storeBF16AVX512 rounds 16 new values (n0, n1, float32) to bfloat16
// stochastically, as update.StochasticBF16 does (the random word's low 16
// bits added below bfloat16's mantissa, then dropped), stores them at o/2
// bytes past theta (their random words at o bytes past rnd) and returns
// their squared changes from the old values x0, x1. (No NaN among the new
// values: the callers leave such blocks to the scalar code, whose rounding
// keeps NaN's bits.)
func storeBF16AVX512(theta, rnd unsafe.Pointer, o uintptr, n0, n1 archsimd.Float32x8, x0, x1 archsimd.Float64x8) (archsimd.Float64x8, archsimd.Float64x8) {
	low, sixteen := archsimd.BroadcastUint32x8(0xFFFF), archsimd.BroadcastUint32x8(16)
	r0 := archsimd.LoadUint32x8((*[8]uint32)(unsafe.Add(rnd, o)))
	r1 := archsimd.LoadUint32x8((*[8]uint32)(unsafe.Add(rnd, o+32)))
	b0 := n0.AsUint32x8().Add(r0.And(low)).ShiftRight(sixteen)
	b1 := n1.AsUint32x8().Add(r1.And(low)).ShiftRight(sixteen)
	b0.TruncateToUint16().Store((*[8]uint16)(unsafe.Add(theta, o/2)))
	b1.TruncateToUint16().Store((*[8]uint16)(unsafe.Add(theta, o/2+16)))
	d0 := b0.ShiftAllLeft(16).AsFloat32x8().ConvertToFloat64().Sub(x0)
	d1 := b1.ShiftAllLeft(16).AsFloat32x8().ConvertToFloat64().Sub(x1)
	return d0.Mul(d0), d1.Mul(d1)
}

// ruleBits is a rule's constants as the vector loops take them (as bits,
// so that no legacy SSE moves them): η, λ, μ, β1, 1−β1, β2, 1−β2, C1, C2, eps.
func ruleBits(r *update.Rule) [10]uint64 {
	c := [10]float64{r.LR, r.WeightDecay, r.Momentum, r.Beta1, 1 - r.Beta1, r.Beta2, 1 - r.Beta2, r.C1, r.C2, r.Eps}
	var bits [10]uint64
	for k, f := range c {
		bits[k] = math.Float64bits(f)
	}
	return bits
}
