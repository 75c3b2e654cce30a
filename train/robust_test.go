//go:build unix

package train

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestInputFIFOsAreRefused replaces each input of a run in turn by a named
// pipe (a FIFO, which blocks whoever opens it for reading until a writer
// comes) and checks that the run fails at once naming it, leaving the
// other inputs as they were.
func TestInputFIFOsAreRefused(t *testing.T) {
	src, _ := demoConfig(t, 4)
	for _, input := range []string{"demo.yaml", "model/config.json", "model/model.safetensors", "model/tokenizer.json",
		"model/tokenizer_config.json", "data/train.tsv", "data/dev.tsv", "init/adapter_config.json"} {
		t.Run(input, func(t *testing.T) {
			dir := t.TempDir()
			copyDir(t, src, dir)
			writeInitAdapter(t, dir)
			fifo := filepath.Join(dir, input)
			if err := os.Remove(fifo); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Mkfifo(fifo, 0o644); err != nil {
				t.Skipf("no FIFOs here: %v", err)
			}
			before := readTree(t, dir)
			set := append([]string{"model.path=" + filepath.Join(dir, "model"), "task.train=" + filepath.Join(dir, "data/train.tsv"),
				"task.test=" + filepath.Join(dir, "data/dev.tsv"), "output.dir=" + filepath.Join(dir, "run")}, trustSet...)
			switch input {
			case "init/adapter_config.json":
				set = append(set, "adapter.init="+filepath.Join(dir, "init"), "adapter.r=8")
			case "data/dev.tsv": // the test split, read at the end
				set = append(set, "eval.skip=false")
			}
			done := make(chan error, 1)
			go func() {
				_, err := Run(Options{ConfigPath: filepath.Join(dir, "demo.yaml"), Overrides: set, Log: io.Discard})
				done <- err
			}()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), fifo) || !strings.Contains(err.Error(), "named pipe") {
					t.Errorf("error %v, want one naming %s as a named pipe", err, fifo)
				}
			case <-time.After(60 * time.Second):
				t.Fatalf("the run blocked on %s", fifo)
			}
			after := readTree(t, dir)
			for name, content := range before {
				if after[name] != content {
					t.Errorf("%s changed", name)
				}
			}
		})
	}
}

// writeInitAdapter saves a LoRA adapter (r 8, the demo's shape) into dir/init.
func writeInitAdapter(t *testing.T, dir string) {
	t.Helper()
	run := filepath.Join(t.TempDir(), "run")
	set := append([]string{"model.path=" + filepath.Join(dir, "model"), "task.train=" + filepath.Join(dir, "data/train.tsv"),
		"task.test=" + filepath.Join(dir, "data/dev.tsv"), "output.dir=" + run, "train.steps=1"}, trustSet...)
	if _, err := Run(Options{ConfigPath: filepath.Join(dir, "demo.yaml"), Overrides: set, Log: io.Discard}); err != nil {
		t.Fatal(err)
	}
	copyDir(t, filepath.Join(run, "last"), filepath.Join(dir, "init"))
}

// readTree reads every regular file under dir (named relative to it).
func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil || !info.Mode().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestLongExamplesEverySplit puts, in the training data (whose held-out
// 5% is the validation split) and in the test file, an example of 10 MB
// and examples just past task.max_length: every split leaves them out with
// their count and ids, the huge one without rendering it; the run ends in
// bounded time; and a stop during the final test evaluation ends the run
// at the next batch.
func TestLongExamplesEverySplit(t *testing.T) {
	dir, cfg := demoConfig(t, 4)
	huge := strings.Repeat("word ", 2<<20)
	long := strings.Repeat("the film is great ", 60)
	for _, f := range []string{"train.tsv", "val.tsv", "dev.tsv"} {
		src := f
		if f == "val.tsv" {
			src = "dev.tsv" // a validation file made from the test file
		}
		b, err := os.ReadFile(filepath.Join(dir, "data", src))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.SplitAfter(string(b), "\n")
		// Data rows 0, 2 and 4 (a GLUE TSV's ids) are too long.
		rows := append([]string{lines[0], huge + "\t1\n", lines[1], long + "\t1\n", lines[2], long + long + "\t0\n"}, lines[3:]...)
		if err := os.WriteFile(filepath.Join(dir, "data", f), []byte(strings.Join(rows, "")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	set := []string{"task.max_length=200", "task.validation=" + filepath.Join(dir, "data", "val.tsv"), "task.max_validation=40",
		"eval.batch_size=4", "task.max_test=16"}
	var log strings.Builder
	start := time.Now()
	polls := 0
	sum, err := Run(Options{ConfigPath: cfg, Overrides: append(slices.Clone(set), "output.dir="+filepath.Join(dir, "whole")), Log: &log, Stop: stopAt(0, &polls)})
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 2*time.Minute {
		t.Errorf("the run took %v", d)
	}
	for _, split := range []string{"train split: ", "validation split: ", "test split: 3 examples skipped as their evaluation would exceed task.max_length 200 tokens"} {
		i := strings.Index(log.String(), split)
		line, _, _ := strings.Cut(log.String()[max(i, 0):], "\n")
		if i < 0 || !strings.Contains(line, "longer than task.max_length 200 tokens: 3: ids") && !strings.Contains(line, "(3: ids") ||
			!strings.Contains(line, `"0"`) || !strings.Contains(line, `"2"`) || !strings.Contains(line, `"4"`) {
			t.Errorf("%q: want the 3 examples too long named, got %q", split, line)
		}
	}
	if sum.Status != "done" || len(sum.Test["best"]) == 0 {
		t.Fatalf("status %q, test %v", sum.Status, sum.Test)
	}
	// The last polls are the final test evaluation's, between its batches.
	stopped := 0
	asked := time.Time{}
	run := filepath.Join(dir, "stopped")
	_, err = Run(Options{ConfigPath: cfg, Overrides: append(slices.Clone(set), "output.dir="+run), Log: io.Discard, Stop: func() string {
		if stopped++; stopped >= polls-1 {
			if asked.IsZero() {
				asked = time.Now()
			}
			return "SIGTERM"
		}
		return ""
	}})
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(asked); d > 30*time.Second {
		t.Errorf("the run took %v to stop after the request", d)
	}
	if s := readSummary(t, run); s.Status != "interrupted" || !strings.Contains(s.Message, "during the test evaluation") {
		t.Errorf("status %q: %s", s.Status, s.Message)
	}
}

// TestOutputDirNeverOverInputs: a run directory that is, or lies inside,
// the model, an input file, the adapter it starts from, or another run's
// directory is refused before anything is written; a run's own directory
// (resumed) is not.
func TestOutputDirNeverOverInputs(t *testing.T) {
	dir, cfg := demoConfig(t, 2)
	other := filepath.Join(dir, "other")
	if _, err := Run(Options{ConfigPath: cfg, Overrides: append(slices.Clone(trustSet), "output.dir="+other, "train.steps=1"), Log: io.Discard}); err != nil {
		t.Fatal(err)
	}
	init := filepath.Join(dir, "init")
	copyDir(t, filepath.Join(other, "last"), init)
	copyDir(t, filepath.Join(dir, "model"), filepath.Join(dir, "another-model"))
	for _, c := range []struct{ out, want string }{
		{"model", "is the input " + filepath.Join(dir, "model")},
		{"model/run", "is inside the input " + filepath.Join(dir, "model")},
		{"another-model", "is a model directory already"},
		{"another-model/run", "is inside the model directory " + filepath.Join(dir, "another-model")},
		{"data/train.tsv", "is the input " + filepath.Join(dir, "data/train.tsv")},
		{"other/best/run", "is inside the run directory " + other},
		{"other/new", "is inside the run directory " + other},
		{"init/run", "is inside the input " + init},
	} {
		t.Run(c.out, func(t *testing.T) {
			out := filepath.Join(dir, c.out)
			before := readTree(t, dir)
			set := append(slices.Clone(trustSet), "output.dir="+out, "adapter.init="+init)
			_, err := Run(Options{ConfigPath: cfg, Overrides: set, Log: io.Discard})
			if err == nil || !strings.Contains(err.Error(), "output.dir "+out) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one naming output.dir and saying %q", err, c.want)
			}
			if after := readTree(t, dir); len(after) != len(before) {
				t.Errorf("%d files before, %d after", len(before), len(after))
			}
		})
	}
	// The run's own directory is resumed.
	if _, err := Run(Options{Resume: other, Overrides: []string{"train.steps=2"}, Log: io.Discard}); err != nil {
		t.Errorf("resume: %v", err)
	}
}

// TestRunWithoutConfigYAML: a run whose config.yaml is gone but whose
// checkpoint is intact resumes (config.yaml put back from the checkpoint's,
// and said so) to the same end as a run never stopped; without a
// checkpoint either, the message says to start again, and that works.
func TestRunWithoutConfigYAML(t *testing.T) {
	_, cfg := demoConfig(t, 6)
	root := t.TempDir()
	whole := filepath.Join(root, "whole")
	if _, err := Run(Options{ConfigPath: cfg, Overrides: append(slices.Clone(trustSet), "output.dir="+whole), Log: io.Discard}); err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(root, "run")
	if _, err := Run(Options{ConfigPath: cfg, Overrides: append(slices.Clone(trustSet), "output.dir="+run), StopAfter: 4, Log: io.Discard}); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(run, "config.yaml")); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	if _, err := Run(Options{Resume: run, Log: &log}); err != nil {
		t.Fatalf("resume without config.yaml: %v", err)
	}
	if !strings.Contains(log.String(), "config.yaml was missing: put back from the checkpoint's") {
		t.Errorf("the log does not say config.yaml was put back:\n%s", log.String())
	}
	requireSameRun(t, whole, run)

	// No checkpoint either: nothing to resume, and a new start takes the directory.
	fresh := filepath.Join(root, "fresh")
	if _, err := Run(Options{ConfigPath: cfg, Overrides: append(slices.Clone(trustSet), "output.dir="+fresh, "train.checkpoint_every=0"), StopAfter: 2, Log: io.Discard}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"config.yaml", "checkpoint"} {
		os.RemoveAll(filepath.Join(fresh, f))
	}
	_, err := Run(Options{Resume: fresh, Log: io.Discard})
	if err == nil || !strings.Contains(err.Error(), "start it again with --config") {
		t.Fatalf("resume without config.yaml or checkpoint: %v", err)
	}
	if _, err := Run(Options{ConfigPath: cfg, Overrides: append(slices.Clone(trustSet), "output.dir="+fresh), Log: io.Discard}); err != nil {
		t.Errorf("starting again: %v", err)
	}
}

// TestStopDuringTheLastStep: a stop that comes while the last step runs,
// with a validation and a test evaluation of one batch each (no poll
// between their batches), ends the run before them, interrupted, with the
// checkpoint of the step before; the resume ends as a run never stopped.
func TestStopDuringTheLastStep(t *testing.T) {
	_, cfg := demoConfig(t, 4)
	set := []string{"train.eval_every=2", "task.max_train=64", "task.max_validation=4", "task.max_test=2", "eval.batch_size=4"}
	root := t.TempDir()
	whole := filepath.Join(root, "whole")
	want, err := Run(Options{ConfigPath: cfg, Overrides: append(slices.Clone(set), "output.dir="+whole), Log: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(root, "run")
	armed := false
	stop := func() string { // the signal comes during step 4: every poll after the one before it answers it
		b, _ := os.ReadFile(filepath.Join(run, "metrics.jsonl"))
		if strings.Count(string(b), `"kind":"train"`) >= 3 {
			if armed {
				return "SIGINT"
			}
			armed = true
		}
		return ""
	}
	s, err := Run(Options{ConfigPath: cfg, Overrides: append(slices.Clone(set), "output.dir="+run), Stop: stop, Log: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	if s.Status != "interrupted" || !strings.HasPrefix(s.Message, "interrupted by SIGINT after step 3 of 4 (during the validation of step 4, which runs again with its step)") {
		t.Fatalf("status %q: %s", s.Status, s.Message)
	}
	if st := readState(t, run); st.Step != 3 || st.Test != nil {
		t.Errorf("checkpoint at step %d (test %+v), want step 3 and no test begun", st.Step, st.Test)
	}
	got, err := Run(Options{Resume: run, Log: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	requireSameRun(t, whole, run)
	if fmt.Sprint(got.Test) != fmt.Sprint(want.Test) {
		t.Errorf("test metrics %v after the resume, %v uninterrupted", got.Test, want.Test)
	}
}
