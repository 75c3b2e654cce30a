package train

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestFullCheckpointAfterTwoStops: a full-parameter run with optimizer
// state stopped in its last step's validation, resumed, and stopped again
// in the test evaluation of best/ (which has replaced the trained weights
// in memory) keeps its last step's weights and moments in checkpoint/, and
// finishes with the uninterrupted run's last/. The resumed run's first
// checkpoint (after the pending validation) only links the files of the
// checkpoint it resumed from; it used to forget which step they hold, and
// the stop in the test evaluation then saved best/'s weights as the last
// step's, without the moments.
func TestFullCheckpointAfterTwoStops(t *testing.T) {
	dir, cfg := demoConfig(t, 4)
	set := []string{"adapter.kind=full", "optimizer.name=zo-adam", "optimizer.lr=0.02", "train.steps=4", "train.eval_every=2",
		"train.checkpoint_every=2", "train.batch_size=4", "task.max_validation=16", "task.max_test=8", "eval.batch_size=4", "train.threads=1"}
	run := func(out string, stop int, resume bool) {
		t.Helper()
		n := 0
		opts := Options{Log: io.Discard, Stop: stopAt(stop, &n)}
		if resume {
			opts.Resume = out
		} else {
			opts.ConfigPath, opts.Overrides = cfg, append(slices.Clone(set), "output.dir="+out)
		}
		if _, err := Run(opts); err != nil && !errors.Is(err, ErrStoppedStarting) {
			t.Fatal(err)
		}
	}
	whole := filepath.Join(dir, "whole")
	run(whole, 0, false)
	// The first stop: a poll in step 4's validation (the last step).
	cut := ""
	for p := 1; p < 60 && cut == ""; p++ {
		out := filepath.Join(dir, fmt.Sprintf("cut%d", p))
		run(out, p, false)
		if _, err := os.Stat(filepath.Join(out, "checkpoint")); err != nil {
			continue // stopped before the first step
		}
		if st := readState(t, out); st.Step == 4 && st.ValidationPending {
			cut = out
		}
	}
	if cut == "" {
		t.Fatal("no stop in the last step's validation")
	}
	// The second stop: the first poll of the resumed run that stops it in
	// best/'s test evaluation.
	found := false
	for p := 1; p < 60 && !found; p++ {
		out := fmt.Sprintf("%s-%d", cut, p)
		if err := os.CopyFS(out, os.DirFS(cut)); err != nil {
			t.Fatal(err)
		}
		run(out, p, true)
		st := readState(t, out)
		if st.Test == nil || st.Test.Current != "best" {
			continue
		}
		found = true
		want, _ := os.ReadFile(filepath.Join(whole, "last", "model.safetensors"))
		ck, _ := os.ReadFile(filepath.Join(out, "checkpoint", "model.safetensors"))
		if !bytes.Equal(ck, want) {
			t.Errorf("stopped in best/'s test evaluation, checkpoint/ does not hold the last step's weights")
		}
		if _, err := os.Stat(filepath.Join(out, "checkpoint", "optimizer_state.safetensors")); err != nil {
			t.Errorf("stopped in best/'s test evaluation, checkpoint/ has no moments: %v", err)
		}
		run(out, 0, true)
		if got, _ := os.ReadFile(filepath.Join(out, "last", "model.safetensors")); !bytes.Equal(got, want) {
			t.Errorf("finished after two stops, last/ is not the uninterrupted run's")
		}
	}
	if !found {
		t.Fatal("no stop in best/'s test evaluation")
	}
}
