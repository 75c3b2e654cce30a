package synth

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/meazo-go/meazo/noise"
	"github.com/meazo-go/meazo/zo"
)

// SpecHelp documents a trace's spec file, one JSON object (meazo-synth
// trace -h prints it).
const SpecHelp = `SPEC.json (--spec): one JSON object:
  h          the diagonal of the Hessian (required)
  x0         the starting point, as many values as h (required)
  optimizer  zo-sgd, zo-adam, radazo, meazo or fzoo (required)
  lr, eps    the learning rate (required, ≥ 0) and the perturbation size (required, > 0)
  steps      the number of steps (required, ≥ 1)
  q          directions per step (default 1; fzoo needs 2 or more)
  seed       the noise seed (default 0)
  dist       the noise: normal, rademacher, sphere or ternary (default: rademacher for fzoo, as meazo-train's; else normal)
  beta1, beta2, beta, zeta   the optimizer's hyperparameters (default: the optimizer's; beta1 and beta2
             are zo-adam's and radazo's, beta and zeta meazo's: another optimizer's are refused)
  groups     lists of indices of x, one per parameter group (default: one group)
  mode       joint, grouped or cyclic (default: grouped with groups, else joint)
`

// traceSpec is a spec file (SpecHelp documents it). Pointer fields are
// optional and take the optimizer's defaults (q: 1), but lr and steps,
// which a spec must give (a trace that forgot them printed nothing, or
// never moved, and said nothing); mode (joint, grouped,
// cyclic) defaults to grouped (Jacobi) when groups are given and joint
// otherwise.
type traceSpec struct {
	H         []float64 `json:"h"`
	X0        []float64 `json:"x0"`
	Optimizer string    `json:"optimizer"`
	LR        *float64  `json:"lr"`
	Eps       float64   `json:"eps"`
	Q         *int      `json:"q"`
	Steps     *int      `json:"steps"`
	Seed      uint64    `json:"seed"`
	Dist      string    `json:"dist"`
	Beta1     *float64  `json:"beta1"`
	Beta2     *float64  `json:"beta2"`
	Beta      *float64  `json:"beta"`
	Zeta      *float64  `json:"zeta"`
	Groups    [][]int   `json:"groups"`
	Mode      string    `json:"mode"`
}

// A Trace is one optimizer on a diagonal quadratic, ready to run.
type Trace struct {
	steps  int
	eng    *zo.Engine
	obj    zo.Func
	lay    *layout
	params [][]float32
}

// ParseTrace reads a spec file's bytes (SpecHelp) and sets the trace up. An
// error names the field at fault; the caller adds the file's name.
func ParseTrace(spec []byte) (*Trace, error) {
	var sp traceSpec
	dec := json.NewDecoder(bytes.NewReader(spec))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&sp); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("more after the spec's JSON object (one object per file)")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("more after the spec's JSON object (one object per file)")
	}
	return sp.trace()
}

// badField is the error of one field of a spec.
func badField(field, format string, a ...any) error {
	return fmt.Errorf("field %q: %s", field, fmt.Sprintf(format, a...))
}

// trace checks the spec's fields and makes its engine.
func (sp *traceSpec) trace() (*Trace, error) {
	d := len(sp.H)
	switch {
	case d == 0:
		return nil, badField("h", "empty")
	case len(sp.X0) != d:
		return nil, badField("x0", "has %d values, h has %d", len(sp.X0), d)
	case !(sp.Eps > 0):
		return nil, badField("eps", "must be positive, got %g", sp.Eps)
	case sp.Q != nil && *sp.Q < 1:
		return nil, badField("q", "must be at least 1, got %d", *sp.Q)
	case sp.LR == nil:
		return nil, badField("lr", "missing (the learning rate; 0 keeps x where it is)")
	case !(*sp.LR >= 0) || math.IsInf(*sp.LR, 1):
		return nil, badField("lr", "must be finite and at least 0, got %g", *sp.LR)
	case sp.Steps == nil:
		return nil, badField("steps", "missing (the number of steps to trace)")
	case *sp.Steps < 1:
		return nil, badField("steps", "must be at least 1, got %d", *sp.Steps)
	}
	if sp.Dist == "" {
		sp.Dist = "normal"
		if sp.Optimizer == "fzoo" {
			sp.Dist = "rademacher" // its reference's, and meazo-train's default for it
		}
	}

	dist, err := noise.ParseDist(sp.Dist)
	if err != nil {
		return nil, badField("dist", "%v", err)
	}
	groups, mode, err := sp.groups()
	if err != nil {
		return nil, err
	}
	opt, err := newOptimizer(optimizerSettings{sp.Optimizer, *sp.LR, sp.Beta1, sp.Beta2, sp.Beta, sp.Zeta})
	if err != nil {
		return nil, badField("optimizer", "%v", err)
	}
	if err := sp.checkHyperparameters(); err != nil {
		return nil, err
	}
	t := &Trace{steps: *sp.Steps, lay: newLayout(d, groups)}
	t.params = t.lay.split(sp.X0)
	q := 1
	if sp.Q != nil {
		q = *sp.Q
	}
	if t.eng, err = zo.New(t.params, opt, zo.Config{Eps: sp.Eps, Q: q, Dist: dist, Seed: sp.Seed, Mode: mode}); err != nil {
		return nil, err
	}
	t.obj = zo.Func(t.lay.objective(diagonal(sp.H)))
	return t, nil
}

// groups returns the spec's parameter groups (one of every coordinate
// when it gives none) and its estimation mode, checking that the groups
// cover each coordinate once.
func (sp *traceSpec) groups() ([][]int, zo.Mode, error) {
	d := len(sp.H)
	groups, mode := sp.Groups, zo.Joint
	if groups == nil {
		groups = [][]int{seq(d)}
	} else {
		mode = zo.Grouped
		seen := make([]bool, d)
		for g, idx := range groups {
			if len(idx) == 0 {
				return nil, 0, badField("groups", "group %d is empty", g)
			}
			for _, i := range idx {
				if i < 0 || i >= d || seen[i] {
					return nil, 0, badField("groups", "index %d in group %d is out of range or repeated", i, g)
				}
				seen[i] = true
			}
		}
		for i, s := range seen {
			if !s {
				return nil, 0, badField("groups", "index %d belongs to no group", i)
			}
		}
	}
	if sp.Mode != "" {
		var err error
		if mode, err = zo.ParseMode(sp.Mode); err != nil {
			return nil, 0, badField("mode", "%v", err)
		}
	}
	return groups, mode, nil
}

// traceLine is one step of a trace's output.
type traceLine struct {
	Step int       `json:"step"`
	Loss float64   `json:"loss"`
	D    []float64 `json:"d"`
	V    []float64 `json:"v"`
	X    []float64 `json:"x"`
}

// checkHyperparameters refuses a hyperparameter the spec's optimizer does
// not have: it was left unused, the trace the same as without it.
func (sp *traceSpec) checkHyperparameters() error {
	adam := sp.Optimizer == "zo-adam" || sp.Optimizer == "radazo"
	for _, h := range []struct {
		field string
		given bool
		has   bool
	}{{"beta1", sp.Beta1 != nil, adam}, {"beta2", sp.Beta2 != nil, adam},
		{"beta", sp.Beta != nil, sp.Optimizer == "meazo"}, {"zeta", sp.Zeta != nil, sp.Optimizer == "meazo"}} {
		if h.given && !h.has {
			return badField(h.field, "%s has no %s (beta1 and beta2 are zo-adam's and radazo's, beta and zeta meazo's)", sp.Optimizer, h.field)
		}
	}
	return nil
}

// Run takes the trace's steps, writing one JSON line per step to w: the
// step, its loss, the projected gradients of every unit (d), the second
// moments the optimizer reports (v, MEAZO's per group) and the point after
// the step (x).
func (t *Trace) Run(w io.Writer) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	for i := range t.steps {
		st, err := t.eng.Step(t.obj)
		if err != nil {
			// The lines of the steps that ran are written, then the error.
			return errors.Join(bw.Flush(), fmt.Errorf("after %d of %d steps: %w", i, t.steps, err))
		}
		var ds []float64
		for _, u := range st.Units {
			ds = append(ds, u.D...)
		}
		if err := enc.Encode(traceLine{st.Step, st.Loss, ds, st.V, t.lay.flat(t.params)}); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// optimizerSettings names an optimizer and its hyperparameters; zero values
// of the optional fields mean the defaults.
type optimizerSettings struct {
	name                     string
	lr                       float64
	beta1, beta2, beta, zeta *float64
}

func newOptimizer(s optimizerSettings) (zo.Optimizer, error) {
	set := func(dst *float64, v *float64) {
		if v != nil {
			*dst = *v
		}
	}
	switch s.name {
	case "zo-sgd":
		return zo.NewSGD(s.lr), nil
	case "zo-adam":
		o := zo.NewAdam(s.lr)
		set(&o.Beta1, s.beta1)
		set(&o.Beta2, s.beta2)
		return o, nil
	case "radazo":
		o := zo.NewRAdaZO(s.lr)
		set(&o.Beta1, s.beta1)
		set(&o.Beta2, s.beta2)
		return o, nil
	case "meazo":
		o := zo.NewMEAZO(s.lr)
		set(&o.Beta, s.beta)
		set(&o.Zeta, s.zeta)
		return o, nil
	case "fzoo":
		return zo.NewFZOO(s.lr), nil
	}
	return nil, fmt.Errorf("unknown optimizer %q (want zo-sgd, zo-adam, radazo, meazo or fzoo)", s.name)
}
