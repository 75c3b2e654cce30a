package zo

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
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
	Eps     float64 // perturbation scale ε (paper: 1e-6)
	Q       int     // directions per step (paper: 1; FZOO needs at least 2)
	Dist    Dist    // noise distribution
	Seed    uint64  // run seed; group g draws from StreamSeed(Seed, g)
	Mode    Mode
	Workers int // goroutines for noise and updates; 0 means GOMAXPROCS. Results do not depend on it.
}

// Engine runs zeroth-order steps on parameter groups it does not own: params
// (one float32 slice per group, canonical order) is θ, read as θ0 at the start
// of a step and updated in place at its end. Perturbed points θ0 ± εz are
// written into separate buffers from θ0, never by moving θ in place, so θ0 is
// restored exactly. Buffers for the variants (2q·d floats, q·d for FZOO) are
// kept between steps.
//
// z comes from the seed. Where θ is large (full-parameter ZO, MeZO's case)
// it is regenerated when needed, twice a step, and never stored. Where it
// is small (an adapter: q·d up to keptNoiseMax values) a step's z is drawn
// once, while the step before it waits for its losses (on a GPU the host is
// idle then), and kept until its update: the same values either way.
type Engine struct {
	cfg    Config
	opt    Optimizer
	params [][]float32
	dims   []int
	step   int
	bufs   [][][]float32 // bufs[g][slot]: perturbed copies of group g
	kept   [2]*stepNoise // drawn noise of up to two steps (this one and the next), when kept at all
	keep   bool          // whether noise is kept (keptNoiseMax)
}

// keptNoiseMax bounds the noise values (q·d) a step may keep; the engine
// holds two steps' worth (4 bytes each).
const keptNoiseMax = 16 << 20

// stepNoise is the noise of one step, drawn in full: z[g][j] for each group
// the step perturbs and direction j, and sphere noise's norms.
type stepNoise struct {
	step  int
	norms noiseNorms
	z     [][][]float32
	ready chan struct{} // closed once z and norms are drawn
}

// Stats describes one step, for logging.
type Stats struct {
	Step       int         // 0-based index of the step (the noise's step)
	Loss       float64     // logged loss: mean of all L± (central); L0 for FZOO
	Losses     []float64   // every variant's loss, in variant order
	Units      []UnitStats // one per estimation unit of the step
	V          []float64   // every unit's v after the step (per group when grouped) when the optimizer is a UnitSecondMoments (MEAZO); nil otherwise
	UpdateNorm float64     // ‖θ_new - θ0‖ over all groups (float64 of the float32 change)
}

// UnitStats holds one estimation unit's projected gradients.
type UnitStats struct {
	Group int       // the group estimated, or AllGroups for a joint step over several groups
	D     []float64 // d_j: (L+ - L-)/(2ε) (central) or (L_j - L0)/ε (FZOO); times the dimension for sphere noise
}

// New returns an engine that steps params with opt.
func New(params [][]float32, opt Optimizer, cfg Config) (*Engine, error) {
	if len(params) == 0 {
		return nil, fmt.Errorf("zo: no parameter groups")
	}
	dims := make([]int, len(params))
	for g, p := range params {
		if len(p) == 0 {
			return nil, fmt.Errorf("zo: parameter group %d is empty", g)
		}
		dims[g] = len(p)
	}
	switch {
	case !(cfg.Eps > 0) || math.IsInf(cfg.Eps, 0):
		return nil, fmt.Errorf("zo: eps must be positive and finite, got %g", cfg.Eps)
	case cfg.Q < 1:
		return nil, fmt.Errorf("zo: q must be at least 1, got %d", cfg.Q)
	case cfg.Q > maxQ:
		// Each direction costs two buffers the size of θ (and a forward).
		return nil, fmt.Errorf("zo: q %d is more directions than supported (at most %d)", cfg.Q, maxQ)
	case opt.oneSided() && cfg.Q < 2:
		return nil, fmt.Errorf("zo: fzoo needs q >= 2 (the std of one loss is 0), got %d", cfg.Q)
	case cfg.Dist < Normal || cfg.Dist > Ternary:
		return nil, fmt.Errorf("zo: unknown noise distribution %d", cfg.Dist)
	case cfg.Mode < Joint || cfg.Mode > Cyclic:
		return nil, fmt.Errorf("zo: unknown mode %d", cfg.Mode)
	case cfg.Dist == Sphere && cfg.Mode == Joint && len(params) > 1:
		return nil, fmt.Errorf("zo: sphere noise is defined per group; use one group or grouped/cyclic mode")
	}
	units := len(params)
	if cfg.Mode == Joint {
		units = 1
	}
	if err := opt.setup(dims, units); err != nil {
		return nil, fmt.Errorf("zo: %w", err)
	}
	total := 0
	for _, d := range dims {
		total += d
	}
	return &Engine{cfg: cfg, opt: opt, params: params, dims: dims, bufs: make([][][]float32, len(params)),
		keep: cfg.Q <= keptNoiseMax/total}, nil // q·d ≤ keptNoiseMax, without overflow
}

// maxQ bounds the directions per step: far above any use (the paper's q is
// 1, FZOO's a few), and low enough that q·d and the buffers cannot overflow.
const maxQ = 1 << 16

// Params returns θ (the caller's slices).
func (e *Engine) Params() [][]float32 { return e.params }

// Optimizer returns the engine's optimizer.
func (e *Engine) Optimizer() Optimizer { return e.opt }

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
	G := len(e.params)
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

func (e *Engine) buf(g, slot int) []float32 {
	for len(e.bufs[g]) <= slot {
		e.bufs[g] = append(e.bufs[g], make([]float32, e.dims[g]))
	}
	return e.bufs[g][slot]
}

// stream is the noise of group g, direction j at step.
func (e *Engine) stream(step, g, j int) Stream {
	return Stream{Seed: StreamSeed(e.cfg.Seed, g), Step: uint32(step), Dir: uint32(j)}
}

// chunkTask is one chunk of one group of one unit.
type chunkTask struct{ u, g, lo, hi int }

func (e *Engine) chunkTasks(units []unit) []chunkTask {
	var ts []chunkTask
	for ui, u := range units {
		for _, g := range u.groups {
			for c := range numChunks(e.dims[g]) {
				lo, hi := chunkRange(c, e.dims[g])
				ts = append(ts, chunkTask{ui, g, lo, hi})
			}
		}
	}
	return ts
}

var chunkPool = sync.Pool{New: func() any { return &chunkScratch{} }}

type chunkScratch struct {
	z    [ChunkSize]float32
	ghat [ChunkSize]float64
}

// Step runs one zeroth-order step: it builds every perturbed variant, has obj
// evaluate them all, forms the projected gradients and updates θ. On error θ,
// the optimizer and the step count are unchanged.
func (e *Engine) Step(obj Objective) (*Stats, error) {
	if e.step > math.MaxUint32 {
		return nil, fmt.Errorf("zo: step %d beyond the noise counter's range", e.step)
	}
	units := e.units(e.step)
	tasks := e.chunkTasks(units)

	// Noise: this step's z drawn in full (nil where θ is too large to keep
	// it), and sphere noise's norms before any value is used.
	z := e.noise(e.step)
	var norms noiseNorms
	if z != nil {
		norms = z.norms
	} else {
		norms = e.sphereNorms(e.step, units, e.cfg.Workers)
	}
	// Perturb: θ0 ± εz into the variant buffers, from θ0.
	e.perturb(units, tasks, norms, z)
	// Variants: every perturbed point, in the objective's order.
	variants := e.variants(units)
	// Ahead: the next step's noise, drawn while the objective runs.
	e.drawAhead(e.step + 1)
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
	st.UpdateNorm = e.update(units, tasks, norms, z, weights)
	// Record: what the optimizer reports about its state.
	e.record(st)
	e.step++
	return st, nil
}

// noise returns step's noise drawn in full, waiting for a draw under way,
// or nil when the engine does not keep noise.
func (e *Engine) noise(step int) *stepNoise {
	if !e.keep {
		return nil
	}
	if n := e.keptFor(step); n != nil {
		<-n.ready
		return n
	}
	n := e.slotFor(step)
	e.draw(n, e.cfg.Workers)
	return n
}

// keptFor returns the kept slot for step's noise (drawn or being drawn),
// or nil.
func (e *Engine) keptFor(step int) *stepNoise {
	for _, n := range e.kept {
		if n != nil && n.step == step {
			return n
		}
	}
	return nil
}

// drawAhead starts drawing step's noise in the background, unless the
// engine does not keep noise, step is beyond the counter, or it is drawn
// already.
func (e *Engine) drawAhead(step int) {
	if !e.keep || step > math.MaxUint32 || e.keptFor(step) != nil {
		return
	}
	n := e.slotFor(step)
	// Half the workers: the objective runs meanwhile (a GPU backend's
	// launches, a CPU backend's forward). The values do not depend on it.
	workers := e.cfg.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	go e.draw(n, max(1, workers/2))
}

// slotFor readies a kept slot for step's noise: one not holding the
// current step's, once any draw into it has finished.
func (e *Engine) slotFor(step int) *stepNoise {
	i := 0
	if n := e.kept[0]; n != nil && n.step == e.step && step != e.step {
		i = 1
	}
	n := e.kept[i]
	if n == nil {
		n = &stepNoise{}
		e.kept[i] = n
	} else {
		<-n.ready
	}
	n.step, n.ready = step, make(chan struct{})
	return n
}

// draw fills n with its step's noise, chunk by chunk as perturb and update
// would draw it, on workers goroutines, and closes n.ready.
func (e *Engine) draw(n *stepNoise, workers int) {
	defer close(n.ready)
	units := e.units(n.step)
	n.norms = e.sphereNorms(n.step, units, workers)
	if n.z == nil {
		n.z = make([][][]float32, len(e.params))
	}
	for _, u := range units {
		for _, g := range u.groups {
			for len(n.z[g]) < e.cfg.Q {
				n.z[g] = append(n.z[g], make([]float32, e.dims[g]))
			}
		}
	}
	tasks := e.chunkTasks(units)
	parallelFor(len(tasks), workers, func(k int) {
		tk := tasks[k]
		for j := range e.cfg.Q {
			e.stream(n.step, tk.g, j).fillRange(n.z[tk.g][j][tk.lo:tk.hi], tk.lo, e.cfg.Dist, n.norms.at(tk.g, j))
		}
	})
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
	if e.cfg.Dist != Sphere {
		return nil
	}
	q := e.cfg.Q
	norms := make(noiseNorms, len(e.params))
	for _, u := range units {
		for _, g := range u.groups {
			norms[g] = make([]float64, q)
			for j := range q {
				norms[g][j] = e.stream(step, g, j).sphereNorm(e.dims[g], workers)
			}
		}
	}
	return norms
}

// perturb materialises θ0 ± εz from θ0 in the buffers, chunk by chunk in
// parallel: slot 2j holds +, 2j+1 holds - (FZOO: slot j holds +). z is
// drawn here unless kept holds it.
func (e *Engine) perturb(units []unit, tasks []chunkTask, norms noiseNorms, kept *stepNoise) {
	q, eps, oneSided := e.cfg.Q, e.cfg.Eps, e.opt.oneSided()
	for _, u := range units {
		for _, g := range u.groups {
			for j := range q {
				if oneSided {
					e.buf(g, j)
				} else {
					e.buf(g, 2*j+1)
				}
			}
		}
	}
	parallelFor(len(tasks), e.cfg.Workers, func(k int) {
		tk := tasks[k]
		theta := e.params[tk.g][tk.lo:tk.hi]
		for j := range q {
			if oneSided {
				plus := e.bufs[tk.g][j][tk.lo:tk.hi]
				for i, z := range e.chunkNoise(tk, j, kept, norms, plus) {
					plus[i] = float32(float64(theta[i]) + eps*float64(z))
				}
				continue
			}
			plus, minus := e.bufs[tk.g][2*j][tk.lo:tk.hi], e.bufs[tk.g][2*j+1][tk.lo:tk.hi]
			for i, z := range e.chunkNoise(tk, j, kept, norms, minus) {
				x, dz := float64(theta[i]), eps*float64(z)
				plus[i], minus[i] = float32(x+dz), float32(x-dz)
			}
		}
	})
}

// chunkNoise returns direction j's z on chunk tk of this step: kept's
// values, or drawn into scratch (len tk.hi-tk.lo) when nothing is kept.
func (e *Engine) chunkNoise(tk chunkTask, j int, kept *stepNoise, norms noiseNorms, scratch []float32) []float32 {
	if kept != nil {
		return kept.z[tk.g][j][tk.lo:tk.hi]
	}
	e.stream(e.step, tk.g, j).fillRange(scratch, tk.lo, e.cfg.Dist, norms.at(tk.g, j))
	return scratch
}

// variants lists the step's variants, in order: [clean (FZOO)], then per
// unit, per direction, + (and -). Unperturbed groups share θ0's slices.
func (e *Engine) variants(units []unit) []Variant {
	q, oneSided := e.cfg.Q, e.opt.oneSided()
	var variants []Variant
	if oneSided {
		variants = append(variants, Variant{Group: Clean, Params: e.params})
	}
	for _, u := range units {
		for j := range q {
			for s, sign := range []int{+1, -1} {
				if oneSided && sign < 0 {
					break
				}
				p := make([][]float32, len(e.params))
				copy(p, e.params)
				for _, g := range u.groups {
					slot := 2*j + s
					if oneSided {
						slot = j
					}
					p[g] = e.bufs[g][slot]
				}
				variants = append(variants, Variant{Group: u.label(), Dir: j, Sign: sign, Params: p})
			}
		}
	}
	return variants
}

// evaluate has obj compute every variant's loss and checks that there is one
// finite loss per variant. Its errors number the step from 1, as a
// trainer's log does.
func (e *Engine) evaluate(obj Objective, variants []Variant) ([]float64, error) {
	losses, err := obj.Evaluate(e.params, variants)
	if err != nil {
		return nil, fmt.Errorf("zo step %d: evaluate: %w", e.step+1, err)
	}
	if len(losses) != len(variants) {
		return nil, fmt.Errorf("zo step %d: objective returned %d losses for %d variants", e.step+1, len(losses), len(variants))
	}
	for i, l := range losses {
		if math.IsNaN(l) || math.IsInf(l, 0) {
			return nil, &nonFiniteError{fmt.Sprintf("zo step %d: loss of variant %d (group %d, direction %d, sign %+d) is %g",
				e.step+1, i, variants[i].Group, variants[i].Dir, variants[i].Sign, l)}
		}
	}
	return losses, nil
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
		if e.cfg.Dist == Sphere {
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
				return nil, nil, &nonFiniteError{fmt.Sprintf("zo step %d: projected gradient %d of group %d is %g (ε %g)", e.step+1, j, u.label(), dj, eps)}
			}
		}
		st.Units[ui] = UnitStats{Group: u.label(), D: d}
	}
	// The optimizer's state moves only once every d_j is known to be finite.
	for ui, u := range units {
		weights[ui] = make([]float64, q)
		e.opt.weights(u.id, u.t, st.Units[ui].D, weights[ui])
	}
	if !oneSided {
		st.Loss = sum / float64(len(losses))
	}
	return st, weights, nil
}

// update moves θ in place chunk by chunk in parallel, forming
// ĝ = Σ_j w_j z_j from the kept z or z drawn again, and returns ‖θ_new - θ0‖.
func (e *Engine) update(units []unit, tasks []chunkTask, norms noiseNorms, kept *stepNoise, weights [][]float64) float64 {
	sq := make([]float64, len(tasks))
	parallelFor(len(tasks), e.cfg.Workers, func(k int) {
		tk := tasks[k]
		n := tk.hi - tk.lo
		sc := chunkPool.Get().(*chunkScratch)
		defer chunkPool.Put(sc)
		z, ghat := sc.z[:n], sc.ghat[:n]
		clear(ghat)
		for j, w := range weights[tk.u] {
			for i, zi := range e.chunkNoise(tk, j, kept, norms, z) {
				ghat[i] += w * float64(zi)
			}
		}
		u := units[tk.u]
		sq[k] = e.opt.update(u.id, tk.g, tk.lo, e.params[tk.g][tk.lo:tk.hi], ghat, u.t)
	})
	var ss float64
	for _, s := range sq {
		ss += s
	}
	return math.Sqrt(ss)
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
// optimizer's state (θ itself is the caller's to save).
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
