package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// expandDirs turns each argument into run directories: a run directory (it has
// summary.json) stands for itself; a sweep directory for the runs its
// sweep.json lists, or, before sweep.json exists, for every subdirectory that
// has a summary.json.
func expandDirs(args []string) ([]string, error) {
	var dirs []string
	for _, arg := range args {
		if exists(filepath.Join(arg, "summary.json")) {
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
			if sub := filepath.Join(arg, e.Name()); e.IsDir() && exists(filepath.Join(sub, "summary.json")) {
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

// TrainPoint and ValPoint are the metrics.jsonl lines the plots use.
type TrainPoint struct {
	Step   int
	Loss   float64   // NaN when null
	V      []float64 // nil when null (optimizers other than MEAZO)
	Groups []int
}

type ValPoint struct {
	Step    int
	ValLoss float64
}

type metricLine struct {
	Kind    string     `json:"kind"`
	Step    *int       `json:"step"`
	Loss    *float64   `json:"loss"`
	V       []*float64 `json:"v"`
	Groups  []int      `json:"groups"`
	ValLoss *float64   `json:"val_loss"`
}

// loadMetrics reads dir/metrics.jsonl. A step logged twice (a resumed run that
// re-did steps after its last checkpoint) keeps its last line. A final line
// without its newline is a write cut short by a kill: it is dropped with a
// warning; any other bad line is an error naming the file and line.
func loadMetrics(dir string, warn func(string)) ([]TrainPoint, []ValPoint, error) {
	path := filepath.Join(dir, "metrics.jsonl")
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, fmt.Errorf("read %s: no such file", path)
		}
		return nil, nil, fmt.Errorf("read %s: %w", path, err)
	}
	train := map[int]TrainPoint{}
	val := map[int]ValPoint{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<30)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var m metricLine
		err := json.Unmarshal(line, &m)
		if err == nil && m.Step == nil {
			err = errors.New(`field "step" missing`)
		}
		if err != nil {
			if !bytes.HasSuffix(data, []byte("\n")) && bytes.HasSuffix(bytes.TrimSpace(data), line) {
				warn(fmt.Sprintf("%s line %d: ignoring a cut-off last line", path, n))
				break
			}
			return nil, nil, fmt.Errorf("%s line %d: %v", path, n, err)
		}
		switch m.Kind {
		case "train":
			p := TrainPoint{Step: *m.Step, Loss: orNaN(m.Loss), Groups: m.Groups}
			if m.V != nil {
				p.V = make([]float64, len(m.V))
				for i, v := range m.V {
					p.V[i] = orNaN(v)
				}
			}
			train[p.Step] = p
		case "val":
			val[*m.Step] = ValPoint{Step: *m.Step, ValLoss: orNaN(m.ValLoss)}
		default: // other kinds may be added to the contract; plots ignore them
		}
	}
	if err := sc.Err(); err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", path, err)
	}
	tp := make([]TrainPoint, 0, len(train))
	for _, p := range train {
		tp = append(tp, p)
	}
	sort.Slice(tp, func(i, j int) bool { return tp[i].Step < tp[j].Step })
	vp := make([]ValPoint, 0, len(val))
	for _, p := range val {
		vp = append(vp, p)
	}
	sort.Slice(vp, func(i, j int) bool { return vp[i].Step < vp[j].Step })
	return tp, vp, nil
}
