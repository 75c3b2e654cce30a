package train

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/meazo-go/meazo/data"
	"github.com/meazo-go/meazo/internal/atomicfile"
	"github.com/meazo-go/meazo/internal/buildinfo"
	"github.com/meazo-go/meazo/noise"
	"github.com/meazo-go/meazo/rundir"
)

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
	// A stop cut short the validation of this step: resume runs it first.
	// (Step 0's; or a later step's in a run that keeps no copy of its
	// parameters before a step, a full-parameter run: otherwise a stop in a
	// later validation checkpoints the state before its step.)
	ValidationPending bool `json:"validation_pending,omitempty"`
	// The task's metric on the validation split at the best step and at
	// the last validation (eval.validation_metrics; absent when off), for
	// summary.json. A validation replaces them, never changes them in
	// place (a snapshot shares them).
	BestValMetrics map[string]float64 `json:"best_val_metrics,omitempty"`
	LastValMetrics map[string]float64 `json:"last_val_metrics,omitempty"`
	// The validations in a row since the best validation loss, for
	// train.patience (absent: 0).
	SinceBest int `json:"validations_since_best,omitempty"`
	// A stop cut short the test evaluation after the last step: how far it
	// got, for resume to go on from.
	Test *testProgress `json:"test,omitempty"`
	// The arithmetic that computed the steps so far: the backend's
	// (tensor.Backend.Arithmetic) and the noise contract's version
	// (noise.Version). A resume on another says that the run is no longer
	// bit for bit the one an uninterrupted run would have made.
	Arithmetic string `json:"arithmetic,omitempty"`
	// The build of meazo-go that computed the steps so far
	// (buildinfo.Version): a kernel changed between two builds rounds
	// otherwise with the same arithmetic, so a resume by another build says
	// so too (noteProgram). Absent in checkpoints from before the field.
	Program string `json:"program,omitempty"`
	// The fingerprints of the model and the data the steps so far were
	// computed from (inputs.go): a resume checks them.
	Inputs []inputFile `json:"inputs,omitempty"`
}

// testProgress is how far a run's test evaluation got: the evaluations
// finished (best, last, base adapters) and the one under way.
type testProgress struct {
	Finished map[string]map[string]float64 `json:"finished,omitempty"`
	Current  string                        `json:"current,omitempty"`
	Partial  evalPartial                   `json:"partial"`
}

// noteArithmetic records, as a change on resume, that this process computes
// with another arithmetic than the run's earlier steps: a Slurm job
// requeued on a node with another CPU (AVX-512 or AVX2) or GPU, or another
// build (GOEXPERIMENT=simd or not). The run goes on correctly, but its
// numbers are no longer those of an uninterrupted run, and the record says
// so. So does a program that draws other noise (noise.Version). A
// checkpoint from before the field (73c9eef, 2026-11-27) was computed with
// the noise before noise v2 (305122f, 2026-11-28), whatever its backend:
// its resume is recorded as a change from unrecordedArithmetic.
//
// Only a resume that computes a step does: one with no step left (the test
// evaluation a stop cut short, a validation pending at the last step, a
// finished run tested again) evaluates the parameters its steps computed,
// bit for bit, and an evaluation draws no noise. It records nothing, and
// the checkpoint keeps naming the arithmetic of the steps; on another
// backend, whose rounding the evaluation's numbers can show in their last
// digits, the log notes it (summary.json's backend names it).
func (r *run) noteArithmetic() {
	if r.state.Arithmetic == "" {
		r.state.Arithmetic = unrecordedArithmetic
	}
	was, now := r.state.Arithmetic, r.arithmetic()
	if r.state.Step >= r.cfg.Train.Steps {
		if wb, nb := backendArithmetic(was), backendArithmetic(now); wb != "" && wb != nb {
			fmt.Fprintf(r.out, "note: the run's steps were computed with %s; this process evaluates with %s, which rounds differently: "+
				"the evaluation's numbers may differ in their last digits from the same evaluation there (no step is left, so no change is recorded)\n", wb, nb)
		}
		return
	}
	r.state.Arithmetic = r.noteOther(rundir.ArithmeticChange, was, now,
		"warning: the run's steps so far were computed with %s; this process computes with %s, whose rounding or noise differs: ")
}

// backendArithmetic is the backend's part of a recorded arithmetic (what an
// evaluation's rounding depends on, without the noise contract's version):
// "" where unrecorded. A checkpoint of 2026-11-27 records the backend's
// alone (the noise before noise v2).
func backendArithmetic(a string) string {
	if a == unrecordedArithmetic {
		return ""
	}
	backend, _, _ := strings.Cut(a, "; noise ")
	return backend
}

// arithmetic is what decides this process's numbers: the backend's
// arithmetic and the noise contract's version.
func (r *run) arithmetic() string { return r.backend.Arithmetic() + "; noise " + noise.Version }

// noteProgram records, as a change on resume, that another build of
// meazo-go than the one that computed the run's steps so far goes on with
// it: one with a kernel changed in between computes other bits on the same
// arithmetic, and nothing else would tell. A note rather than a warning:
// most builds compute the same bits.
//
// A checkpoint from before the field (fb76aa3, 2026-11-30) was written by a
// build older than every build that records one, so by another build than
// this one: its resume is recorded as a change from unrecordedProgram.
func (r *run) noteProgram() {
	if r.state.Program == "" {
		r.state.Program = unrecordedProgram
	}
	r.state.Program = r.noteOther(rundir.ProgramChange, r.state.Program, r.program(),
		"note: the run's steps so far were computed by meazo-go %s; this process is %s: if a kernel changed in between, ")
}

// noteOther records the change key from was (the checkpoint's) to now,
// saying so with what (a format of was and now), and returns now.
func (r *run) noteOther(key, was, now, what string) string {
	if was != now {
		fmt.Fprintf(r.out, what+"the run goes on correctly, but not bit for bit as it would have (recorded in %s)\n", was, now, rundir.ChangesFile)
		r.changes = append(r.changes, ConfigChange{Key: key, Old: was, New: now})
	}
	return now
}

// program is this build's version (buildinfo.Version; Options.program in
// tests).
func (r *run) program() string {
	if r.opts.program != "" {
		return r.opts.program
	}
	return buildinfo.Version()
}

// unrecordedArithmetic and unrecordedProgram are the old values of those
// changes when the checkpoint resumed records none: it was written by a
// build from before the field.
const (
	unrecordedArithmetic = "unrecorded (a build before 2026-11-27; noise before noise v2)"
	unrecordedProgram    = "unrecorded (a build before 2026-11-30)"
)

// notASetting says whether a change's key is one of the records
// noteArithmetic and noteProgram make (rundir.ArithmeticChange,
// rundir.ProgramChange): not settings, a record of what computed the steps
// after them.
func notASetting(key string) bool {
	return key == rundir.ArithmeticChange || key == rundir.ProgramChange
}

// snapshot is the state of a run after a step, kept in memory while the
// next step runs (the parameters, the engine's state, the logs' sizes), so
// that a stop in that step's validation can checkpoint the state before it.
type snapshot struct {
	state    checkpointState
	params   any // paramState.snapshot's
	engine   []byte
	logSizes [2]int64 // metrics.jsonl, timing.jsonl
}

// snapshot takes the run's state after its last step, or returns nil where
// the parameters are not copied (paramState.snapshot).
func (r *run) snapshot() (*snapshot, error) {
	params, ok := r.tr.snapshot()
	if !ok {
		return nil, nil
	}
	eng, err := r.engine.MarshalBinary()
	if err != nil {
		return nil, err
	}
	s := &snapshot{state: r.state, params: params, engine: eng}
	for i, f := range []*os.File{r.metrics, r.timing} {
		st, err := f.Stat()
		if err != nil {
			return nil, err
		}
		s.logSizes[i] = st.Size()
	}
	return s, nil
}

// checkpointSnapshot makes s the run's state again and checkpoints it: the
// logs are cut back to it (the lines after it run again on resume, as after
// any checkpoint), and the parameters and the engine are left as they were.
func (r *run) checkpointSnapshot(s *snapshot) error {
	r.state = s.state
	for i, f := range []*os.File{r.metrics, r.timing} {
		if err := f.Truncate(s.logSizes[i]); err != nil {
			return err
		}
	}
	return r.checkpointOf(s.params, s.engine)
}

// checkpoint writes checkpoint/ atomically: a new directory is filled, then
// swapped in by rename, so an interruption leaves the previous one intact.
func (r *run) checkpoint() error {
	eng, err := r.engine.MarshalBinary()
	if err != nil {
		return err
	}
	return r.checkpointOf(nil, eng)
}

// checkpointOf writes checkpoint/ with the parameters (a snapshot's, or
// the live ones for nil), the engine state and r.state, the logs as they
// are now.
func (r *run) checkpointOf(params any, eng []byte) (err error) {
	// One line a step: the model's own weights checkpoint a new best at
	// once, and the same step again right after (linking its files).
	if r.ckLine != r.state.Step {
		r.out.begin("writing the checkpoint", fmt.Sprintf("writing the checkpoint of step %d", r.state.Step))
		r.ckLine = r.state.Step
	} else {
		r.out.doing("writing the checkpoint")
	}
	t0 := time.Now()
	defer func() { // for the projection: the longest (a full-parameter run's second checkpoint of a step only links the first's files)
		if secs := time.Since(t0).Seconds(); secs > r.ckSecs {
			r.ckSecs, r.ckStep = secs, r.state.Step
		}
	}()
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
	final, tmp := filepath.Join(r.dir, rundir.CheckpointDir), filepath.Join(r.dir, rundir.CheckpointTmpDir)
	os.RemoveAll(tmp)
	defer func() {
		// A checkpoint that could not be written (a full disk) leaves no
		// part of itself behind: a full-parameter run's is up to a whole
		// model, which would hold the disk the run stopped for.
		if err != nil {
			os.RemoveAll(tmp)
		}
	}()
	if err := r.tr.save(tmp, params, r.state.Step, !math.IsInf(r.state.BestValLoss, 1)); err != nil {
		return err
	}
	if err := atomicfile.WriteFile(filepath.Join(tmp, rundir.OptimizerFile), eng); err != nil {
		return err
	}
	r.state.BestJSON, r.state.LastJSON = finite(r.state.BestValLoss), finite(r.state.LastValLoss)
	st, err := json.MarshalIndent(r.state, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(filepath.Join(tmp, rundir.StateFile), st); err != nil {
		return err
	}
	if err := r.checkpointExtras(tmp); err != nil {
		return err
	}
	return r.swapCheckpoint(tmp, final)
}

// swapCheckpoint puts the checkpoint written in tmp in place of final,
// the previous one kept as checkpoint.old/ until then. Every name in tmp
// is on the disk before the swap, and the swap itself after: a power loss
// must not bring back the old checkpoint under a state that says it holds
// the new one, or a new one missing a file.
func (r *run) swapCheckpoint(tmp, final string) error {
	if err := atomicfile.SyncDir(tmp); err != nil {
		return err
	}
	old := filepath.Join(r.dir, rundir.CheckpointOldDir)
	os.RemoveAll(old)
	if _, err := os.Stat(final); err == nil {
		if err := os.Rename(final, old); err != nil {
			return err
		}
	}
	if err := os.Rename(tmp, final); err != nil {
		return err
	}
	r.tr.committed()
	if err := atomicfile.SyncDir(r.dir); err != nil {
		return err
	}
	// The checkpoint is in place: a previous one that cannot be removed
	// costs disk space, not the run (the next checkpoint or resume
	// removes it).
	if err := os.RemoveAll(old); err != nil {
		fmt.Fprintf(r.out, "warning: the checkpoint is written, but the previous one is left in %s: %v\n", old, err)
	}
	if r.opts.afterCheckpoint != nil {
		r.opts.afterCheckpoint()
	}
	return nil
}

// restore loads checkpoint/ into the run and cuts the logs back to it.
func (r *run) restore() error {
	dir := filepath.Join(r.dir, rundir.CheckpointDir) // in place: resumeConfig has recovered an interrupted swap
	if err := r.readState(dir); err != nil {
		return err
	}
	moved := map[string]string{}
	for _, c := range r.changes {
		if old, ok := c.Old.(string); ok && slices.Contains(relocatableKeys, c.Key) {
			moved[c.Key] = old
		}
	}
	var err error
	if r.state.Inputs, err = checkInputs(r.state.Inputs, r.cfg, moved); err != nil {
		return fmt.Errorf("resume %s: %w", r.dir, err)
	}
	if err := r.checkState(filepath.Join(dir, rundir.StateFile)); err != nil {
		return err
	}
	hasBest := !math.IsInf(r.state.BestValLoss, 1)
	if err := r.tr.restore(dir, hasBest); err != nil {
		return err
	}
	if err := r.restoreEngine(dir); err != nil {
		return err
	}
	if r.sampler, err = data.ResumeSampler(r.state.Sampler); err != nil {
		return fmt.Errorf("resume: %w", err)
	}
	if err := r.checkLogs(); err != nil {
		return err
	}
	if err := r.restoreTestAnswers(dir); err != nil {
		return fmt.Errorf("resume %s: %w", r.dir, err)
	}
	// Once nothing can refuse the resume: a refused one neither goes on nor
	// records, so it must not say that it does.
	r.noteArithmetic()
	r.noteProgram()
	return r.goOn(hasBest)
}

// readState reads the checkpoint's state.json in dir into the run's state.
func (r *run) readState(dir string) error {
	b, err := os.ReadFile(filepath.Join(dir, rundir.StateFile))
	if err != nil {
		return fmt.Errorf("resume %s: %w", r.dir, err)
	}
	// Into a zero state, not over the new run's (initialState): a field the
	// checkpoint lacks (arithmetic, program: one from before them) is absent,
	// not this process's.
	var st checkpointState
	if err := json.Unmarshal(b, &st); err != nil {
		return fmt.Errorf("resume %s: state.json: %w", r.dir, err)
	}
	r.state = st
	r.state.BestValLoss, r.state.LastValLoss = math.Inf(1), math.NaN()
	if r.state.BestJSON != nil {
		r.state.BestValLoss = *r.state.BestJSON
	}
	if r.state.LastJSON != nil {
		r.state.LastValLoss, r.lastValStep = *r.state.LastJSON, lastValidation(r.dir, r.state.Step)
	}
	if r.state.Test != nil && len(r.changes) > 0 {
		// What it scored may no longer be what the changed settings would.
		fmt.Fprintf(r.out, "the test evaluation a stop cut short starts again: settings changed on resume\n")
		r.state.Test = nil
	}
	return nil
}

// restoreEngine loads the ZO engine's state from the checkpoint in dir.
func (r *run) restoreEngine(dir string) error {
	eng, err := os.ReadFile(filepath.Join(dir, rundir.OptimizerFile))
	if err != nil {
		return fmt.Errorf("resume: %w", err)
	}
	if err := r.engine.UnmarshalBinary(eng); err != nil {
		return fmt.Errorf("resume %s: optimizer.bin: %w", dir, err)
	}
	if r.engine.StepCount() != r.state.Step {
		return corrupted("%s is at step %d, state.json at step %d", filepath.Join(dir, rundir.OptimizerFile), r.engine.StepCount(), r.state.Step)
	}
	return nil
}

// goOn commits the run to the resume once nothing refuses it: run.lock
// names this process for good, the logs are cut back to the checkpoint,
// best/ is the checkpoint's, and what the last test wrote is gone unless
// the resume finishes that test.
func (r *run) goOn(hasBest bool) error {
	r.lock.Keep()
	// Steps logged after the checkpoint are run again: cut them off.
	if err := os.Truncate(filepath.Join(r.dir, rundir.MetricsFile), r.state.MetricsBytes); err != nil {
		return fmt.Errorf("resume: %w", err)
	}
	if err := os.Truncate(filepath.Join(r.dir, rundir.TimingFile), r.state.TimingBytes); err != nil {
		return fmt.Errorf("resume: %w", err)
	}
	// Written last, once nothing can refuse the resume: best/ as the
	// checkpoint has it.
	if err := r.tr.restored(r.dir, hasBest); err != nil {
		return err
	}
	os.Remove(filepath.Join(r.dir, rundir.SummaryFile))
	if r.state.Test == nil { // the run trains on, or tests again: the answers of its last test are not its next one's
		if err := removeTestAnswers(r.dir); err != nil {
			return fmt.Errorf("resume %s: %w", r.dir, err)
		}
	}
	if r.state.Step < r.cfg.Train.Steps {
		// A finished run trained further: its last/ is not the run's last
		// weights any more (meazo-eval would score them as if), and for a
		// full-parameter run it is a whole model beside the checkpoints.
		// Renamed first, so that a crash leaves it whole or gone
		// (recoverSwap).
		last := filepath.Join(r.dir, rundir.LastDir)
		if err := os.Rename(last, last+".old"); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("resume %s: %w", r.dir, err)
		}
		if err := os.RemoveAll(last + ".old"); err != nil {
			return fmt.Errorf("resume %s: %w", r.dir, err)
		}
	}
	fmt.Fprintf(r.out, "resuming %s at step %d of %d\n", r.dir, r.state.Step, r.cfg.Train.Steps)
	return nil
}

// lastCheckpointStep returns the step of checkpoint/ on disk (0 if unreadable).
func (r *run) lastCheckpointStep() int {
	b, err := os.ReadFile(filepath.Join(r.dir, rundir.CheckpointDir, rundir.StateFile))
	if err != nil {
		return 0
	}
	var st checkpointState
	if json.Unmarshal(b, &st) != nil {
		return 0
	}
	return st.Step
}

// lastValidation is the step of the last validation line at or before step
// in dir's metrics.jsonl (for the progress lines of a resumed run), −1
// where the file cannot say.
func lastValidation(dir string, step int) int {
	_, val, err := rundir.ReadMetrics(dir, func(string) {})
	if err != nil {
		return -1
	}
	last := -1
	for _, v := range val {
		if v.Step <= step {
			last = max(last, v.Step)
		}
	}
	return last
}
