package train

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/meazo-go/meazo/internal/atomicfile"
	"github.com/meazo-go/meazo/model"
	"github.com/meazo-go/meazo/rundir"
	"github.com/meazo-go/meazo/tensor"
)

// Summary is summary.json (docs/RUNDIR.md); package rundir owns the format.
type Summary = rundir.Summary

// newSummary is the summary of the run as configured, before it ends.
func (r *run) newSummary() Summary {
	cfg := r.cfg
	return Summary{Model: cfg.ModelName(), Task: cfg.Task.Name, Adapter: cfg.Adapter.Kind, Grouped: cfg.Adapter.Grouped,
		Optimizer: cfg.Optimizer.Name, LR: cfg.Optimizer.LR, Seed: cfg.Train.Seed, Steps: cfg.Train.Steps,
		TrainableParams: int(r.tr.count()), Test: map[string]map[string]float64{}}
}

// testEvaluation scores the best and the last adapter (and the base model
// with eval.base) on the test split into the summary, going on from where a
// stopped one's checkpoint left it (r.state.Test). A stop request ends it
// between batches: it returns the request's reason, and r.state.Test says how
// far it got.
func (r *run) testEvaluation() (string, error) {
	if r.cfg.Eval.Skip || len(r.data.test) == 0 {
		return "", nil
	}
	evals := r.tr.tests(r.cfg.Eval.Base)
	if r.state.Test == nil {
		r.state.Test = &testProgress{}
	}
	tp := r.state.Test
	if tp.Finished == nil {
		tp.Finished = map[string]map[string]float64{}
	}
	whom := "the best and the last adapter"
	if r.cfg.Adapter.Kind == "full" {
		whom = "the last and the best weights"
	}
	if r.cfg.Eval.Base {
		whom += ", and the base model"
	}
	r.out.begin("test evaluation", fmt.Sprintf("test evaluation: %s, on %d examples of %s", whom, len(r.data.test), r.cfg.Task.Test))
	for _, e := range evals {
		if res, ok := tp.Finished[e.name]; ok {
			r.summary.Test[e.name] = res
			continue
		}
		r.out.doing("test evaluation (" + e.name + ")")
		if tp.Current != e.name {
			tp.Current, tp.Partial = e.name, evalPartial{}
		}
		pass := newEvalPass("test ("+e.name+")", len(r.data.test), r.note, r.stopRequested)
		var res map[string]float64
		err := e.with(func(m *model.Model) (err error) {
			res, err = r.eval.testMetrics(m, r.data.test, e.name, pass, &tp.Partial)
			return err
		})
		if reason, stopped := stopReason(err); stopped {
			return reason, nil
		}
		if err != nil {
			return "", fmt.Errorf("test evaluation (%s adapter): %w", e.name, err)
		}
		r.summary.Test[e.name] = res
		tp.Finished[e.name], tp.Current, tp.Partial = res, "", evalPartial{}
	}
	return "", nil
}

// testCut says, in an interruption's message, how far the test evaluation got.
func (r *run) testCut() string {
	tp := r.state.Test
	whose := func(name string) string {
		if name == "base" {
			return "the base model's"
		}
		return "the " + name + " adapter's"
	}
	var done []string
	for _, name := range []string{"best", "last", "base"} {
		if _, ok := tp.Finished[name]; ok {
			done = append(done, whose(name))
		}
	}
	s := fmt.Sprintf("during the test evaluation, at example %d of %d of %s", tp.Partial.Done, len(r.data.test), whose(tp.Current))
	if len(done) > 0 {
		s += ", after " + strings.Join(done, " and ")
	}
	return s + "; resume goes on from there"
}

func (r *run) fillSummary() {
	r.summary.BestValLoss, r.summary.BestStep, r.summary.LastValLoss = finite(r.state.BestValLoss), r.state.BestStep, finite(r.state.LastValLoss)
	r.summary.StateBytes = r.engine.Optimizer().StateBytes() + r.tr.stateBytes()
	r.summary.PeakRSSBytes = peakRSS()
	if dm, ok := r.backend.(tensor.DeviceMemory); ok {
		_, peak := dm.DeviceMemory()
		r.summary.PeakDeviceBytes = int64(peak)
	}
	r.summary.Changes = readChanges(r.dir)
	r.summary.Backend = r.backend.Name() + ": " + r.backend.Describe()
	if r.state.Step > 0 {
		r.summary.SecondsPerStep = r.state.Seconds / float64(r.state.Step)
	}
}

func (r *run) writeSummary() error {
	b, err := json.MarshalIndent(r.summary, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(r.dir, rundir.SummaryFile), b)
}

// finite returns &x, or nil for NaN and ±Inf (JSON has no such numbers).
func finite(x float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return &x
}

// peakRSS reads the process's peak resident set size (VmHWM) in bytes.
func peakRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		var kb int64
		if _, err := fmt.Sscanf(line, "VmHWM: %d kB", &kb); err == nil {
			return kb * 1024
		}
	}
	return 0
}
