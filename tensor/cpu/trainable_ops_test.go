package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/meazo-go/meazo/noise"
	"github.com/meazo-go/meazo/update"
)

// TestTrainableOpsMatchScalar: the element-wise loops of full-parameter
// ZO give the scalar code's bits on the path in use (a vector one where the
// CPU has it), over lengths that leave a scalar tail, and their sums too.
func TestTrainableOpsMatchScalar(t *testing.T) { checkTrainableOps(t) }

func checkTrainableOps(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{0, 1, 7, 8, 15, 16, 17, 100, 1027} {
		w, z := make([]float32, n), make([]float32, n)
		g := make([]float64, n)
		for i := range w {
			w[i], z[i], g[i] = float32(rng.NormFloat64()*0.02), float32(rng.NormFloat64()), rng.NormFloat64()
		}
		got, want := make([]float32, n), make([]float32, n)
		perturbValues(got, w, z, -1e-3)
		perturbValuesScalar(want, w, z, -1e-3)
		// Both signs in one pass: each noise.Perturbed's bits.
		for _, pair := range []func(plus, minus, w, z []float32, scale float64){perturbPair, perturbPairScalar} {
			plus, minus := make([]float32, n), make([]float32, n)
			pair(plus, minus, w, z, 1e-3)
			for i := range n {
				if p, m := noise.Perturbed(w[i], 1e-3, z[i]), noise.Perturbed(w[i], -1e-3, z[i]); math.Float32bits(plus[i]) != math.Float32bits(p) || math.Float32bits(minus[i]) != math.Float32bits(m) {
					t.Fatalf("n %d, element %d: the pair gives %v/%v, noise.Perturbed %v/%v", n, i, plus[i], minus[i], p, m)
				}
			}
		}
		a, b := append([]float32(nil), w...), append([]float32(nil), w...)
		sa, sb := sgdValues(a, g, 1e-3, 0.01), sgdValuesScalar(b, g, 1e-3, 0.01)
		ga, gb := append([]float64(nil), g...), append([]float64(nil), g...)
		addScaled(ga, z, -0.37)
		addScaledScalar(gb, z, -0.37)
		for i := range n {
			if math.Float64bits(ga[i]) != math.Float64bits(gb[i]) {
				t.Fatalf("n %d, element %d: ĝ term %v on the path in use, %v scalar", n, i, ga[i], gb[i])
			}
		}
		for i := range n {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) || math.Float32bits(a[i]) != math.Float32bits(b[i]) {
				t.Fatalf("n %d, element %d: perturbed %v/%v, stepped %v/%v (path in use / scalar)", n, i, got[i], want[i], a[i], b[i])
			}
		}
		if math.Float64bits(sa) != math.Float64bits(sb) {
			t.Errorf("n %d: Σ Δθ² %v on the path in use, %v scalar", n, sa, sb)
		}
		// One direction's step, fused, against ĝ built by addScaled on a
		// cleared buffer then sgdValues; z has signed zeros and θ a −0,
		// where a sum's sign could differ.
		if n > 3 {
			z[1], w[1], z[2], w[2] = float32(math.Copysign(0, -1)), float32(math.Copysign(0, -1)), 0, float32(math.Copysign(0, -1))
		}
		for _, dir := range []func(theta, z []float32, w, lr, wd float64) float64{sgdDirection, sgdDirectionScalar} {
			fused, composed := append([]float32(nil), w...), append([]float32(nil), w...)
			ghat := make([]float64, n)
			addScaledScalar(ghat, z, 0.37)
			sf, sc := dir(fused, z, 0.37, 1e-3, 0.01), sgdValuesScalar(composed, ghat, 1e-3, 0.01)
			for i := range n {
				if math.Float32bits(fused[i]) != math.Float32bits(composed[i]) {
					t.Fatalf("n %d, element %d: one direction's step gives %v, through ĝ %v", n, i, fused[i], composed[i])
				}
			}
			if math.Float64bits(sf) != math.Float64bits(sc) {
				t.Errorf("n %d: one direction's Σ Δθ² %v, through ĝ %v", n, sf, sc)
			}
		}
	}
}

// TestBF16OpsMatchReference: the bfloat16 loops give, on the path in use
// and in their scalar form, the bits of the definitions they stand for:
// noise.Perturbed of the widened weight, and update.Rule.ApplyBF16 of SGD
// (with ĝ given, or w·z for one direction), NaN and infinities included,
// over lengths that leave a tail; their sums of squares agree with the
// reference's up to order.
func TestBF16OpsMatchReference(t *testing.T) { checkBF16Ops(t) }

func checkBF16Ops(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, n := range []int{0, 1, 7, 8, 15, 16, 17, 100, 1027} {
		w, z, rnd := make([]uint16, n), make([]float32, n), make([]uint32, n)
		for i := range w {
			w[i] = uint16(math.Float32bits(float32(rng.NormFloat64()*0.02)) >> 16)
			z[i], rnd[i] = float32(rng.NormFloat64()), rng.Uint32()
		}
		if n > 40 { // a NaN and an infinity in one 16-block, a −0 weight under −0 noise in another
			w[33], w[34] = 0x7FC1, 0x7F80
			w[20], z[20] = 0x8000, float32(math.Copysign(0, -1))
		}
		for _, f := range []struct {
			name         string
			single, pair func([]float32, []float32, []uint16, []float32, float64)
		}{
			{"in use", func(d, _ []float32, w []uint16, z []float32, s float64) { perturbValuesBF16(d, w, z, s) }, perturbPairBF16},
			{"scalar", func(d, _ []float32, w []uint16, z []float32, s float64) { perturbValuesBF16Scalar(d, w, z, s) }, perturbPairBF16Scalar},
		} {
			one, plus, minus := make([]float32, n), make([]float32, n), make([]float32, n)
			f.single(one, nil, w, z, 1e-3)
			f.pair(plus, minus, w, z, 1e-3)
			for i := range n {
				x := update.BF16ToFloat32(w[i])
				p, m := noise.Perturbed(x, 1e-3, z[i]), noise.Perturbed(x, -1e-3, z[i])
				if !sameBits(one[i], p) || !sameBits(plus[i], p) || !sameBits(minus[i], m) {
					t.Fatalf("%s n %d, element %d: perturbed %v, pair %v/%v; noise.Perturbed %v/%v", f.name, n, i, one[i], plus[i], minus[i], p, m)
				}
			}
		}
		ghat := make([]float64, n)
		for i := range ghat {
			ghat[i] = rng.NormFloat64()
		}
		dir := make([]float64, n) // one direction's ĝ as addScaled makes it
		addScaledScalar(dir, z, 0.37)
		rule := update.Rule{Kind: update.SGD, LR: 1e-3, WeightDecay: 0.01}
		for _, c := range []struct {
			name string
			g    []float64
			run  func(theta []uint16) float64
		}{
			{"sgdBF16", ghat, func(th []uint16) float64 { return sgdBF16(th, ghat, rnd, 1e-3, 0.01) }},
			{"sgdBF16Scalar", ghat, func(th []uint16) float64 { return sgdBF16Scalar(th, ghat, rnd, 1e-3, 0.01) }},
			{"sgdDirectionBF16", dir, func(th []uint16) float64 { return sgdDirectionBF16(th, z, rnd, 0.37, 1e-3, 0.01) }},
			{"sgdDirectionBF16Scalar", dir, func(th []uint16) float64 { return sgdDirectionBF16Scalar(th, z, rnd, 0.37, 1e-3, 0.01) }},
		} {
			got, want := slices.Clone(w), slices.Clone(w)
			sg := c.run(got)
			sw := rule.ApplyBF16(want, c.g, nil, nil, rnd)
			for i := range n {
				if got[i] != want[i] {
					t.Fatalf("%s n %d, element %d: %#04x, update.Rule.ApplyBF16 %#04x", c.name, n, i, got[i], want[i])
				}
			}
			if !(sg == sw || math.Abs(sg-sw) <= 1e-12*sw || math.IsNaN(sg) && math.IsNaN(sw)) {
				t.Errorf("%s n %d: Σ Δθ² %v, the reference's %v", c.name, n, sg, sw)
			}
		}
		checkStateBF16(t, rng, w, ghat, rnd)
	}
}

// checkStateBF16: the rules with state on bfloat16 weights move θ, m and v
// to update.Rule.ApplyBF16's bits (NaN and infinities in w included), on the
// path in use and in scalar form; their sums agree up to order.
func checkStateBF16(t *testing.T, rng *rand.Rand, w []uint16, ghat []float64, rnd []uint32) {
	n := len(w)
	for _, rc := range stateRules() {
		m, v := make([]float32, n), make([]float32, n)
		for i := range n {
			m[i], v[i] = float32(rng.NormFloat64()*0.1), float32(rng.ExpFloat64()*0.01)
		}
		if !rc.m {
			m = nil
		}
		if !rc.v {
			v = nil
		}
		refT, refM, refV := slices.Clone(w), slices.Clone(m), slices.Clone(v)
		ssRef := rc.r.ApplyBF16(refT, ghat, refM, refV, rnd)
		for _, path := range []struct {
			name string
			run  func(r *update.Rule, theta []uint16, g []float64, m, v []float32, rnd []uint32) float64
		}{{"in use", stateBF16}, {"scalar", stateBF16Scalar}} {
			th, mm, vv := slices.Clone(w), slices.Clone(m), slices.Clone(v)
			ss := path.run(&rc.r, th, ghat, mm, vv, rnd)
			for i := range n {
				if th[i] != refT[i] || mm != nil && !sameBits(mm[i], refM[i]) || vv != nil && !sameBits(vv[i], refV[i]) {
					t.Fatalf("%s %s n %d, element %d: θ %#04x m %v v %v; ApplyBF16's %#04x %v %v", rc.name, path.name, n, i,
						th[i], at(mm, i), at(vv, i), refT[i], at(refM, i), at(refV, i))
				}
			}
			if !(ss == ssRef || math.Abs(ss-ssRef) <= 1e-12*ssRef || math.IsNaN(ss) && math.IsNaN(ssRef)) {
				t.Errorf("%s %s n %d: Σ Δθ² %v, ApplyBF16's %v", rc.name, path.name, n, ss, ssRef)
			}
		}
	}
}

// at is s[i], or 0 for a nil s (for messages).
func at(s []float32, i int) float32 {
	if s == nil {
		return 0
	}
	return s[i]
}

// TestToPanelMatchesScalar: the panel transpose in use (8×8 blocks in
// registers where the CPU has AVX-512) moves the same words as the scalar
// one, for every count of columns and depths that leave partial blocks,
// rows next to each other or further apart.
func TestToPanelMatchesScalar(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, cols := range []int{1, 7, 8, 9, 16, 24, 31, nr} {
		for _, kc := range []int{1, 5, 8, 13, 64, 255, 256} {
			for _, ld := range []int{kc, kc + 5} {
				rows := make([]uint32, (cols-1)*ld+kc)
				for i := range rows {
					rows[i] = rng.Uint32()
				}
				got, want := make([]uint32, kc*nr), make([]uint32, kc*nr)
				for i := range got {
					got[i], want[i] = 0xdeadbeef, 0xdeadbeef
				}
				toPanelBits(got, rows, cols, kc, ld)
				toPanelScalar(want, rows, cols, kc, ld)
				for i := range got {
					if got[i] != want[i] {
						t.Fatalf("cols %d, kc %d, ld %d: word %d (depth %d, column %d) is %#x, want %#x", cols, kc, ld, i, i/nr, i%nr, got[i], want[i])
					}
				}
				for kk := range kc {
					for c := range nr {
						var v uint32
						if c < cols {
							v = rows[c*ld+kk]
						}
						if want[kk*nr+c] != v {
							t.Fatalf("cols %d, kc %d, ld %d: scalar depth %d column %d is %#x, want %#x", cols, kc, ld, kk, c, want[kk*nr+c], v)
						}
					}
				}
			}
		}
	}
}

// TestStateRulesMatchRuleApply: the rules with optimizer state move θ, m
// and v to update.Rule.Apply's bits on the path in use (a vector one where
// the CPU has it) and on the scalar one, over lengths that leave a scalar
// tail; the two paths' Σ Δθ² are the same bits, Apply's (summed in index
// order) the same sum.
func TestStateRulesMatchRuleApply(t *testing.T) { checkStateRules(t) }

func checkStateRules(t *testing.T) {
	rules := stateRules()
	rng := rand.New(rand.NewPCG(7, 8))
	for _, rc := range rules {
		for _, n := range []int{0, 1, 7, 8, 15, 16, 17, 100, 1027} {
			theta, g := make([]float32, n), make([]float64, n)
			var m, v []float32
			if rc.m {
				m = make([]float32, n)
			}
			if rc.v {
				v = make([]float32, n)
			}
			for i := range theta {
				theta[i], g[i] = float32(rng.NormFloat64()*0.02), rng.NormFloat64()
				if m != nil {
					m[i] = float32(rng.NormFloat64() * 0.1)
				}
				if v != nil {
					v[i] = float32(rng.ExpFloat64() * 0.01)
				}
			}
			if n > 2 {
				theta[1], g[2] = float32(math.Copysign(0, -1)), math.Copysign(0, -1)
			}
			type state struct{ theta, m, v []float32 }
			clone := func() state { return state{slices.Clone(theta), slices.Clone(m), slices.Clone(v)} }
			ref, vec, sc := clone(), clone(), clone()
			ssRef := rc.r.Apply(ref.theta, g, ref.m, ref.v)
			ssVec := stateValues(&rc.r, vec.theta, g, vec.m, vec.v)
			ssSc := stateValuesScalar(&rc.r, sc.theta, g, sc.m, sc.v)
			for _, got := range []struct {
				path string
				s    state
			}{{"path in use", vec}, {"scalar", sc}} {
				for k, pair := range [][2][]float32{{got.s.theta, ref.theta}, {got.s.m, ref.m}, {got.s.v, ref.v}} {
					for i := range pair[1] {
						if math.Float32bits(pair[0][i]) != math.Float32bits(pair[1][i]) {
							t.Fatalf("%s, n %d, %s: %s[%d] = %v, Rule.Apply's %v", rc.name, n, got.path, []string{"θ", "m", "v"}[k], i, pair[0][i], pair[1][i])
						}
					}
				}
			}
			if math.Float64bits(ssVec) != math.Float64bits(ssSc) {
				t.Errorf("%s, n %d: Σ Δθ² %v on the path in use, %v scalar", rc.name, n, ssVec, ssSc)
			}
			if math.Abs(ssSc-ssRef) > 1e-12*ssRef {
				t.Errorf("%s, n %d: Σ Δθ² %v, Rule.Apply's %v", rc.name, n, ssSc, ssRef)
			}
		}
	}
}

// stateRule is a rule with optimizer state to check, and which of m and v it
// keeps.
type stateRule struct {
	name string
	r    update.Rule
	m, v bool
}

// stateRules are the rules the state checks run: every kind, with and
// without m, with bias corrections.
func stateRules() []stateRule {
	return []stateRule{
		{"sgd", update.Rule{Kind: update.SGD, LR: 1e-3, WeightDecay: 0.01}, false, false},
		{"sgd-momentum", update.Rule{Kind: update.SGD, LR: 1e-3, WeightDecay: 0.01, Momentum: 0.9}, true, false},
		{"adam", update.Rule{Kind: update.Adam, LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, C1: 0.271, C2: 0.002997}, true, true},
		{"adam-beta1-0", update.Rule{Kind: update.Adam, LR: 1e-3, Beta2: 0.999, Eps: 1e-8, C1: 1, C2: 0.002997}, false, true},
		{"radazo", update.Rule{Kind: update.RAdaZO, LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, C1: 0.271, C2: 0.002997}, true, true},
	}
}

// TestBF16OpsRandom: the bfloat16 loops on the path in use give the scalar
// loops' bits on random data (checkBF16Random).
func TestBF16OpsRandom(t *testing.T) { checkBF16Random(t) }

// checkBF16Random: the bfloat16 loops on the path in use give the scalar
// loops' bits, θ, m, v and Σ Δθ² (any NaN for a NaN), and
// update.Rule.ApplyBF16's θ, m and v, on random data: every length up to
// 100 (every tail of a 16-block) and a few long ones, rules of every kind
// with and without weight decay, values over 2⁶⁰ of scales (so that the
// squared changes' sums round, and their order shows), and in about one
// value in a hundred a NaN (one with a payload below bfloat16's bits,
// which the vector rounding would carry into), an infinity, a value near
// float32's range or below its normals (in the weights, ĝ, the noise, m
// and v), so that some blocks diverge and go to the scalar code.
func checkBF16Random(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	specials := []float64{math.NaN(), math.Float64frombits(0x7FF81234_56789ABC), math.Inf(1), math.Inf(-1),
		3e38, -3e38, 1e-40, math.Copysign(0, -1), 1e300}
	val := func(scale float64) float64 {
		if rng.IntN(100) == 0 {
			return specials[rng.IntN(len(specials))]
		}
		return rng.NormFloat64() * math.Ldexp(scale, rng.IntN(61)-30)
	}
	for trial := range 400 {
		n := trial % 101
		if trial%100 == 99 {
			n = 1000 + rng.IntN(100)
		}
		w, z, g, rnd := make([]uint16, n), make([]float32, n), make([]float64, n), make([]uint32, n)
		m, v := make([]float32, n), make([]float32, n)
		for i := range n {
			w[i] = f32ToBF16(float32(val(0.02)))
			z[i], g[i], rnd[i] = float32(val(1)), val(1), rng.Uint32()
			m[i], v[i] = float32(val(0.1)), float32(math.Abs(val(0.01)))
		}
		r := randomRule(rng)
		name := fmt.Sprintf("trial %d, n %d, %+v", trial, n, r)
		checkPerturbBF16Same(t, name, w, z, 1e-3*float64(1-2*rng.IntN(2)))
		dirW := val(1)
		sgdCases := []struct {
			what      string
			use, scal func(th []uint16) float64
		}{
			{"sgdBF16", func(th []uint16) float64 { return sgdBF16(th, g, rnd, r.LR, r.WeightDecay) },
				func(th []uint16) float64 { return sgdBF16Scalar(th, g, rnd, r.LR, r.WeightDecay) }},
			{"sgdDirectionBF16", func(th []uint16) float64 { return sgdDirectionBF16(th, z, rnd, dirW, r.LR, r.WeightDecay) },
				func(th []uint16) float64 { return sgdDirectionBF16Scalar(th, z, rnd, dirW, r.LR, r.WeightDecay) }},
		}
		for _, c := range sgdCases {
			a, b := slices.Clone(w), slices.Clone(w)
			sa, sb := c.use(a), c.scal(b)
			if i := slices.Compare(a, b); i != 0 || !sameSum(sa, sb) {
				t.Fatalf("%s: %s gives θ %04x, Σ Δθ² %v; scalar θ %04x, %v", name, c.what, a, sa, b, sb)
			}
		}
		if !r.HasM() {
			m = nil
		}
		if !r.HasV() {
			v = nil
		}
		th, mm, vv := slices.Clone(w), slices.Clone(m), slices.Clone(v)
		ths, ms, vs := slices.Clone(w), slices.Clone(m), slices.Clone(v)
		thr, mr, vr := slices.Clone(w), slices.Clone(m), slices.Clone(v)
		s, ss := stateBF16(&r, th, g, mm, vv, rnd), stateBF16Scalar(&r, ths, g, ms, vs, rnd)
		r.ApplyBF16(thr, g, mr, vr, rnd)
		for i := range n {
			if th[i] != ths[i] || th[i] != thr[i] || mm != nil && !(sameBits(mm[i], ms[i]) && sameBits(mm[i], mr[i])) ||
				vv != nil && !(sameBits(vv[i], vs[i]) && sameBits(vv[i], vr[i])) {
				t.Fatalf("%s: stateBF16 element %d: θ %#04x m %v v %v; scalar %#04x %v %v; ApplyBF16 %#04x %v %v", name, i,
					th[i], at(mm, i), at(vv, i), ths[i], at(ms, i), at(vs, i), thr[i], at(mr, i), at(vr, i))
			}
		}
		if !sameSum(s, ss) {
			t.Fatalf("%s: stateBF16's Σ Δθ² %v, scalar %v", name, s, ss)
		}
	}
}

// checkPerturbBF16Same: perturbValuesBF16 and perturbPairBF16 on the path
// in use give the scalar loops' bits.
func checkPerturbBF16Same(t *testing.T, name string, w []uint16, z []float32, scale float64) {
	n := len(w)
	one, plus, minus := make([]float32, n), make([]float32, n), make([]float32, n)
	oneS, plusS, minusS := make([]float32, n), make([]float32, n), make([]float32, n)
	perturbValuesBF16(one, w, z, scale)
	perturbPairBF16(plus, minus, w, z, scale)
	perturbValuesBF16Scalar(oneS, w, z, scale)
	perturbPairBF16Scalar(plusS, minusS, w, z, scale)
	for i := range n {
		if !sameBits(one[i], oneS[i]) || !sameBits(plus[i], plusS[i]) || !sameBits(minus[i], minusS[i]) {
			t.Fatalf("%s, scale %v: element %d perturbed %v, pair %v/%v; scalar %v, %v/%v", name, scale, i,
				one[i], plus[i], minus[i], oneS[i], plusS[i], minusS[i])
		}
	}
}

// randomRule is a rule of a random kind: SGD with or without momentum,
// ZO-Adam with or without m, R-AdaZO; with weight decay or none where the
// rule has it, steps small and large.
func randomRule(rng *rand.Rand) update.Rule {
	r := update.Rule{LR: []float64{1e-4, 1e-2, 3}[rng.IntN(3)], Beta1: 0.9, Beta2: 0.999, Eps: 1e-8,
		C1: 0.1 + 0.9*rng.Float64(), C2: 0.001 + rng.Float64()}
	switch rng.IntN(5) {
	case 0:
		r.Kind, r.WeightDecay = update.SGD, []float64{0, 0.01}[rng.IntN(2)]
	case 1:
		r.Kind, r.WeightDecay, r.Momentum = update.SGD, []float64{0, 0.1}[rng.IntN(2)], 0.9
	case 2:
		r.Kind = update.Adam
	case 3:
		r.Kind, r.Beta1, r.C1 = update.Adam, 0, 1
	default:
		r.Kind = update.RAdaZO
	}
	return r
}

// sameSum reports whether two sums of squares have the same bits, or are
// both NaN.
func sameSum(a, b float64) bool {
	return math.Float64bits(a) == math.Float64bits(b) || math.IsNaN(a) && math.IsNaN(b)
}
