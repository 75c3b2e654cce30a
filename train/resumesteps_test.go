package train

import (
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestResumeEndingHereValidates: a run stopped at step 14 of 40 and resumed
// with train.steps 14 ends there as a 14-step run does, with the
// validation every run has at its end (it went straight to its test, step
// 0's adapter the best, step 14 never validated).
func TestResumeEndingHereValidates(t *testing.T) {
	dir, cfg := demoConfig(t, 40)
	set := []string{"train.eval_every=50", "train.checkpoint_every=7", "task.max_train=200", "task.max_validation=16", "eval.skip=true"}
	whole, cut := filepath.Join(dir, "whole"), filepath.Join(dir, "cut")
	want, err := Run(Options{ConfigPath: cfg, Log: io.Discard, Overrides: append(slices.Clone(set), "output.dir="+whole, "train.steps=14")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Run(Options{ConfigPath: cfg, Log: io.Discard, Overrides: append(slices.Clone(set), "output.dir="+cut), StopAfter: 14}); err != nil {
		t.Fatal(err)
	}
	got, err := Run(Options{Resume: cut, Log: io.Discard, Overrides: []string{"train.steps=14"}})
	if err != nil {
		t.Fatal(err)
	}
	if valJSONLines(t, cut) != valJSONLines(t, whole) {
		t.Errorf("validations of the resumed run:\n%s\nof a 14-step run:\n%s", valJSONLines(t, cut), valJSONLines(t, whole))
	}
	if got.BestStep != want.BestStep || *got.BestValLoss != *want.BestValLoss {
		t.Errorf("best step %d (loss %v), a 14-step run's %d (%v)", got.BestStep, *got.BestValLoss, want.BestStep, *want.BestValLoss)
	}
}

// valJSONLines is the validation lines of a run's metrics.jsonl.
func valJSONLines(t *testing.T, dir string) string {
	var out []string
	for _, l := range readLines(t, filepath.Join(dir, "metrics.jsonl")) {
		if strings.Contains(l, `"kind":"val"`) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestTrainFurtherKeepsPatience: a run that ran all its steps, trained
// further, stops early where the uninterrupted run of the larger count
// does: train.patience's count goes on (it was reset, as after an early
// stop, and the run stopped 18 steps later).
func TestTrainFurtherKeepsPatience(t *testing.T) {
	dir, cfg := demoConfig(t, 40)
	// At 0.005, not the demo's 0.05: the validation losses stall early there.
	set := []string{"optimizer.lr=0.005", "train.eval_every=1", "train.checkpoint_every=4", "train.patience=2", "task.max_train=200", "task.max_validation=16", "eval.skip=true"}
	whole, short := filepath.Join(dir, "whole"), filepath.Join(dir, "short")
	s, err := Run(Options{ConfigPath: cfg, Log: io.Discard, Overrides: append(slices.Clone(set), "output.dir="+whole)})
	if err != nil {
		t.Fatal(err)
	}
	m := s.StepsDone
	if m == 40 || m < 4 {
		t.Fatalf("the 40-step run stopped after %d steps: this test needs an early stop after a few", m)
	}
	// A run that ends one step before the early stop (one validation
	// since its best), trained on to 40.
	if _, err := Run(Options{ConfigPath: cfg, Log: io.Discard, Overrides: append(slices.Clone(set), "output.dir="+short, "train.steps="+strconv.Itoa(m-1))}); err != nil {
		t.Fatal(err)
	}
	got, err := Run(Options{Resume: short, Log: io.Discard, Overrides: []string{"train.steps=40"}})
	if err != nil {
		t.Fatal(err)
	}
	if got.StepsDone != m {
		t.Errorf("trained further, it stopped after step %d; the uninterrupted run after step %d", got.StepsDone, m)
	}
	if valJSONLines(t, short) != valJSONLines(t, whole) {
		t.Errorf("validations differ from the uninterrupted run's")
	}
}
