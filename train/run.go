package train

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/meazo-go/meazo/data"
	"github.com/meazo-go/meazo/internal/atomicfile"
	"github.com/meazo-go/meazo/model"
	"github.com/meazo-go/meazo/tensor"
	"github.com/meazo-go/meazo/tensor/backends"
	"github.com/meazo-go/meazo/tokenizer"
	"github.com/meazo-go/meazo/zo"
)

// Options says how to start or continue a run.
type Options struct {
	ConfigPath string   // YAML file (ignored with Resume: the run's own config.yaml is used)
	Overrides  []string // key=value
	Resume     string   // run directory to continue from its last checkpoint
	Log        io.Writer
	Terminal   bool // draw a progress bar instead of log lines
	// StopAfter, if positive, ends the run after this many steps of this
	// invocation as if interrupted (no final evaluation): for tests of resume.
	StopAfter int
	// Stop, if set, is polled once before each step; a non-empty answer (the
	// reason, e.g. a signal's name) ends the run as interrupted (stop.go).
	Stop func() string
}

// Summary is summary.json (docs/RUNDIR.md).
type Summary struct {
	Model           string                        `json:"model"`
	Task            string                        `json:"task"`
	Adapter         string                        `json:"adapter"`
	Grouped         bool                          `json:"grouped"`
	Optimizer       string                        `json:"optimizer"`
	LR              float64                       `json:"lr"`
	Seed            uint64                        `json:"seed"`
	Steps           int                           `json:"steps"`
	StepsDone       int                           `json:"steps_done"`
	Diverged        bool                          `json:"diverged"`
	DivergedAt      *int                          `json:"diverged_at"`
	Message         string                        `json:"message"`
	BestValLoss     *float64                      `json:"best_val_loss"` // null before the first validation
	BestStep        int                           `json:"best_step"`
	LastValLoss     *float64                      `json:"last_val_loss"`
	Test            map[string]map[string]float64 `json:"test"`
	TrainableParams int                           `json:"trainable_params"`
	StateBytes      int64                         `json:"optimizer_state_bytes"`
	PeakRSSBytes    int64                         `json:"peak_rss_bytes"`
	SecondsPerStep  float64                       `json:"seconds_per_step"`
	Changes         []ConfigChange                `json:"changes,omitempty"` // settings changed on resume (changes.jsonl)
	Backend         string                        `json:"backend"`           // the backend that ran the last session of the run, and on what
	// Status is "done", "diverged" or "interrupted" (stop.go); Signal names
	// what interrupted the run.
	Status string `json:"status"`
	Signal string `json:"signal,omitempty"`
}

// checkpointState is checkpoint/state.json.
type checkpointState struct {
	Step         int               `json:"step"`
	Sampler      data.SamplerState `json:"sampler"`
	BestValLoss  float64           `json:"-"` // +Inf before the first validation
	BestStep     int               `json:"best_step"`
	LastValLoss  float64           `json:"-"` // NaN before the first validation
	BestJSON     *float64          `json:"best_val_loss"`
	LastJSON     *float64          `json:"last_val_loss"`
	MetricsBytes int64             `json:"metrics_bytes"` // size of metrics.jsonl at this step
	TimingBytes  int64             `json:"timing_bytes"`
	Seconds      float64           `json:"seconds"` // training wall-clock so far
	// Checksums of the logs' first MetricsBytes/TimingBytes bytes, and the
	// size of changes.jsonl (resume.go).
	MetricsSHA256 string `json:"metrics_sha256"`
	TimingSHA256  string `json:"timing_sha256"`
	ChangesBytes  int64  `json:"changes_bytes"`
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
	adapter trainable // LoRA or prompt tuning
	params  [][]float32
	engine  *zo.Engine
	sampler *data.Sampler
	obj     *objective
	eval    *evaluator

	state    checkpointState
	bestCopy [][]float32 // the parameters with the lowest validation loss
	metrics  *os.File
	timing   *os.File
	summary  Summary
	lock     *Lock          // run.lock, held from setup to the end of Run
	changes  []ConfigChange // settings changed with --set on resume
	backend  tensor.Backend // where the model computes (model.backend)
}

// closeBackend releases the model and the backend (device memory on a GPU).
func (r *run) closeBackend() {
	if r.backend == nil {
		return
	}
	if r.m != nil {
		r.m.Free()
	}
	r.backend.Close()
}

// Run trains as configured and returns the summary (also written to
// summary.json). A diverged run is not an error: its summary says so.
func Run(opts Options) (_ *Summary, err error) {
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	r := &run{log: opts.Log, opts: opts}
	defer func() { r.lock.Unlock() }()
	defer r.closeBackend()
	defer tensor.Recover(&err) // a device failure outside the model's calls (merging LoRA on a GPU, …) is an error too
	if err := r.setup(); err != nil {
		return nil, err
	}
	defer r.metrics.Close()
	defer r.timing.Close()
	return r.train()
}

func (r *run) setup() error {
	var err error
	if r.opts.Resume != "" {
		if r.opts.ConfigPath != "" {
			return fmt.Errorf("--resume continues a run with its own recorded config; --config %s is not allowed (change a setting with --set key=value)", r.opts.ConfigPath)
		}
		r.dir = r.opts.Resume
		if err := checkRunDir(r.dir); err != nil {
			return err
		}
		if r.lock, err = LockDir(r.dir); err != nil {
			return err
		}
		if r.cfg, err = r.resumeConfig(); err != nil {
			return err
		}
	} else {
		if r.cfg, err = Load(r.opts.ConfigPath, r.opts.Overrides); err != nil {
			return err
		}
		r.dir = r.cfg.Output.Dir
		// The lock comes first: a second process on the same directory is
		// refused before it can write anything there.
		if r.lock, err = LockDir(r.dir); err != nil {
			return err
		}
		// A run exists once it has a checkpoint (written right after the
		// step-0 validation); a directory without one holds only a start
		// that never got that far, and is started over.
		for _, ck := range []string{"checkpoint", "checkpoint.old"} {
			if _, err := os.Stat(filepath.Join(r.dir, ck, "state.json")); err == nil {
				return fmt.Errorf("run directory %s already holds a run: continue it with --resume %s, or choose another output.dir", r.dir, r.dir)
			}
		}
		if err := os.MkdirAll(r.dir, 0o755); err != nil {
			return err
		}
		if err := r.writeConfig(); err != nil {
			return err
		}
	}
	cfg := r.cfg
	if r.backend, err = backends.Open(cfg.Model.Backend, cfg.Train.Threads, r.log); err != nil {
		return fmt.Errorf("model.backend: %w", err)
	}
	fmt.Fprintf(r.log, "loading model %s\n", cfg.Model.Path)
	if r.m, err = model.LoadWith(cfg.Model.Path, model.LoadOptions{BF16Weights: cfg.Model.BF16, Backend: r.backend}); err != nil {
		return err
	}
	if r.tok, err = tokenizer.Load(cfg.Model.Path); err != nil {
		return err
	}
	enc := &data.Encoder{Tok: r.tok, DateString: cfg.Model.DateString}
	if r.data, err = loadSplits(cfg, enc, r.log); err != nil {
		return err
	}
	if err := r.setupAdapter(); err != nil {
		return err
	}
	opt, err := newOptimizer(cfg.Optimizer)
	if err != nil {
		return err
	}
	distName := cfg.Optimizer.Dist
	if distName == "" {
		distName = "normal"
		if cfg.Optimizer.Name == "fzoo" {
			distName = "rademacher" // FZOO's reference (ALGORITHMS.md)
		}
	}
	dist, err := zo.ParseDist(distName)
	if err != nil {
		return fmt.Errorf("optimizer.dist: %w", err)
	}
	mode := zo.Joint
	if cfg.Adapter.Grouped {
		mode = zo.Grouped
	}
	if r.engine, err = zo.New(r.params, opt, zo.Config{Eps: cfg.Optimizer.Eps, Q: cfg.Optimizer.Q, Dist: dist,
		Seed: cfg.Train.Seed, Mode: mode, Workers: cfg.Train.Threads}); err != nil {
		return err
	}
	if r.sampler, err = data.NewSampler(len(r.data.train), cfg.Train.Seed); err != nil {
		return err
	}
	r.obj = &objective{m: r.m, adapter: r.adapter}
	maxNew := cfg.Eval.MaxNewTokens
	if maxNew == 0 {
		maxNew = defaultMaxNewTokens(data.Task(cfg.Task.Name))
	}
	r.eval = &evaluator{task: data.Task(cfg.Task.Name), tok: r.tok, enc: enc, batchSize: cfg.Eval.BatchSize,
		maxNewTokens: maxNew, stopIDs: stopIDs(r.tok, r.m), padID: r.tok.PadID(), rougeStem: cfg.Eval.RougeStem, log: r.log}
	r.state = checkpointState{BestValLoss: math.Inf(1), LastValLoss: math.NaN()}
	r.bestCopy = cloneParams(r.params)

	flags := os.O_CREATE | os.O_WRONLY | os.O_APPEND
	if r.opts.Resume == "" {
		flags |= os.O_TRUNC
	} else {
		if err := r.restore(); err != nil {
			return err
		}
	}
	if r.metrics, err = os.OpenFile(filepath.Join(r.dir, "metrics.jsonl"), flags, 0o644); err != nil {
		return err
	}
	if r.timing, err = os.OpenFile(filepath.Join(r.dir, "timing.jsonl"), flags, 0o644); err != nil {
		return err
	}
	if r.opts.Resume == "" {
		// Step 0: the validation loss of the starting adapter (the curves'
		// first point, and the best adapter if training never improves on
		// it), and a checkpoint, so a run that diverges or is killed early
		// still has a good state to resume or inspect.
		ok, err := r.validate(0)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("the validation loss of the starting adapter is not finite: check the model and data")
		}
		r.state.Sampler = r.sampler.State()
		return r.checkpoint()
	}
	return r.applyChanges()
}

// setupAdapter makes the trainable adapter (fresh, or from adapter.init).
func (r *run) setupAdapter() error {
	var err error
	if r.adapter, err = newTrainable(r.cfg, r.m, r.tok); err != nil {
		return err
	}
	r.params = r.adapter.Params()
	return nil
}

func newOptimizer(c OptimizerConfig) (zo.Optimizer, error) {
	switch c.Name {
	case "meazo":
		o := zo.NewMEAZO(c.LR)
		o.Beta, o.Zeta = c.Beta, c.Zeta
		return o, nil
	case "zo-sgd":
		o := zo.NewSGD(c.LR)
		o.Momentum, o.WeightDecay = c.Momentum, c.WeightDecay
		return o, nil
	case "zo-adam":
		o := zo.NewAdam(c.LR)
		o.Beta1, o.Beta2 = c.Beta1, c.Beta2
		return o, nil
	case "radazo":
		o := zo.NewRAdaZO(c.LR)
		o.Beta1, o.Beta2, o.BiasCorrection = c.Beta1, c.Beta2, c.BiasCorrect
		return o, nil
	case "fzoo":
		return zo.NewFZOO(c.LR), nil
	}
	return nil, fmt.Errorf("optimizer.name %q: want meazo, zo-sgd, zo-adam, radazo or fzoo", c.Name)
}

// train runs the steps left, validates, checkpoints and evaluates.
func (r *run) train() (*Summary, error) {
	cfg := r.cfg
	total := cfg.Train.Steps
	r.summary = Summary{Model: cfg.ModelName(), Task: cfg.Task.Name, Adapter: cfg.Adapter.Kind, Grouped: cfg.Adapter.Grouped,
		Optimizer: cfg.Optimizer.Name, LR: cfg.Optimizer.LR, Seed: cfg.Train.Seed, Steps: total,
		TrainableParams: countParams(r.params), Test: map[string]map[string]float64{}}
	pad := r.tok.PadID()
	prog := newProgress(r.log, r.opts.Terminal, total, cfg.Train.LogEvery)
	ran := 0
	for step := r.state.Step; step < total; step++ {
		if r.opts.StopAfter > 0 && ran == r.opts.StopAfter {
			prog.done()
			fmt.Fprintf(r.log, "stopped after %d steps as asked (resume with --resume %s)\n", ran, r.dir)
			r.summary.StepsDone = step
			return &r.summary, nil
		}
		if reason := r.stopRequested(); reason != "" {
			prog.done()
			return r.interrupted(step, reason)
		}
		t0 := time.Now()
		idx := r.sampler.Next(cfg.Train.BatchSize)
		exs := make([]data.Encoded, len(idx))
		for i, j := range idx {
			exs[i] = r.data.train[j]
		}
		b := data.TrainBatch(exs, pad)
		r.obj.batch = model.Input{B: b.Size, T: b.Len, Tokens: b.IDs, Mask: b.Mask}
		r.obj.labels = b.Labels
		st, err := r.engine.Step(r.obj)
		if err != nil && !r.obj.nonFinite {
			return nil, fmt.Errorf("step %d: %w", step+1, err)
		}
		if err != nil || !finiteStats(st) {
			prog.done()
			return r.diverged(step + 1)
		}
		ran++
		secs := time.Since(t0).Seconds()
		r.state.Seconds += secs
		if err := r.logStep(step+1, st, secs); err != nil {
			return nil, err
		}
		if (step+1)%cfg.Train.EvalEvery == 0 || step+1 == total {
			ok, err := r.validate(step + 1)
			if err != nil {
				return nil, err
			}
			if !ok {
				prog.done()
				return r.diverged(step + 1)
			}
		}
		r.state.Step = step + 1
		r.state.Sampler = r.sampler.State()
		if cfg.Train.CheckpointEvery > 0 && (step+1)%cfg.Train.CheckpointEvery == 0 || step+1 == total {
			if err := r.checkpoint(); err != nil {
				return nil, err
			}
		}
		prog.update(step+1, st.Loss, r.state.LastValLoss)
	}
	prog.done()
	r.summary.StepsDone, r.summary.Status = r.state.Step, "done"
	if err := r.finish(); err != nil {
		return nil, err
	}
	return &r.summary, nil
}

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
	line := map[string]any{"kind": "train", "step": step, "loss": st.Loss, "losses": st.Losses,
		"update_norm": st.UpdateNorm, "lr": r.cfg.Optimizer.LR}
	var d [][]float64
	var groups []int
	for _, u := range st.Units {
		d = append(d, u.D)
		groups = append(groups, u.Group)
	}
	line["d"], line["groups"] = d, groups
	if st.V != nil {
		line["v"] = st.V
	} else {
		line["v"] = nil
	}
	if err := writeJSONLine(r.metrics, line); err != nil {
		return err
	}
	return writeJSONLine(r.timing, map[string]any{"step": step, "seconds": secs, "layer_evals": r.obj.layerEvals})
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
	r.adapter.Attach(r.params)
	loss, err := validationLoss(r.m, r.data.val, r.cfg.Eval.BatchSize, r.tok.PadID())
	r.adapter.Detach()
	if err != nil {
		return false, fmt.Errorf("validation at step %d: %w", step, err)
	}
	if finite(loss) == nil {
		return false, nil
	}
	r.state.LastValLoss = loss
	if err := writeJSONLine(r.metrics, map[string]any{"kind": "val", "step": step, "val_loss": loss}); err != nil {
		return false, err
	}
	if loss < r.state.BestValLoss {
		r.state.BestValLoss, r.state.BestStep = loss, step
		copyParams(r.bestCopy, r.params)
		if err := r.adapter.Save(filepath.Join(r.dir, "best"), r.bestCopy); err != nil {
			return false, err
		}
	}
	return true, nil
}

// checkpoint writes checkpoint/ atomically: a new directory is filled, then
// swapped in by rename, so an interruption leaves the previous one intact.
func (r *run) checkpoint() error {
	for _, f := range []*os.File{r.metrics, r.timing} {
		if err := f.Sync(); err != nil {
			return err
		}
	}
	mi, err := r.metrics.Stat()
	if err != nil {
		return err
	}
	ti, err := r.timing.Stat()
	if err != nil {
		return err
	}
	r.state.MetricsBytes, r.state.TimingBytes = mi.Size(), ti.Size()
	if err := r.stampLogs(); err != nil {
		return err
	}
	final := filepath.Join(r.dir, "checkpoint")
	tmp := final + ".tmp"
	os.RemoveAll(tmp)
	if err := r.adapter.Save(tmp, r.params); err != nil {
		return err
	}
	eng, err := r.engine.MarshalBinary()
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(filepath.Join(tmp, "optimizer.bin"), eng); err != nil {
		return err
	}
	r.state.BestJSON, r.state.LastJSON = finite(r.state.BestValLoss), finite(r.state.LastValLoss)
	st, err := json.MarshalIndent(r.state, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(filepath.Join(tmp, "state.json"), st); err != nil {
		return err
	}
	if err := r.checkpointExtras(tmp); err != nil {
		return err
	}
	old := final + ".old"
	os.RemoveAll(old)
	if _, err := os.Stat(final); err == nil {
		if err := os.Rename(final, old); err != nil {
			return err
		}
	}
	if err := os.Rename(tmp, final); err != nil {
		return err
	}
	return os.RemoveAll(old)
}

// restore loads checkpoint/ into the run and cuts the logs back to it.
func (r *run) restore() error {
	dir := filepath.Join(r.dir, "checkpoint")
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		// An interruption during the swap leaves checkpoint.old complete:
		// put it back in place before anything else can remove it.
		if _, err := os.Stat(dir + ".old"); err == nil {
			if err := os.Rename(dir+".old", dir); err != nil {
				return fmt.Errorf("resume %s: %w", r.dir, err)
			}
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "state.json"))
	if err != nil {
		return fmt.Errorf("resume %s: %w", r.dir, err)
	}
	if err := json.Unmarshal(b, &r.state); err != nil {
		return fmt.Errorf("resume %s: state.json: %w", r.dir, err)
	}
	r.state.BestValLoss, r.state.LastValLoss = math.Inf(1), math.NaN()
	if r.state.BestJSON != nil {
		r.state.BestValLoss = *r.state.BestJSON
	}
	if r.state.LastJSON != nil {
		r.state.LastValLoss = *r.state.LastJSON
	}
	if err := r.checkState(filepath.Join(dir, "state.json")); err != nil {
		return err
	}
	if err := r.adapter.Load(dir, r.params); err != nil {
		return fmt.Errorf("resume: %w", err)
	}
	eng, err := os.ReadFile(filepath.Join(dir, "optimizer.bin"))
	if err != nil {
		return fmt.Errorf("resume: %w", err)
	}
	if err := r.engine.UnmarshalBinary(eng); err != nil {
		return fmt.Errorf("resume %s: optimizer.bin: %w", dir, err)
	}
	if r.engine.StepCount() != r.state.Step {
		return corrupted("%s is at step %d, state.json at step %d", filepath.Join(dir, "optimizer.bin"), r.engine.StepCount(), r.state.Step)
	}
	if r.sampler, err = data.ResumeSampler(r.state.Sampler); err != nil {
		return fmt.Errorf("resume: %w", err)
	}
	if !math.IsInf(r.state.BestValLoss, 1) {
		if err := r.adapter.Load(filepath.Join(dir, "best"), r.bestCopy); err != nil {
			return fmt.Errorf("resume: %w", err)
		}
	}
	if err := r.checkLogs(); err != nil {
		return err
	}
	// Steps logged after the checkpoint are run again: cut them off.
	if err := os.Truncate(filepath.Join(r.dir, "metrics.jsonl"), r.state.MetricsBytes); err != nil {
		return fmt.Errorf("resume: %w", err)
	}
	if err := os.Truncate(filepath.Join(r.dir, "timing.jsonl"), r.state.TimingBytes); err != nil {
		return fmt.Errorf("resume: %w", err)
	}
	os.Remove(filepath.Join(r.dir, "summary.json"))
	fmt.Fprintf(r.log, "resuming %s at step %d of %d\n", r.dir, r.state.Step, r.cfg.Train.Steps)
	return nil
}

// diverged ends a run whose loss or projected gradient became NaN/Inf,
// keeping the last checkpoint and the best adapter as they are.
func (r *run) diverged(step int) (*Summary, error) {
	r.summary.Diverged, r.summary.Status = true, "diverged"
	r.summary.DivergedAt = &step
	r.summary.StepsDone = step - 1
	r.summary.Message = fmt.Sprintf("diverged at step %d: the training or validation loss, or a projected gradient, is NaN or infinite (learning rate %g too large?); "+
		"the last checkpoint (step %d) and the best adapter (step %d) are kept", step, r.cfg.Optimizer.LR, r.lastCheckpointStep(), r.state.BestStep)
	fmt.Fprintf(r.log, "%s\n", r.summary.Message)
	r.fillSummary()
	return &r.summary, r.writeSummary()
}

func (r *run) lastCheckpointStep() int {
	b, err := os.ReadFile(filepath.Join(r.dir, "checkpoint", "state.json"))
	if err != nil {
		return 0
	}
	var st checkpointState
	if json.Unmarshal(b, &st) != nil {
		return 0
	}
	return st.Step
}

// finish saves the last adapter, evaluates on the test split and writes the summary.
func (r *run) finish() error {
	if err := r.adapter.Save(filepath.Join(r.dir, "last"), r.params); err != nil {
		return err
	}
	if !r.cfg.Eval.Skip && len(r.data.test) > 0 {
		evals := []struct {
			name   string
			params [][]float32
		}{{"best", r.bestCopy}, {"last", r.params}}
		if r.cfg.Eval.Base {
			evals = append(evals, struct {
				name   string
				params [][]float32
			}{"base", nil})
		}
		for _, e := range evals {
			m := r.m
			mg, canMerge := r.adapter.(merger)
			if e.params != nil {
				r.adapter.Attach(e.params)
				if r.cfg.Eval.Merge && canMerge {
					m = mg.Merge(e.params)
				}
			}
			res, err := r.eval.testMetrics(m, r.data.test, e.name)
			if m != r.m {
				mg.FreeMerged(m)
			}
			r.adapter.Detach()
			if err != nil {
				return fmt.Errorf("test evaluation (%s adapter): %w", e.name, err)
			}
			r.summary.Test[e.name] = res
		}
	}
	r.fillSummary()
	return r.writeSummary()
}

func (r *run) fillSummary() {
	r.summary.BestValLoss, r.summary.BestStep, r.summary.LastValLoss = finite(r.state.BestValLoss), r.state.BestStep, finite(r.state.LastValLoss)
	r.summary.StateBytes = r.engine.Optimizer().StateBytes()
	r.summary.PeakRSSBytes = peakRSS()
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
	return atomicfile.WriteFile(filepath.Join(r.dir, "summary.json"), b)
}

// finite returns &x, or nil for NaN and ±Inf (JSON has no such numbers).
func finite(x float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return &x
}

func countParams(p [][]float32) int {
	n := 0
	for _, g := range p {
		n += len(g)
	}
	return n
}

func cloneParams(p [][]float32) [][]float32 {
	out := make([][]float32, len(p))
	for i, g := range p {
		out[i] = slices.Clone(g)
	}
	return out
}

func copyParams(dst, src [][]float32) {
	for i := range dst {
		copy(dst[i], src[i])
	}
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
