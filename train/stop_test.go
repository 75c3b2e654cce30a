package train

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
)

// TestStopIsResumedBitIdentically stops a run through Options.Stop (what a
// signal does in meazo-train) at several steps, checkpoint-aligned or not,
// resumes it, and compares metrics.jsonl with an uninterrupted run.
func TestStopIsResumedBitIdentically(t *testing.T) {
	dir, cfg := demoConfig(t, 10)
	set := []string{"train.eval_every=4", "train.checkpoint_every=3", "eval.skip=true", "task.max_train=200", "task.max_validation=16"}
	whole := filepath.Join(dir, "whole")
	if _, err := Run(Options{ConfigPath: cfg, Overrides: append(slices.Clone(set), "output.dir="+whole)}); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join(whole, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		stopAt []int // steps done when Stop answers, one per invocation
	}{
		{"between checkpoints", []int{5}},
		{"before the first step", []int{0}},
		{"twice, once on a checkpoint", []int{3, 7}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cut := filepath.Join(t.TempDir(), "cut")
			for i, at := range tc.stopAt {
				polls := 0
				prev := 0
				if i > 0 {
					prev = tc.stopAt[i-1]
				}
				opts := Options{Stop: func() string {
					polls++
					if polls > at-prev {
						return "SIGUSR1"
					}
					return ""
				}}
				if i == 0 {
					opts.ConfigPath, opts.Overrides = cfg, append(slices.Clone(set), "output.dir="+cut)
				} else {
					opts.Resume = cut
				}
				s, err := Run(opts)
				if err != nil {
					t.Fatal(err)
				}
				got := readSummary(t, cut)
				if !s.Interrupted() || got.Status != "interrupted" || got.Signal != "SIGUSR1" || got.StepsDone != at {
					t.Fatalf("summary after stopping at %d: status %q signal %q steps_done %d", at, got.Status, got.Signal, got.StepsDone)
				}
				b, err := os.ReadFile(filepath.Join(cut, "checkpoint", "state.json"))
				if err != nil || !bytes.Contains(b, []byte(`"step": `+strconv.Itoa(at)+",")) {
					t.Fatalf("checkpoint after stopping at %d: %s %v", at, b, err)
				}
			}
			if _, err := Run(Options{Resume: cut}); err != nil {
				t.Fatal(err)
			}
			if s := readSummary(t, cut); s.Status != "done" || s.Signal != "" {
				t.Fatalf("resumed run: status %q signal %q", s.Status, s.Signal)
			}
			got, _ := os.ReadFile(filepath.Join(cut, "metrics.jsonl"))
			if !bytes.Equal(got, want) {
				t.Fatalf("metrics.jsonl of the stopped and resumed run differs from the uninterrupted run")
			}
		})
	}
}
