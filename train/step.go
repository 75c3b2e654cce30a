// What one step of the training loop (run.go) computes and logs: its
// mini-batch, the check that its numbers are finite, its lines in
// metrics.jsonl and timing.jsonl, and the validation loss.

package train

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/meazo-go/meazo/rundir"
	"github.com/meazo-go/meazo/zo"
)

// nextBatch draws the next mini-batch of training examples and hands it to
// the objective.
func (r *run) nextBatch() error {
	return r.modality.setBatch(r.sampler.Next(r.cfg.Train.BatchSize))
}

// finiteStats reports whether every number of the step's stats is finite.
func finiteStats(st *zo.Stats) bool {
	ok := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
	if !ok(st.Loss) || !ok(st.UpdateNorm) {
		return false
	}
	for _, l := range st.Losses {
		if !ok(l) {
			return false
		}
	}
	for _, u := range st.Units {
		for _, d := range u.D {
			if !ok(d) {
				return false
			}
		}
	}
	return true
}

// logStep appends the step's line to metrics.jsonl (and timing.jsonl).
func (r *run) logStep(step int, st *zo.Stats, secs float64) error {
	line := rundir.TrainLine{Kind: rundir.KindTrain, Step: step, Loss: st.Loss, Losses: st.Losses,
		UpdateNorm: st.UpdateNorm, LR: r.cfg.Optimizer.LR * st.LRFactor, V: st.V}
	for _, u := range st.Units {
		line.D = append(line.D, u.D)
		line.Groups = append(line.Groups, u.Group)
		if r.cfg.Optimizer.Name == "fzoo" {
			line.Sigma = append(line.Sigma, u.Sigma)
		}
	}
	if err := writeJSONLine(r.metrics, line); err != nil {
		return err
	}
	return writeJSONLine(r.timing, rundir.TimingLine{Step: step, Seconds: secs, LayerEvals: r.modality.objective().layerEvals()})
}

func writeJSONLine(f *os.File, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("write %s: %w", f.Name(), err)
	}
	return nil
}

// validate computes the validation loss (and, with
// eval.validation_metrics, the task's metric on the validation split) and
// keeps the best adapter. It returns false if the loss is not finite (the
// run has diverged). Nothing is logged or kept until both are done, so that
// a stop in either part leaves the validation to run again whole.
func (r *run) validate(step int) (bool, error) {
	what := fmt.Sprintf("validation of step %d", step)
	r.out.doing(what)
	_, nVal, _ := r.modality.sizes()
	pass := newEvalPass(what, nVal, r.note, r.stopRequested)
	r.tr.attach()
	t0 := time.Now()
	loss, err := r.modality.validationLoss(pass)
	if err == nil {
		r.valSecs, r.valStep = time.Since(t0).Seconds(), step
	}
	var metrics map[string]float64
	if err == nil && finite(loss) != nil && r.cfg.Eval.ValidationMetrics {
		metrics, err = r.validationMetrics(step)
	}
	r.tr.detach()
	if err != nil {
		return false, fmt.Errorf("validation at step %d: %w", step, err)
	}
	if finite(loss) == nil {
		return false, nil
	}
	r.state.LastValLoss, r.state.LastValMetrics, r.lastValStep = loss, metrics, step
	line := rundir.ValLine{Kind: rundir.KindVal, Step: step, ValLoss: loss, ValMetrics: metrics}
	if metrics != nil {
		line.ValMetricExamples = r.modality.metricExamples()
	}
	if err := writeJSONLine(r.metrics, line); err != nil {
		return false, err
	}
	// The validation is done: a checkpoint from here on (a new best's of
	// the model's own weights, below) holds it, and must not ask a resume
	// to run it again (which would log it twice and count it twice
	// against train.patience).
	r.state.ValidationPending = false
	r.note(validationNote(step, loss, metrics, r.state.BestValLoss))
	r.state.SinceBest++
	if loss < r.state.BestValLoss {
		r.state.BestValLoss, r.state.BestValMetrics, r.state.BestStep, r.state.SinceBest = loss, metrics, step, 0
		if r.tr.bestNeedsCheckpoint() {
			// The model's own weights: best/ shares the files of a checkpoint
			// of this step, written first.
			r.state.Step, r.state.Sampler = step, r.sampler.State()
			if err := r.checkpoint(); err != nil {
				return false, fmt.Errorf("checkpoint of step %d (its best validation loss): %w", step, err)
			}
		}
		if err := r.tr.newBest(r.dir); err != nil {
			return false, err
		}
	}
	return true, nil
}

// validationNote is the log's line for a validation: its loss, the
// metrics if any, and whether it is the best so far (best: the lowest
// before it, +Inf at the first), which is also why a run that trains the
// model's own weights writes a checkpoint right after it.
func validationNote(step int, loss float64, metrics map[string]float64, best float64) string {
	s := fmt.Sprintf("validation of step %d: loss %.4f", step, loss)
	if metrics != nil {
		s += " (" + FormatMetrics(metrics) + ")"
	}
	if loss < best && !math.IsInf(best, 1) {
		s += fmt.Sprintf(", the best so far (was %.4f)", best)
	}
	return s
}

// validationMetrics scores the validation split by the task's metric
// (eval.validation_metrics), the trained parameters attached, timed into
// r.valMetricSecs (--check's and the projection's; 0 for a metric counted
// in the loss's forwards, which takes no time of its own). A stop request
// ends it between batches, as it does the loss part.
func (r *run) validationMetrics(step int) (map[string]float64, error) {
	what := fmt.Sprintf("validation of step %d (its metric)", step)
	r.out.doing(what)
	pass := newEvalPass(what, r.modality.metricExamples(), r.note, r.stopRequested)
	t0 := time.Now()
	metrics, err := r.modality.validationMetrics(pass)
	if err == nil {
		r.valMetricSecs = time.Since(t0).Seconds()
		if r.modality.freeMetric() {
			r.valMetricSecs = 0
		}
	}
	return metrics, err
}
