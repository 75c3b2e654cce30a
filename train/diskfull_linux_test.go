//go:build linux

package train

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestFullCheckpointFailureLeavesNoPart: a full-parameter checkpoint that
// cannot be written (here the files a process may write are limited, as a
// full disk limits them: EFBIG where ENOSPC would be) stops the run with the
// error and leaves no checkpoint.tmp/ behind, which would hold up to a whole
// model of the disk the run stopped for.
func TestFullCheckpointFailureLeavesNoPart(t *testing.T) {
	demo, cfg := demoConfig(t, 2)
	dir := filepath.Join(t.TempDir(), "run")
	st, err := os.Stat(filepath.Join(demo, "model", "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Skip(err)
	}
	// ZO-Adam's moments are twice the model: step 0's checkpoint (moments of
	// zero are not written) fits, step 2's (the last) leaves its model.safetensors and
	// fails on optimizer_state.safetensors.
	lim := old
	lim.Cur = uint64(st.Size()) * 3 / 2
	if lim.Max < lim.Cur {
		t.Skipf("RLIMIT_FSIZE hard limit %d", lim.Max)
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		t.Skip(err)
	}
	_, err = Run(Options{ConfigPath: cfg, Log: io.Discard, Overrides: []string{"adapter.kind=full", "optimizer.name=zo-adam", "task.max_train=40",
		"task.max_validation=8", "eval.skip=true", "output.dir=" + dir}})
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Fatal(err)
	}
	if err == nil || !strings.Contains(err.Error(), "file too large") || !strings.Contains(err.Error(), "checkpoint of step 2:") || !strings.Contains(err.Error(), "the checkpoint of step 0 is kept") {
		t.Fatalf("a run whose checkpoint cannot be written: %v", err)
	}
	if _, serr := os.Stat(filepath.Join(dir, "checkpoint.tmp")); serr == nil {
		ents, _ := os.ReadDir(filepath.Join(dir, "checkpoint.tmp"))
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("checkpoint.tmp/ left behind after %v, holding %v", err, names)
	}
	if _, err := os.Stat(filepath.Join(dir, "checkpoint", "state.json")); err != nil {
		t.Errorf("the checkpoint of step 0: %v", err)
	}
	// With room again the run goes on from there.
	if s, err := Run(Options{Resume: dir, Log: io.Discard}); err != nil || s.StepsDone != 2 {
		t.Errorf("resume after the failed checkpoint: %+v, %v", s, err)
	}
}

// TestFullFirstCheckpointFailure: a full-parameter run writes its first
// checkpoint right after step 0's validation; when that one cannot be
// written (a full disk) there is nothing to resume, and the error says to
// start the run again, which the same output directory then takes.
func TestFullFirstCheckpointFailure(t *testing.T) {
	_, cfg := demoConfig(t, 2)
	dir := filepath.Join(t.TempDir(), "run")
	set := []string{"adapter.kind=full", "task.max_train=40", "task.max_validation=8", "eval.skip=true", "output.dir=" + dir}
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Skip(err)
	}
	lim := old
	lim.Cur = 64 << 10 // the logs and config.yaml fit, the weights (about 400 kB) do not
	if lim.Max < lim.Cur {
		t.Skipf("RLIMIT_FSIZE hard limit %d", lim.Max)
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		t.Skip(err)
	}
	_, err := Run(Options{ConfigPath: cfg, Log: io.Discard, Overrides: set})
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Fatal(err)
	}
	if err == nil || !strings.Contains(err.Error(), "checkpoint of step 0") || !strings.Contains(err.Error(), "file too large") ||
		!strings.HasSuffix(err.Error(), "no checkpoint was written yet (train.checkpoint_every): start the run again with --config (the same output.dir takes it)") {
		t.Fatalf("a run whose first checkpoint cannot be written: %v", err)
	}
	if s, err := Run(Options{ConfigPath: cfg, Log: io.Discard, Overrides: set}); err != nil || s.StepsDone != 2 {
		t.Errorf("the run started again in the same output.dir: %+v, %v", s, err)
	}
}
