package train

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/rundir"
)

// TestDemoDeletesOnlyItsOwnFiles: the demo cleans a run directory it made
// of the files runs write, and refuses (deleting nothing) a directory it did
// not make or one holding a file someone else put there.
func TestDemoDeletesOnlyItsOwnFiles(t *testing.T) {
	write := func(t *testing.T, p string) {
		t.Helper()
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name  string
		files []string // created under the run directory
		want  string   // "" = cleaned
		kept  []string // files that must still exist afterwards
	}{
		{"demo run", []string{rundir.DemoMarker, "config.yaml", "metrics.jsonl", "checkpoint/state.json", "best/adapter_config.json", rundir.LockFile}, "", []string{rundir.DemoMarker}},
		{"user file in a demo run", []string{rundir.DemoMarker, "config.yaml", "notes.txt"}, "notes.txt, which the demo did not make", []string{"config.yaml", "notes.txt"}},
		{"foreign directory", []string{"config.yaml", "metrics.jsonl"}, "was not made by the demo", []string{"config.yaml", "metrics.jsonl"}},
		{"demo run with leftovers", []string{rundir.DemoMarker, "checkpoint.tmp/.state.json.tmp12", "checkpoint/best/adapter_model.safetensors", ".summary.json.tmp-3", "last/.adapter_config.json.tmp4"}, "", []string{rundir.DemoMarker}},
		{"user file in best/", []string{rundir.DemoMarker, "best/adapter_config.json", "best/my_notes.txt"}, "best/my_notes.txt, which the demo did not make", []string{"best/my_notes.txt"}},
		{"user folder in checkpoint/", []string{rundir.DemoMarker, "checkpoint/state.json", "checkpoint/mine/x"}, "checkpoint/mine, which the demo did not make", []string{"checkpoint/mine/x"}},
		{"a file where a folder belongs", []string{rundir.DemoMarker, "best"}, "best, which the demo did not make", []string{"best"}},
		{"missing", nil, "", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run-meazo")
			for _, f := range tc.files {
				write(t, filepath.Join(dir, f))
			}
			err := cleanDemoRun(dir)
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
			for _, f := range tc.kept {
				if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
					t.Errorf("%s was removed", f)
				}
			}
			if tc.want == "" && len(tc.files) > 0 {
				for _, f := range []string{"config.yaml", "metrics.jsonl", "checkpoint", "best"} {
					if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
						t.Errorf("%s was not cleaned", f)
					}
				}
			}
		})
	}
	t.Run("demo dir", func(t *testing.T) {
		root := t.TempDir()
		foreignDir := filepath.Join(root, "mine")
		write(t, filepath.Join(foreignDir, "thesis.tex"))
		if err := ClaimDemoDir(foreignDir); err == nil || !strings.Contains(err.Error(), "not made by the demo") {
			t.Errorf("a foreign non-empty --demo-dir: %v", err)
		}
		fresh := filepath.Join(root, "fresh")
		if err := ClaimDemoDir(fresh); err != nil {
			t.Fatal(err)
		}
		if err := ClaimDemoDir(fresh); err != nil {
			t.Errorf("claiming the demo's own directory again: %v", err)
		}
		// A run of demo.yaml itself (output.dir: <demo dir>/run) is left
		// where it is, and does not stop the demo.
		write(t, filepath.Join(fresh, "run", "metrics.jsonl"))
		if err := ClaimDemoDir(fresh); err != nil {
			t.Errorf("a demo dir holding a run of its demo.yaml: %v", err)
		}
		if _, err := os.Stat(filepath.Join(fresh, "run", "metrics.jsonl")); err != nil {
			t.Errorf("the run of demo.yaml: %v", err)
		}
		write(t, filepath.Join(fresh, "thesis.tex"))
		if err := ClaimDemoDir(fresh); err == nil || !strings.Contains(err.Error(), "thesis.tex") {
			t.Errorf("a demo dir with a user's file in it: %v", err)
		}
	})
}

// TestDemoMarksItsPlots: a demo directory's plots/ (make demo's meazo-plot
// output, perhaps from a version that left no marker) is marked as
// meazo-plot's when the demo claims the directory, so that make demo runs
// again.
func TestDemoMarksItsPlots(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo")
	os.MkdirAll(filepath.Join(dir, "plots"), 0o755)
	os.WriteFile(filepath.Join(dir, "plots", "train_loss.svg"), []byte("<svg/>"), 0o644)
	os.WriteFile(filepath.Join(dir, rundir.DemoMarker), nil, 0o644)
	if err := ClaimDemoDir(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "plots", rundir.PlotMarker)); err != nil {
		t.Errorf("plots/ not marked: %v", err)
	}
}

// TestDemoTableShowsTheBestValidationAccuracy: the demo's table shows,
// beside the best validation loss, the validation accuracy its run logged
// at that step (best_val_metrics, in % as the test accuracies), and n/a
// for a run that logged none.
func TestDemoTableShowsTheBestValidationAccuracy(t *testing.T) {
	root := t.TempDir()
	loss := 2.6287
	var runs []string
	for _, s := range []rundir.Summary{
		{Optimizer: "meazo", LR: 0.05, BestValLoss: &loss, BestStep: 600, BestValMetrics: map[string]float64{"accuracy": 0.969},
			Test: map[string]map[string]float64{"best": {"accuracy": 0.98}, "base": {"accuracy": 0.365}}, SecondsPerStep: 0.01},
		{Optimizer: "zo-sgd", LR: 0.05, BestValLoss: &loss, Test: map[string]map[string]float64{}, SecondsPerStep: 0.01},
	} {
		dir := filepath.Join(root, s.Optimizer)
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, rundir.SummaryFile), b, 0o644); err != nil {
			t.Fatal(err)
		}
		runs = append(runs, dir)
	}
	var b strings.Builder
	if err := DemoTable(&b, runs); err != nil {
		t.Fatal(err)
	}
	want := "\noptimizer       lr  base acc  test acc  best val loss  val acc   s/step\n" +
		"meazo         0.05    36.5 %    98.0 %         2.6287   96.9 %    0.010\n" +
		"zo-sgd        0.05       n/a       n/a         2.6287      n/a    0.010\n"
	if got := b.String(); !strings.HasPrefix(got, want) {
		t.Errorf("the table:\n%s\nwant it to begin:\n%s", got, want)
	}
}
