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

// diverged ends a run whose loss or projected gradient became NaN/Inf,
// keeping the last checkpoint and the best adapter as they are.
func (r *run) diverged(step int) (*Summary, error) {
	r.summary.Diverged, r.summary.Status = true, rundir.StatusDiverged
	r.summary.DivergedAt = &step
	r.summary.StepsDone = step - 1
	r.summary.Message = fmt.Sprintf("diverged at step %d: the training or validation loss, or a projected gradient, is NaN or infinite (learning rate %g too large?); "+
		"the last checkpoint (step %d) and the best adapter (step %d) are kept", step, r.cfg.Optimizer.LR, r.lastCheckpointStep(), r.state.BestStep)
	fmt.Fprintf(r.log, "%s\n", r.summary.Message)
	r.fillSummary()
	return &r.summary, r.writeSummary()
}

// finish saves the last adapter, evaluates on the test split and writes the summary.
func (r *run) finish() (*Summary, error) {
	if err := r.tr.saveLast(r.dir); err != nil {
		return nil, err
	}
	resumedTest := r.state.Test != nil // the checkpoint holds a test evaluation a stop cut short
	reason, err := r.testEvaluation()
	if err != nil {
		return nil, err
	}
	if reason != "" {
		if err := r.checkpoint(); err != nil { // with how far the test evaluation got
			return nil, fmt.Errorf("interrupted by %s during the test evaluation: checkpoint: %w", reason, err)
		}
		return r.interrupted(r.state.Step, reason, r.testCut())
	}
	// The test evaluation is over. A checkpoint that says it is under way
	// is written again, as an uninterrupted run leaves it.
	r.state.Test = nil
	if resumedTest {
		if err := r.checkpoint(); err != nil {
			return nil, err
		}
	}
	r.summary.StepsDone, r.summary.Status = r.state.Step, rundir.StatusDone
	r.fillSummary()
	if err := r.writeSummary(); err != nil {
		return nil, err
	}
	what := "the adapter"
	if r.cfg.Adapter.Kind == "full" {
		what = "the model"
	}
	fmt.Fprintf(r.log, "results in %s: summary.json, best/ (%s of the lowest validation loss), last/\n", r.dir, what)
	return &r.summary, nil
}

// testEvaluation scores the best and the last adapter (and the base model
// with eval.base) on the test split into the summary, going on from where a
// stopped one's checkpoint left it (r.state.Test). A stop request ends it
// between batches: it returns the request's reason, and r.state.Test says how
// far it got.
func (r *run) testEvaluation() (string, error) {
	_, _, nTest := r.data.sizes()
	if r.cfg.Eval.Skip || nTest == 0 {
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
	r.out.begin("test evaluation", fmt.Sprintf("test evaluation: %s, on %d examples of %s", whom, nTest, r.cfg.Task.Test))
	for _, e := range evals {
		if res, ok := tp.Finished[e.name]; ok {
			r.summary.Test[e.name] = res
			continue
		}
		r.out.doing("test evaluation (" + e.name + ")")
		if tp.Current != e.name {
			tp.Current, tp.Partial = e.name, evalPartial{}
		}
		pass := newEvalPass("test ("+e.name+")", nTest, r.note, r.stopRequested)
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
	_, _, nTest := r.data.sizes()
	s := fmt.Sprintf("during the test evaluation, at example %d of %d of %s", tp.Partial.Done, nTest, whose(tp.Current))
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
