package train

import (
	"errors"
	"fmt"

	"github.com/meazo-go/meazo/rundir"
)

// ExitInterrupted is meazo-train's exit status for a run that stopped on a
// signal (SIGINT, SIGTERM, SIGUSR1) after checkpointing: continue it with
// --resume. meazo-sweep's Slurm tasks requeue on it after the time
// limit's SIGUSR1 (not after a scancel's SIGTERM).
const ExitInterrupted = 3

// stopRequested polls Options.Stop (before each step, and between the
// batches of every evaluation).
func (r *run) stopRequested() string {
	if r.opts.Stop == nil {
		return ""
	}
	return r.opts.Stop()
}

// ErrStoppedStarting says that a stop request came while a run was starting
// (loading the model, encoding the data), before it had computed anything
// to keep: a new run is started again, a resumed one resumed again (its
// checkpoint is unchanged). meazo-train exits ExitInterrupted on it.
var ErrStoppedStarting = errors.New("stopped while starting")

// stopStarting is the error that ends a run's setup when a stop was asked
// for (Options.Stop), else nil; while says what the setup was doing.
func (r *run) stopStarting(while string) error {
	reason := r.stopRequested()
	if reason == "" {
		return nil
	}
	next := "nothing had run yet: start it again"
	if r.opts.Resume != "" {
		next = "its checkpoint is unchanged: continue with --resume " + r.dir
	}
	return fmt.Errorf("%w: %s while %s, before its first step; %s", ErrStoppedStarting, reason, while, next)
}

// interruptedValidation ends a run whose validation of step a stop cut
// short when the parameters before the step were not kept (the model's own
// weights, trained.snapshot): the state after the step is checkpointed
// with that validation pending, and resume runs it first.
func (r *run) interruptedValidation(step int, reason string) (*Summary, error) {
	r.state.Step, r.state.Sampler, r.state.ValidationPending = step, r.sampler.State(), true
	if err := r.checkpoint(); err != nil {
		return nil, r.failed(fmt.Errorf("interrupted by %s in the validation of step %d: checkpoint: %w", reason, step, err))
	}
	return r.interrupted(step, reason, fmt.Sprintf("during the validation of step %d, which runs first on resume", step))
}

// interrupted ends a run after step because reason (a signal) asked it to:
// the step in progress has finished, a checkpoint of the state after it is
// written unless the last one already holds it, and summary.json records the
// interruption (status "interrupted", the signal, steps_done). during says,
// for the message, what evaluation the stop cut short ("" for none; the
// caller has checkpointed what resume needs to go on with it). --resume
// continues bit-identically and replaces that summary.
func (r *run) interrupted(step int, reason, during string) (*Summary, error) {
	if r.lastCheckpointStep() != r.state.Step {
		if err := r.checkpoint(); err != nil {
			return nil, fmt.Errorf("interrupted by %s at step %d: checkpoint: %w", reason, step, err)
		}
	}
	if during != "" {
		during = " (" + during + ")"
	}
	r.summary.Status, r.summary.Signal, r.summary.StepsDone = rundir.StatusInterrupted, reason, step
	r.summary.Message = fmt.Sprintf("interrupted by %s after step %d of %d%s; checkpoint written: continue with --resume %s",
		reason, step, r.cfg.Train.Steps, during, r.dir)
	fmt.Fprintf(r.log, "%s\n", r.summary.Message)
	r.fillSummary()
	return &r.summary, r.writeSummary()
}

// validateUnlessStopped validates step, as validate does. After the run's
// last step it first polls for a stop: one that came during that step
// ends the run before its validation and the test evaluations (which
// could run for minutes with no poll between them when each fits one
// batch), as a stop during the validation does: resume runs the step again.
func (r *run) validateUnlessStopped(step int, last bool) (bool, error) {
	if last {
		if reason := r.stopRequested(); reason != "" {
			return false, &stoppedError{reason}
		}
	}
	return r.validate(step)
}
