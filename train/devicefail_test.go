package train

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/meazo-go/meazo/noise"
	"github.com/meazo-go/meazo/rundir"
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
	want := []ConfigChange{{Step: 4, Key: rundir.ArithmeticChange, Old: was, New: "another arithmetic; noise " + noise.Version}}
	if len(s.Changes) != 1 || s.Changes[0].Step != want[0].Step || s.Changes[0].Key != want[0].Key ||
		s.Changes[0].Old != want[0].Old || s.Changes[0].New != want[0].New || s.StepsDone != 6 {
		t.Errorf("summary: steps_done %d, changes %+v, want %+v", s.StepsDone, s.Changes, want)
	}
	if got := readCheckpointArithmetic(t, run); got != "another arithmetic; noise "+noise.Version {
		t.Errorf("the last checkpoint records arithmetic %q", got)
	}
}

// TestRefusedResumeNotesNoArithmetic: a resume on another arithmetic and
// build that is then refused (here: metrics.jsonl edited since the
// checkpoint) says nothing of either, neither "the run goes on" nor
// "recorded in changes.jsonl" (it did neither), and records nothing; the
// same resume once the log is put back warns, notes and records both.
func TestRefusedResumeNotesNoArithmetic(t *testing.T) {
	dir, cfg := demoConfig(t, 6)
	run := filepath.Join(dir, "run")
	set := []string{"train.eval_every=3", "train.checkpoint_every=2", "eval.skip=true", "task.max_train=100",
		"task.max_validation=8", "output.dir=" + run}
	if _, err := Run(Options{ConfigPath: cfg, Overrides: set, StopAfter: 2, program: "v1"}); err != nil {
		t.Fatal(err)
	}
	metrics := filepath.Join(run, rundir.MetricsFile)
	orig, err := os.ReadFile(metrics)
	if err != nil {
		t.Fatal(err)
	}
	edited := slices.Clone(orig)
	edited[0] = ' '
	if err := os.WriteFile(metrics, edited, 0o644); err != nil {
		t.Fatal(err)
	}
	other := func(b tensor.Backend) tensor.Backend { return arithBackend{b, "another arithmetic"} }
	var log strings.Builder
	if _, err := Run(Options{Resume: run, Log: &log, wrapBackend: other, program: "v2"}); err == nil || !strings.Contains(err.Error(), "the log was edited") {
		t.Fatalf("resume of an edited metrics.jsonl: %v, want its refusal", err)
	}
	for _, said := range []string{"the run's steps", "goes on correctly", "recorded in"} {
		if strings.Contains(log.String(), said) {
			t.Errorf("a refused resume said %q:\n%s", said, log.String())
		}
	}
	if c := readChanges(run); len(c) != 0 {
		t.Errorf("a refused resume recorded %+v", c)
	}
	if err := os.WriteFile(metrics, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	log.Reset()
	if _, err := Run(Options{Resume: run, Log: &log, wrapBackend: other, program: "v2"}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "warning: the run's steps so far were computed with") || !strings.Contains(log.String(), "note: the run's steps so far were computed by meazo-go v1") {
		t.Errorf("the resume that went ahead did not warn and note:\n%s", log.String())
	}
	if c := readChanges(run); len(c) != 2 || c[0].Key != rundir.ArithmeticChange || c[1].Key != rundir.ProgramChange {
		t.Errorf("changes %+v, want the arithmetic and the program", c)
	}
}

// setupFailBackend is a backend whose device fails (panics with a
// tensor.DeviceError, as a GPU's out-of-memory does) while a resume sets
// up: when restore asks its arithmetic, outside the model's calls.
type setupFailBackend struct{ tensor.Backend }

func (setupFailBackend) Arithmetic() string {
	tensor.Fail(errors.New("injected device failure"))
	return ""
}

// TestResumeDeviceFailureLeavesLock: a resume whose device fails while it
// sets up (before it goes ahead) returns the failure as its error and, as
// every refused resume, leaves run.lock as it found it: the earlier owner
// line and time put back, or no run.lock where there was none.
func TestResumeDeviceFailureLeavesLock(t *testing.T) {
	dir, cfg := demoConfig(t, 6)
	run := filepath.Join(dir, "run")
	if _, err := Run(Options{ConfigPath: cfg, Overrides: append(slices.Clone(trustSet), "output.dir="+run), StopAfter: 3}); err != nil {
		t.Fatal(err)
	}
	lock := filepath.Join(run, rundir.LockFile)
	text := []byte("pid 1 on host earlier, started 2026-11-01T00:00:00Z\n")
	when := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	if err := os.WriteFile(lock, text, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(lock, when, when); err != nil {
		t.Fatal(err)
	}
	fail := func(b tensor.Backend) tensor.Backend { return setupFailBackend{b} }
	if _, err := Run(Options{Resume: run, wrapBackend: fail}); err == nil || !strings.Contains(err.Error(), "injected device failure") {
		t.Fatalf("resume on a failing device: %v, want the device's failure", err)
	}
	if b, _ := os.ReadFile(lock); string(b) != string(text) {
		t.Errorf("run.lock after the failed resume: %q, was %q", b, text)
	}
	if fi, err := os.Stat(lock); err != nil || !fi.ModTime().Equal(when) {
		t.Errorf("run.lock's time after the failed resume: %v (%v), was %v", fi.ModTime(), err, when)
	}
	os.Remove(lock)
	if _, err := Run(Options{Resume: run, wrapBackend: fail}); err == nil {
		t.Fatal("resume on a failing device: no error")
	}
	if _, err := os.Stat(lock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed resume left a run.lock where there was none (%v)", err)
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
	if len(s.Changes) != 1 || s.Changes[0].Step != 4 || s.Changes[0].Key != rundir.ProgramChange || s.Changes[0].Old != "v1" ||
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
	if len(s.Changes) != 2 || s.Changes[0].Step != 2 || s.Changes[0].Key != rundir.ArithmeticChange ||
		s.Changes[0].Old != unrecordedArithmetic || s.Changes[0].New != now ||
		s.Changes[1].Key != rundir.ProgramChange || s.Changes[1].Old != unrecordedProgram || s.Changes[1].New != "v2" || s.StepsDone != 6 {
		t.Errorf("summary: steps_done %d, changes %+v; want step 2's arithmetic and program changes from unrecorded", s.StepsDone, s.Changes)
	}
	if got := readChanges(run); len(got) != 2 {
		t.Errorf("changes.jsonl: %v, want the 2 changes", got)
	}
}

// TestEvalOnlyResumeRecordsNoArithmetic resumes a run stopped in its test
// evaluation (no step left) with another arithmetic than its checkpoint's:
// the noise of a build before noise v2 (as a checkpoint of 2026-11-27
// records it: the backend's arithmetic alone), an unrecorded one, and
// another backend's. No step runs, so no warning and no change is recorded,
// and the test metrics are the uninterrupted run's; another backend is
// noted, as its rounding can show in the evaluation's numbers. The same
// checkpoint given steps to compute (--set train.steps) warns and records.
func TestEvalOnlyResumeRecordsNoArithmetic(t *testing.T) {
	dir, cfg := demoConfig(t, 4)
	set := []string{"train.eval_every=2", "task.max_train=200", "task.max_validation=16", "task.max_test=8", "eval.batch_size=4"}
	whole := filepath.Join(dir, "whole")
	want, err := Run(Options{ConfigPath: cfg, Overrides: append(slices.Clone(set), "output.dir="+whole)})
	if err != nil {
		t.Fatal(err)
	}
	stopped := func(name string) (string, string) {
		run := filepath.Join(dir, name)
		n := 0 // poll 20: at example 4 of 8 of the best adapter's test (TestStopReport)
		if _, err := Run(Options{ConfigPath: cfg, Overrides: append(slices.Clone(set), "output.dir="+run), Stop: stopAt(20, &n)}); err != nil {
			t.Fatal(err)
		}
		if st := readState(t, run); st.Test == nil || st.Step != 4 {
			t.Fatalf("%s: not stopped in the test evaluation: %+v", name, st)
		}
		return run, readCheckpointArithmetic(t, run)
	}
	for _, tc := range []struct {
		name     string
		edit     func(arith string, m map[string]any)
		wrap     func(tensor.Backend) tensor.Backend
		wantNote bool
	}{
		{"noise before v2", func(a string, m map[string]any) { m["arithmetic"], _, _ = strings.Cut(a, "; noise ") }, nil, false},
		{"unrecorded", func(_ string, m map[string]any) { delete(m, "arithmetic") }, nil, false},
		{"another backend", nil, func(b tensor.Backend) tensor.Backend { return arithBackend{b, "another arithmetic"} }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run, arith := stopped(strings.ReplaceAll(tc.name, " ", "-"))
			if tc.edit != nil {
				if err := editState(run, func(m map[string]any) { tc.edit(arith, m) }); err != nil {
					t.Fatal(err)
				}
			}
			var log strings.Builder
			got, err := Run(Options{Resume: run, Log: &log, wrapBackend: tc.wrap})
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(log.String(), "warning") || strings.Contains(log.String(), "not bit for bit") {
				t.Errorf("an evaluation-only resume warned:\n%s", log.String())
			}
			if note := strings.Contains(log.String(), "note: the run's steps were computed with "+arith[:strings.Index(arith, "; noise ")]+"; this process evaluates with another arithmetic"); note != tc.wantNote {
				t.Errorf("note of the other backend %v, want %v:\n%s", note, tc.wantNote, log.String())
			}
			if c := readChanges(run); len(c) != 0 || len(got.Changes) != 0 {
				t.Errorf("an evaluation-only resume recorded changes: %+v, summary %+v", c, got.Changes)
			}
			if got.Status != "done" || fmt.Sprint(got.Test) != fmt.Sprint(want.Test) {
				t.Errorf("resumed: %s, test %v; the uninterrupted run's %v", got.Status, got.Test, want.Test)
			}
		})
	}
	// With steps to compute, the noise before v2 is a change.
	run, arith := stopped("more-steps")
	old, _, _ := strings.Cut(arith, "; noise ")
	if err := editState(run, func(m map[string]any) { m["arithmetic"] = old }); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	got, err := Run(Options{Resume: run, Log: &log, Overrides: []string{"train.steps=6"}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "warning: the run's steps so far were computed with "+old+"; this process computes with "+arith) {
		t.Errorf("no warning of the arithmetic with steps to compute:\n%s", log.String())
	}
	if c := readChanges(run); len(c) != 2 || c[1].Key != rundir.ArithmeticChange || c[1].Old != old || c[1].New != arith || got.StepsDone != 6 {
		t.Errorf("changes %+v, steps done %d; want train.steps and the arithmetic", c, got.StepsDone)
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
