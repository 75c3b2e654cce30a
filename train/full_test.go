package train

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/meazo-go/meazo/model"
)

// TestFullResumeIsBitIdentical: a full-parameter run (every weight of the
// demo's model) stopped and resumed writes what the uninterrupted run
// does: metrics.jsonl line for line, last/ and best/ model files and the
// optimizer's state byte for byte; under MEAZO and under ZO-Adam (whose
// moments are saved beside the weights), joint and grouped.
func TestFullResumeIsBitIdentical(t *testing.T) {
	dir, cfg := demoConfig(t, 9)
	common := []string{"adapter.kind=full", "train.eval_every=3", "train.checkpoint_every=2", "eval.skip=true",
		"task.max_train=120", "task.max_validation=16", "optimizer.lr=1e-3"}
	for _, tc := range []struct {
		name string
		set  []string
	}{
		{"meazo", []string{"optimizer.name=meazo"}},
		{"zo-adam-grouped", []string{"optimizer.name=zo-adam", "adapter.grouped=true"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := append(slices.Clone(common), tc.set...)
			whole := filepath.Join(dir, tc.name+"-whole")
			if _, err := Run(Options{ConfigPath: cfg, Overrides: append(set, "output.dir="+whole)}); err != nil {
				t.Fatal(err)
			}
			cut := filepath.Join(dir, tc.name+"-cut")
			// Stop after 5 steps: the last checkpoint is at step 4 (or 3, a new best).
			if _, err := Run(Options{ConfigPath: cfg, Overrides: append(set, "output.dir="+cut), StopAfter: 5}); err != nil {
				t.Fatal(err)
			}
			if _, err := Run(Options{Resume: cut}); err != nil {
				t.Fatal(err)
			}
			requireSameFullRun(t, whole, cut)
		})
	}
}

// requireSameFullRun checks that the full-parameter run in dir wrote what
// the uninterrupted one in whole did.
func requireSameFullRun(t *testing.T, whole, dir string) {
	t.Helper()
	if a, b := readLines(t, filepath.Join(whole, "metrics.jsonl")), readLines(t, filepath.Join(dir, "metrics.jsonl")); !slices.Equal(a, b) {
		t.Fatalf("metrics.jsonl differs:\n%v\n%v", a, b)
	}
	files := []string{"last/model.safetensors", "best/model.safetensors", "last/config.json", "checkpoint/optimizer.bin"}
	if _, err := os.Stat(filepath.Join(whole, "checkpoint", "optimizer_state.safetensors")); err == nil {
		files = append(files, "checkpoint/optimizer_state.safetensors")
	}
	for _, f := range files {
		x, _ := os.ReadFile(filepath.Join(whole, f))
		y, _ := os.ReadFile(filepath.Join(dir, f))
		if len(x) == 0 || !bytes.Equal(x, y) {
			t.Errorf("%s differs between %s and the uninterrupted run (%d and %d bytes)", f, filepath.Base(dir), len(y), len(x))
		}
	}
}

// TestFullRunOutputs: a finished full-parameter run's best/ and last/ are
// model directories that load, last/ differs from the starting model, the
// summary counts every weight of the model and the test split is scored
// for both.
func TestFullRunOutputs(t *testing.T) {
	dir, cfg := demoConfig(t, 6)
	out := filepath.Join(dir, "run")
	s, err := Run(Options{ConfigPath: cfg, Overrides: []string{"adapter.kind=full", "train.eval_every=3", "task.max_train=120",
		"task.max_validation=16", "task.max_test=16", "optimizer.lr=1e-3", "output.dir=" + out}})
	if err != nil {
		t.Fatal(err)
	}
	base, err := model.Load(filepath.Join(dir, "model"))
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := base.Tensors()
	var n int
	for _, tt := range ts {
		n += tt.Size()
	}
	if s.TrainableParams != n || s.Adapter != "full" {
		t.Errorf("summary: %d trainable parameters of adapter %q, want every one of the model's %d", s.TrainableParams, s.Adapter, n)
	}
	for _, name := range []string{"best", "last"} {
		if _, ok := s.Test[name]; !ok {
			t.Errorf("no test metrics for %s: %v", name, s.Test)
		}
		m, err := model.Load(filepath.Join(out, name))
		if err != nil {
			t.Fatalf("%s/: %v", name, err)
		}
		if name == "last" {
			a, _ := os.ReadFile(filepath.Join(dir, "model", "model.safetensors"))
			b, _ := os.ReadFile(filepath.Join(out, "last", "model.safetensors"))
			if bytes.Equal(a, b) || m.NumLayers != base.NumLayers {
				t.Errorf("last/ is the starting model")
			}
		}
	}
}
