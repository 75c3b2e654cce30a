package train

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/meazo-go/meazo/data"
	"github.com/meazo-go/meazo/internal/atomicfile"
	"github.com/meazo-go/meazo/rundir"
)

// ConfigChange is one setting changed with --resume DIR --set key=value.
type ConfigChange = rundir.ConfigChange

// resumableKeys may be changed on resume with --set: they do not decide the
// model, data, adapter shape, noise or sampler order that the checkpoint's
// state belongs to. model.path, task.train and task.validation say only
// where the model and the data are: they may point elsewhere when the files
// there are the recorded ones (relocatableKeys, checkInputs).
var resumableKeys = []string{
	"model.path", "model.bf16_weights", "model.backend",
	"task.train", "task.validation", "task.test", "task.max_test", "task.strict",
	"optimizer.lr", "optimizer.eps", "optimizer.beta1", "optimizer.beta2", "optimizer.beta", "optimizer.zeta",
	"optimizer.momentum", "optimizer.weight_decay", "optimizer.schedule", "optimizer.warmup_steps",
	"train.steps", "train.eval_every", "train.checkpoint_every", "train.threads", "train.log_every", "train.patience",
	"eval.batch_size", "eval.max_new_tokens", "eval.base", "eval.skip", "eval.merge", "eval.rouge_stem", "eval.predictions", "eval.validation_metrics",
	"output.keep_weights",
}

// configValues flattens a config into key → value.
func configValues(c *Config) map[string]any {
	out := map[string]any{}
	v := reflect.ValueOf(*c)
	t := v.Type()
	for i := range t.NumField() {
		sec := t.Field(i)
		for j := range sec.Type.NumField() {
			f := sec.Type.Field(j)
			out[sec.Tag.Get("mapstructure")+"."+f.Tag.Get("mapstructure")] = v.Field(i).Field(j).Interface()
		}
	}
	return out
}

// configDiff lists the keys whose values differ between a and b, in
// declaration order. An empty list equals a missing one (a default, and the
// same read back from config.yaml's []).
func configDiff(a, b *Config) []ConfigChange {
	av, bv := configValues(a), configValues(b)
	var out []ConfigChange
	for _, k := range keys() {
		if !reflect.DeepEqual(av[k.key], bv[k.key]) && !(emptyList(av[k.key]) && emptyList(bv[k.key])) {
			out = append(out, ConfigChange{Key: k.key, Old: av[k.key], New: bv[k.key]})
		}
	}
	return out
}

func describeChanges(cs []ConfigChange) string {
	var parts []string
	for _, c := range cs {
		part := fmt.Sprintf("%s %v -> %v", c.Key, fmtValue(c.Old), fmtValue(c.New))
		if c.Reason != "" {
			part += " (" + c.Reason + ")"
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, ", ")
}

func fmtValue(v any) string {
	if s, ok := v.(string); ok {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprint(v)
}

// recoverCheckpointDir puts checkpoint.old back in place when an
// interruption during the swap left only it complete.
func recoverCheckpointDir(runDir string) error {
	dir, old := filepath.Join(runDir, rundir.CheckpointDir), filepath.Join(runDir, rundir.CheckpointOldDir)
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		if _, err := os.Stat(old); err == nil {
			if err := os.Rename(old, dir); err != nil {
				return fmt.Errorf("resume %s: %w", runDir, err)
			}
		}
	}
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		if s, err := rundir.ReadSummary(runDir); err == nil && s.WeightsKept != "" {
			kept, score := "its best/", fmt.Sprintf("; to test its best/ on other data: meazo-eval task --adapter %s --data FILE (--model for a full-parameter run's)",
				filepath.Join(runDir, rundir.BestDir))
			if s.WeightsKept == rundir.KeepNone {
				kept, score = "no weights", ""
			}
			return fmt.Errorf("resume %s: the run is %s and kept %s, no checkpoint (output.keep_weights: %s): it cannot go on; "+
				"start a new run with --config (with output.keep_weights: all, a finished run can be trained further)%s", runDir, s.Status, kept, s.WeightsKept, score)
		}
		// config.yaml (there: checkRunDir) is every setting the run
		// started with, --set included: what a new start needs again.
		return fmt.Errorf("resume %s: no checkpoint (%s): the run stopped before its first one; start it again with the settings it started with: --config %s --out %s",
			runDir, dir, filepath.Join(runDir, rundir.ConfigFile), runDir)
	}
	// checkpoint/ appears only by the rename of a complete checkpoint.tmp/:
	// with it in place, a checkpoint.tmp/ is one a crash cut short, and a
	// checkpoint.old/ the one it replaced. Neither is needed again.
	for _, stale := range []string{rundir.CheckpointTmpDir, rundir.CheckpointOldDir} {
		if err := os.RemoveAll(filepath.Join(runDir, stale)); err != nil {
			return fmt.Errorf("resume %s: %w", runDir, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, rundir.StateFile)); errors.Is(err, os.ErrNotExist) {
		// A checkpoint is swapped in whole: one without its state lost it
		// afterwards, and a new start would be refused (it holds a run).
		return fmt.Errorf("resume %s: %w", runDir, corrupted("%s is missing", filepath.Join(dir, rundir.StateFile)))
	}
	return nil
}

// resumeConfig verifies the checkpoint and returns the configuration to
// continue with: the one the checkpoint was written with, plus the --set
// overrides (which must be resumable keys; r.changes lists them). A run's
// config.yaml that differs from the checkpoint's copy is refused.
func (r *run) resumeConfig() (*Config, error) {
	if err := recoverCheckpointDir(r.dir); err != nil {
		return nil, err
	}
	ck := filepath.Join(r.dir, rundir.CheckpointDir)
	if err := verifyManifest(ck); err != nil {
		return nil, fmt.Errorf("resume %s: %w", r.dir, err)
	}
	base, err := Load(filepath.Join(ck, rundir.ConfigFile), nil)
	if err != nil {
		return nil, fmt.Errorf("resume %s: %w", r.dir, err)
	}
	if err := restoreConfig(r.dir, r.out); err != nil {
		return nil, err
	}
	cur, err := Load(filepath.Join(r.dir, rundir.ConfigFile), nil)
	if err != nil {
		return nil, fmt.Errorf("resume %s: %w", r.dir, err)
	}
	if d := configDiff(base, cur); len(d) > 0 && pendingChanges(r.dir, d) {
		// A resume with --set wrote config.yaml and was stopped before its
		// checkpoint: its changes never applied (applyChanges cuts their
		// lines off changes.jsonl), so config.yaml is the checkpoint's
		// again, put back before those lines go.
		fmt.Fprintf(r.out, "config.yaml holds changes made after the last checkpoint by a process stopped before its next (%s): not applied; continuing with the checkpoint's settings\n", describeChanges(d))
		y, err := os.ReadFile(filepath.Join(ck, rundir.ConfigFile))
		if err == nil {
			err = atomicfile.WriteFile(filepath.Join(r.dir, rundir.ConfigFile), y)
		}
		if err != nil {
			return nil, fmt.Errorf("resume %s: %w", r.dir, err)
		}
	} else if len(d) > 0 {
		restore := fmt.Sprintf("restore config.yaml (cp %s %s)", filepath.Join(ck, rundir.ConfigFile), filepath.Join(r.dir, rundir.ConfigFile))
		var fixed []string
		for _, c := range d {
			if !slices.Contains(resumableKeys, c.Key) {
				fixed = append(fixed, c.Key)
			}
		}
		if len(fixed) > 0 {
			// --set would be refused too: say so, not "use --set".
			return nil, fmt.Errorf("resume %s: config.yaml was edited since the last checkpoint (%s); a run continues with its recorded settings, "+
				"and %s cannot change on resume (it fixes the run's model, data, adapter, arithmetic, noise or directory): %s, or start a new run with the new settings",
				r.dir, describeChanges(d), strings.Join(fixed, ", "), restore)
		}
		return nil, fmt.Errorf("resume %s: config.yaml was edited since the last checkpoint (%s); a run continues with its recorded settings: "+
			"%s, then change a setting explicitly with --resume %s --set key=value (recorded in %s)", r.dir, describeChanges(d), restore, r.dir, rundir.ChangesFile)
	}
	if len(r.opts.Overrides) == 0 {
		return base, nil
	}
	cfg, err := Load(filepath.Join(ck, rundir.ConfigFile), r.opts.Overrides)
	if err != nil {
		return nil, fmt.Errorf("resume %s: %w", r.dir, err)
	}
	noteIgnoredSets(r.out, cfg, r.opts.Overrides)
	if !slices.ContainsFunc(r.opts.Overrides, func(o string) bool { k, _, _ := SplitOverride(o); return k == "model.name" }) {
		// A model moved keeps its name: restore checks that its files are
		// the recorded ones (Load drops the name of a model.path set to
		// another model's, which is not one a resume may take).
		cfg.Model.Name = base.Model.Name
	}
	r.changes = configDiff(base, cfg)
	if err := checkResumeChanges(r.changes, cfg); err != nil {
		return nil, fmt.Errorf("resume %s: %w", r.dir, err)
	}
	return cfg, nil
}

// checkResumeChanges refuses the settings a resume may not change: those
// not resumable, a full-parameter run's model.bf16_weights, what a
// train.objective f1 run's loss generates with, and how a train.objective
// accuracy run's loss batches its label candidates.
func checkResumeChanges(changes []ConfigChange, cfg *Config) error {
	for _, c := range changes {
		if !slices.Contains(resumableKeys, c.Key) {
			return &OverrideError{c.Key, fmt.Errorf("cannot change on resume (the run's %s, --set %s; it fixes the run's model, data, adapter, arithmetic, noise or directory); "+
				"start a new run instead. Changeable: %s", fmtValue(c.Old), fmtValue(c.New), strings.Join(resumableKeys, ", "))}
		}
		if stateKeyOf(cfg.Optimizer.Name) == c.Key && (c.Old == 0.0) != (c.New == 0.0) {
			// 0 and not 0 keep different state (no momentum buffer, no
			// first moment): the checkpoint's state cannot be restored.
			return &OverrideError{c.Key, fmt.Errorf("cannot change on resume between 0 and a value above 0 (the run's %s, --set %s): "+
				"%s keeps its state with it (a momentum buffer or a first moment) or without, and the checkpoint's is the run's; change it among values above 0, or start a new run instead",
				fmtValue(c.Old), fmtValue(c.New), cfg.Optimizer.Name)}
		}
		if c.Key == "model.bf16_weights" && cfg.Adapter.Kind == "full" {
			// Frozen weights give the same results either way; trained
			// ones are stored, rounded and saved in what it says.
			return &OverrideError{c.Key, fmt.Errorf("cannot change on resume of a full-parameter run (the run's %s, --set %s): "+
				"it decides how the trained weights are stored and each update rounded (bfloat16 with stochastic rounding, or float32), and so the run's numbers; "+
				"start a new run instead", fmtValue(c.Old), fmtValue(c.New))}
		}
		if cfg.Train.Objective == ObjectiveF1 && (c.Key == "eval.max_new_tokens" && !sameNewTokens(c, cfg) || c.Key == "eval.batch_size") {
			return &OverrideError{c.Key, fmt.Errorf("cannot change on resume of a train.objective f1 run (the run's %s, --set %s): "+
				"the training loss generates its answers with it, so the steps after the resume would train on another objective; start a new run instead", fmtValue(c.Old), fmtValue(c.New))}
		}
		if cfg.Train.Objective == ObjectiveAccuracy && c.Key == "eval.batch_size" && !isImageTask(cfg) {
			// The CPU backend scores a candidate alike in any batch; cuBLAS
			// may choose another kernel for another shape, and a near tie
			// between labels then goes the other way. (An image task's
			// objective runs the mini-batch in one forward, as its loss
			// does: it does not read eval.batch_size.)
			return &OverrideError{c.Key, fmt.Errorf("cannot change on resume of a train.objective accuracy run (the run's %s, --set %s): "+
				"the training loss scores the label candidates that many a forward, and a GPU may round batches of another shape otherwise, so the steps after the resume "+
				"would not be the run's; start a new run instead", fmtValue(c.Old), fmtValue(c.New))}
		}
	}
	return nil
}

// stateKeyOf is the setting whose being 0 or not decides the state the
// optimizer keeps: zo-sgd's momentum buffer, zo-adam's first moment.
func stateKeyOf(optimizer string) string {
	switch optimizer {
	case "zo-sgd":
		return "optimizer.momentum"
	case "zo-adam":
		return "optimizer.beta1"
	}
	return ""
}

// sameNewTokens says whether a change of eval.max_new_tokens leaves the
// cap the same: 0 stands for the task's default.
func sameNewTokens(c ConfigChange, cfg *Config) bool {
	tokens := func(v any) int {
		if n, ok := v.(int); ok && n > 0 {
			return n
		}
		return defaultMaxNewTokens(data.Task(cfg.Task.Name))
	}
	return tokens(c.Old) == tokens(c.New)
}

// restoreConfig puts back a run's config.yaml that is gone (deleted by
// hand, lost with a copy) from its checkpoint's: the settings the
// checkpoint was made with, which a resume continues with anyway. Without
// it the run could be neither resumed (no config.yaml) nor started again
// (the directory holds a checkpoint).
func restoreConfig(dir string, log io.Writer) error {
	path := filepath.Join(dir, rundir.ConfigFile)
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	y, err := os.ReadFile(filepath.Join(dir, rundir.CheckpointDir, rundir.ConfigFile))
	if err == nil {
		err = atomicfile.WriteFile(path, y)
	}
	if err != nil {
		return fmt.Errorf("resume %s: %s is missing and cannot be put back from the checkpoint's: %w", dir, rundir.ConfigFile, err)
	}
	fmt.Fprintf(log, "%s was missing: put back from the checkpoint's (the settings of the last checkpoint)\n", path)
	return nil
}

// pendingChanges says whether the lines of changes.jsonl written after the
// checkpoint's are exactly the differences d between the checkpoint's
// config and the run's config.yaml: a resume with --set (lines at the
// checkpoint's step) or an early stop (a line with its reason, at a later
// step) wrote config.yaml and was stopped before its checkpoint, and no one
// edited it.
func pendingChanges(dir string, d []ConfigChange) bool {
	b, err := os.ReadFile(filepath.Join(dir, rundir.CheckpointDir, rundir.StateFile))
	if err != nil {
		return false
	}
	var st checkpointState
	if json.Unmarshal(b, &st) != nil {
		return false
	}
	log, err := os.ReadFile(filepath.Join(dir, rundir.ChangesFile))
	if err != nil || st.ChangesBytes < 0 || st.ChangesBytes >= int64(len(log)) {
		return false
	}
	pending := map[string]string{} // key → the line's old and new values, as JSON
	for _, line := range strings.Split(strings.TrimSpace(string(log[st.ChangesBytes:])), "\n") {
		var c ConfigChange
		if json.Unmarshal([]byte(line), &c) != nil || c.Step != st.Step && !(c.Reason != "" && c.Step > st.Step) {
			return false
		}
		if notASetting(c.Key) { // config.yaml does not hold it
			continue
		}
		pending[c.Key] = changeValues(c)
	}
	if len(pending) != len(d) {
		return false
	}
	for _, c := range d {
		if v, ok := pending[c.Key]; !ok || v != changeValues(c) {
			return false
		}
	}
	return true
}

// changeValues is a change's old and new values as JSON, comparable
// whether they come from a config or from a line of changes.jsonl.
func changeValues(c ConfigChange) string {
	b, err := json.Marshal([]any{c.Old, c.New})
	if err != nil {
		return ""
	}
	return string(b)
}

// checkState rejects a state.json whose values cannot belong to this run.
func (r *run) checkState(path string) error {
	st := r.state
	bad := func(format string, args ...any) error {
		return fmt.Errorf("resume %s: %s: %s", r.dir, path, fmt.Sprintf(format, args...))
	}
	nTrain, _, nTest := r.modality.sizes()
	switch {
	case st.Step < 0:
		return bad("step %d is negative", st.Step)
	case st.Step > r.cfg.Train.Steps:
		return bad("step %d is beyond train.steps %d (raise it with --set train.steps=N to train longer)", st.Step, r.cfg.Train.Steps)
	case st.BestStep < 0 || st.BestStep > st.Step:
		return bad("best_step %d is outside 0..%d", st.BestStep, st.Step)
	case st.MetricsBytes < 0 || st.TimingBytes < 0 || st.ChangesBytes < 0:
		return bad("negative log sizes (metrics_bytes %d, timing_bytes %d, changes_bytes %d)", st.MetricsBytes, st.TimingBytes, st.ChangesBytes)
	case !(st.Seconds >= 0) || math.IsInf(st.Seconds, 0):
		return bad("seconds %g is not a non-negative number", st.Seconds)
	case st.Sampler.N != nTrain:
		return bad("sampler over %d examples, but the training set has %d (the data changed?)", st.Sampler.N, nTrain)
	case st.Sampler.Seed != r.cfg.Train.Seed:
		return bad("sampler seed %d, but train.seed is %d", st.Sampler.Seed, r.cfg.Train.Seed)
	case st.BestJSON != nil && (math.IsNaN(*st.BestJSON) || math.IsInf(*st.BestJSON, 0)):
		return bad("best_val_loss is not finite")
	case st.Test != nil && st.ValidationPending:
		return bad("both a validation and a test evaluation are pending")
	case st.Test != nil && st.Step != r.cfg.Train.Steps:
		return bad("a test evaluation is pending at step %d, but train.steps is %d", st.Step, r.cfg.Train.Steps)
	}
	if st.Test != nil {
		return checkTestProgress(st.Test, nTest, sumsLen(data.Task(r.cfg.Task.Name)), bad)
	}
	return nil
}

// checkTestProgress checks a stopped test evaluation's record against the
// test set it belongs to (n examples, sums running sums).
func checkTestProgress(tp *testProgress, n, sums int, bad func(string, ...any) error) error {
	names := []string{"best", "last", "base"}
	for name := range tp.Finished {
		if !slices.Contains(names, name) {
			return bad("test.finished names %q: want best, last or base", name)
		}
	}
	p := tp.Partial
	switch {
	case tp.Current != "" && !slices.Contains(names, tp.Current):
		return bad("test.current is %q: want best, last or base", tp.Current)
	case p.Done < 0 || p.Done > n:
		return bad("test.partial.done %d is outside 0..%d (the test set's examples)", p.Done, n)
	case p.Done > 0 && len(p.Sums) != sums:
		return bad("test.partial.sums has %d numbers, want %d", len(p.Sums), sums)
	}
	for _, x := range p.Sums {
		if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 || x > float64(p.Done) {
			return bad("test.partial.sums holds %g, outside 0..%d", x, p.Done)
		}
	}
	return nil
}

// checkLogs checks that metrics.jsonl and timing.jsonl still begin with the
// bytes the checkpoint recorded (they are then cut back to that length).
func (r *run) checkLogs() error {
	for _, l := range []struct {
		name string
		size int64
		sum  string
		hash *logHash
	}{{rundir.MetricsFile, r.state.MetricsBytes, r.state.MetricsSHA256, &r.metricsHash}, {rundir.TimingFile, r.state.TimingBytes, r.state.TimingSHA256, &r.timingHash}} {
		p := filepath.Join(r.dir, l.name)
		st, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("resume %s: %w", r.dir, err)
		}
		if st.Size() < l.size {
			return fmt.Errorf("resume %s: %s is %d bytes, shorter than the %d bytes the checkpoint at step %d recorded: the log was cut or replaced, so the run cannot continue it",
				r.dir, p, st.Size(), l.size, r.state.Step)
		}
		if l.sum == "" {
			return corrupted("%s has no checksum for %s", filepath.Join(r.dir, rundir.CheckpointDir, rundir.StateFile), l.name)
		}
		sum, err := l.hash.upTo(p, l.size) // the running checksum from here on
		if err != nil {
			return fmt.Errorf("resume %s: %w", r.dir, err)
		}
		if sum != l.sum {
			return fmt.Errorf("resume %s: the first %d bytes of %s differ from what the checkpoint at step %d recorded: the log was edited", r.dir, l.size, p, r.state.Step)
		}
	}
	// changes.jsonl is the record of every setting changed on resume, which
	// summary.json's "changes" shows beside the run's (final) config: one
	// cut short would leave the run reading as if trained at its last rate.
	p := filepath.Join(r.dir, rundir.ChangesFile)
	var size int64
	if st, err := os.Stat(p); err == nil {
		size = st.Size()
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("resume %s: %w", r.dir, err)
	}
	if size < r.state.ChangesBytes {
		return fmt.Errorf("resume %s: %s is %d bytes, shorter than the %d bytes the checkpoint at step %d recorded: the settings changed on an earlier resume are missing from it, so the run cannot continue it",
			r.dir, p, size, r.state.ChangesBytes, r.state.Step)
	}
	return nil
}

// stampLogs records the logs' checksums in the state (called with the sizes
// set), hashing only what was appended since the last checkpoint.
func (r *run) stampLogs() error {
	var err error
	if r.state.MetricsSHA256, err = r.metricsHash.upTo(r.metrics.Name(), r.state.MetricsBytes); err != nil {
		return err
	}
	if r.state.TimingSHA256, err = r.timingHash.upTo(r.timing.Name(), r.state.TimingBytes); err != nil {
		return err
	}
	if st, err := os.Stat(filepath.Join(r.dir, rundir.ChangesFile)); err == nil {
		r.state.ChangesBytes = st.Size()
	} else {
		r.state.ChangesBytes = 0
	}
	return nil
}

// checkpointExtras adds to the checkpoint directory being written what
// resume needs besides the parameters, state and optimizer: the
// configuration; then the manifest, last.
func (r *run) checkpointExtras(tmp string) error {
	y, err := r.cfg.YAML()
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(filepath.Join(tmp, rundir.ConfigFile), y); err != nil {
		return err
	}
	if r.answers != nil && r.state.Test != nil && r.state.Test.Current != "" { // a stop during the test: its answers so far
		if err := r.answers.WriteFile(filepath.Join(tmp, rundir.PartialPredictionsFile)); err != nil {
			return err
		}
	}
	return writeManifest(tmp)
}

// applyChanges records the settings changed on resume (changes.jsonl, the
// run's config.yaml) and checkpoints at once, so that the checkpoint and
// config.yaml agree again.
func (r *run) applyChanges() error {
	p := filepath.Join(r.dir, rundir.ChangesFile)
	if st, err := os.Stat(p); err == nil && st.Size() > r.state.ChangesBytes {
		if err := os.Truncate(p, r.state.ChangesBytes); err != nil { // lines of a resume that never checkpointed
			return fmt.Errorf("resume: %w", err)
		}
	}
	if len(r.changes) == 0 {
		return nil
	}
	now := time.Now().UTC().Format(time.RFC3339)
	stoppedEarly := earlyStopMessage(readChanges(r.dir), r.state.Step) != ""
	for i := range r.changes {
		r.changes[i].Step, r.changes[i].Time = r.state.Step, now
		c := r.changes[i]
		if c.Key == "train.steps" && c.Old == any(r.state.Step) && stoppedEarly {
			// Training on from an early stop: train.patience counts afresh.
			// A run that ran all its steps keeps its count, and goes on as
			// the uninterrupted run of the larger count does.
			r.state.SinceBest = 0
		}
		if c.Key == "train.steps" && c.New == any(r.state.Step) && r.lastValStep != r.state.Step {
			// Ending at this step now: its validation, at the end of every
			// run, has not run.
			r.state.ValidationPending = true
		}
		fmt.Fprintf(r.out, "changed on resume at step %d: %s\n", r.state.Step, describeChanges(r.changes[i:i+1]))
	}
	if err := appendChanges(r.dir, r.changes); err != nil {
		return err
	}
	if err := r.writeConfig(); err != nil {
		return err
	}
	return r.checkpoint()
}

// appendChanges appends cs to the run directory's changes.jsonl, a line
// each (a resume's --set; an early stop).
func appendChanges(dir string, cs []ConfigChange) error {
	f, err := os.OpenFile(filepath.Join(dir, rundir.ChangesFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	for _, c := range cs {
		if err := writeJSONLine(f, c); err != nil {
			f.Close()
			return err
		}
	}
	// On the disk before the checkpoint that records its size (a resume
	// refuses a shorter file).
	return errors.Join(f.Sync(), f.Close())
}

// writeConfig writes the run's resolved config to config.yaml, atomically.
func (r *run) writeConfig() error {
	y, err := r.cfg.YAML()
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(r.dir, rundir.ConfigFile), y)
}

// readChanges reads changes.jsonl (nil when there is none).
func readChanges(dir string) []ConfigChange {
	b, err := os.ReadFile(filepath.Join(dir, rundir.ChangesFile))
	if err != nil {
		return nil
	}
	var out []ConfigChange
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var c ConfigChange
		if json.Unmarshal([]byte(line), &c) == nil && c.Key != "" {
			out = append(out, c)
		}
	}
	return out
}
