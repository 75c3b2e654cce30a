package train

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/meazo-go/meazo/noise"
	"github.com/meazo-go/meazo/tensor"
)

// failingBackend is a backend whose device fails as a GPU's does (a fault,
// an out-of-memory: the backend panics with a tensor.DeviceError, which the
// model returns as an error) at its failAt-th matrix product; 0 never.
type failingBackend struct {
	tensor.Backend
	products *atomic.Int64
	failAt   int64
}

func (f failingBackend) MatMul(y, x tensor.Buf, rows int, w tensor.Weight) {
	if f.products.Add(1) == f.failAt {
		tensor.Fail(errors.New("injected device failure"))
	}
	f.Backend.MatMul(y, x, rows, w)
}

// TestDeviceFailureIsResumed fails the device in the middle of a run: the
// run ends with an error that names the step, the failure and the kept
// checkpoint, writes no summary.json, and --resume then finishes it with
// metrics, adapters and optimizer state identical to a run that never
// failed.
func TestDeviceFailureIsResumed(t *testing.T) {
	dir, cfg := demoConfig(t, 12)
	set := []string{"train.eval_every=4", "train.checkpoint_every=3", "eval.skip=true", "task.max_train=200",
		"task.max_validation=16", "optimizer.name=meazo"}
	wrap := func(products *atomic.Int64, failAt int64) func(tensor.Backend) tensor.Backend {
		return func(b tensor.Backend) tensor.Backend { return failingBackend{b, products, failAt} }
	}
	// The whole run, counting its products.
	var all atomic.Int64
	whole := filepath.Join(dir, "whole")
	if _, err := Run(Options{ConfigPath: cfg, Overrides: append(slices.Clone(set), "output.dir="+whole), wrapBackend: wrap(&all, 0)}); err != nil {
		t.Fatal(err)
	}
	// The same run, its device failing at 60 % of those products: in step 8 of 12.
	var n atomic.Int64
	cut := filepath.Join(dir, "cut")
	_, err := Run(Options{ConfigPath: cfg, Overrides: append(slices.Clone(set), "output.dir="+cut), wrapBackend: wrap(&n, all.Load()*6/10)})
	if err == nil {
		t.Fatal("a run whose device failed returned no error")
	}
	msg := err.Error()
	for _, want := range []string{"step 8: zo step 8: evaluate: injected device failure", "the checkpoint of step 6 is kept", "--resume " + cut} {
		if !strings.Contains(msg, want) {
			t.Errorf("the error %q does not say %q", msg, want)
		}
	}
	if _, err := os.Stat(filepath.Join(cut, "summary.json")); err == nil {
		t.Error("a failed run wrote summary.json")
	}
	if _, err := Run(Options{Resume: cut}); err != nil {
		t.Fatal(err)
	}
	requireSameRun(t, whole, cut)
}

// arithBackend is a backend that says it computes with another arithmetic
// (as the CPU backend on another GEMM path, or another GPU, would).
type arithBackend struct {
	tensor.Backend
	arith string
}

func (a arithBackend) Arithmetic() string { return a.arith }

// TestResumeRecordsOtherArithmetic resumes a run on a backend whose
// arithmetic differs from the one its checkpoint was computed with (a
// requeue onto a node with another CPU or GPU): the run finishes, the log
// warns that it is not bit for bit the uninterrupted run, and changes.jsonl
// and summary.json record the change; a resume on the same arithmetic
// records nothing.
func TestResumeRecordsOtherArithmetic(t *testing.T) {
	dir, cfg := demoConfig(t, 6)
	run := filepath.Join(dir, "run")
	set := []string{"train.eval_every=3", "train.checkpoint_every=2", "eval.skip=true", "task.max_train=100",
		"task.max_validation=8", "output.dir=" + run}
	if _, err := Run(Options{ConfigPath: cfg, Overrides: set, StopAfter: 2}); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	if _, err := Run(Options{Resume: run, StopAfter: 2, Log: &log}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(log.String(), "warning") || len(readChanges(run)) != 0 {
		t.Fatalf("a resume on the same arithmetic recorded a change: %v\n%s", readChanges(run), log.String())
	}
	was := readCheckpointArithmetic(t, run)
	other := func(b tensor.Backend) tensor.Backend { return arithBackend{b, "another arithmetic"} }
	log.Reset()
	if _, err := Run(Options{Resume: run, Log: &log, wrapBackend: other}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "warning: the run's steps so far were computed with "+was+"; this process computes with another arithmetic; noise "+noise.Version) {
		t.Errorf("no warning of the other arithmetic in the log:\n%s", log.String())
	}
	s := readSummary(t, run)
	want := []ConfigChange{{Step: 4, Key: ArithmeticChange, Old: was, New: "another arithmetic; noise " + noise.Version}}
	if len(s.Changes) != 1 || s.Changes[0].Step != want[0].Step || s.Changes[0].Key != want[0].Key ||
		s.Changes[0].Old != want[0].Old || s.Changes[0].New != want[0].New || s.StepsDone != 6 {
		t.Errorf("summary: steps_done %d, changes %+v, want %+v", s.StepsDone, s.Changes, want)
	}
	if got := readCheckpointArithmetic(t, run); got != "another arithmetic; noise "+noise.Version {
		t.Errorf("the last checkpoint records arithmetic %q", got)
	}
}

// TestResumeRecordsOtherProgram resumes a run with another build of
// meazo-go than the one that started it (Options.program): the log notes
// it, changes.jsonl and summary.json record it, the checkpoint and the
// summary name the new build, the run is still the same run for a study
// (StartedConfig) and resumes again after a stop before its checkpoint
// (pendingChanges); the same build records nothing.
func TestResumeRecordsOtherProgram(t *testing.T) {
	dir, cfg := demoConfig(t, 6)
	run := filepath.Join(dir, "run")
	set := []string{"train.eval_every=3", "train.checkpoint_every=2", "eval.skip=true", "task.max_train=100",
		"task.max_validation=8", "output.dir=" + run}
	if _, err := Run(Options{ConfigPath: cfg, Overrides: set, StopAfter: 2, program: "v1"}); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	if _, err := Run(Options{Resume: run, StopAfter: 2, Log: &log, program: "v1"}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(log.String(), "note: the run's steps") || len(readChanges(run)) != 0 {
		t.Fatalf("a resume by the same build recorded a change: %v\n%s", readChanges(run), log.String())
	}
	log.Reset()
	if _, err := Run(Options{Resume: run, Log: &log, program: "v2"}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "note: the run's steps so far were computed by meazo-go v1; this process is v2: ") {
		t.Errorf("no note of the other build in the log:\n%s", log.String())
	}
	s := readSummary(t, run)
	if len(s.Changes) != 1 || s.Changes[0].Step != 4 || s.Changes[0].Key != ProgramChange || s.Changes[0].Old != "v1" ||
		s.Changes[0].New != "v2" || s.StepsDone != 6 || s.Program != "v2" {
		t.Errorf("summary: steps_done %d, program %q, changes %+v; want step 4's change v1 -> v2", s.StepsDone, s.Program, s.Changes)
	}
	b, err := os.ReadFile(filepath.Join(run, "checkpoint", "state.json"))
	if err != nil || !strings.Contains(string(b), `"program":"v2"`) && !strings.Contains(string(b), `"program": "v2"`) {
		t.Errorf("the last checkpoint's state does not name program v2 (%v):\n%s", err, b)
	}
	started, err := StartedConfig(run)
	if err != nil || started.Train.Steps != 6 {
		t.Errorf("StartedConfig after a change of build: %v, %+v", err, started)
	}
}

// TestResumeRecordsUnrecordedArithmetic resumes a checkpoint whose state
// records neither arithmetic nor program, as every build before 73c9eef
// (2026-11-27) wrote them: such a build drew the noise before noise v2, so
// the resumed steps are not those it would have computed. The resume warns
// and records both changes, as for a checkpoint that names another
// arithmetic and build (it was silent: the state was read over the new
// run's, which names this process's).
func TestResumeRecordsUnrecordedArithmetic(t *testing.T) {
	dir, cfg := demoConfig(t, 6)
	run := filepath.Join(dir, "run")
	set := []string{"train.eval_every=3", "train.checkpoint_every=2", "eval.skip=true", "task.max_train=100",
		"task.max_validation=8", "output.dir=" + run}
	if _, err := Run(Options{ConfigPath: cfg, Overrides: set, StopAfter: 2, program: "v2"}); err != nil {
		t.Fatal(err)
	}
	if err := editState(run, func(m map[string]any) { delete(m, "arithmetic"); delete(m, "program") }); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	if _, err := Run(Options{Resume: run, Log: &log, program: "v2"}); err != nil {
		t.Fatal(err)
	}
	now := readCheckpointArithmetic(t, run)
	if !strings.Contains(log.String(), "warning: the run's steps so far were computed with "+unrecordedArithmetic+"; this process computes with "+now) {
		t.Errorf("no warning of the unrecorded arithmetic in the log:\n%s", log.String())
	}
	if !strings.Contains(log.String(), "note: the run's steps so far were computed by meazo-go "+unrecordedProgram+"; this process is v2: ") {
		t.Errorf("no note of the unrecorded build in the log:\n%s", log.String())
	}
	s := readSummary(t, run)
	if len(s.Changes) != 2 || s.Changes[0].Step != 2 || s.Changes[0].Key != ArithmeticChange ||
		s.Changes[0].Old != unrecordedArithmetic || s.Changes[0].New != now ||
		s.Changes[1].Key != ProgramChange || s.Changes[1].Old != unrecordedProgram || s.Changes[1].New != "v2" || s.StepsDone != 6 {
		t.Errorf("summary: steps_done %d, changes %+v; want step 2's arithmetic and program changes from unrecorded", s.StepsDone, s.Changes)
	}
	if got := readChanges(run); len(got) != 2 {
		t.Errorf("changes.jsonl: %v, want the 2 changes", got)
	}
}

func readCheckpointArithmetic(t *testing.T, run string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(run, "checkpoint", "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	var st checkpointState
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	if st.Arithmetic == "" {
		t.Fatal("state.json records no arithmetic")
	}
	return st.Arithmetic
}
