package train

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/meazo-go/meazo/data"
	"github.com/meazo-go/meazo/model"
	"github.com/meazo-go/meazo/noise"
	"github.com/meazo-go/meazo/rundir"
	"github.com/meazo-go/meazo/tensor"
	"github.com/meazo-go/meazo/tensor/backends"
	"github.com/meazo-go/meazo/tokenizer"
	"github.com/meazo-go/meazo/zo"
)

// setup prepares a run, new or resumed, up to its first step.
func (r *run) setup() error {
	// The run directory: locked, then either a new run's (config.yaml
	// written) or a resumed run's (its recorded config, with --set changes).
	if err := r.openRunDir(); err != nil {
		return err
	}
	// A new run's input files, fingerprinted while the model loads (a
	// resume checks its own against its checkpoint's, in restore).
	var inputs func() ([]inputFile, error)
	if r.opts.Resume == "" {
		inputs = fingerprintInputs(r.cfg)
	}
	// The model, the data, what trains, the engine and the evaluation: a
	// text task's, or an image task's (vision.go).
	if err := r.stopStarting("loading the model"); err != nil {
		return err
	}
	if n := r.cfg.Train.Threads; n > runtime.NumCPU() {
		fmt.Fprintf(r.out, "warning: train.threads %d is more than this machine's %d CPUs: the extra threads only take turns (0 uses every core)\n", n, runtime.NumCPU())
	}
	setup := r.setupText
	if isImageTask(r.cfg) {
		setup = r.setupVision
	}
	if err := setup(); err != nil {
		return err
	}
	// A resumed run: its checkpoint, with the logs cut back to it, if its
	// inputs are the ones it started with; a new run: its inputs.
	if r.opts.Resume != "" {
		if err := r.restore(); err != nil {
			return err
		}
	} else {
		var err error
		if r.state.Inputs, err = inputs(); err != nil {
			return err
		}
	}
	// The logs, started afresh or appended to.
	r.made.logs = r.opts.Resume == ""
	if err := r.openLogs(); err != nil {
		return err
	}
	if r.opts.Resume != "" {
		// A resumed run: the --set changes, recorded.
		return r.applyChanges()
	}
	// A new run: step 0's validation, pending (train runs it first).
	return r.scheduleStepZero()
}

// setupText is a text task's part of setup: the model on its backend and
// the tokenizer, the data, the adapter, the task's modality (textTask) and
// the engine.
func (r *run) setupText() error {
	if err := r.loadModel(); err != nil {
		return err
	}
	// A full-parameter run's include and exclude patterns, checked against
	// the model's tensors before the data is read (minutes for a large
	// dataset), not after.
	if r.cfg.Adapter.Kind == "full" {
		if _, err := fullParams(r); err != nil {
			return err
		}
	}
	// The task's data, read, split and encoded.
	enc := &data.Encoder{Tok: r.tok, DateString: r.cfg.Model.DateString, Format: data.Format(r.cfg.Task.Format)}
	virtual := 0
	if r.cfg.Adapter.Kind == "prompt" {
		virtual = r.cfg.Adapter.VirtualTokens
	}
	maxLength, lengthName, note, err := positionRule(r.m, r.cfg.Task.MaxLength, virtual, "task.max_length")
	if err != nil {
		return fmt.Errorf("adapter.virtual_tokens %d: %w", virtual, err)
	}
	if note != "" {
		fmt.Fprintln(r.out, note)
	}
	splits, err := loadSplits(r.cfg, maxLength, lengthName, enc, r.out, r.stopStarting)
	if err != nil {
		return err
	}
	// What a step needs, against the machine's memory, before anything of
	// the batch's or the adapter's size is made.
	if err := r.checkStepMemory(textStepFloor(r.cfg, splits.train, &r.m.Config)); err != nil {
		return err
	}
	if err := r.checkTestGeneration(len(splits.test), len(splits.valEx)); err != nil {
		return err
	}
	if err := r.checkF1Generation(); err != nil {
		return err
	}
	if err := r.checkAdapterMemory(); err != nil {
		return err
	}
	// The trainable adapter and its parameters θ.
	if err := r.setupAdapter(); err != nil {
		return err
	}
	if r.cfg.Adapter.Kind != "full" { // (newFullState says what it trains)
		fmt.Fprintln(r.out, adapterLine(r.tr.count(), r.m.ParamCount(), adapterWhat(r.cfg, &r.m.Config)))
	}
	// The objective and the evaluator, over the data.
	if r.modality, err = r.newTextTask(splits, enc); err != nil {
		return err
	}
	// The optimizer, the ZO engine over θ, and the sampler.
	if err := r.setupEngine(); err != nil {
		return err
	}
	// The run's state before any step.
	r.state = r.initialState()
	return nil
}

// openRunDir locks the run directory and reads the config: the run's own
// (config.yaml) when resuming, else the given one, which is written there.
func (r *run) openRunDir() error {
	var err error
	if r.opts.Resume != "" {
		if r.opts.ConfigPath != "" {
			return fmt.Errorf("--resume continues a run with its own recorded config; --config %s is not allowed (change a setting with --set key=value)", r.opts.ConfigPath)
		}
		r.dir = r.opts.Resume
		if err := checkRunDir(r.dir); err != nil {
			return err
		}
		r.made = startMade{lock: !exists(filepath.Join(r.dir, rundir.LockFile))}
		if r.lock, err = LockDir(r.dir); err != nil {
			return err
		}
		if err := removeLeftovers(r.dir); err != nil {
			return err
		}
		if r.cfg, err = r.resumeConfig(); err != nil {
			return err
		}
		if err := refuseFinished(r.dir, r.changes); err != nil {
			return err
		}
		if err := checkOutputDir(r.dir, r.cfg); err != nil {
			return err
		}
		pc := *r.cfg
		if r.resumesAdapter() {
			pc.Adapter.Init = "" // not read: initDir
		}
		if err := preflight(&pc); err != nil {
			if from := startedFrom(r.dir, &pc); from != "" {
				err = fmt.Errorf("%w\nthe run was started from %s (its output.dir is %s), to which its relative paths are: "+
					"resume it from there: cd %s && meazo-train --resume %s", err, from, pc.Output.Dir, from, pc.Output.Dir)
			}
			return fmt.Errorf("%w\nif the model or the data moved, point the run at their new place: --resume %s --set model.path=DIR "+
				"(task.train=FILE, task.validation=FILE, task.test=FILE likewise; the model and the data must be the files the run started with)", err, r.dir)
		}
		return nil
	}
	if err := r.newRunConfig(); err != nil {
		return err
	}
	// The lock comes first of what is written: a second process on the
	// same directory is refused before it can write anything there.
	r.made = startMade{dir: !exists(r.dir), lock: !exists(filepath.Join(r.dir, rundir.LockFile))}
	if r.lock, err = LockDir(r.dir); err != nil {
		return err
	}
	if err := checkNewRunDir(r.dir); err != nil {
		return err
	}
	if err := removeLeftovers(r.dir); err != nil {
		return err
	}
	if err := r.keepConfigInput(); err != nil {
		return err
	}
	r.made.config = true // from here, config.yaml is this start's
	return r.writeConfig()
}

// newRunConfig reads a new run's config (--config, --set) and checks,
// writing nothing, that every file the run reads is there and that
// output.dir can take a new run: the part of openRunDir that Check shares.
func (r *run) newRunConfig() error {
	var err error
	if r.cfg, err = Load(r.opts.ConfigPath, r.opts.Overrides); err != nil {
		return err
	}
	noteIgnoredSets(r.out, r.cfg, r.opts.Overrides)
	// Every file the run reads, there before anything is written.
	if err := preflight(r.cfg); err != nil {
		return err
	}
	r.dir = r.cfg.Output.Dir
	if err := checkOutputDir(r.dir, r.cfg); err != nil {
		return err
	}
	// A run training there now is named first: the directory's checkpoint
	// would otherwise say "continue it with --resume", which then finds
	// it in use.
	if holder, held, err := LockHolder(r.dir); err == nil && held {
		return fmt.Errorf("run directory %s is in use by %s; wait for it to end (or stop it) before starting a run there, or choose another output.dir", r.dir, holder)
	}
	// Checked before the lock, so that a refused directory gets no
	// run.lock, and again under it (openRunDir), so that no other process
	// can have started a run there in between.
	return checkNewRunDir(r.dir)
}

// keepConfigInput keeps what the --config file holds when it is this
// directory's config.yaml (an earlier start's, given again): it is an
// input, which a failed start puts back rather than take away.
func (r *run) keepConfigInput() error {
	own, err := os.Stat(filepath.Join(r.dir, rundir.ConfigFile))
	if err != nil {
		return nil
	}
	if given, err := os.Stat(r.opts.ConfigPath); err == nil && os.SameFile(own, given) {
		r.made.configInput, err = os.ReadFile(r.opts.ConfigPath)
		return err
	}
	return nil
}

// loadModel loads the tokenizer (first: it fails faster than the
// weights), opens the backend (model.backend) and loads the model on it.
func (r *run) loadModel() error {
	cfg := r.cfg
	var err error
	if r.tok, err = tokenizer.Load(cfg.Model.Path); err != nil {
		return err
	}
	if err := checkChatTemplate(r.tok, data.Format(cfg.Task.Format), data.Task(cfg.Task.Name), "task.format mezo"); err != nil {
		return fmt.Errorf("model %s: %w", cfg.Model.Path, err)
	}
	if err := r.openBackend(); err != nil {
		return err
	}
	dir := r.modelDir()
	fmt.Fprintf(r.out, "loading model %s\n", dir)
	t0 := time.Now()
	if r.m, err = model.LoadWith(dir, r.loadOptions()); err != nil {
		return err
	}
	r.loadSecs = time.Since(t0).Seconds()
	if note := BF16WeightsNote(r.m, dir, cfg.Model.BF16, "model.bf16_weights"); note != "" {
		fmt.Fprintln(r.out, note)
	}
	if note := widenedNote(r.m, dir, cfg.Model.BF16); note != "" && cfg.Adapter.Kind != "full" { // a full-parameter run's trainable line says so
		fmt.Fprintln(r.out, note)
	}
	if err := CheckVocab(r.tok, r.m); err != nil {
		return fmt.Errorf("model %s: %w", cfg.Model.Path, err)
	}
	return nil
}

// positionRule is the length rule (lengthRule's max and name) of setting,
// whose value is maxLength (0: no rule), on model m with virtual
// prompt-tuning tokens before each sequence. An OPT model's learned
// positions (max_position_embeddings) bound it too: a longer sequence fails
// its forward, at step 0's validation or in the test evaluation, so the
// examples that would take more are left out as the rule leaves out those
// past it, and note says so ("" when the positions do not bind). Rotary
// positions (Llama, Qwen) have no such table; OPT's published models have
// 2,048 positions, the default rule's length, so only smaller test models
// are bound. Virtual tokens that take every learned position leave none for
// an example's tokens: an error (the rule would have read a length of zero
// or less as no rule, and every forward would fail).
func positionRule(m *model.Model, maxLength, virtual int, setting string) (length int, name, note string, err error) {
	limit := m.MaxPositions - virtual
	if m.IsOPT() && limit < 1 {
		return 0, "", "", fmt.Errorf("prompt tuning's %d virtual tokens take all of the model's %d learned positions (max_position_embeddings), leaving none for an example's tokens: use fewer than %d",
			virtual, m.MaxPositions, m.MaxPositions)
	}
	if !m.IsOPT() || maxLength > 0 && maxLength <= limit {
		return maxLength, setting, "", nil
	}
	rule := fmt.Sprintf("%s %d", setting, maxLength)
	if maxLength == 0 {
		rule = setting + " 0 (no length rule)"
	}
	with, name := "", "max_position_embeddings"
	if virtual > 0 {
		with, name = fmt.Sprintf(", less the %d virtual tokens", virtual), "max_position_embeddings − adapter.virtual_tokens"
	}
	return limit, name, fmt.Sprintf("%s would let a sequence past the model's %d learned positions (max_position_embeddings%s): "+
		"examples longer than %d tokens are left out as the rule leaves them out", rule, m.MaxPositions, with, limit), nil
}

// CheckVocab refuses a tokenizer with ids past the model's embedding, which
// would fail only in the first forward that meets one (an added token the
// model was not resized for, or another model's tokenizer.json).
func CheckVocab(tok *tokenizer.Tokenizer, m *model.Model) error {
	if n, v := tok.VocabSize(), m.VocabSize; n > v {
		return fmt.Errorf("the tokenizer has ids up to %d but the model's vocab_size is %d (tokens added without resizing the embedding, or another model's tokenizer.json?)", n-1, v)
	}
	return nil
}

// BF16WeightsNote is a line for the user who asked for bfloat16 weights
// (setting names the option) and got none: the model in dir stores no
// weight as BF16 (OPT's float16 checkpoint, a float32 one), so every weight
// is held in float32, at twice the memory the option promised. Float16 is
// not rounded to bfloat16, which would change the weights. "" when the
// option was not given or kept some weights in bfloat16.
func BF16WeightsNote(m *model.Model, dir string, asked bool, setting string) string {
	if !asked || m.HoldsBF16() {
		return ""
	}
	stored := "float32"
	if m.StoresF16() {
		stored = "float16"
	}
	return fmt.Sprintf("%s: %s stores no weight as BF16 (its weights are %s), so it has no effect: every weight is held in float32, "+
		"twice the memory of bfloat16 (only weights stored as BF16 are kept in bfloat16; %s ones are not rounded to it)", setting, dir, stored, stored)
}

// widenedNote is a line for the user whose BF16 checkpoint in dir is held
// in float32 (model.bf16_weights not asked): twice the memory, for results
// the option would give bit for bit (docs/CONFIG.md). "" otherwise.
func widenedNote(m *model.Model, dir string, asked bool) string {
	if asked || m.TorchDtype != "bfloat16" {
		return ""
	}
	return fmt.Sprintf("note: %s stores its weights in bfloat16; they are held in float32, twice their memory, for the same results: "+
		"model.bf16_weights=true (--bf16-weights) keeps them in bfloat16", dir)
}

// modelDir is where the run loads its model from: model.path, or, when a
// full-parameter run resumes, its checkpoint (which holds the weights it
// trained).
func (r *run) modelDir() string {
	if ck := filepath.Join(r.dir, rundir.CheckpointDir); r.cfg.Adapter.Kind == "full" && r.opts.Resume != "" && exists(filepath.Join(ck, "config.json")) {
		return ck
	}
	return r.cfg.Model.Path
}

// loadOptions are the run's options for loading a model: its backend, its
// storage, unstacked projections when the run trains them.
func (r *run) loadOptions() model.LoadOptions {
	return model.LoadOptions{BF16Weights: r.cfg.Model.BF16, Backend: r.backend, Unstacked: r.cfg.Adapter.Kind == "full"}
}

// replaceModel frees the run's model and loads the one in dir in its
// place (a full-parameter run's test evaluation of best/ and the base
// model: two models are never held at once). The freed weights are
// collected and returned to the OS before the next ones load: left to the
// collector, they would still be resident (its goal is set by the live
// weights, so it runs only once the new model has grown the heap past
// them, and returns the pages only slowly after), and the test evaluation
// would peak at two models' memory, twice the training's.
func (r *run) replaceModel(dir string) error {
	r.m.Free()
	r.m = nil
	debug.FreeOSMemory()
	m, err := model.LoadWith(dir, r.loadOptions())
	if err != nil {
		return err
	}
	r.m = m
	return nil
}

// initDir is where the run reads its adapter from: adapter.init ("" for a
// fresh one), or, when a run started from adapter.init resumes, its
// checkpoint. The checkpoint's adapter has the same kind and shape, and its
// values replace the adapter's anyway (restore): so a resume does not need
// adapter.init's directory, which may have moved or gone since the start.
func (r *run) initDir() string {
	if ck := filepath.Join(r.dir, rundir.CheckpointDir); r.cfg.Adapter.Init != "" && r.resumesAdapter() {
		return ck
	}
	return r.cfg.Adapter.Init
}

// resumesAdapter says whether the run resumes from a checkpoint that holds
// its adapter.
func (r *run) resumesAdapter() bool {
	return r.opts.Resume != "" && exists(filepath.Join(r.dir, rundir.CheckpointDir, rundir.AdapterFiles[0]))
}

// setupAdapter makes what trains: the adapter (fresh, or from
// adapter.init), or the model's own weights (adapter.kind full).
func (r *run) setupAdapter() error {
	var err error
	if r.cfg.Adapter.Kind == "full" {
		r.tr, err = newFullState(r)
		return err
	}
	a, err := newTrainable(r.cfg, r.initDir(), r.m, r.tok)
	if err != nil {
		return err
	}
	r.tr = newAdapterState(r.m, a, r.cfg.Eval.Merge)
	return nil
}

// setupEngine makes the optimizer and the ZO engine over what trains (an
// adapter's parameters or the model's own weights: paramState.newEngine;
// noise distribution, joint or grouped), and the sampler.
func (r *run) setupEngine() error {
	cfg := r.cfg
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
	dist, err := noise.ParseDist(distName)
	if err != nil {
		return fmt.Errorf("optimizer.dist: %w", err)
	}
	mode := zo.Joint
	if cfg.Adapter.Grouped {
		mode = zo.Grouped
	}
	if r.engine, err = r.tr.newEngine(opt, zo.Config{Eps: cfg.Optimizer.Eps, Q: cfg.Optimizer.Q, Dist: dist,
		Seed: cfg.Train.Seed, Mode: mode, Workers: cfg.Train.Threads, Schedule: cfg.schedule()}); err != nil {
		return err
	}
	if dist == noise.Sphere {
		warnSphere(r.out, cfg.Optimizer.Eps, r.engine.Dims())
	}
	if w := cfg.Optimizer.WarmupSteps; w > 0 && w >= cfg.Train.Steps && r.opts.Resume == "" {
		// Not refused: a run an early stop ended during its warmup has
		// such a config, and it must load again (to resume, to read).
		fmt.Fprintf(r.out, "warning: optimizer.warmup_steps %d is not less than train.steps %d: the rate never reaches optimizer.lr\n", w, cfg.Train.Steps)
	}
	n, _, _ := r.modality.sizes()
	if cfg.Train.BatchSize > n {
		fmt.Fprintf(r.out, "warning: train.batch_size %d is more than the %d training examples: each batch repeats examples\n", cfg.Train.BatchSize, n)
	}
	r.sampler, err = data.NewSampler(n, cfg.Train.Seed)
	return err
}

// openBackend opens the backend model.backend names, on train.threads
// workers (wrapped for tests that make the device fail).
func (r *run) openBackend() error {
	open := backends.OpenWith
	if r.opts.openBackend != nil {
		open = r.opts.openBackend
	}
	be, err := open(r.cfg.Model.Backend, r.backendOptions(), r.out)
	if err != nil {
		return fmt.Errorf("model.backend: %w", err)
	}
	if note := BF16ProductsNote(be, r.cfg.Model.BF16Products, "model.bf16_products"); note != "" {
		fmt.Fprintln(r.out, note)
	}
	note, err := envBF16Products(be, r.cfg)
	if err != nil {
		be.Close()
		return err
	}
	if note != "" {
		fmt.Fprintln(r.out, note)
	}
	if r.opts.wrapBackend != nil {
		be = r.opts.wrapBackend(be)
	}
	r.backend = be
	return nil
}

// backendOptions are the settings the run opens its backend with: its
// threads and model.bf16_products (the environment's, for benchmarks,
// apply over them: backends.OpenWith).
func (r *run) backendOptions() tensor.Options {
	return tensor.Options{Threads: r.cfg.Train.Threads, BF16Products: r.cfg.Model.BF16Products}
}

// BF16ProductsNote is a line for the user who asked for bfloat16 products
// (setting names the option) on a backend that has none (the CPU's, which
// multiplies bfloat16 weights in float32 whatever it is told): the option
// has no effect there. On a backend that has them but was opened without
// (the environment's MEAZO_CUDA_BF16_PRODUCTS=0 applies over the option:
// backends.OpenWith) it says so and names the variable. "" when it was not
// asked, or the backend takes it.
func BF16ProductsNote(be tensor.Backend, asked bool, setting string) string {
	m, ok := be.(tensor.BF16Multiplier)
	switch {
	case !asked || ok && m.BF16Products():
		return ""
	case ok:
		return fmt.Sprintf("%s: the %s backend was opened without bfloat16 products (the environment's MEAZO_CUDA_BF16_PRODUCTS=%q applies over it), "+
			"so it has no effect: the weights kept in bfloat16 are multiplied in float32", setting, be.Name(), os.Getenv("MEAZO_CUDA_BF16_PRODUCTS"))
	}
	return fmt.Sprintf("%s: the %s backend has no bfloat16 products, so it has no effect: the weights kept in bfloat16 are multiplied in float32, "+
		"as without it (it is for a GPU's tensor cores: model.backend cuda)", setting, be.Name())
}

// envBF16Products checks a backend that multiplies bfloat16 weights in
// bfloat16 though the config did not ask (MEAZO_CUDA_BF16_PRODUCTS=1, a
// benchmark's setting, applies over model.bf16_products): with
// model.bf16_weights the run's numbers are those of bfloat16 products while
// its config.yaml says otherwise, which a note says (meazo-eval scores the
// run as its config says); with adapter.kind full it is refused, as the key
// is (the perturbed products stay float32, the clean passes would not).
func envBF16Products(be tensor.Backend, cfg *Config) (string, error) {
	m, ok := be.(tensor.BF16Multiplier)
	if !ok || !m.BF16Products() || cfg.Model.BF16Products || !cfg.Model.BF16 {
		return "", nil
	}
	env := fmt.Sprintf("MEAZO_CUDA_BF16_PRODUCTS=%q in the environment", os.Getenv("MEAZO_CUDA_BF16_PRODUCTS"))
	if cfg.Adapter.Kind == "full" {
		return "", fmt.Errorf("%s multiplies the weights kept in bfloat16 in bfloat16, which full-parameter training (adapter.kind full) cannot use: "+
			"its perturbed products stay float32; unset the variable", env)
	}
	return fmt.Sprintf("note: %s turns on bfloat16 products though model.bf16_products is false: the run's numbers are theirs, "+
		"while its config.yaml (and meazo-eval's scoring of it) says float32 products; set model.bf16_products: true to record it", env), nil
}

// initialState is the state before a new run's first step: no validation
// yet (the best loss +Inf, the last NaN), the backend's arithmetic and this
// build.
func (r *run) initialState() checkpointState {
	return checkpointState{BestValLoss: math.Inf(1), LastValLoss: math.NaN(), Arithmetic: r.arithmetic(), Program: r.program()}
}

// openLogs opens metrics.jsonl and timing.jsonl: truncated for a new run,
// appended to when resuming (restore has cut them back to the checkpoint).
func (r *run) openLogs() error {
	flags := os.O_CREATE | os.O_WRONLY | os.O_APPEND
	if r.opts.Resume == "" {
		flags |= os.O_TRUNC
	}
	var err error
	if r.metrics, err = os.OpenFile(filepath.Join(r.dir, rundir.MetricsFile), flags, 0o644); err != nil {
		return err
	}
	r.timing, err = os.OpenFile(filepath.Join(r.dir, rundir.TimingFile), flags, 0o644)
	return err
}

// scheduleStepZero marks a new run's step 0 (the validation of the starting
// adapter or weights) as pending: train runs it first (pendingValidation),
// then checkpoints.
func (r *run) scheduleStepZero() error {
	r.state.Sampler = r.sampler.State()
	r.state.ValidationPending = true
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
