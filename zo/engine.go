package zo

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/meazo-go/meazo/noise"
	"github.com/meazo-go/meazo/update"
)

// Mode says which parameter groups are perturbed together.
type Mode int

const (
	// Joint perturbs every group at once (each with its own noise stream)
	// and estimates one set of projected gradients per step.
	Joint Mode = iota
	// Grouped perturbs each group alone, all at the same θ0, and updates all
	// groups after every estimate (Jacobi block coordinates, paper Alg. 3).
	Grouped
	// Cyclic estimates and updates one group per step, group t mod G (block
	// coordinate descent, BCGD in the paper's Sec. 5.1).
	Cyclic
)

var modeNames = [...]string{Joint: "joint", Grouped: "grouped", Cyclic: "cyclic"}

// String is the mode's name (joint, grouped or cyclic), as messages and
// ParseMode spell it.
func (m Mode) String() string {
	if m < 0 || int(m) >= len(modeNames) {
		return fmt.Sprintf("Mode(%d)", int(m))
	}
	return modeNames[m]
}

// ParseMode reads joint, grouped or cyclic.
func ParseMode(s string) (Mode, error) {
	for m, n := range modeNames {
		if n == s {
			return Mode(m), nil
		}
	}
	return 0, fmt.Errorf("unknown mode %q (want joint, grouped or cyclic)", s)
}

// Config holds the estimator's settings (the optimizer holds its own).
type Config struct {
	Eps     float64    // perturbation scale ε (paper: 1e-6)
	Q       int        // directions per step (paper: 1; FZOO needs at least 2)
	Dist    noise.Dist // noise distribution
	Seed    uint64     // run seed; group g draws from noise.StreamSeed(Seed, g)
	Mode    Mode
	Workers int // goroutines for noise and updates; 0 means GOMAXPROCS. Results do not depend on it.
	// Schedule scales the optimizer's rate per step; the zero value keeps it constant.
	Schedule Schedule
	// NoDecay are coordinates ZO-SGD's weight decay leaves alone: biases and
	// norm weights, which MeZO's update never decays (a ViT adapter's copy
	// of the classifier's bias). Host θ only (New); a Store keeps its own.
	NoDecay []Span
}

// Span is the coordinates [Lo, Hi) of parameter group Group.
type Span struct{ Group, Lo, Hi int }

// Engine runs zeroth-order steps on parameter groups it does not own. θ is
// either host slices (New: an adapter's parameters, perturbed into buffers
// of the engine's and updated in place, host.go) or a Store (NewStore: a
// model's own weights, which the objective perturbs as it reads them and
// the store updates where they are, store.go). Either way a step is the
// same sequence (Step): noise, perturb, evaluate, estimate, update.
//
// z comes from the seed (package noise) and is never stored beyond a step.
// Where θ is small (an adapter: q·d up to keptNoiseMax values) a step's z
// is drawn once, while the step before it waits for its losses (on a GPU
// the host is idle then), and kept until its update; elsewhere it is drawn
// again where it is needed: the same values either way.
type Engine struct {
	cfg  Config
	opt  Optimizer
	dims []int
	step int
	θ    params // where θ lives: hostParams or storeParams
}

// params is where θ lives, and how a step perturbs and updates it there.
type params interface {
	// base returns θ0 as the objective receives it (nil for a store).
	base() [][]float32
	// norms returns sphere noise's norm per (group, direction) of step
	// (nil for the other distributions).
	norms(step int, units []unit) noiseNorms
	// perturb readies the step's perturbed points; variants lists them in
	// the objective's order.
	perturb(step int, units []unit, norms noiseNorms)
	variants(step int, units []unit, norms noiseNorms) []Variant
	// drawAhead may start drawing step's noise while the objective runs.
	drawAhead(step int)
	// update moves θ by ĝ = Σ_j w_j z_j per unit and returns ‖θ_new − θ0‖².
	update(step int, units []unit, norms noiseNorms, weights [][]float64) (float64, error)
}

// Stats describes one step, for logging.
type Stats struct {
	Step       int         // 0-based index of the step (the noise's step)
	Loss       float64     // logged loss: mean of all L± (central); L0 for FZOO
	Losses     []float64   // every variant's loss, in variant order
	Units      []UnitStats // one per estimation unit of the step
	V          []float64   // every unit's v after the step (per group when grouped) when the optimizer is a UnitSecondMoments (MEAZO); nil otherwise
	UpdateNorm float64     // ‖θ_new - θ0‖ over all groups (float64 of the float32 change)
	LRFactor   float64     // the schedule's factor of the step's rate (Config.Schedule; 1 when constant)
}

// UnitStats holds one estimation unit's projected gradients.
type UnitStats struct {
	Group int       // the group estimated, or AllGroups for a joint step over several groups
	D     []float64 // d_j: (L+ - L-)/(2ε) (central) or (L_j - L0)/ε (FZOO); times the dimension for sphere noise
	// Sigma is FZOO's σ_t, the population std of D that divides its step
	// (0 for the other optimizers): ZO-SGD's rate equivalent to FZOO's η
	// is η over σ_t's mean (results.FZOOEquivalentRate).
	Sigma float64
}

// normaliser is an optimizer whose step is divided by a statistic of the
// projected gradients it reports (FZOO's σ_t).
type normaliser interface {
	sigma(d []float64) float64
}

// New returns an engine that steps params (host slices, one per group)
// with opt.
func New(params [][]float32, opt Optimizer, cfg Config) (*Engine, error) {
	dims := make([]int, len(params))
	for g, p := range params {
		dims[g] = len(p)
	}
	e, err := newEngine(dims, opt, cfg, false)
	if err != nil {
		return nil, err
	}
	e.θ = newHostParams(e, params)
	return e, nil
}

// newEngine checks the settings and sets the optimizer up for groups of
// dims; external says that θ (and the optimizer's per-coordinate state)
// is kept by a Store.
func newEngine(dims []int, opt Optimizer, cfg Config, external bool) (*Engine, error) {
	if len(dims) == 0 {
		return nil, fmt.Errorf("zo: no parameter groups")
	}
	for g, d := range dims {
		if d <= 0 {
			return nil, fmt.Errorf("zo: parameter group %d is empty", g)
		}
	}
	switch {
	case !(cfg.Eps > 0) || math.IsInf(cfg.Eps, 0):
		return nil, fmt.Errorf("zo: eps must be positive and finite, got %g", cfg.Eps)
	case cfg.Q < 1:
		return nil, fmt.Errorf("zo: q must be at least 1, got %d", cfg.Q)
	case cfg.Q > maxQ:
		// Each direction costs a forward (and, for host θ, two buffers).
		return nil, fmt.Errorf("zo: q %d is more directions than supported (at most %d)", cfg.Q, maxQ)
	case opt.oneSided() && cfg.Q < 2:
		return nil, fmt.Errorf("zo: fzoo needs q >= 2 (the std of one loss is 0), got %d", cfg.Q)
	case cfg.Dist < noise.Normal || cfg.Dist > noise.Ternary:
		return nil, fmt.Errorf("zo: unknown noise distribution %d", cfg.Dist)
	case cfg.Mode < Joint || cfg.Mode > Cyclic:
		return nil, fmt.Errorf("zo: unknown mode %d", cfg.Mode)
	case cfg.Dist == noise.Sphere && cfg.Mode == Joint && len(dims) > 1:
		return nil, fmt.Errorf("zo: sphere noise is defined per group; use one group or grouped/cyclic mode")
	}
	if err := cfg.Schedule.check(); err != nil {
		return nil, fmt.Errorf("zo: %w", err)
	}
	cfg.NoDecay = slices.Clone(cfg.NoDecay)
	slices.SortFunc(cfg.NoDecay, func(a, b Span) int { return cmp.Or(a.Group-b.Group, a.Lo-b.Lo) })
	for i, sp := range cfg.NoDecay {
		switch {
		case i > 0 && cfg.NoDecay[i-1].Group == sp.Group && cfg.NoDecay[i-1].Hi > sp.Lo:
			return nil, fmt.Errorf("zo: NoDecay spans %+v and %+v overlap", cfg.NoDecay[i-1], sp)
		case external:
			return nil, fmt.Errorf("zo: NoDecay is for host parameters; a Store exempts its own")
		case sp.Group < 0 || sp.Group >= len(dims) || sp.Lo < 0 || sp.Lo >= sp.Hi || sp.Hi > dims[sp.Group]:
			return nil, fmt.Errorf("zo: NoDecay span %+v is not within the parameter groups %v", sp, dims)
		}
	}
	units := len(dims)
	if cfg.Mode == Joint {
		units = 1
	}
	if err := opt.setup(dims, units, external); err != nil {
		return nil, fmt.Errorf("zo: %w", err)
	}
	return &Engine{cfg: cfg, opt: opt, dims: dims}, nil
}

// maxQ bounds the directions per step: far above any use (the paper's q is
// 1, FZOO's a few), and low enough that q·d and the buffers cannot overflow.
const maxQ = 1 << 16

// Params returns θ (the caller's slices); nil for an engine over a Store.
func (e *Engine) Params() [][]float32 { return e.θ.base() }

// Optimizer returns the engine's optimizer.
func (e *Engine) Optimizer() Optimizer { return e.opt }

// Estimation returns how a step estimates: the mode and the number of
// parameter groups.
func (e *Engine) Estimation() (Mode, int) { return e.cfg.Mode, len(e.dims) }

// Dims returns the size of each parameter group, in group order.
func (e *Engine) Dims() []int { return slices.Clone(e.dims) }

// StepCount returns the number of steps taken (the next step's noise index).
func (e *Engine) StepCount() int { return e.step }

// unit is one estimation unit: groups perturbed together with one set of d_j.
type unit struct {
	id     int   // optimizer state index
	groups []int // groups perturbed
	t      int   // 1-based update count of this unit
}

// units returns the estimation units of step.
func (e *Engine) units(step int) []unit {
	G := len(e.dims)
	switch e.cfg.Mode {
	case Grouped:
		us := make([]unit, G)
		for g := range us {
			us[g] = unit{id: g, groups: []int{g}, t: step + 1}
		}
		return us
	case Cyclic:
		g := step % G
		return []unit{{id: g, groups: []int{g}, t: step/G + 1}}
	}
	all := make([]int, G)
	for g := range all {
		all[g] = g
	}
	return []unit{{id: 0, groups: all, t: step + 1}}
}

func (u unit) label() int {
	if len(u.groups) == 1 {
		return u.groups[0]
	}
	return AllGroups
}

// stream is the noise of group g, direction j at step.
func (e *Engine) stream(step, g, j int) noise.Stream {
	return noise.Stream{Seed: noise.StreamSeed(e.cfg.Seed, g), Step: uint32(step), Dir: uint32(j)}
}

// Step runs one zeroth-order step: it builds every perturbed variant, has obj
// evaluate them all, forms the projected gradients and updates θ. An error
// from the objective, or a loss or projected gradient that is not finite
// (ErrNonFinite), leaves θ, the optimizer and the step count unchanged. An
// error of the update itself (a Store's device failing) may leave θ part
// moved and the optimizer's state advanced: the step cannot be run again,
// and a caller resumes from its last checkpoint, as meazo-train does.
func (e *Engine) Step(obj Objective) (*Stats, error) {
	if e.step > math.MaxUint32 {
		return nil, fmt.Errorf("zo: step %d beyond the noise counter's range", e.step)
	}
	units := e.units(e.step)
	// Noise: sphere noise's norms before any value is used.
	norms := e.θ.norms(e.step, units)
	// Perturb: ready θ0 ± εz (host θ: in buffers, from θ0).
	e.θ.perturb(e.step, units, norms)
	// Variants: every perturbed point, in the objective's order.
	variants := e.θ.variants(e.step, units, norms)
	// Ahead: the next step's noise, drawn while the objective runs.
	e.θ.drawAhead(e.step + 1)
	// Evaluate: one call of the objective for the whole step.
	losses, err := e.evaluate(obj, variants)
	if err != nil {
		return nil, err
	}
	// Estimate: projected gradients d_j and the optimizer's weights w_j per unit.
	st, weights, err := e.estimate(units, losses)
	if err != nil {
		return nil, err
	}
	// Update: θ ← θ - step(ĝ), ĝ = Σ_j w_j z_j.
	sq, err := e.θ.update(e.step, units, norms, weights)
	if err != nil {
		return nil, fmt.Errorf("zo step %d: update: %w", e.step+1, err)
	}
	st.UpdateNorm, st.LRFactor = math.Sqrt(sq), e.cfg.Schedule.Factor(e.step)
	// Record: what the optimizer reports about its state.
	e.record(st)
	e.step++
	return st, nil
}

// rule is the optimizer's element-wise step of unit u at step, its rate
// scaled by the schedule (by exactly 1 when constant: the same bits).
func (e *Engine) rule(u unit, step int) update.Rule {
	r := e.opt.rule(u.id, u.t)
	r.LR *= e.cfg.Schedule.Factor(step)
	return r
}

// noiseNorms holds sphere noise's norm per (group, direction); nil for the
// other distributions, whose values need no normalisation.
type noiseNorms [][]float64

func (n noiseNorms) at(g, j int) float64 {
	if n == nil {
		return 1
	}
	return n[g][j]
}

// sphereNorms computes, on workers goroutines (the norms do not depend on
// their number), the norm of every (group, direction) step draws when the
// noise is Sphere, and returns nil otherwise.
func (e *Engine) sphereNorms(step int, units []unit, workers int) noiseNorms {
	if e.cfg.Dist != noise.Sphere {
		return nil
	}
	q := e.cfg.Q
	norms := make(noiseNorms, len(e.dims))
	for _, u := range units {
		for _, g := range u.groups {
			norms[g] = make([]float64, q)
			for j := range q {
				norms[g][j] = e.stream(step, g, j).SphereNorm(e.dims[g], workers)
			}
		}
	}
	return norms
}

// signs lists the variants of a direction: + and −, or + alone (FZOO).
func (e *Engine) signs() []int {
	if e.opt.oneSided() {
		return []int{+1}
	}
	return []int{+1, -1}
}

// evaluate has obj compute every variant's loss and checks that there is one
// finite loss per variant. Its errors number the step from 1, as a
// trainer's log does.
func (e *Engine) evaluate(obj Objective, variants []Variant) ([]float64, error) {
	losses, err := obj.Evaluate(e.θ.base(), variants)
	if err != nil {
		return nil, fmt.Errorf("zo step %d: evaluate: %w", e.step+1, err)
	}
	if len(losses) != len(variants) {
		return nil, fmt.Errorf("zo step %d: objective returned %d losses for %d variants", e.step+1, len(losses), len(variants))
	}
	for i, l := range losses {
		if math.IsNaN(l) || math.IsInf(l, 0) {
			v := variants[i]
			where := fmt.Sprintf("%s, direction %d, sign %+d", groupName(v.Group), v.Dir, v.Sign)
			if v.Group == Clean {
				where = "θ0 itself, unperturbed"
			}
			return nil, &nonFiniteError{fmt.Sprintf("zo step %d: loss of variant %d (%s) is %g", e.step+1, i, where, l)}
		}
	}
	return losses, nil
}

// groupName names a variant's group in a message: "group g", or "all
// groups" for a joint perturbation (AllGroups).
func groupName(g int) string {
	if g == AllGroups {
		return "all groups"
	}
	return fmt.Sprintf("group %d", g)
}

// ErrNonFinite is what Step's error matches (errors.Is) when a loss or a
// projected gradient is NaN or infinite: the run diverges; θ and the
// optimizer are as they were before the step.
var ErrNonFinite = errors.New("zo: a loss or a projected gradient is NaN or infinite")

type nonFiniteError struct{ msg string }

func (e *nonFiniteError) Error() string        { return e.msg }
func (e *nonFiniteError) Is(target error) bool { return target == ErrNonFinite }

// estimate forms each unit's projected gradients from the losses (in the
// variants' order) and asks the optimizer for the weights of ĝ = Σ_j w_j z_j.
// It returns the step's stats (all but UpdateNorm and V) and the weights per
// unit, or, with the optimizer untouched, an error if a projected gradient
// is not finite (finite losses far apart, over a tiny ε).
func (e *Engine) estimate(units []unit, losses []float64) (*Stats, [][]float64, error) {
	q, eps, oneSided := e.cfg.Q, e.cfg.Eps, e.opt.oneSided()
	st := &Stats{Step: e.step, Losses: losses, Units: make([]UnitStats, len(units))}
	weights := make([][]float64, len(units))
	k := 0
	if oneSided {
		st.Loss = losses[0]
		k = 1
	}
	var sum float64
	for ui, u := range units {
		scale := 1.0
		if e.cfg.Dist == noise.Sphere {
			scale = float64(e.dims[u.groups[0]])
		}
		d := make([]float64, q)
		for j := range q {
			if oneSided {
				d[j] = (losses[k] - losses[0]) / eps * scale
				k++
			} else {
				sum += losses[k] + losses[k+1]
				d[j] = (losses[k] - losses[k+1]) / (2 * eps) * scale
				k += 2
			}
		}
		for j, dj := range d {
			if math.IsNaN(dj) || math.IsInf(dj, 0) {
				return nil, nil, &nonFiniteError{fmt.Sprintf("zo step %d: projected gradient %d of %s is %g (ε %g)", e.step+1, j, groupName(u.label()), dj, eps)}
			}
		}
		st.Units[ui] = UnitStats{Group: u.label(), D: d}
	}
	// The optimizer's state moves only once every d_j is known to be finite.
	for ui, u := range units {
		weights[ui] = make([]float64, q)
		e.opt.weights(u.id, u.t, st.Units[ui].D, weights[ui])
		if n, ok := e.opt.(normaliser); ok {
			st.Units[ui].Sigma = n.sigma(st.Units[ui].D)
		}
	}
	if !oneSided {
		st.Loss = sum / float64(len(losses))
	}
	return st, weights, nil
}

// record adds to st what the optimizer reports about its state after the
// update (v_t when it is a UnitSecondMoments).
func (e *Engine) record(st *Stats) {
	if m, ok := e.opt.(UnitSecondMoments); ok {
		st.V = append([]float64(nil), m.V()...)
	}
}

// MarshalBinary saves the engine's state: the step count, the shape the
// optimizer's state belongs to (the mode and every group's size), and the
// optimizer's state (θ itself is the caller's to save; so is a Store's
// per-coordinate optimizer state).
func (e *Engine) MarshalBinary() ([]byte, error) {
	ob, err := e.opt.MarshalBinary()
	if err != nil {
		return nil, err
	}
	b := []byte(engineMagic2)
	b = binary.LittleEndian.AppendUint64(b, uint64(e.step))
	b = append(b, byte(e.cfg.Mode))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(e.dims)))
	for _, d := range e.dims {
		b = binary.LittleEndian.AppendUint64(b, uint64(d))
	}
	return append(b, ob...), nil
}

// The state's headers: engineMagic2 records the mode and the groups' sizes,
// so that a state is not restored into θ of another shape; engineMagic1
// (before it) did not, and is still read.
const (
	engineMagic1 = "zo-engine"
	engineMagic2 = "zo-engine/2"
)

// UnmarshalBinary restores a state MarshalBinary saved, into an engine over
// θ of the same groups, in the same mode.
func (e *Engine) UnmarshalBinary(b []byte) error {
	rest, ok := bytes.CutPrefix(b, []byte(engineMagic2))
	v2 := ok
	if !ok {
		if rest, ok = bytes.CutPrefix(b, []byte(engineMagic1)); !ok {
			return fmt.Errorf("zo engine state: bad header")
		}
	}
	if len(rest) < 8 {
		return fmt.Errorf("zo engine state: bad header")
	}
	step := binary.LittleEndian.Uint64(rest)
	if step > math.MaxUint32 {
		return fmt.Errorf("zo engine state: step %d out of range", step)
	}
	rest = rest[8:]
	if v2 {
		if len(rest) < 5 {
			return fmt.Errorf("zo engine state: truncated header")
		}
		mode, n := Mode(rest[0]), binary.LittleEndian.Uint32(rest[1:])
		rest = rest[5:]
		if uint64(len(rest)) < 8*uint64(n) {
			return fmt.Errorf("zo engine state: truncated header")
		}
		dims := make([]int, n)
		for g := range dims {
			dims[g] = int(binary.LittleEndian.Uint64(rest[8*g:]))
		}
		rest = rest[8*n:]
		if mode != e.cfg.Mode || !slices.Equal(dims, e.dims) {
			return fmt.Errorf("zo engine state: saved for mode %v and groups of sizes %v, not mode %v and %v", mode, dims, e.cfg.Mode, e.dims)
		}
	}
	if err := e.opt.UnmarshalBinary(rest); err != nil {
		return fmt.Errorf("zo engine state: %w", err)
	}
	e.step = int(step)
	return nil
}
