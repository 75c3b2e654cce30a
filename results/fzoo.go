package results

import (
	"fmt"
	"math"
	"strings"

	"github.com/meazo-go/meazo/rundir"
)

// FZOORate is what FZOO runs say about ZO-SGD's learning rate. FZOO divides
// its step by σ_t, the std of the step's projected gradients (metrics.jsonl's
// "sigma"); a ZO-SGD step of rate η/σ_t moves θ as FZOO's of rate η does. The
// MEAZO paper sets ZO-SGD's rate for its full-model comparison (Figure 20) so:
// FZOO's η over the mean σ_t of a FZOO run.
type FZOORate struct {
	Runs      []string // the FZOO run directories
	LR        float64  // their η (all alike)
	Steps     int      // how many σ_t were averaged: every step's (each group's when grouped) of every run
	MeanSigma float64  // the mean σ_t
	ZOSGDRate float64  // LR / MeanSigma
}

// FZOORateOf averages σ_t over the FZOO runs that args name: run
// directories, or sweep directories standing for their runs (as the figure
// commands read them: a study's fig20_fzoo_fzoo names its seeds' runs).
// summary.json names the optimizer and η; a run that is not FZOO's, or of
// another η, is an error, and so is one without σ_t (written before
// metrics.jsonl had it) and one with a step that moved at another rate than
// η (a schedule, a rate changed on resume): the equation needs one constant η.
// A run named twice (a sweep and one of its runs) counts once; a run that
// did not finish (interrupted, or still running) is left out with a
// warning, as the figures leave it out. Non-finite σ_t (a diverged step) are left out, and
// so are the runs a sweep lists as failed, each with a warning.
func FZOORateOf(args []string, warn func(string)) (FZOORate, error) {
	var r FZOORate
	srcs, failed, err := sources(args, warn)
	if err != nil {
		return r, err
	}
	srcs, failed = once(srcs, failed)
	for _, f := range failed {
		warn(fmt.Sprintf("skipping %s: its sweep lists it as failed", f.Dir))
	}
	var sum float64
	for _, src := range srcs {
		dir := src.dir
		s, err := rundir.ReadSummary(dir)
		if err != nil {
			return r, err
		}
		if !s.Finished() {
			warn(fmt.Sprintf("skipping %s: run did not finish (%d of %d steps)", dir, s.StepsDone, s.Steps))
			continue
		}
		r.Runs = append(r.Runs, dir)
		switch {
		case s.Optimizer != "fzoo":
			return r, fmt.Errorf("%s: a %s run, not FZOO's", dir, s.Optimizer)
		case r.LR != 0 && s.LR != r.LR:
			return r, fmt.Errorf("%s: η %g, the other runs' %g: give runs of one rate (a sweep's lr=RATE_seed=* directories)", dir, s.LR, r.LR)
		}
		r.LR = s.LR
		train, _, err := rundir.ReadMetrics(dir, warn)
		if err != nil {
			return r, err
		}
		n := 0
		for _, p := range train {
			// The equation holds for one constant η: a step that moved at
			// another rate (a schedule's warmup or decay, a resume's --set
			// optimizer.lr) has no one ZO-SGD rate to match. Lines without
			// "lr" (NaN) are older runs' and were all at optimizer.lr.
			if !math.IsNaN(p.LR) && p.LR != s.LR {
				return r, fmt.Errorf("%s step %d moved at η %g, not the run's %g (optimizer.schedule, or a resume's --set optimizer.lr: changes.jsonl): η / mean σ_t needs FZOO runs at one constant rate", dir, p.Step, p.LR, s.LR)
			}
			for _, sg := range p.Sigma {
				if math.IsNaN(sg) || math.IsInf(sg, 0) {
					warn(fmt.Sprintf("%s step %d: σ_t is not finite, left out", dir, p.Step))
					continue
				}
				sum += sg
				n++
			}
		}
		if n == 0 {
			return r, fmt.Errorf("%s: metrics.jsonl has no σ_t (\"sigma\"): a run of a meazo-train that did not log it?", dir)
		}
		r.Steps += n
	}
	if len(r.Runs) == 0 {
		return r, fmt.Errorf("no finished FZOO run in %s", strings.Join(args, " "))
	}
	r.MeanSigma = sum / float64(r.Steps)
	if !(r.MeanSigma > 0) {
		return r, fmt.Errorf("mean σ_t %g: FZOO did not move (every step's losses equal)", r.MeanSigma)
	}
	r.ZOSGDRate = r.LR / r.MeanSigma
	return r, nil
}
