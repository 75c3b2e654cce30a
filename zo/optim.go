package zo

import (
	"errors"
	"fmt"
	"math"

	"github.com/meazo-go/meazo/update"
)

// Optimizer turns a step's projected gradients into a parameter update. The
// implementations are SGD (ZO-SGD, MeZO), Adam (ZO-Adam), RAdaZO, MEAZO and
// FZOO; the update rules are those of docs/ALGORITHMS.md.
//
// The Engine drives an optimizer; it is not called directly. Its state is what
// it keeps between steps besides θ: StateBytes reports its size, and
// MarshalBinary/UnmarshalBinary save and restore it exactly (restore into an
// optimizer already attached to an Engine with the same parameter shapes; a
// refused state changes nothing).
// Hyperparameters are not part of the state: they come from the run's config.
type Optimizer interface {
	Name() string                   // the config's optimizer.name (meazo, zo-sgd, …)
	StateBytes() int64              // bytes of state kept between steps (the memory table's "optimizer state")
	MarshalBinary() ([]byte, error) // the state, for a checkpoint
	UnmarshalBinary([]byte) error   // restores MarshalBinary's state

	// setup allocates state for groups of the given sizes, estimated in
	// `units` units (1 when all groups are perturbed jointly). With external
	// set the per-coordinate state (moments, momentum) is kept by the Store
	// that holds θ, not by the optimizer.
	setup(dims []int, units int, external bool) error
	// oneSided reports FZOO's estimator (q one-sided evaluations plus a clean one).
	oneSided() bool
	// weights is called once per estimation unit and step, before the unit's
	// chunks are updated: d holds the unit's projected gradients and t counts
	// the unit's updates (1, 2, …). It fills w so that the estimate is
	// ĝ = Σ_j w_j z_j.
	weights(unit, t int, d, w []float64)
	// rule is the element-wise step of the unit's coordinates at its t-th
	// update, called once per unit and step after weights.
	rule(unit, t int) update.Rule
	// state returns the per-coordinate state the optimizer keeps for group
	// g, as the rule reads it (m, v; nil where none is kept, or when it is
	// external).
	state(g int) (m, v []float32)
}

// UnitSecondMoments is an optional interface of an Optimizer that keeps one
// second-moment scalar v_t per estimation unit (MEAZO). The engine copies V
// into Stats.V after every step; optimizers without it leave Stats.V nil.
type UnitSecondMoments interface {
	// V returns every unit's second moment after the last step (uncorrected,
	// per group when grouped); the caller must not modify it.
	V() []float64
}

var _ UnitSecondMoments = (*MEAZO)(nil)

func meanWeights(d, w []float64) {
	for j := range d {
		w[j] = d[j] / float64(len(d))
	}
}

func zeros32(dims []int, external bool) [][]float32 {
	if external {
		return nil
	}
	s := make([][]float32, len(dims))
	for g, n := range dims {
		s[g] = make([]float32, n)
	}
	return s
}

func count32(s [][]float32) int64 {
	var n int64
	for _, x := range s {
		n += int64(len(x))
	}
	return n
}

// SGD is ZO-SGD (MeZO): θ ← θ - η(ĝ + λθ), with optional heavy-ball momentum
// μ (ZO-Bench's ZO-SGD-MMT: b ← μb + (ĝ + λθ); θ ← θ - ηb), which costs d
// floats. Without momentum it keeps no state.
type SGD struct {
	LR, Momentum, WeightDecay float64
	buf                       [][]float32 // momentum buffer, nil when Momentum == 0
}

// NewSGD returns plain ZO-SGD with learning rate lr.
func NewSGD(lr float64) *SGD { return &SGD{LR: lr} }

func (o *SGD) Name() string      { return "zo-sgd" }
func (o *SGD) oneSided() bool    { return false }
func (o *SGD) StateBytes() int64 { return 4 * count32(o.buf) }

func (o *SGD) setup(dims []int, units int, external bool) error {
	if err := checkRate("zo-sgd", o.LR); err != nil {
		return err
	}
	if !(o.Momentum >= 0 && o.Momentum < 1) {
		return fmt.Errorf("zo-sgd: momentum %g outside [0, 1)", o.Momentum)
	}
	if !(o.WeightDecay >= 0) || math.IsInf(o.WeightDecay, 0) {
		return fmt.Errorf("zo-sgd: weight decay must be >= 0 and finite, got %g", o.WeightDecay)
	}
	if o.Momentum > 0 {
		o.buf = zeros32(dims, external)
	}
	return nil
}

func (o *SGD) weights(unit, t int, d, w []float64) { meanWeights(d, w) }

func (o *SGD) rule(unit, t int) update.Rule {
	return update.Rule{Kind: update.SGD, LR: o.LR, WeightDecay: o.WeightDecay, Momentum: o.Momentum}
}

func (o *SGD) state(g int) (m, v []float32) { return part(o.buf, g), nil }

func (o *SGD) MarshalBinary() ([]byte, error) {
	return marshalState(o.Name(), nil, o.buf), nil
}

func (o *SGD) UnmarshalBinary(b []byte) error {
	return unmarshalState(b, o.Name(), nil, o.buf)
}

// Adam is ZO-Adam (ZO-AdaMM as run by ZO-Bench: Adam fed with ĝ), per
// coordinate with bias correction:
// m ← β1m + (1-β1)ĝ; v ← β2v + (1-β2)ĝ²; θ ← θ - η m̂/(√v̂ + eps).
// Beta1 may be 0 (then no first moment is stored). State: m and v as float32,
// 8 bytes per parameter (4 when Beta1 == 0).
type Adam struct {
	LR, Beta1, Beta2, Eps float64
	m, v                  [][]float32
}

// NewAdam returns ZO-Adam with the defaults β1 = 0.9, β2 = 0.999, eps = 1e-8.
func NewAdam(lr float64) *Adam { return &Adam{LR: lr, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8} }

func (o *Adam) Name() string      { return "zo-adam" }
func (o *Adam) oneSided() bool    { return false }
func (o *Adam) StateBytes() int64 { return 4 * (count32(o.m) + count32(o.v)) }

func (o *Adam) setup(dims []int, units int, external bool) error {
	if err := checkBetas("zo-adam", o.Beta1, o.Beta2); err != nil {
		return err
	}
	if err := errors.Join(checkRate("zo-adam", o.LR), checkPositive("zo-adam", "eps", o.Eps)); err != nil {
		return err
	}
	if o.Beta1 != 0 {
		o.m = zeros32(dims, external)
	}
	o.v = zeros32(dims, external)
	return nil
}

// SecondMoment returns v (uncorrected) of group g; do not modify it.
func (o *Adam) SecondMoment(g int) []float32 { return o.v[g] }

func (o *Adam) weights(unit, t int, d, w []float64) { meanWeights(d, w) }

func (o *Adam) rule(unit, t int) update.Rule {
	return update.Rule{Kind: update.Adam, LR: o.LR, Beta1: o.Beta1, Beta2: o.Beta2, Eps: o.Eps,
		C1: 1 - math.Pow(o.Beta1, float64(t)), C2: 1 - math.Pow(o.Beta2, float64(t))}
}

func (o *Adam) state(g int) (m, v []float32) { return part(o.m, g), part(o.v, g) }

func (o *Adam) MarshalBinary() ([]byte, error) {
	return marshalState(o.Name(), nil, o.m, o.v), nil
}

func (o *Adam) UnmarshalBinary(b []byte) error {
	return unmarshalState(b, o.Name(), nil, o.m, o.v)
}

// RAdaZO is R-AdaZO: Adam whose second moment is fed by the first,
// m ← β1m + (1-β1)ĝ; v ← β2v + (1-β2)m²; θ ← θ - η m/(√v + eps).
// As in the reference code there is no bias correction unless BiasCorrection
// is set (then m/(1-β1^t) and v/(1-β2^t)). State: 8 bytes per parameter.
type RAdaZO struct {
	LR, Beta1, Beta2, Eps float64
	BiasCorrection        bool
	m, v                  [][]float32
}

// NewRAdaZO returns R-AdaZO with β1 = 0.9, β2 = 0.999, eps = 1e-8, no bias correction.
func NewRAdaZO(lr float64) *RAdaZO { return &RAdaZO{LR: lr, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8} }

func (o *RAdaZO) Name() string      { return "radazo" }
func (o *RAdaZO) oneSided() bool    { return false }
func (o *RAdaZO) StateBytes() int64 { return 4 * (count32(o.m) + count32(o.v)) }

func (o *RAdaZO) setup(dims []int, units int, external bool) error {
	if err := checkBetas("radazo", o.Beta1, o.Beta2); err != nil {
		return err
	}
	if err := errors.Join(checkRate("radazo", o.LR), checkPositive("radazo", "eps", o.Eps)); err != nil {
		return err
	}
	o.m, o.v = zeros32(dims, external), zeros32(dims, external)
	return nil
}

func (o *RAdaZO) weights(unit, t int, d, w []float64) { meanWeights(d, w) }

func (o *RAdaZO) rule(unit, t int) update.Rule {
	c1, c2 := 1.0, 1.0
	if o.BiasCorrection {
		c1 = 1 - math.Pow(o.Beta1, float64(t))
		c2 = 1 - math.Pow(o.Beta2, float64(t))
	}
	return update.Rule{Kind: update.RAdaZO, LR: o.LR, Beta1: o.Beta1, Beta2: o.Beta2, Eps: o.Eps, C1: c1, C2: c2}
}

func (o *RAdaZO) state(g int) (m, v []float32) { return part(o.m, g), part(o.v, g) }

func (o *RAdaZO) MarshalBinary() ([]byte, error) {
	return marshalState(o.Name(), nil, o.m, o.v), nil
}

func (o *RAdaZO) UnmarshalBinary(b []byte) error {
	return unmarshalState(b, o.Name(), nil, o.m, o.v)
}

// MEAZO is the paper's method: one second-moment scalar per estimation unit
// (per group when grouped), no first moment.
// g = mean_j d_j; v ← βv + (1-β)g²; v̂ = v/(1-β^t); θ ← θ - η/(√v̂ + ζ)·ĝ.
// The first step has √v̂ = |g|, so it moves by about η·|z| (sign-like).
// State: one float64 per unit.
type MEAZO struct {
	LR, Beta, Zeta float64
	v              []float64 // second moment per unit
	coef           []float64 // η/(√v̂+ζ) of the current step, per unit (not state)
}

// NewMEAZO returns MEAZO with β = 0.999 and ζ = 1e-8.
func NewMEAZO(lr float64) *MEAZO { return &MEAZO{LR: lr, Beta: 0.999, Zeta: 1e-8} }

func (o *MEAZO) Name() string      { return "meazo" }
func (o *MEAZO) oneSided() bool    { return false }
func (o *MEAZO) StateBytes() int64 { return 8 * int64(len(o.v)) }

// V returns the second-moment scalar of every unit (uncorrected); do not modify it.
func (o *MEAZO) V() []float64 { return o.v }

func (o *MEAZO) setup(dims []int, units int, external bool) error {
	if !(o.Beta >= 0 && o.Beta < 1) {
		return fmt.Errorf("meazo: beta %g outside [0, 1)", o.Beta)
	}
	// ζ keeps the first step finite when v̂ is 0 (L+ = L-).
	if err := errors.Join(checkRate("meazo", o.LR), checkPositive("meazo", "zeta", o.Zeta)); err != nil {
		return err
	}
	o.v, o.coef = make([]float64, units), make([]float64, units)
	return nil
}

func (o *MEAZO) weights(unit, t int, d, w []float64) {
	meanWeights(d, w)
	var g float64
	for _, dj := range d {
		g += dj
	}
	g /= float64(len(d))
	// Each product rounded on its own (float64()): fused into a
	// multiply-add on arm64 and with GOAMD64=v3, v's bits depended on the
	// build (TestNoFusedMultiplyAdd).
	o.v[unit] = float64(o.Beta*o.v[unit]) + float64(float64((1-o.Beta)*g)*g)
	vhat := o.v[unit] / (1 - math.Pow(o.Beta, float64(t)))
	o.coef[unit] = o.LR / (math.Sqrt(vhat) + o.Zeta)
}

// rule moves θ by the step's η/(√v̂+ζ) times ĝ.
func (o *MEAZO) rule(unit, t int) update.Rule {
	return update.Rule{Kind: update.SGD, LR: o.coef[unit]}
}

func (o *MEAZO) state(int) (m, v []float32) { return nil, nil }

func (o *MEAZO) MarshalBinary() ([]byte, error) {
	return marshalState(o.Name(), o.v), nil
}

func (o *MEAZO) UnmarshalBinary(b []byte) error {
	return unmarshalState(b, o.Name(), o.v)
}

// FZOO: q one-sided perturbations plus one clean evaluation.
// σ = population std of {L_1..L_q}; θ ← θ - η Σ_i (L_i - L0)/(qσ) z_i.
// As in the reference there is no division by ε: the step is normalised by σ,
// so η is not comparable with the other methods' (the MEAZO paper rescales it
// by ε). q must be at least 2. When σ = 0 the step does not move. It keeps no
// state between steps (the q losses live only within a step).
type FZOO struct {
	LR float64
}

// NewFZOO returns FZOO with learning rate lr.
func NewFZOO(lr float64) *FZOO { return &FZOO{LR: lr} }

func (o *FZOO) Name() string      { return "fzoo" }
func (o *FZOO) oneSided() bool    { return true }
func (o *FZOO) StateBytes() int64 { return 0 }
func (o *FZOO) setup(dims []int, units int, external bool) error {
	return checkRate("fzoo", o.LR)
}
func (o *FZOO) MarshalBinary() ([]byte, error) { return marshalState(o.Name(), nil), nil }
func (o *FZOO) UnmarshalBinary(b []byte) error { return unmarshalState(b, o.Name(), nil) }

// weights receives d_i = (L_i - L0)/ε; (L_i - L0)/(qσ_L) = d_i/(qσ_d).
func (o *FZOO) weights(unit, t int, d, w []float64) {
	q, sd := float64(len(d)), o.sigma(d)
	for i := range d {
		if sd == 0 {
			w[i] = 0
		} else {
			w[i] = d[i] / (q * sd)
		}
	}
}

// sigma is σ_t, the population std of a step's projected gradients d_i,
// which normalises FZOO's step (= the std of the losses L_i, over ε). A
// ZO-SGD step of rate η/σ_t moves θ as FZOO's of rate η does (the MEAZO
// paper's rescaling of FZOO's rate to ZO-SGD's).
func (o *FZOO) sigma(d []float64) float64 {
	q := float64(len(d))
	var mean, sd float64
	for _, x := range d {
		mean += x
	}
	mean /= q
	for _, x := range d {
		dx := x - mean
		sd += float64(dx * dx) // not fused: the same bits on every build
	}
	return math.Sqrt(sd / q)
}

func (o *FZOO) rule(unit, t int) update.Rule { return update.Rule{Kind: update.SGD, LR: o.LR} }

func (o *FZOO) state(int) (m, v []float32) { return nil, nil }

// part is group g's slice of per-group state, or nil where there is none.
func part(s [][]float32, g int) []float32 {
	if s == nil {
		return nil
	}
	return s[g]
}

func checkBetas(name string, b1, b2 float64) error {
	if !(b1 >= 0 && b1 < 1 && b2 >= 0 && b2 < 1) { // NaN fails too
		return fmt.Errorf("%s: betas (%g, %g) outside [0, 1)", name, b1, b2)
	}
	return nil
}

// checkRate requires a learning rate to be finite and not negative (0:
// estimate without moving θ, as tests and measurements do).
func checkRate(name string, lr float64) error {
	if !(lr >= 0) || math.IsInf(lr, 0) {
		return fmt.Errorf("%s: lr must be >= 0 and finite, got %g", name, lr)
	}
	return nil
}

// checkPositive requires a hyperparameter to be positive and finite.
func checkPositive(name, what string, v float64) error {
	if !(v > 0) || math.IsInf(v, 0) {
		return fmt.Errorf("%s: %s must be positive and finite, got %g", name, what, v)
	}
	return nil
}
