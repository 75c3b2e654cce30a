package train

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/rundir"
)

// TestFailedStartLeavesNothing: a new run whose start fails after it took
// its directory (here: a tokenizer without a chat template) removes what it
// wrote, and the directory it made; a directory that was there keeps what
// was there before (the demo's marker). A resume that fails touches nothing.
func TestFailedStartLeavesNothing(t *testing.T) {
	dir, cfg := demoConfig(t, 2)
	bad := filepath.Join(dir, "nochat")
	os.MkdirAll(bad, 0o755)
	ents, _ := os.ReadDir(filepath.Join(dir, "model"))
	for _, e := range ents {
		b, _ := os.ReadFile(filepath.Join(dir, "model", e.Name()))
		if e.Name() == "tokenizer_config.json" {
			b = []byte(`{"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"}`)
		}
		os.WriteFile(filepath.Join(bad, e.Name()), b, 0o644)
	}
	fresh := filepath.Join(dir, "fresh")
	if _, err := Run(Options{ConfigPath: cfg, Overrides: []string{"model.path=" + bad, "output.dir=" + fresh}}); err == nil {
		t.Fatal("a model without a chat template started")
	}
	if _, err := os.Stat(fresh); !os.IsNotExist(err) {
		t.Errorf("the failed start left its directory: %v", err)
	}
	marked := filepath.Join(dir, "marked")
	os.MkdirAll(marked, 0o755)
	os.WriteFile(filepath.Join(marked, rundir.DemoMarker), []byte("x"), 0o644)
	if _, err := Run(Options{ConfigPath: cfg, Overrides: []string{"model.path=" + bad, "output.dir=" + marked}}); err == nil {
		t.Fatal("a model without a chat template started")
	}
	if got := names(t, marked); !slices.Equal(got, []string{rundir.DemoMarker}) {
		t.Errorf("the failed start left %v, want only the marker", got)
	}
	// A run that started, then a resume that fails: its files stay.
	run := filepath.Join(dir, "run")
	if _, err := Run(Options{ConfigPath: cfg, Overrides: []string{"output.dir=" + run, "eval.skip=true", "task.max_validation=8"}, StopAfter: 1}); err != nil {
		t.Fatal(err)
	}
	before := names(t, run)
	if _, err := Run(Options{Resume: run, Overrides: []string{"model.backend=tpu"}}); err == nil {
		t.Fatal("a resume on an unknown backend went on")
	}
	if after := names(t, run); !slices.Equal(before, after) {
		t.Errorf("a failed resume changed its directory: %v, then %v", before, after)
	}
}

// TestRefusedUnderLockKeepsOthersFiles: a start whose directory is taken
// between its first look and its lock (another run wrote its files and a
// checkpoint there in between) is refused, and removes none of that run's
// files: it wrote none of them.
func TestRefusedUnderLockKeepsOthersFiles(t *testing.T) {
	defer func() { lockOpened = nil }()
	dir, cfg := demoConfig(t, 2)
	out := filepath.Join(dir, "taken")
	theirs := []string{rundir.CheckpointDir, rundir.ConfigFile, rundir.MetricsFile, rundir.TimingFile}
	lockOpened = func(string) { // the other run, before this one holds the lock
		lockOpened = nil
		os.MkdirAll(filepath.Join(out, rundir.CheckpointDir), 0o755)
		for _, name := range theirs[1:] {
			os.WriteFile(filepath.Join(out, name), []byte("theirs\n"), 0o644)
		}
	}
	_, err := Run(Options{ConfigPath: cfg, Overrides: []string{"output.dir=" + out}})
	if err == nil || !strings.Contains(err.Error(), "already holds a run") {
		t.Fatalf("a start on a directory taken under its lock: %v", err)
	}
	for _, name := range theirs {
		if _, err := os.Stat(filepath.Join(out, name)); err != nil {
			t.Errorf("the refused start removed the other run's %s: %v", name, err)
		}
	}
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// TestLockAfterRemoval: a process waiting for a run.lock that its holder
// removes (a failed start: the file, and the directory if it made it) ends
// up holding the lock of the file at the path, not of the removed one, so
// that no two processes can both think they own the directory. The removal
// happens, deterministically, between the waiter's open and its lock.
func TestLockAfterRemoval(t *testing.T) {
	defer func() { lockOpened = nil }()
	for _, tc := range []struct {
		name      string
		removeDir bool
	}{{"run.lock removed", false}, {"run.lock and directory removed", true}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			first, err := LockDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			opens := 0
			lockOpened = func(string) {
				if opens++; opens == 1 { // the waiter has the old file open: its holder's failed start cleans up
					os.Remove(filepath.Join(dir, rundir.LockFile))
					if tc.removeDir {
						os.Remove(dir)
					}
					first.Unlock()
				}
			}
			second, err := LockDir(dir)
			lockOpened = nil
			if err != nil {
				t.Fatal(err)
			}
			defer second.Unlock()
			if opens != 2 {
				t.Errorf("the waiter opened the lock file %d times, want 2 (again after the removal)", opens)
			}
			held, _ := second.f.Stat()
			now, err := os.Stat(filepath.Join(dir, rundir.LockFile))
			if err != nil || !os.SameFile(held, now) {
				t.Errorf("the second process holds a lock on a removed file (%v)", err)
			}
			if _, held, _ := LockHolder(dir); !held {
				t.Error("LockHolder does not see the second process's lock")
			}
		})
	}
}

// TestStartAgainFromItsConfig: a run killed before its first checkpoint
// (its run.lock and config.yaml, nothing else) is not resumed: the refusal
// says to start it again from its config.yaml, which holds every setting it
// started with. A start from that file that fails puts the file back as it
// was (it is the start's input), and one that does not fail starts the run.
func TestStartAgainFromItsConfig(t *testing.T) {
	dir, cfg := demoConfig(t, 2)
	run := filepath.Join(dir, "run")
	c, err := Load(cfg, []string{"output.dir=" + run, "eval.skip=true", "task.max_validation=8", "optimizer.lr=0.02"})
	if err != nil {
		t.Fatal(err)
	}
	y, err := c.YAML()
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(run, 0o755)
	own := filepath.Join(run, rundir.ConfigFile)
	os.WriteFile(own, y, 0o644)
	os.WriteFile(filepath.Join(run, rundir.LockFile), []byte("pid 1, host gone, started then\n"), 0o644)

	_, err = Run(Options{Resume: run})
	if want := "start it again with the settings it started with: --config " + own + " --out " + run; err == nil || !strings.HasSuffix(err.Error(), want) {
		t.Fatalf("--resume of a run without a checkpoint: %v, want it to end %q", err, want)
	}
	bad := filepath.Join(dir, "nochat")
	os.MkdirAll(bad, 0o755)
	ents, _ := os.ReadDir(filepath.Join(dir, "model"))
	for _, e := range ents {
		b, _ := os.ReadFile(filepath.Join(dir, "model", e.Name()))
		if e.Name() == "tokenizer_config.json" {
			b = []byte(`{"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"}`)
		}
		os.WriteFile(filepath.Join(bad, e.Name()), b, 0o644)
	}
	if _, err := Run(Options{ConfigPath: own, Overrides: []string{"model.path=" + bad, "output.dir=" + run}}); err == nil {
		t.Fatal("a model without a chat template started")
	}
	if b, err := os.ReadFile(own); err != nil || string(b) != string(y) {
		t.Fatalf("the failed start from %s did not leave it as it was: %v\n%s", own, err, b)
	}
	if _, err := Run(Options{ConfigPath: own, Overrides: []string{"output.dir=" + run}, StopAfter: 1}); err != nil {
		t.Fatal(err)
	}
	got, err := Load(filepath.Join(run, rundir.CheckpointDir, rundir.ConfigFile), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.Optimizer.LR != 0.02 || !got.Eval.Skip {
		t.Errorf("the run started again with lr %v, eval.skip %v: not its settings", got.Optimizer.LR, got.Eval.Skip)
	}
}

// TestTooFewExamples: a training file with one usable example, all of it
// held out for validation, is refused as too few examples (not as examples
// over task.max_length, which the run did not drop), and the failed start
// leaves nothing.
func TestTooFewExamples(t *testing.T) {
	dir, cfg := demoConfig(t, 2)
	one := filepath.Join(dir, "one.tsv")
	os.WriteFile(one, []byte("sentence\tlabel\na fine film\t1\na bad row\t7\n"), 0o644)
	out := filepath.Join(dir, "run")
	_, err := Run(Options{ConfigPath: cfg, Overrides: []string{"task.train=" + one, "output.dir=" + out}})
	want := "too few examples: task.train " + one + " has 1 usable example(s), of which 5 % (at least one) are held out for validation (task.validation is empty); that leaves 0 for training and 1 for validation"
	if err == nil || err.Error() != want {
		t.Fatalf("one example: %v, want %q", err, want)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("the failed start left %s: %v", out, err)
	}
}
