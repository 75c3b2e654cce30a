package train

import (
	"fmt"
	"time"
)

// stopEarly ends the run after step, a step that has just validated, when
// train.patience validations in a row have not lowered the best validation
// loss: train.steps becomes step, so the run finishes there as at its last
// step (last/, the test evaluation of best/, summary "done") and every
// check that compares the steps done with train.steps holds. The change is
// a setting's like a resume's --set: a line of changes.jsonl (with why),
// config.yaml rewritten, and a checkpoint at once so that the two agree;
// --resume DIR --set train.steps=N trains on. It reports whether it stopped
// the run.
func (r *run) stopEarly(step int) (bool, error) {
	p := r.cfg.Train.Patience
	if p == 0 || r.state.SinceBest < p || step >= r.cfg.Train.Steps {
		return false, nil
	}
	c := ConfigChange{Step: step, Key: "train.steps", Old: r.cfg.Train.Steps, New: step, Time: time.Now().UTC().Format(time.RFC3339),
		Reason: fmt.Sprintf("train.patience %d: no validation loss below step %d's %.6g since", p, r.state.BestStep, r.state.BestValLoss)}
	if err := appendChanges(r.dir, []ConfigChange{c}); err != nil {
		return false, err
	}
	r.cfg.Train.Steps = step
	if err := r.writeConfig(); err != nil {
		return false, err
	}
	r.state.Step, r.state.Sampler = step, r.sampler.State()
	if err := r.checkpoint(); err != nil {
		return false, err
	}
	r.prog.done()
	fmt.Fprintf(r.out, "stopping early after step %d of %d: %s without a loss below the best (%.6g, step %d); "+
		"train.steps is now %d (changes.jsonl; --resume %s --set train.steps=N trains on)\n", step, c.Old, validations(p), r.state.BestValLoss, r.state.BestStep, step, r.dir)
	return true, nil
}

// validations counts n validations in words: "1 validation", "3 validations".
func validations(n int) string {
	if n == 1 {
		return "1 validation"
	}
	return fmt.Sprintf("%d validations", n)
}

// earlyStopMessage is a finished run's summary message when it stopped
// early at step (the last change of train.steps to step is stopEarly's),
// "" otherwise.
func earlyStopMessage(changes []ConfigChange, step int) string {
	for i := len(changes) - 1; i >= 0; i-- {
		c := changes[i]
		if c.Key != "train.steps" {
			continue
		}
		if c.Reason == "" || c.Step != step {
			return ""
		}
		return fmt.Sprintf("stopped early after step %d of %v (%s)", step, c.Old, c.Reason)
	}
	return ""
}
