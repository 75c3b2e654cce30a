// A training run from its start to its end: Run sets it up (setup.go),
// train runs its steps, each of which returns an outcome, and finish ends
// the run in one place as the outcome says.

package train

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/meazo-go/meazo/data"
	"github.com/meazo-go/meazo/model"
	"github.com/meazo-go/meazo/rundir"
	"github.com/meazo-go/meazo/tensor"
	"github.com/meazo-go/meazo/tokenizer"
	"github.com/meazo-go/meazo/zo"
)

// Options says how to start or continue a run.
type Options struct {
	ConfigPath string   // YAML file (not with Resume, which uses the run's own config.yaml)
	Overrides  []string // key=value
	Resume     string   // run directory to continue from its last checkpoint
	Log        io.Writer
	Terminal   bool // draw a progress bar instead of log lines
	// StopAfter, if positive, ends the run after this many steps of this
	// invocation as if interrupted (no final evaluation): for tests of resume.
	StopAfter int
	// Stop, if set, is polled before each step and between the batches of
	// every evaluation; a non-empty answer (the reason, e.g. a signal's
	// name) ends the run as interrupted (polled by stopRequested, stop.go).
	Stop func() string
	// wrapBackend, if set, wraps the backend once opened: for tests that
	// make the device fail.
	wrapBackend func(tensor.Backend) tensor.Backend
	// program, if set, is the build's version the run records instead of
	// buildinfo.Version's: for tests of a resume by another build.
	program string
	// openBackend, if set, opens the backend instead of backends.OpenWith:
	// for tests that see the options a run opens it with.
	openBackend func(name string, o tensor.Options, log io.Writer) (tensor.Backend, error)
	// afterCheckpoint, if set, is called when a checkpoint is in place:
	// for tests that copy the run directory there, as a process killed
	// right after it leaves it.
	afterCheckpoint func()
	// testTwins evaluates the best and the last adapter even when they are
	// the same step's (sameParams): for tests of what each evaluation does.
	testTwins bool
}

// run is one training run in progress.
type run struct {
	cfg  *Config
	dir  string
	opts Options

	m        *model.Model // a text task's decoder (nil for an image task)
	tok      *tokenizer.Tokenizer
	modality modality   // a text task's (textTask) or an image task's (vision): the data, the objective, the metrics
	tr       paramState // what trains: an adapter (LoRA, prompt tuning) or the model's own weights
	engine   *zo.Engine
	sampler  *data.Sampler

	state   checkpointState
	metrics *os.File
	timing  *os.File
	// The logs' running checksums, up to the last checkpoint's sizes.
	metricsHash, timingHash logHash
	summary                 Summary
	prog                    *progress      // the progress bar or lines of train
	lock                    *Lock          // run.lock, held from setup to the end of Run
	changes                 []ConfigChange // settings changed with --set on resume
	backend                 tensor.Backend // where the model computes (model.backend)
	out                     *runLog        // the log (Options.Log): lines, phases and the heartbeat (runlog.go)
	valSecs                 float64        // the last validation's wall-clock seconds (0: none yet)
	valStep                 int            // its step
	valMetricSecs           float64        // its metric's seconds (eval.validation_metrics; 0: none yet)
	lastValStep             int            // the step of state.LastValLoss, when that is not NaN (−1: not known, a resume's metrics.jsonl unreadable)
	loadSecs                float64        // loading the model at the start (a full-parameter test evaluation loads it again)
	ckSecs                  float64        // the longest checkpoint's wall-clock seconds (0: none yet)
	ckStep                  int            // its step
	ckLine                  int            // the step of the last "writing the checkpoint" line (−1: none)
	made                    startMade      // what a new run's start made (failedstart.go)
	answers                 *Answers       // the answers of the test evaluation under way (eval.predictions; testpredictions.go)
}

// closeBackend releases the model and the backend (device memory on a GPU).
func (r *run) closeBackend() {
	if r.backend == nil {
		return
	}
	if r.m != nil {
		r.m.Free()
	}
	if r.modality != nil {
		r.modality.free()
	}
	r.backend.Close()
}

// Run trains as configured and returns the summary (also written to
// summary.json). A diverged run is not an error: its summary says so.
func Run(opts Options) (_ *Summary, err error) {
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	out := newRunLog(opts.Log)
	r := &run{out: out, opts: opts, ckLine: -1}
	defer out.heartbeat(heartbeatEvery)()
	out.doing("loading the model and the data")
	defer func() { r.lock.Unlock() }()
	defer r.closeBackend()
	defer tensor.Recover(&err) // a device failure outside the model's calls (merging LoRA on a GPU, …) is an error too
	if err := r.setupRecovered(); err != nil {
		r.lock.PutBack() // the owner line as it was (a resume refused changes nothing), unless the resume went ahead
		r.removeFailedStart()
		return nil, err
	}
	defer r.metrics.Close()
	defer r.timing.Close()
	return r.train()
}

// setupRecovered is setup with a device failure during it (a panic with a
// tensor.DeviceError outside the model's calls: an out-of-memory while the
// adapter, the optimizer's state or the checkpoint is put on a GPU) as its
// error, so that Run takes back what the failed start wrote and a refused
// resume puts run.lock back, as for any other error (Run's own Recover
// comes after those).
func (r *run) setupRecovered() (err error) {
	defer tensor.Recover(&err)
	return r.setup()
}

// outcome is how a step leaves the run: it goes on (continueRun), or the
// run ends in one of five ways, and finish writes that ending up. Each
// ending's files (the checkpoint a stop needs, best/, last/) are written
// where it happens; finish writes what every ending shares: the log's last
// line and summary.json.
type outcome struct {
	kind   outcomeKind
	step   int    // the steps done (stopAfter, interrupted), or the step that diverged
	signal string // interrupted: the stop request's reason (a signal's name)
	during string // interrupted: the evaluation the stop cut short, for the message ("": none)
	err    error  // failed: the error Run returns
}

type outcomeKind int

const (
	continueRun outcomeKind = iota // the run goes on
	stopAfter                      // Options.StopAfter steps ran (tests of resume): no summary.json
	interrupted                    // a stop request (a signal): a checkpoint, summary "interrupted"; exit 3
	diverged                       // a loss or a projected gradient is not finite: summary "diverged"
	failed                         // an error (the device's, a full disk): no summary.json; the error says what is kept
	finished                       // every step ran: last/, the test evaluation, summary "done"
)

// train runs the steps left, one at a time, until one of them ends the
// run, then finishes it.
func (r *run) train() (*Summary, error) {
	r.summary = r.newSummary()
	r.prog = newProgress(r.out, r.opts.Terminal, r.cfg.Train.Steps, r.cfg.Train.LogEvery, r.peakMemory)
	switch r.cfg.Train.Objective {
	case ObjectiveF1:
		r.prog.lossName = "-F1"
	case ObjectiveAccuracy:
		r.prog.lossName = "-accuracy"
	}
	if r.cfg.Train.Steps == 0 {
		fmt.Fprintln(r.out, "train.steps is 0: nothing is trained; the starting weights are validated and tested")
	}
	end := r.pendingValidation()
	if end.kind == continueRun && r.state.Step < r.cfg.Train.Steps { // (none left: that validation stopped the run early)
		r.out.begin("training", r.trainingLine())
		r.prog.begin(r.state.Step)
		for step, first := r.state.Step, r.state.Step; step < r.cfg.Train.Steps; step++ {
			if end = r.step(step, step-first); end.kind != continueRun {
				break
			}
		}
	}
	if end.kind == continueRun { // every step has run
		r.prog.done()
		end = r.saveAndTest()
	}
	return r.finish(end)
}

// pendingValidation runs the validation of the step the state is at if it
// has not run (step 0's: the curves' first point, and the best adapter if
// training never improves on it; or one a stop cut short), then
// checkpoints, so that a run killed early still has a state to resume or
// inspect.
func (r *run) pendingValidation() outcome {
	if !r.state.ValidationPending {
		return outcome{}
	}
	step := r.state.Step
	stopped := func(reason string) outcome {
		r.prog.done()
		if err := r.checkpoint(); err != nil {
			return outcome{kind: failed, err: fmt.Errorf("interrupted by %s at step %d: checkpoint: %w", reason, step, err)}
		}
		return outcome{kind: interrupted, step: step, signal: reason, during: fmt.Sprintf("during the validation of step %d, which runs again first", step)}
	}
	if reason := r.stopRequested(); reason != "" {
		return stopped(reason)
	}
	_, nVal, _ := r.modality.sizes()
	r.out.begin(fmt.Sprintf("validation of step %d", step), fmt.Sprintf("validation of step %d: %d examples", step, nVal))
	ok, err := r.validate(step)
	if reason, stop := stopReason(err); stop {
		return stopped(reason)
	}
	if err != nil {
		return r.fail(err)
	}
	if !ok {
		if step == 0 {
			return outcome{kind: failed, err: r.startNotFinite()}
		}
		return outcome{kind: diverged, step: step}
	}
	r.state.ValidationPending = false
	// A validation a stop cut short may be the one that stops the run
	// early, as it would have without the stop (stopEarly checkpoints).
	if stoppedEarly, err := r.stopEarly(step); err != nil {
		return r.fail(fmt.Errorf("early stop after step %d: %w", step, err))
	} else if stoppedEarly {
		return outcome{}
	}
	if err := r.checkpoint(); err != nil {
		return r.fail(fmt.Errorf("checkpoint of step %d: %w", step, err))
	}
	return outcome{}
}

// step runs step+1 of the run, the ran-th of this invocation: the batch,
// one ZO step (perturb, evaluate every variant, estimate, update θ), its
// log lines, the validation every eval_every steps and at the end, and the
// checkpoint every checkpoint_every steps and at the end.
func (r *run) step(step, ran int) outcome {
	total := r.cfg.Train.Steps
	// Stop here if asked to (tests of resume, or a signal).
	if r.opts.StopAfter > 0 && ran == r.opts.StopAfter {
		return outcome{kind: stopAfter, step: step}
	}
	if reason := r.stopRequested(); reason != "" {
		return outcome{kind: interrupted, step: step, signal: reason}
	}
	// Before a step that validates, the state after the previous one, to
	// checkpoint if a stop cuts that validation short (nil where the
	// parameters are not copied: the model's own weights).
	validates := (step+1)%r.cfg.Train.EvalEvery == 0 || step+1 == total
	var before *snapshot
	if validates {
		var err error
		if before, err = r.snapshot(); err != nil {
			return r.fail(fmt.Errorf("step %d: %w", step+1, err))
		}
	}
	r.out.doing(fmt.Sprintf("step %d of %d", step+1, total))
	t0 := time.Now()
	if err := r.nextBatch(); err != nil {
		return r.fail(fmt.Errorf("step %d: %w", step+1, err))
	}
	st, err := r.engine.Step(r.modality.objective())
	if err != nil && !errors.Is(err, zo.ErrNonFinite) { // a loss or d_j not finite: the run diverged
		return r.fail(fmt.Errorf("step %d: %w", step+1, err))
	}
	if err != nil || !finiteStats(st) {
		return outcome{kind: diverged, step: step + 1}
	}
	secs := time.Since(t0).Seconds()
	r.state.Seconds += secs
	if err := r.logStep(step+1, st, secs); err != nil {
		return r.fail(fmt.Errorf("step %d: %w", step+1, err))
	}
	if ran == 0 && step+1 < total { // what the rest costs, from this step
		r.note(r.project(step+1, secs).String())
	}
	if ran == 0 {
		r.checkDisk()
	}
	if validates {
		if end := r.validateStep(step+1, before); end.kind != continueRun {
			return end
		}
		if stopped, err := r.stopEarly(step + 1); err != nil {
			return r.fail(fmt.Errorf("early stop after step %d: %w", step+1, err))
		} else if stopped {
			return outcome{} // train.steps is now step+1: the loop ends, the run finishes
		}
	}
	// Checkpoint unless a new best of the model's own weights has just
	// checkpointed this step.
	r.state.Step = step + 1
	r.state.Sampler = r.sampler.State()
	due := r.cfg.Train.CheckpointEvery > 0 && (step+1)%r.cfg.Train.CheckpointEvery == 0 || step+1 == total
	if due && r.lastCheckpointStep() != step+1 {
		if err := r.checkpoint(); err != nil {
			return r.fail(fmt.Errorf("checkpoint of step %d: %w", step+1, err))
		}
	}
	r.prog.valMetrics = r.state.LastValMetrics
	r.prog.update(step+1, st.Loss, r.state.Seconds/float64(step+1), r.state.LastValLoss, r.lastValStep)
	return outcome{}
}

// validateStep validates after step, keeping the best adapter. After the
// run's last step it first polls for a stop: one that came during that
// step ends the run before its validation and the test evaluations (which
// could run for minutes with no poll between them when each fits one
// batch). A stop that cuts the validation short checkpoints the state
// before the step (before), which resume runs again, then its validation;
// where that state was not kept (nil: the model's own weights), the state
// after the step with its validation pending, which resume runs first.
// Either way a validation that finds θ diverged then ends the run as it
// does without a stop.
func (r *run) validateStep(step int, before *snapshot) outcome {
	var ok bool
	var err error
	if step == r.cfg.Train.Steps {
		if reason := r.stopRequested(); reason != "" {
			err = &stoppedError{reason}
		}
	}
	if err == nil {
		ok, err = r.validate(step)
	}
	reason, stopped := stopReason(err)
	switch {
	case stopped && before == nil:
		r.prog.done()
		r.state.Step, r.state.Sampler, r.state.ValidationPending = step, r.sampler.State(), true
		if err := r.checkpoint(); err != nil {
			return r.fail(fmt.Errorf("interrupted by %s in the validation of step %d: checkpoint: %w", reason, step, err))
		}
		return outcome{kind: interrupted, step: step, signal: reason, during: fmt.Sprintf("during the validation of step %d, which runs first on resume", step)}
	case stopped:
		r.prog.done()
		if err := r.checkpointSnapshot(before); err != nil {
			return r.fail(fmt.Errorf("checkpoint of step %d: %w", step-1, err))
		}
		return outcome{kind: interrupted, step: step - 1, signal: reason, during: fmt.Sprintf("during the validation of step %d, which runs again with its step", step)}
	case err != nil:
		return r.fail(err)
	case !ok:
		return outcome{kind: diverged, step: step}
	}
	return outcome{}
}

// saveAndTest saves the last adapter and evaluates on the test split, going
// on from where a stopped test evaluation's checkpoint left it. A stop
// request ends it between batches, checkpointing how far it got.
func (r *run) saveAndTest() outcome {
	if err := r.tr.saveLast(r.dir); err != nil {
		return outcome{kind: failed, err: err}
	}
	resumedTest := r.state.Test != nil // the checkpoint holds a test evaluation a stop cut short
	reason, err := r.testEvaluation()
	if err != nil {
		return outcome{kind: failed, err: err}
	}
	if reason != "" {
		if err := r.checkpoint(); err != nil { // with how far the test evaluation got
			return outcome{kind: failed, err: fmt.Errorf("interrupted by %s during the test evaluation: checkpoint: %w", reason, err)}
		}
		return outcome{kind: interrupted, step: r.state.Step, signal: reason, during: r.testCut()}
	}
	// The test evaluation is over. A checkpoint that says it is under way
	// is written again, as an uninterrupted run leaves it.
	r.state.Test = nil
	if resumedTest {
		if err := r.checkpoint(); err != nil {
			return outcome{kind: failed, err: err}
		}
	}
	return outcome{kind: finished}
}

// testEvaluation scores the best and the last adapter (and the base model
// with eval.base) on the test split into the summary, going on from where a
// stopped one's checkpoint left it (r.state.Test). A stop request ends it
// between batches: it returns the request's reason, and r.state.Test says how
// far it got.
func (r *run) testEvaluation() (string, error) {
	_, _, nTest := r.modality.sizes()
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
		if twin, same := r.sameParams(e.name); same {
			if err := r.reuseTest(e.name, twin); err != nil {
				return "", err
			}
			continue
		}
		r.out.doing("test evaluation (" + e.name + ")")
		if tp.Current != e.name {
			tp.Current, tp.Partial, r.answers = e.name, evalPartial{}, nil
		}
		if r.cfg.Eval.Predictions && r.answers == nil {
			r.answers = &Answers{}
		}
		res, err := r.testOne(e, nTest, &tp.Partial)
		if reason, stopped := stopReason(err); stopped {
			return reason, nil
		}
		if err != nil {
			return "", fmt.Errorf("test evaluation (%s): %w", r.testSubject(e.name), err)
		}
		if r.answers != nil {
			if err := r.answers.WriteFile(filepath.Join(r.dir, rundir.PredictionsFile(e.name))); err != nil {
				return "", fmt.Errorf("test evaluation (%s): %w", r.testSubject(e.name), err)
			}
		}
		r.summary.Test[e.name] = res
		tp.Finished[e.name], tp.Current, tp.Partial, r.answers = res, "", evalPartial{}, nil
	}
	return "", nil
}

// testOne runs test evaluation e from where part says it got, handing each
// example's answer to r.answers (if kept).
func (r *run) testOne(e testEval, nTest int, part *evalPartial) (res map[string]float64, err error) {
	if r.answers != nil && r.answers.Len() != part.Done {
		return nil, fmt.Errorf("internal error: %d answers kept for %d examples done", r.answers.Len(), part.Done)
	}
	pass := newEvalPass("test ("+e.name+")", nTest, r.note, r.stopRequested)
	err = e.with(func(m *model.Model) (err error) {
		res, err = r.modality.testMetrics(m, e.name, pass, part, r.answers.Recorder())
		return err
	})
	return res, err
}

// testSubject names what the test evaluation called name ("best", "last",
// "base") scores: the best or the last adapter, a full-parameter run's
// best or last weights, or the base model.
func (r *run) testSubject(name string) string {
	switch {
	case name == "base":
		return "the base model"
	case r.cfg.Adapter.Kind == "full":
		return "the " + name + " weights"
	}
	return "the " + name + " adapter"
}

// testCut says, in an interruption's message, how far the test evaluation got.
func (r *run) testCut() string {
	tp := r.state.Test
	whose := func(name string) string { return r.testSubject(name) + "'s" }
	var done []string
	for _, name := range []string{"best", "last", "base"} {
		if _, ok := tp.Finished[name]; ok {
			done = append(done, whose(name))
		}
	}
	_, _, nTest := r.modality.sizes()
	s := fmt.Sprintf("during the test evaluation, at example %d of %d of %s", tp.Partial.Done, nTest, whose(tp.Current))
	if len(done) > 0 {
		s += ", after " + strings.Join(done, " and ")
	}
	return s + "; resume goes on from there"
}

// finish ends the run as end says: it prints the run's last line and
// writes summary.json (but for a failed run, whose error says what is kept
// and how to go on, and a test's StopAfter).
//
// An interrupted run has finished the step in progress; a checkpoint of
// the state after it is written unless the last one already holds it (or
// the caller has checkpointed what resume needs to go on with the
// evaluation the stop cut short), and --resume continues bit-identically
// and replaces the summary. A diverged run keeps its last checkpoint and
// best adapter as they are.
func (r *run) finish(end outcome) (*Summary, error) {
	if end.kind == failed {
		return nil, end.err
	}
	r.prog.done()
	s := &r.summary
	switch end.kind {
	case stopAfter:
		fmt.Fprintf(r.out, "stopped after %d steps as asked (resume with --resume %s)\n", r.opts.StopAfter, r.dir)
		s.StepsDone = end.step
		return s, nil
	case interrupted:
		if r.lastCheckpointStep() != r.state.Step {
			if err := r.checkpoint(); err != nil {
				return nil, fmt.Errorf("interrupted by %s at step %d: checkpoint: %w", end.signal, end.step, err)
			}
		}
		during := ""
		if end.during != "" {
			during = " (" + end.during + ")"
		}
		s.Status, s.Signal, s.StepsDone = rundir.StatusInterrupted, end.signal, end.step
		s.Message = fmt.Sprintf("interrupted by %s after step %d of %d%s; checkpoint written: continue with --resume %s",
			end.signal, end.step, r.cfg.Train.Steps, during, r.dir)
		fmt.Fprintf(r.out, "%s\n", s.Message)
	case diverged:
		s.Diverged, s.Status, s.DivergedAt, s.StepsDone = true, rundir.StatusDiverged, &end.step, end.step-1
		s.Message = fmt.Sprintf("diverged at step %d: the training or validation loss, or a projected gradient, is NaN or infinite (learning rate %g too large?); %s",
			end.step, r.cfg.Optimizer.LR, r.divergedKeeps())
		fmt.Fprintf(r.out, "%s\n", s.Message)
	case finished:
		s.StepsDone, s.Status = r.state.Step, rundir.StatusDone
	}
	r.fillSummary()
	if end.kind == finished {
		s.Message = earlyStopMessage(s.Changes, s.StepsDone)
	}
	if end.kind == finished || end.kind == diverged {
		if keep := r.cfg.Output.KeepWeights; keep != rundir.KeepAll {
			s.WeightsKept = keep
		}
	}
	err := r.writeSummary()
	if err == nil && (end.kind == finished || end.kind == diverged) {
		r.pruneWeights()
	}
	if end.kind != finished {
		return s, err
	}
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(r.out, "results in %s: %s\n", r.dir, r.resultsLine())
	return s, nil
}

// note prints a line of an evaluation's progress, ending the progress bar's
// line first.
func (r *run) note(s string) {
	if r.prog != nil {
		r.prog.done()
	}
	fmt.Fprintln(r.out, s)
}

// fail ends the run on err (a device failure: a GPU's fault or
// out-of-memory; a full disk), adding what is kept and how to go on: the
// run directory's last checkpoint and --resume, which continues exactly as
// the run would have.
func (r *run) fail(err error) outcome {
	if _, serr := os.Stat(filepath.Join(r.dir, rundir.CheckpointDir, rundir.StateFile)); serr == nil {
		err = fmt.Errorf("%w; the checkpoint of step %d is kept: continue with --resume %s", err, r.lastCheckpointStep(), r.dir)
	} else if _, serr := os.Stat(filepath.Join(r.dir, rundir.CheckpointOldDir, rundir.StateFile)); serr == nil {
		// Stopped in the middle of a checkpoint's swap: --resume puts the
		// previous one back.
		err = fmt.Errorf("%w; the previous checkpoint is kept (%s): continue with --resume %s", err, rundir.CheckpointOldDir, r.dir)
	} else {
		// The first checkpoint comes right after step 0's validation, so
		// nothing was trained; config.yaml holds every setting the run
		// started with (--set included), and the same directory takes a
		// new start.
		err = fmt.Errorf("%w; no checkpoint was written yet: start the run again with the settings it started with: --config %s --out %s",
			err, filepath.Join(r.dir, rundir.ConfigFile), r.dir)
	}
	return outcome{kind: failed, err: err}
}
