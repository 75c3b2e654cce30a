package train

import (
	"errors"
	"fmt"
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
