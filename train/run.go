package train

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
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
	// name) ends the run as interrupted (stop.go).
	Stop func() string
	// wrapBackend, if set, wraps the backend once opened: for tests that
	// make the device fail.
	wrapBackend func(tensor.Backend) tensor.Backend
}

// run is one training run in progress.
type run struct {
	cfg  *Config
	dir  string
	log  io.Writer
	opts Options

	m       *model.Model
	tok     *tokenizer.Tokenizer
	data    *splits
	tr      trained // what trains: an adapter (LoRA, prompt tuning) or the model's own weights
	engine  *zo.Engine
	sampler *data.Sampler
	obj     *objective
	eval    *evaluator
	vis     *vision // an image task's model and data (vision.go); nil for a text task

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
	out                     *runLog        // r.log: phase lines and the heartbeat (runlog.go)
	valSecs                 float64        // the last validation's wall-clock seconds (0: none yet)
	valStep                 int            // its step
	loadSecs                float64        // loading the model at the start (a full-parameter test evaluation loads it again)
	ckSecs                  float64        // the longest checkpoint's wall-clock seconds (0: none yet)
	ckStep                  int            // its step
	ckLine                  int            // the step of the last "writing the checkpoint" line (−1: none)
	made                    startMade      // what a new run's start made (failedstart.go)
}

// closeBackend releases the model and the backend (device memory on a GPU).
func (r *run) closeBackend() {
	if r.backend == nil {
		return
	}
	if r.m != nil {
		r.m.Free()
	}
	if r.vis != nil {
		r.vis.free()
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
	r := &run{log: out, out: out, opts: opts, ckLine: -1}
	defer out.heartbeat(heartbeatEvery)()
	out.doing("loading the model and the data")
	defer func() { r.lock.Unlock() }()
	defer r.closeBackend()
	defer tensor.Recover(&err) // a device failure outside the model's calls (merging LoRA on a GPU, …) is an error too
	if err := r.setup(); err != nil {
		r.removeFailedStart()
		return nil, err
	}
	defer r.metrics.Close()
	defer r.timing.Close()
	return r.train()
}

// train runs the steps left, validates, checkpoints and evaluates.
func (r *run) train() (*Summary, error) {
	cfg := r.cfg
	total := cfg.Train.Steps
	r.summary = Summary{Model: cfg.ModelName(), Task: cfg.Task.Name, Adapter: cfg.Adapter.Kind, Grouped: cfg.Adapter.Grouped,
		Optimizer: cfg.Optimizer.Name, LR: cfg.Optimizer.LR, Seed: cfg.Train.Seed, Steps: total,
		TrainableParams: int(r.tr.count()), Test: map[string]map[string]float64{}}
	prog := newProgress(r.out, r.opts.Terminal, total, cfg.Train.LogEvery)
	r.prog = prog
	// Step 0's validation, if it has not run (a new run, or a stop cut it
	// short).
	if r.state.ValidationPending {
		if s, err := r.pendingValidation(); s != nil || err != nil {
			return s, err
		}
	}
	ran := 0
	r.out.begin("training", r.trainingLine())
	prog.begin(r.state.Step)
	for step := r.state.Step; step < total; step++ {
		// Stop here if asked to (tests of resume, or a signal).
		if r.opts.StopAfter > 0 && ran == r.opts.StopAfter {
			prog.done()
			fmt.Fprintf(r.log, "stopped after %d steps as asked (resume with --resume %s)\n", ran, r.dir)
			r.summary.StepsDone = step
			return &r.summary, nil
		}
		if reason := r.stopRequested(); reason != "" {
			prog.done()
			return r.interrupted(step, reason, "")
		}
		// Before a step that validates, the state after the previous one, to
		// checkpoint if a stop cuts that validation short (nil where the
		// parameters are not copied: the model's own weights).
		validates := (step+1)%cfg.Train.EvalEvery == 0 || step+1 == total
		var before *snapshot
		if validates {
			var err error
			if before, err = r.snapshot(); err != nil {
				return nil, r.failed(fmt.Errorf("step %d: %w", step+1, err))
			}
		}
		// The mini-batch, drawn by the sampler, handed to the objective.
		r.out.doing(fmt.Sprintf("step %d of %d", step+1, total))
		t0 := time.Now()
		if err := r.nextBatch(); err != nil {
			return nil, r.failed(fmt.Errorf("step %d: %w", step+1, err))
		}
		// One ZO step: perturb, evaluate every variant, estimate, update θ.
		st, err := r.engine.Step(r.obj)
		if err != nil && !r.obj.nonFinite && !errors.Is(err, zo.ErrNonFinite) {
			return nil, r.failed(fmt.Errorf("step %d: %w", step+1, err))
		}
		if err != nil || !finiteStats(st) {
			prog.done()
			return r.diverged(step + 1)
		}
		// Log the step (metrics.jsonl, timing.jsonl).
		ran++
		secs := time.Since(t0).Seconds()
		r.state.Seconds += secs
		if err := r.logStep(step+1, st, secs); err != nil {
			return nil, r.failed(fmt.Errorf("step %d: %w", step+1, err))
		}
		if ran == 1 && step+1 < total { // what the rest costs, from this step
			r.note(r.project(step+1, secs).String())
		}
		// Validate every eval_every steps and at the end, keeping the best adapter.
		if validates {
			ok, err := r.validateUnlessStopped(step+1, step+1 == total)
			if reason, stopped := stopReason(err); stopped {
				prog.done()
				if before == nil {
					// The state after the step, its validation pending: resume
					// runs it first (a validation that finds θ diverged then ends
					// the run, as it does without a stop, with that checkpoint).
					return r.interruptedValidation(step+1, reason)
				}
				// Back to the state before the step: resume runs it again, then
				// its validation (a validation that finds θ diverged then leaves
				// a checkpoint from before, as it does without a stop).
				if err := r.checkpointSnapshot(before); err != nil {
					return nil, r.failed(fmt.Errorf("checkpoint of step %d: %w", step, err))
				}
				return r.interrupted(step, reason, fmt.Sprintf("during the validation of step %d, which runs again with its step", step+1))
			}
			if err != nil {
				return nil, r.failed(err)
			}
			if !ok {
				prog.done()
				return r.diverged(step + 1)
			}
		}
		// Checkpoint every checkpoint_every steps and at the end (unless a
		// new best of the model's own weights has just checkpointed it).
		r.state.Step = step + 1
		r.state.Sampler = r.sampler.State()
		due := cfg.Train.CheckpointEvery > 0 && (step+1)%cfg.Train.CheckpointEvery == 0 || step+1 == total
		if due && r.lastCheckpointStep() != step+1 {
			if err := r.checkpoint(); err != nil {
				return nil, r.failed(fmt.Errorf("checkpoint of step %d: %w", step+1, err))
			}
		}
		prog.update(step+1, st.Loss, r.state.LastValLoss)
	}
	prog.done()
	// Done: the last adapter, the test metrics and summary.json.
	return r.finish()
}

// pendingValidation runs the validation of the step the state is at (step
// 0's: the curves' first point, and the best adapter if training never
// improves on it), then checkpoints, so that a run killed early still has a
// state to resume or inspect.
func (r *run) pendingValidation() (*Summary, error) {
	step := r.state.Step
	stopped := func(reason string) (*Summary, error) {
		r.prog.done()
		if err := r.checkpoint(); err != nil {
			return nil, fmt.Errorf("interrupted by %s at step %d: checkpoint: %w", reason, step, err)
		}
		return r.interrupted(step, reason, fmt.Sprintf("during the validation of step %d, which runs again first", step))
	}
	if reason := r.stopRequested(); reason != "" {
		return stopped(reason)
	}
	_, nVal, _ := r.data.sizes()
	r.out.begin("validation of step 0", fmt.Sprintf("validation of step %d: %d examples", step, nVal))
	ok, err := r.validate(step)
	if reason, stop := stopReason(err); stop {
		return stopped(reason)
	}
	if err != nil {
		return nil, r.failed(err)
	}
	if !ok {
		if step == 0 {
			return nil, fmt.Errorf("the validation loss of the starting adapter is not finite: check the model (%s) and the data", r.cfg.Model.Path)
		}
		return r.diverged(step)
	}
	r.state.ValidationPending = false
	if err := r.checkpoint(); err != nil {
		return nil, r.failed(fmt.Errorf("checkpoint of step %d: %w", step, err))
	}
	return nil, nil
}

// note prints a line of an evaluation's progress, ending the progress bar's
// line first.
func (r *run) note(s string) {
	if r.prog != nil {
		r.prog.done()
	}
	fmt.Fprintln(r.log, s)
}

// failed adds to the error that ends a run (a device failure: a GPU's
// fault or out-of-memory; a full disk) what is kept and how to go on: the
// run directory's last checkpoint and --resume, which continues exactly as
// the run would have.
func (r *run) failed(err error) error {
	if _, serr := os.Stat(filepath.Join(r.dir, rundir.CheckpointDir, rundir.StateFile)); serr == nil {
		return fmt.Errorf("%w; the checkpoint of step %d is kept: continue with --resume %s", err, r.lastCheckpointStep(), r.dir)
	}
	if _, serr := os.Stat(filepath.Join(r.dir, rundir.CheckpointOldDir, rundir.StateFile)); serr == nil {
		// Stopped in the middle of a checkpoint's swap: --resume puts the
		// previous one back.
		return fmt.Errorf("%w; the previous checkpoint is kept (%s): continue with --resume %s", err, rundir.CheckpointOldDir, r.dir)
	}
	return fmt.Errorf("%w; no checkpoint was written yet (train.checkpoint_every)", err)
}

// nextBatch draws the next mini-batch of training examples and hands it,
// padded, to the objective (an image task's: as pixel_values).
func (r *run) nextBatch() error {
	idx := r.sampler.Next(r.cfg.Train.BatchSize)
	if r.vis != nil {
		return r.vis.setBatch(idx)
	}
	exs := make([]data.Encoded, len(idx))
	for i, j := range idx {
		exs[i] = r.data.train[j]
	}
	b := data.TrainBatch(exs, r.tok.PadID())
	r.obj.batch = model.Input{B: b.Size, T: b.Len, Tokens: b.IDs, Mask: b.Mask}
	r.obj.labels = b.Labels
	return nil
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
		UpdateNorm: st.UpdateNorm, LR: r.cfg.Optimizer.LR, V: st.V}
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
	return writeJSONLine(r.timing, rundir.TimingLine{Step: step, Seconds: secs, LayerEvals: r.obj.layerEvals})
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

// validate computes the validation loss and keeps the best adapter. It
// returns false if the loss is not finite (the run has diverged).
func (r *run) validate(step int) (bool, error) {
	what := fmt.Sprintf("validation of step %d", step)
	r.out.doing(what)
	_, nVal, _ := r.data.sizes()
	pass := newEvalPass(what, nVal, r.note, r.stopRequested)
	r.tr.attach()
	t0 := time.Now()
	loss, err := r.validationLoss(pass)
	r.tr.detach()
	if err == nil {
		r.valSecs, r.valStep = time.Since(t0).Seconds(), step
	}
	if err != nil {
		return false, fmt.Errorf("validation at step %d: %w", step, err)
	}
	if finite(loss) == nil {
		return false, nil
	}
	r.state.LastValLoss = loss
	if err := writeJSONLine(r.metrics, rundir.ValLine{Kind: rundir.KindVal, Step: step, ValLoss: loss}); err != nil {
		return false, err
	}
	if loss < r.state.BestValLoss {
		r.state.BestValLoss, r.state.BestStep = loss, step
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
