// Package results turns finished run directories (docs/RUNDIR.md) into what a
// reader compares: it loads the runs that run and sweep directories name,
// groups them by method, seed and learning rate, and computes the seed
// statistics (running means, mean ± 2 std bands), the runs at each method's
// η*, the figures (as plot.Figures) and the tables (memory, a study's results
// as markdown and CSV). The selection rule itself (η*) is package sweep's, so
// that the figures, the tables, meazo-sweep and scripts/sweep.sh agree on it.
// cmd/meazo-plot is its command line: it parses flags and writes files.
package results

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/meazo-go/meazo/rundir"
	"github.com/meazo-go/meazo/sweep"
)

// sources turns each argument into run directories: a run directory (it has
// summary.json) stands for itself; a sweep directory for the runs its
// sweep.json lists, or, before sweep.json exists, for every subdirectory that
// has a summary.json. So a user can name a whole sweep, finished or not. The
// runs sweep.json lists as failed (no result) come back as Runs marked
// Failed, with the sweep's setting, so that the figures choose η* as the
// sweep did: a rate with a seed missing cannot be it. The runs of a sweep
// of a study's variant carry its label (sweep.json's "variant").
func sources(args []string, warn func(string)) (dirs []source, failed []sweep.Run, err error) {
	for _, arg := range args {
		if exists(filepath.Join(arg, rundir.SummaryFile)) {
			dirs = append(dirs, source{dir: arg})
			continue
		}
		if path := filepath.Join(arg, sweep.SweepFile); exists(path) {
			sw, err := sweep.ReadSweep(path)
			if err != nil {
				return nil, nil, err
			}
			for _, r := range sw.Rates {
				for _, s := range r.Seeds {
					if s.Dir == "" {
						return nil, nil, fmt.Errorf("%s: lr %g seed %d has no \"dir\"", path, r.LR, s.Seed)
					}
					if s.Failed {
						failed = append(failed, sweep.Run{Dir: filepath.Join(arg, s.Dir), Failed: true, Variant: sw.Variant,
							Summary: sweep.Summary{Model: sw.Model, Task: sw.Task, Adapter: sw.Adapter, Grouped: sw.Grouped,
								Optimizer: sw.Optimizer, LR: r.LR, Seed: s.Seed}})
						continue
					}
					dirs = append(dirs, source{filepath.Join(arg, s.Dir), sw.Variant})
				}
			}
			continue
		}
		entries, err := os.ReadDir(arg)
		if err != nil {
			return nil, nil, fmt.Errorf("read %s: %w", arg, err)
		}
		n := len(dirs)
		for _, e := range entries {
			sub := filepath.Join(arg, e.Name())
			switch {
			case !e.IsDir():
			case exists(filepath.Join(sub, rundir.SummaryFile)):
				dirs = append(dirs, source{dir: sub})
			case exists(filepath.Join(sub, rundir.ConfigFile)):
				// A seed still training, or one that stopped without a
				// summary: its rate cannot be told here (a sweep.json
				// would name it), so it is said, not silently skipped.
				warn(fmt.Sprintf("%s: a run without a result yet (still training, or stopped before it wrote summary.json): left out, so η* is chosen without it and may change", sub))
			}
		}
		if run, what := rundir.OfRun(arg); len(dirs) == n && run != "" {
			return nil, nil, fmt.Errorf("%s: not a run directory but %s's %s: give %s", arg, run, what, run)
		}
		if len(dirs) == n && exists(filepath.Join(arg, rundir.ConfigFile)) && exists(filepath.Join(arg, rundir.LockFile)) {
			return nil, nil, fmt.Errorf("%s: a run that has not ended (no summary.json yet: it is still training, or was killed; meazo-train --resume %s finishes a killed one): meazo-plot draws a run once it ends or is interrupted (SIGINT writes its summary.json)", arg, arg)
		}
		if len(dirs) == n {
			return nil, nil, fmt.Errorf("%s: not a run directory (no summary.json) nor a sweep directory (no sweep.json, no subdirectory with a summary.json)", arg)
		}
	}
	return dirs, failed, nil
}

// source is a run directory to load and the variant label its sweep gives it.
type source struct{ dir, variant string }

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// Load loads the runs the arguments name. Each is a run directory (it has
// summary.json), or a sweep directory standing for the runs its sweep.json
// lists or, before sweep.json exists, for every subdirectory with a
// summary.json. A run directory whose run did not finish is left out with a
// warning, since its numbers describe a run that did not happen as
// configured; the failed runs a sweep.json lists come back marked Failed (no
// numbers, only their rate and seed), for the choice of η*.
func Load(args []string, warn func(string)) ([]sweep.Run, error) {
	dirs, failed, err := sources(args, warn)
	if err != nil {
		return nil, err
	}
	dirs, failed = once(dirs, failed)
	var runs []sweep.Run
	for _, d := range dirs {
		r, err := sweep.LoadSummary(d.dir)
		if err != nil {
			return nil, err
		}
		if !r.Finished() {
			warn(fmt.Sprintf("skipping %s: run did not finish (%d of %d steps) %s", d.dir, r.StepsDone, r.Steps, r.Message))
			// Still a seed of its rate, with no result yet: its rate
			// cannot be η* on the seeds that did finish (as in a study).
			r.Variant, r.Failed, r.Pending = d.variant, true, true
			failed = append(failed, r)
			continue
		}
		r.Variant = d.variant
		runs = append(runs, r)
	}
	if len(runs) == 0 {
		return nil, errors.New("no finished runs in " + strings.Join(args, " "))
	}
	runs = append(runs, failed...)
	if err := checkDistinct(runs); err != nil {
		return nil, err
	}
	return runs, nil
}

// once drops the run directories named a second time (a sweep and one of
// its runs, or one sweep twice): each is one seed however it was named.
func once(dirs []source, failed []sweep.Run) ([]source, []sweep.Run) {
	seen := map[string]bool{}
	first := func(dir string) bool {
		key := filepath.Clean(dir)
		if abs, err := filepath.Abs(dir); err == nil {
			key = abs
		}
		if seen[key] {
			return false
		}
		seen[key] = true
		return true
	}
	dirs = slices.DeleteFunc(dirs, func(d source) bool { return !first(d.dir) })
	failed = slices.DeleteFunc(failed, func(r sweep.Run) bool { return !first(r.Dir) })
	return dirs, failed
}

// checkDistinct refuses two runs of one method, learning rate and seed:
// the figures would average them as two seeds (a sweep and a copy of it, or
// two attempts at a sweep that one glob names), halving the spread.
func checkDistinct(runs []sweep.Run) error {
	type key struct {
		model, task, adapter string // runs of two experiments: sweep.Setting's error
		m                    sweep.Method
		rate                 string
		seed                 uint64
	}
	dirOf := map[key]string{}
	for _, r := range runs {
		k := key{r.Model, r.Task, r.Adapter, r.Method(), sweep.RateName(r.LR), r.Seed}
		if other, ok := dirOf[k]; ok {
			return fmt.Errorf("%s and %s are both %s at lr %s, seed %d: the figures would count them as two seeds; name one of them",
				other, r.Dir, k.m, sweep.LRString(r.LR), r.Seed)
		}
		dirOf[k] = r.Dir
	}
	return nil
}

// AtBestRate keeps, for each method run at several learning rates, only the
// runs at its η* (sweep.EtaStar): loss curves compare optimizers each at its
// own best rate, as the paper does. It also returns a legend suffix per
// method saying so. A method with a diverged or failed seed at every rate
// keeps its smallest rate, so that its curve still shows how it fails.
// Failed runs count in the choice of η* (their rate cannot be it) but are
// not kept: they have nothing to draw.
func AtBestRate(runs []sweep.Run) ([]sweep.Run, map[sweep.Method]string) {
	ms, groups := sweep.ByMethod(runs)
	var kept []sweep.Run
	notes := map[sweep.Method]string{}
	for _, m := range ms {
		rates := sweep.RateStatsOf(groups[m])
		// The fallback when no rate is eligible: the smallest rate with a
		// run to draw.
		i := slices.IndexFunc(rates, func(r sweep.RateStats) bool { return r.Failed < len(r.Runs) })
		if i < 0 {
			continue // every run of this method failed: nothing to draw
		}
		if len(rates) == 1 {
			notes[m] = fmt.Sprintf(", η=%s", sweep.LRString(rates[0].LR))
		} else {
			if star := sweep.EtaStar(rates); star >= 0 {
				notes[m] = fmt.Sprintf(", η*=%s of %d rates", sweep.LRString(rates[star].LR), len(rates))
				i = star
			} else { // every rate diverged or failed somewhere: the smallest with a run, which is no η*
				notes[m] = fmt.Sprintf(", no η* (a seed diverged or failed at each of %d rates): η=%s, the smallest drawn", len(rates), sweep.LRString(rates[i].LR))
			}
		}
		kept = append(kept, finished(rates[i].Runs)...)
	}
	return kept, notes
}

// finished is runs without the failed ones (which have no numbers).
func finished(runs []sweep.Run) []sweep.Run {
	return slices.DeleteFunc(slices.Clone(runs), func(r sweep.Run) bool { return r.Failed })
}

// SeveralRates says whether some method was run at more than one learning
// rate: only then is there a step-size robustness figure to draw.
func SeveralRates(runs []sweep.Run) bool {
	ms, groups := sweep.ByMethod(runs)
	for _, m := range ms {
		if len(sweep.RateStatsOf(groups[m])) > 1 {
			return true
		}
	}
	return false
}

// VTRuns are the runs whose v_t is worth a figure: for each MEAZO method
// (joint, then grouped; each variant), its run at η* with the lowest seed that did not
// diverge (else the lowest seed). Only MEAZO logs v_t, and one seed shows its
// shape; a seed that diverged may have logged none.
func VTRuns(runs []sweep.Run) []sweep.Run {
	best, _ := AtBestRate(runs)
	ms, groups := sweep.ByMethod(best)
	var out []sweep.Run
	for _, m := range ms {
		if m.Optimizer != "meazo" {
			continue
		}
		rs := groups[m] // AtBestRate keeps a rate's runs by seed
		i := max(0, slices.IndexFunc(rs, func(r sweep.Run) bool { return !r.Diverged }))
		out = append(out, rs[i])
	}
	return out
}
