package train

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

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
