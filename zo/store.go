package zo

import (
	"fmt"

	"github.com/meazo-go/meazo/noise"
	"github.com/meazo-go/meazo/update"
)

// Store holds θ where the engine cannot hand out slices of it: a model's
// own weights on its device, full-parameter ZO. The engine then never reads
// or copies θ. Each variant tells the objective which noise to add to which
// groups (Variant.Perturbation), so that the model can form θ0 ± εz as it
// reads its weights, and the store applies each step's update in place,
// drawing z again where θ is. Nothing the size of θ is kept besides θ: no
// copy, no z, and the optimizer's per-coordinate state (ZO-Adam's moments)
// lives in the store, next to θ.
type Store interface {
	// Dims returns the number of parameters in each group, in the
	// canonical order the noise counts elements in.
	Dims() []int
	// Update moves group g in place by u and returns Σ (θ_new − θ_old)²
	// over the group's coordinates as stored. An error (a device's) may
	// leave θ part moved: the run ends and resumes from its checkpoint.
	Update(g int, u StoreUpdate) (float64, error)
}

// StoreUpdate is one step's update of one group of a Store: for every
// coordinate i, ĝ_i = Σ_j Weights[j]·z_j[i], z_j being element i of
// Streams[j] under Dist (divided by Norms[j] for sphere noise), then Rule
// moves θ_i and the coordinate's optimizer state.
type StoreUpdate struct {
	Streams []noise.Stream
	Dist    noise.Dist
	Norms   []float64 // per direction: 1 but for sphere noise
	Weights []float64
	Rule    update.Rule
}

// Perturbation says how a variant of an engine over a Store differs from
// θ0: each group Groups[i] is θ0 + Scale·z, z the values of Streams[i]
// under Dist divided by Norms[i] (1 but for sphere noise), every perturbed
// coordinate rounded to float32 as noise.Perturbed rounds it.
type Perturbation struct {
	Groups  []int
	Streams []noise.Stream
	Norms   []float64
	Dist    noise.Dist
	Scale   float64 // +ε or −ε
}

// Of returns the stream, norm and whether group g is perturbed.
func (p *Perturbation) Of(g int) (s noise.Stream, norm float64, ok bool) {
	for i, pg := range p.Groups {
		if pg == g {
			return p.Streams[i], p.Norms[i], true
		}
	}
	return noise.Stream{}, 0, false
}

// NewStore returns an engine that steps the θ held by s with opt. The
// optimizer keeps no per-coordinate state of its own: s keeps it
// (update.Rule.States values per coordinate).
func NewStore(s Store, opt Optimizer, cfg Config) (*Engine, error) {
	e, err := newEngine(s.Dims(), opt, cfg, true)
	if err != nil {
		return nil, err
	}
	e.θ = &storeParams{e: e, s: s}
	return e, nil
}

// storeParams is θ in a Store.
type storeParams struct {
	e *Engine
	s Store
}

func (*storeParams) base() [][]float32               { return nil }
func (*storeParams) perturb(int, []unit, noiseNorms) {}
func (*storeParams) drawAhead(int)                   {}

func (p *storeParams) norms(step int, units []unit) noiseNorms {
	return p.e.sphereNorms(step, units, p.e.cfg.Workers)
}

// variants lists the step's variants in the order hostParams does, each
// with its Perturbation and no Params.
func (p *storeParams) variants(step int, units []unit, norms noiseNorms) []Variant {
	e := p.e
	var variants []Variant
	if e.opt.oneSided() {
		variants = append(variants, Variant{Group: Clean})
	}
	for _, u := range units {
		for j := range e.cfg.Q {
			for _, sign := range e.signs() {
				pt := &Perturbation{Groups: u.groups, Dist: e.cfg.Dist, Scale: float64(sign) * e.cfg.Eps}
				for _, g := range u.groups {
					pt.Streams = append(pt.Streams, e.stream(step, g, j))
					pt.Norms = append(pt.Norms, norms.at(g, j))
				}
				variants = append(variants, Variant{Group: u.label(), Dir: j, Sign: sign, Perturbation: pt})
			}
		}
	}
	return variants
}

// update has the store move every group of every unit.
func (p *storeParams) update(step int, units []unit, norms noiseNorms, weights [][]float64) (float64, error) {
	e := p.e
	var ss float64
	for ui, u := range units {
		rule := e.rule(u, step)
		for _, g := range u.groups {
			su := StoreUpdate{Dist: e.cfg.Dist, Weights: weights[ui], Rule: rule}
			for j := range e.cfg.Q {
				su.Streams = append(su.Streams, e.stream(step, g, j))
				su.Norms = append(su.Norms, norms.at(g, j))
			}
			s, err := p.s.Update(g, su)
			if err != nil {
				return 0, fmt.Errorf("group %d: %w", g, err)
			}
			ss += s
		}
	}
	return ss, nil
}
