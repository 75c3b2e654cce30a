package cpu

import (
	"github.com/meazo-go/meazo/noise"
	"github.com/meazo-go/meazo/update"
)

// The element-wise loops of full-parameter ZO (trainable.go,
// gemm_perturbed.go): scalar Go here, replaced at start-up by vector
// versions where the CPU has them (trainable_simd_amd64.go), with the same
// bits: each element goes through the same float64 operations in the same
// order, and sums are kept in 16 partial sums (sumPartials) either way.
var (
	// dst[i] = noise.Perturbed(w[i], scale, z[i]): a panel slice of W + s·εZ.
	perturbValues = perturbValuesScalar
	// perturbValues of scale into plus and of −scale into minus, in one
	// pass: w + (−(s·z)) is w − s·z exactly, and (−s)·z is −(s·z).
	perturbPair = perturbPairScalar
	// θ[i] = float32(x − lr·(g_i + wd·x)), ZO-SGD's (and MEAZO's, FZOO's)
	// step without momentum, as update.Rule.Apply computes it; returns
	// Σ (θ_new − θ_old)² in sumPartials order.
	sgdValues = sgdValuesScalar
	// g[i] += float64(w · float64(z[i])): one direction's term of ĝ, w its
	// weight in the estimate (not a weight decay, wd elsewhere).
	addScaled = addScaledScalar
	// sgdValues with ĝ = 0 + w·z formed as it is read: one direction's
	// step (MEAZO, ZO-SGD at q = 1) without ĝ's float64 buffer, the same
	// bits as addScaled on a cleared ĝ then sgdValues.
	sgdDirection = sgdDirectionScalar
	// Any rule, meant for those with optimizer state (ZO-SGD with
	// momentum, ZO-Adam, R-AdaZO): θ, m and v moved as update.Rule.Apply
	// moves them (nil m or v where the rule keeps none); returns Σ Δθ² in
	// sumPartials order.
	stateValues = stateValuesScalar
)

// useTrainableScalar installs the scalar loops (the vector ones replace
// them at start-up where the CPU has them).
func useTrainableScalar() {
	perturbValues, perturbPair, sgdValues, addScaled = perturbValuesScalar, perturbPairScalar, sgdValuesScalar, addScaledScalar
	sgdDirection, stateValues = sgdDirectionScalar, stateValuesScalar
	perturbValuesBF16, perturbPairBF16 = perturbValuesBF16Scalar, perturbPairBF16Scalar
	sgdBF16, sgdDirectionBF16, stateBF16 = sgdBF16Scalar, sgdDirectionBF16Scalar, stateBF16Scalar
}

func perturbValuesScalar(dst, w, z []float32, scale float64) {
	z = z[:len(dst)]
	for i, v := range w[:len(dst)] {
		dst[i] = noise.Perturbed(v, scale, z[i])
	}
}

func perturbPairScalar(plus, minus, w, z []float32, scale float64) {
	w, z, minus = w[:len(plus)], z[:len(plus)], minus[:len(plus)]
	for i, v := range w {
		x, sz := float64(v), float64(scale*float64(z[i]))
		plus[i], minus[i] = float32(x+sz), float32(x-sz)
	}
}

func addScaledScalar(g []float64, z []float32, w float64) {
	z = z[:len(g)]
	for i, zv := range z {
		g[i] += float64(w * float64(zv))
	}
}

func sgdValuesScalar(theta []float32, ghat []float64, lr, wd float64) float64 {
	var p [16]float64
	for i, g := range ghat[:len(theta)] {
		sgdElem(&p, theta, i, g, lr, wd)
	}
	return sumPartials(&p)
}

// sgdElem moves θ[i] by the step's rule with ĝ_i = g and adds its squared
// change to partial sum i mod 16: the element every SGD loop here computes
// (the vector ones for their tails).
func sgdElem(p *[16]float64, theta []float32, i int, g, lr, wd float64) {
	x := float64(theta[i])
	nx := float32(x - float64(lr*(g+float64(wd*x))))
	dx := float64(nx) - x
	p[i%16] += float64(dx * dx)
	theta[i] = nx
}

func stateValuesScalar(r *update.Rule, theta []float32, ghat []float64, m, v []float32) float64 {
	var p [16]float64
	for i, g := range ghat[:len(theta)] {
		stateElem(&p, r, theta, m, v, i, g)
	}
	return sumPartials(&p)
}

// stateElem moves θ[i] and its state by r.Target and adds its squared
// change to partial sum i mod 16.
func stateElem(p *[16]float64, r *update.Rule, theta, m, v []float32, i int, g float64) {
	mi, vi := stateAt(m, v, i)
	x := float64(theta[i])
	nx := float32(r.Target(x, g, mi, vi))
	dx := float64(nx) - x
	p[i%16] += float64(dx * dx)
	theta[i] = nx
}

// stateAt is &m[i] and &v[i], nil for a state the rule keeps none of (as
// update.Rule.Target takes them).
func stateAt(m, v []float32, i int) (mi, vi *float32) {
	if m != nil {
		mi = &m[i]
	}
	if v != nil {
		vi = &v[i]
	}
	return mi, vi
}

func sgdDirectionScalar(theta, z []float32, w, lr, wd float64) float64 {
	var p [16]float64
	for i, zv := range z[:len(theta)] {
		sgdElem(&p, theta, i, 0+float64(w*float64(zv)), lr, wd) // ĝ as addScaled makes it on a cleared buffer: 0 + (−0) is +0
	}
	return sumPartials(&p)
}

// The same loops on weights stored as bfloat16 (their bits): a perturbed
// value is formed from the widened weight; an update's new value is rounded
// to float32, then to bfloat16 stochastically by the element's random word
// (update.StochasticBF16, as update.Rule.ApplyBF16 rounds it), and the sum
// of squares counts the change as stored.
var (
	perturbValuesBF16 = perturbValuesBF16Scalar
	perturbPairBF16   = perturbPairBF16Scalar
	// sgdBF16 is sgdValues on bfloat16 weights; sgdDirectionBF16 is
	// sgdDirection on them.
	sgdBF16          = sgdBF16Scalar
	sgdDirectionBF16 = sgdDirectionBF16Scalar
	// stateBF16 is stateValues on bfloat16 weights (their bits): the
	// rules with optimizer state, as update.Rule.ApplyBF16 moves them.
	stateBF16 = stateBF16Scalar
)

func perturbValuesBF16Scalar(dst []float32, w []uint16, z []float32, scale float64) {
	z = z[:len(dst)]
	for i, h := range w[:len(dst)] {
		dst[i] = noise.Perturbed(bf16ToF32(h), scale, z[i])
	}
}

func perturbPairBF16Scalar(plus, minus []float32, w []uint16, z []float32, scale float64) {
	w, z, minus = w[:len(plus)], z[:len(plus)], minus[:len(plus)]
	for i, h := range w {
		x, sz := float64(bf16ToF32(h)), float64(scale*float64(z[i]))
		plus[i], minus[i] = float32(x+sz), float32(x-sz)
	}
}

func sgdBF16Scalar(theta []uint16, ghat []float64, rnd []uint32, lr, wd float64) float64 {
	var p [16]float64
	for i, g := range ghat[:len(theta)] {
		sgdElemBF16(&p, theta, rnd, i, g, lr, wd)
	}
	return sumPartials(&p)
}

func sgdDirectionBF16Scalar(theta []uint16, z []float32, rnd []uint32, w, lr, wd float64) float64 {
	var p [16]float64
	for i, zv := range z[:len(theta)] {
		sgdElemBF16(&p, theta, rnd, i, 0+float64(w*float64(zv)), lr, wd) // ĝ as on a cleared buffer
	}
	return sumPartials(&p)
}

func stateBF16Scalar(r *update.Rule, theta []uint16, ghat []float64, m, v []float32, rnd []uint32) float64 {
	var p [16]float64
	for i, g := range ghat[:len(theta)] {
		stateElemBF16(&p, r, theta, m, v, rnd, i, g)
	}
	return sumPartials(&p)
}

// stateElemBF16 is stateElem on a bfloat16 weight, rounded by rnd[i].
func stateElemBF16(p *[16]float64, r *update.Rule, theta []uint16, m, v []float32, rnd []uint32, i int, g float64) {
	mi, vi := stateAt(m, v, i)
	x := float64(bf16ToF32(theta[i]))
	nx := update.StochasticBF16(float32(r.Target(x, g, mi, vi)), rnd[i])
	dx := float64(bf16ToF32(nx)) - x
	p[i%16] += float64(dx * dx)
	theta[i] = nx
}

// sgdElemBF16 is sgdElem on a bfloat16 weight, rounded by rnd[i].
func sgdElemBF16(p *[16]float64, theta []uint16, rnd []uint32, i int, g, lr, wd float64) {
	x := float64(bf16ToF32(theta[i]))
	nx := update.StochasticBF16(float32(x-float64(lr*(g+float64(wd*x)))), rnd[i])
	dx := float64(bf16ToF32(nx)) - x
	p[i%16] += float64(dx * dx)
	theta[i] = nx
}
