// Command meazo-synth runs the zeroth-order optimizers on synthetic quadratics
// with exact function values:
//
//	meazo-synth trace --spec SPEC.json       one optimizer, one JSON line per step
//	meazo-synth paper --out DIR [--quick]    the paper's Sec. 5.1 / App. C experiments (CSV + SVG)
//
// The subcommands are dispatched by internal/cli like those of the other
// multi-command binaries: -h after one shows its flags; exit status 0 done,
// 1 the subcommand failed (the error on one line, as
// 'meazo-synth COMMAND: …'), 2 no or an unknown subcommand.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/meazo-go/meazo/internal/cli"
	"github.com/meazo-go/meazo/internal/inputfile"
	"github.com/meazo-go/meazo/noise"
	"github.com/meazo-go/meazo/zo"
)

func main() { newCommands(os.Stderr).Main() }

// newCommands returns meazo-synth's subcommands; log gets paper's progress
// and summary, flag errors and -h text (stderr; a buffer in tests).
func newCommands(log io.Writer) *cli.Set {
	s := cli.New("meazo-synth", "command")
	s.Register("trace", "one optimizer on a diagonal quadratic from SPEC.json, one JSON line per step",
		func(args []string, _ io.Reader, stdout io.Writer) error { return runTrace(args, stdout, log) })
	s.Register("paper", "the paper's synthetic experiments (Sec. 5.1, App. C): CSV, SVG and summary.md in --out",
		func(args []string, _ io.Reader, _ io.Writer) error { return runPaper(args, log) })
	return s
}

// newFlags makes a subcommand's flag set; synopsis is what its -h prints
// after the command's name (the flags' defaults follow).
func newFlags(name, synopsis string, log io.Writer) *flag.FlagSet {
	return cli.Flags("meazo-synth", name, synopsis, log)
}

// traceSpec is SPEC.json (traceSynopsis documents it). Pointer fields are
// optional and take the optimizer's defaults (q: 1); mode (joint, grouped,
// cyclic) defaults to grouped (Jacobi) when groups are given and joint
// otherwise.
type traceSpec struct {
	H         []float64 `json:"h"`
	X0        []float64 `json:"x0"`
	Optimizer string    `json:"optimizer"`
	LR        float64   `json:"lr"`
	Eps       float64   `json:"eps"`
	Q         *int      `json:"q"`
	Steps     int       `json:"steps"`
	Seed      uint64    `json:"seed"`
	Dist      string    `json:"dist"`
	Beta1     *float64  `json:"beta1"`
	Beta2     *float64  `json:"beta2"`
	Beta      *float64  `json:"beta"`
	Zeta      *float64  `json:"zeta"`
	Groups    [][]int   `json:"groups"`
	Mode      string    `json:"mode"`
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

// traceSynopsis is trace's -h text: SPEC.json's fields.
const traceSynopsis = `--spec SPEC.json

Runs one optimizer on f(x) = ½ Σ h_i x_i² and prints one JSON line per step. SPEC.json is one object:
  h          the diagonal of the Hessian (required)
  x0         the starting point, as many values as h (required)
  optimizer  zo-sgd, zo-adam, radazo, meazo or fzoo (required)
  lr, eps    the learning rate and the perturbation size (eps required, > 0)
  steps      the number of steps
  q          directions per step (default 1; fzoo needs 2 or more)
  seed       the noise seed (default 0)
  dist       the noise: normal (default), rademacher, sphere or ternary
  beta1, beta2, beta, zeta   the optimizer's hyperparameters (default: the optimizer's)
  groups     lists of indices of x, one per parameter group (default: one group)
  mode       joint, grouped or cyclic (default: grouped with groups, else joint)
`

// runTrace runs the trace subcommand: its JSON lines go to stdout, flag
// errors and -h text to log.
func runTrace(args []string, stdout, log io.Writer) error {
	fs := newFlags("trace", traceSynopsis, log)
	specPath := fs.String("spec", "", "SPEC.json")
	if err := cli.Parse(fs, args); err != nil {
		return cli.Usage(err)
	}
	if *specPath == "" {
		return cli.Usage(fmt.Errorf("--spec is required"))
	}
	raw, err := inputfile.ReadFile(*specPath)
	if err != nil {
		return err
	}
	var sp traceSpec
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&sp); err != nil {
		return fmt.Errorf("%s: %w", *specPath, err)
	}
	if dec.More() {
		return fmt.Errorf("%s: more after the spec's JSON object (one object per file)", *specPath)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("%s: more after the spec's JSON object (one object per file)", *specPath)
	}
	bad := func(field, format string, a ...any) error {
		return fmt.Errorf("%s: field %q: %s", *specPath, field, fmt.Sprintf(format, a...))
	}
	d := len(sp.H)
	switch {
	case d == 0:
		return bad("h", "empty")
	case len(sp.X0) != d:
		return bad("x0", "has %d values, h has %d", len(sp.X0), d)
	case !(sp.Eps > 0):
		return bad("eps", "must be positive, got %g", sp.Eps)
	case sp.Q != nil && *sp.Q < 1:
		return bad("q", "must be at least 1, got %d", *sp.Q)
	case sp.Steps < 0:
		return bad("steps", "negative (%d)", sp.Steps)
	}
	if sp.Dist == "" {
		sp.Dist = "normal"
	}
	dist, err := noise.ParseDist(sp.Dist)
	if err != nil {
		return bad("dist", "%v", err)
	}
	groups := sp.Groups
	mode := zo.Joint
	if groups == nil {
		all := make([]int, d)
		for i := range all {
			all[i] = i
		}
		groups = [][]int{all}
	} else {
		mode = zo.Grouped
		seen := make([]bool, d)
		for g, idx := range groups {
			if len(idx) == 0 {
				return bad("groups", "group %d is empty", g)
			}
			for _, i := range idx {
				if i < 0 || i >= d || seen[i] {
					return bad("groups", "index %d in group %d is out of range or repeated", i, g)
				}
				seen[i] = true
			}
		}
		for i, s := range seen {
			if !s {
				return bad("groups", "index %d belongs to no group", i)
			}
		}
	}
	if sp.Mode != "" {
		if mode, err = zo.ParseMode(sp.Mode); err != nil {
			return bad("mode", "%v", err)
		}
	}
	opt, err := newOptimizer(optimizerSettings{sp.Optimizer, sp.LR, sp.Beta1, sp.Beta2, sp.Beta, sp.Zeta})
	if err != nil {
		return bad("optimizer", "%v", err)
	}
	lay := newLayout(d, groups)
	params := lay.split(sp.X0)
	q := 1
	if sp.Q != nil {
		q = *sp.Q
	}
	eng, err := zo.New(params, opt, zo.Config{Eps: sp.Eps, Q: q, Dist: dist, Seed: sp.Seed, Mode: mode})
	if err != nil {
		return fmt.Errorf("%s: %w", *specPath, err)
	}
	obj := zo.Func(lay.objective(diagonal(sp.H)))
	w := bufio.NewWriter(stdout)
	enc := json.NewEncoder(w)
	for range sp.Steps {
		st, err := eng.Step(obj)
		if err != nil {
			return err
		}
		var ds []float64
		for _, u := range st.Units {
			ds = append(ds, u.D...)
		}
		line := struct {
			Step int       `json:"step"`
			Loss float64   `json:"loss"`
			D    []float64 `json:"d"`
			V    []float64 `json:"v"`
			X    []float64 `json:"x"`
		}{st.Step, st.Loss, ds, st.V, lay.flat(params)}
		if err := enc.Encode(line); err != nil {
			return err
		}
	}
	return w.Flush()
}
