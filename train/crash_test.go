package train

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/rundir"
)

// stoppedRun runs the demo for 4 of 6 steps (checkpoint at step 3, with a
// validation and best/ there) into dir/name, and returns the directory.
func stoppedRun(t *testing.T, dir, cfg, name string) string {
	t.Helper()
	out := filepath.Join(dir, name)
	if _, err := Run(Options{ConfigPath: cfg, Overrides: append(trustSet, "output.dir="+out), StopAfter: 4, Log: io.Discard}); err != nil {
		t.Fatal(err)
	}
	return out
}

// crashMidResume leaves out as a resume with --set optimizer.lr=lr leaves
// it when killed between writing config.yaml and its checkpoint: the change
// in changes.jsonl and config.yaml, not in the checkpoint.
func crashMidResume(t *testing.T, out, lr string) {
	t.Helper()
	c, err := Load(filepath.Join(out, rundir.ConfigFile), []string{"optimizer.lr=" + lr})
	if err != nil {
		t.Fatal(err)
	}
	y, err := c.YAML()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, rundir.ConfigFile), y, 0o644); err != nil {
		t.Fatal(err)
	}
	line := `{"step":3,"key":"optimizer.lr","old":0.05,"new":` + lr + `,"time":"2026-11-26T20:00:00Z"}` + "\n"
	f, err := os.OpenFile(filepath.Join(out, rundir.ChangesFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(line)
	f.Close()
}

// TestResumeAfterCrashedResume: a resume with --set killed before its
// checkpoint left config.yaml with its change; the next resume, with or
// without the --set again, continues from the checkpoint (the change never
// applied) instead of refusing config.yaml as edited by hand. A config.yaml
// that the pending lines do not explain is still refused.
func TestResumeAfterCrashedResume(t *testing.T) {
	dir, cfg := demoConfig(t, 6)
	whole := filepath.Join(dir, "whole")
	if _, err := Run(Options{ConfigPath: cfg, Overrides: append(trustSet, "output.dir="+whole), Log: io.Discard}); err != nil {
		t.Fatal(err)
	}

	// Resumed without --set: the checkpoint's settings, the uninterrupted run's metrics.
	plain := stoppedRun(t, dir, cfg, "plain")
	crashMidResume(t, plain, "0.001")
	var log bytes.Buffer
	if _, err := Run(Options{Resume: plain, Log: &log}); err != nil {
		t.Fatalf("resume after a crashed resume: %v", err)
	}
	if !strings.Contains(log.String(), "not applied") {
		t.Errorf("log does not say the change was not applied:\n%s", log.String())
	}
	if a, b := readLines(t, filepath.Join(whole, rundir.MetricsFile)), readLines(t, filepath.Join(plain, rundir.MetricsFile)); !slices.Equal(a, b) {
		t.Errorf("metrics differ from the uninterrupted run's")
	}
	if c, err := Load(filepath.Join(plain, rundir.ConfigFile), nil); err != nil || c.Optimizer.LR != 0.05 {
		t.Errorf("config.yaml after the resume: lr %v, %v; want the checkpoint's 0.05", c.Optimizer.LR, err)
	}
	if b, _ := os.ReadFile(filepath.Join(plain, rundir.ChangesFile)); len(b) != 0 {
		t.Errorf("changes.jsonl keeps the unapplied change: %q", b)
	}

	// Resumed with the same --set again: the change applies once.
	again := stoppedRun(t, dir, cfg, "again")
	crashMidResume(t, again, "0.001")
	s, err := Run(Options{Resume: again, Overrides: []string{"optimizer.lr=0.001"}, Log: io.Discard})
	if err != nil {
		t.Fatalf("resume with --set after a crashed resume: %v", err)
	}
	if s.LR != 0.001 || len(s.Changes) != 1 || len(readLines(t, filepath.Join(again, rundir.ChangesFile))) != 1 {
		t.Errorf("lr %g, changes %+v", s.LR, s.Changes)
	}

	// A resume refused after it recognised the unapplied change (a key that
	// cannot change on resume) has put config.yaml back already, so no
	// later crash can leave A's value there without A's line; the next
	// resume goes on.
	refused := stoppedRun(t, dir, cfg, "refused")
	crashMidResume(t, refused, "0.001")
	if _, err := Run(Options{Resume: refused, Overrides: []string{"train.seed=5"}, Log: io.Discard}); err == nil {
		t.Fatal("--set train.seed on resume accepted")
	}
	if c, err := Load(filepath.Join(refused, rundir.ConfigFile), nil); err != nil || c.Optimizer.LR != 0.05 {
		t.Errorf("config.yaml after the refused resume: lr %v, %v; want the checkpoint's 0.05", c.Optimizer.LR, err)
	}
	if err := os.Truncate(filepath.Join(refused, rundir.ChangesFile), 0); err != nil { // as a resume killed after cutting them
		t.Fatal(err)
	}
	if _, err := Run(Options{Resume: refused, Log: io.Discard}); err != nil {
		t.Errorf("resume after a refused one: %v", err)
	}

	// config.yaml says 0.002 where the pending line says 0.001: edited by hand.
	edited := stoppedRun(t, dir, cfg, "edited")
	crashMidResume(t, edited, "0.001")
	c, _ := Load(filepath.Join(edited, rundir.ConfigFile), []string{"optimizer.lr=0.002"})
	y, _ := c.YAML()
	os.WriteFile(filepath.Join(edited, rundir.ConfigFile), y, 0o644)
	if _, err := Run(Options{Resume: edited, Log: io.Discard}); err == nil || !strings.Contains(err.Error(), "edited") {
		t.Errorf("resume of a hand-edited config.yaml: %v, want it refused", err)
	}
}

// TestResumeResetsBest: best/ written by steps after the checkpoint (here a
// changed file stands for it) is the checkpoint's best again after resume,
// as the summary says.
func TestResumeResetsBest(t *testing.T) {
	dir, cfg := demoConfig(t, 6)
	out := stoppedRun(t, dir, cfg, "run")
	best := filepath.Join(out, rundir.BestDir, "adapter_model.safetensors")
	if err := flipByte(best, -1); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(Options{Resume: out, StopAfter: 1, Log: io.Discard}); err != nil { // step 4: no validation
		t.Fatal(err)
	}
	got, _ := os.ReadFile(best)
	want, _ := os.ReadFile(filepath.Join(out, rundir.CheckpointDir, rundir.BestDir, "adapter_model.safetensors"))
	if len(want) == 0 || !bytes.Equal(got, want) {
		t.Error("best/ is not the checkpoint's best after resume")
	}

	// A resume that is refused (an edited log) leaves best/ as it was.
	out = stoppedRun(t, dir, cfg, "refused")
	best = filepath.Join(out, rundir.BestDir, "adapter_model.safetensors")
	if err := flipByte(best, -1); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(best)
	if err := flipByte(filepath.Join(out, rundir.MetricsFile), 10); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(Options{Resume: out, Log: io.Discard}); err == nil {
		t.Fatal("resume with an edited metrics.jsonl accepted")
	}
	if after, _ := os.ReadFile(best); !bytes.Equal(before, after) {
		t.Error("a refused resume rewrote best/")
	}
}

// TestCrashLeftoversRemoved: the temporary files of atomic writes killed
// before their rename are removed by the next start or resume, and do not
// make a new run refuse a directory that only an unfinished start wrote to;
// files that are not such leftovers stay.
func TestCrashLeftoversRemoved(t *testing.T) {
	dir, cfg := demoConfig(t, 6)
	write := func(p string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("partial"), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// A first start killed while writing config.yaml: run.lock and the temporary file.
	fresh := filepath.Join(dir, "fresh")
	write(filepath.Join(fresh, rundir.LockFile))
	write(filepath.Join(fresh, ".config.yaml.tmp303374055"))
	if _, err := Run(Options{ConfigPath: cfg, Overrides: append(trustSet, "output.dir="+fresh), Log: io.Discard}); err != nil {
		t.Fatalf("start over a start killed in its first write: %v", err)
	}
	if _, err := os.Stat(filepath.Join(fresh, ".config.yaml.tmp303374055")); err == nil {
		t.Error("the temporary config.yaml is still there")
	}

	// A run killed in writes of best/ and config.yaml, resumed.
	out := stoppedRun(t, dir, cfg, "run")
	leftovers := []string{filepath.Join(out, ".config.yaml.tmp12"), filepath.Join(out, ".summary.json.tmp34"),
		filepath.Join(out, rundir.BestDir, ".adapter_model.safetensors.tmp-1713690421")}
	keep := []string{filepath.Join(out, rundir.BestDir, "notes.txt"), filepath.Join(out, ".config.yaml.tmp")}
	for _, p := range append(slices.Clone(leftovers), keep...) {
		write(p)
	}
	if _, err := Run(Options{Resume: out, Log: io.Discard}); err != nil {
		t.Fatal(err)
	}
	for _, p := range leftovers {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s is still there", p)
		}
	}
	for _, p := range keep {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s, not a leftover, was removed: %v", p, err)
		}
	}
}

// TestKilledAfterAnyCheckpoint: a full-parameter run killed right after any
// of its checkpoints (the run directory copied there, as kill -9 leaves it)
// resumes to the uninterrupted run's metrics, best/ and last/. Among them
// the checkpoint a new best validation loss writes before best/ is linked
// to it: with the best at step 0 (lr 0.1: no later validation improves on
// it), that of step 0's own validation, and with the best at step 4
// (lr 0.01), one within training.
func TestKilledAfterAnyCheckpoint(t *testing.T) {
	for _, lr := range []string{"0.1", "0.01"} {
		t.Run("lr"+lr, func(t *testing.T) {
			dir, cfg := demoConfig(t, 6)
			set := []string{"adapter.kind=full", "optimizer.lr=" + lr, "train.eval_every=2", "train.checkpoint_every=3",
				"task.max_train=64", "task.max_validation=8", "eval.skip=true"}
			whole := filepath.Join(dir, "whole")
			if _, err := Run(Options{ConfigPath: cfg, Overrides: append(slices.Clone(set), "output.dir="+whole), Log: io.Discard}); err != nil {
				t.Fatal(err)
			}
			cut := filepath.Join(dir, "cut")
			var copies []string
			copyAt := func() {
				c := filepath.Join(dir, fmt.Sprintf("killed-%d", len(copies)+1))
				copyDir(t, cut, c)
				copies = append(copies, c)
			}
			if _, err := Run(Options{ConfigPath: cfg, Overrides: append(slices.Clone(set), "output.dir="+cut), Log: io.Discard, afterCheckpoint: copyAt}); err != nil {
				t.Fatal(err)
			}
			if len(copies) < 4 {
				t.Fatalf("%d checkpoints: want at least step 0's two and steps 3 and 6's", len(copies))
			}
			want := readSummary(t, whole)
			for _, c := range copies {
				if _, err := Run(Options{Resume: c, Log: io.Discard}); err != nil {
					t.Fatalf("resume %s: %v", filepath.Base(c), err)
				}
				if a, b := readLines(t, filepath.Join(whole, rundir.MetricsFile)), readLines(t, filepath.Join(c, rundir.MetricsFile)); !slices.Equal(a, b) {
					t.Errorf("%s: metrics.jsonl differs from the uninterrupted run's:\n%s\nwant\n%s", filepath.Base(c), strings.Join(b, "\n"), strings.Join(a, "\n"))
				}
				for _, f := range []string{"best/model.safetensors", "last/model.safetensors"} {
					x, _ := os.ReadFile(filepath.Join(whole, f))
					y, _ := os.ReadFile(filepath.Join(c, f))
					if len(x) == 0 || !bytes.Equal(x, y) {
						t.Errorf("%s: %s differs from the uninterrupted run's", filepath.Base(c), f)
					}
				}
				if got := readSummary(t, c); got.BestStep != want.BestStep || got.Steps != want.Steps {
					t.Errorf("%s: best step %d of %d steps, want %d of %d", filepath.Base(c), got.BestStep, got.Steps, want.BestStep, want.Steps)
				}
			}
		})
	}
}

// optimizer.momentum and optimizer.beta1 may change on resume, but not
// between 0 and above 0: that changes the state the optimizer keeps (a
// momentum buffer, a first moment), which the checkpoint's cannot be; the
// refusal names the key instead of optimizer.bin's tensor count.
func TestResumeRefusesStateLayoutChange(t *testing.T) {
	dir, cfg := demoConfig(t, 6)
	common := []string{"train.eval_every=3", "train.checkpoint_every=3", "eval.skip=true", "task.max_train=50", "task.max_validation=8"}
	for _, tc := range []struct {
		name     string
		set, chg []string
	}{
		{"sgd-momentum-on", []string{"optimizer.name=zo-sgd", "optimizer.lr=1e-3"}, []string{"optimizer.momentum=0.9"}},
		{"sgd-momentum-off", []string{"optimizer.name=zo-sgd", "optimizer.lr=1e-3", "optimizer.momentum=0.9"}, []string{"optimizer.momentum=0"}},
		{"adam-beta1-off", []string{"optimizer.name=zo-adam"}, []string{"optimizer.beta1=0"}},
		{"adam-beta1-on", []string{"optimizer.name=zo-adam", "optimizer.beta1=0"}, []string{"optimizer.beta1=0.9"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cut := filepath.Join(dir, tc.name)
			set := append(slices.Clone(common), tc.set...)
			if _, err := Run(Options{ConfigPath: cfg, Overrides: append(set, "output.dir="+cut), StopAfter: 4}); err != nil {
				t.Fatal(err)
			}
			_, err := Run(Options{Resume: cut, Overrides: tc.chg})
			if err == nil || !strings.Contains(err.Error(), "between 0 and a value above 0") {
				t.Errorf("resume with %v: %v, want a refusal naming the key (not optimizer.bin's tensor count)", tc.chg, err)
			}
		})
	}
}
