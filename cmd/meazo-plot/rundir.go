package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/meazo-go/meazo/rundir"
)

// expandDirs turns each argument into run directories: a run directory (it has
// summary.json) stands for itself; a sweep directory for the runs its
// sweep.json lists, or, before sweep.json exists, for every subdirectory that
// has a summary.json.
func expandDirs(args []string) ([]string, error) {
	var dirs []string
	for _, arg := range args {
		if exists(filepath.Join(arg, rundir.SummaryFile)) {
			dirs = append(dirs, arg)
			continue
		}
		if path := filepath.Join(arg, "sweep.json"); exists(path) {
			data, err := os.ReadFile(path)
			if err != nil {
				return nil, fmt.Errorf("read %s: %w", path, err)
			}
			var sw Sweep
			if err := json.Unmarshal(data, &sw); err != nil {
				return nil, fmt.Errorf("parse %s: %w", path, err)
			}
			for _, r := range sw.Rates {
				for _, s := range r.Seeds {
					if s.Failed {
						continue // no result (meazo-sweep: the run failed); sweep.json says so
					}
					if s.Dir == "" {
						return nil, fmt.Errorf("%s: lr %g seed %d has no \"dir\"", path, r.LR, s.Seed)
					}
					dirs = append(dirs, filepath.Join(arg, s.Dir))
				}
			}
			continue
		}
		entries, err := os.ReadDir(arg)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", arg, err)
		}
		n := len(dirs)
		for _, e := range entries {
			if sub := filepath.Join(arg, e.Name()); e.IsDir() && exists(filepath.Join(sub, rundir.SummaryFile)) {
				dirs = append(dirs, sub)
			}
		}
		if len(dirs) == n {
			return nil, fmt.Errorf("%s: not a run directory (no summary.json) nor a sweep directory (no sweep.json, no subdirectory with a summary.json)", arg)
		}
	}
	return dirs, nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// loadRuns loads the runs the arguments name (see expandDirs). Runs that
// failed (neither finished nor diverged) are left out with a warning, since
// their numbers describe a run that did not happen as configured.
func loadRuns(args []string, warn func(string)) ([]Run, error) {
	dirs, err := expandDirs(args)
	if err != nil {
		return nil, err
	}
	var runs []Run
	for _, d := range dirs {
		r, err := loadSummary(d)
		if err != nil {
			return nil, err
		}
		if !r.Finished() {
			warn(fmt.Sprintf("skipping %s: run did not finish (%d of %d steps) %s", d, r.StepsDone, r.Steps, r.Message))
			continue
		}
		runs = append(runs, r)
	}
	if len(runs) == 0 {
		return nil, errors.New("no finished runs in " + strings.Join(args, " "))
	}
	return runs, nil
}

// sameSetting checks that the runs come from one experiment (model, task and
// adapter), which every figure compares across optimizers, and returns it.
func sameSetting(runs []Run) (string, error) {
	first := runs[0]
	for _, r := range runs[1:] {
		if r.Model != first.Model || r.Task != first.Task || r.Adapter != first.Adapter {
			return "", fmt.Errorf("runs from different experiments: %s is %s/%s/%s, %s is %s/%s/%s; plot them separately",
				first.Dir, first.Model, first.Task, first.Adapter, r.Dir, r.Model, r.Task, r.Adapter)
		}
	}
	var parts []string
	if first.Model != "" {
		parts = append(parts, filepath.Base(first.Model))
	}
	for _, p := range []string{first.Task, first.Adapter} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, ", "), nil
}

// One colour per optimizer; grouped variants get their own colour (and a
// dashed line) so that both can share a figure.
var colors = map[string]string{"meazo": "#1f77b4", "zo-sgd": "#d62728", "zo-adam": "#2ca02c", "radazo": "#ff7f0e", "fzoo": "#9467bd"}
var groupedColors = map[string]string{"meazo": "#17becf", "zo-sgd": "#e377c2", "zo-adam": "#bcbd22", "radazo": "#8c564b", "fzoo": "#7f7f7f"}

// methodColor is a method's colour in every figure.
func methodColor(m Method) string {
	table := colors
	if m.Grouped {
		table = groupedColors
	}
	if c, ok := table[m.Optimizer]; ok {
		return c
	}
	return "" // the plot palette
}
