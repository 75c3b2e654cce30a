package sweep

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/rundir"
	"github.com/meazo-go/meazo/train"
)

// TestReadEstimator: q and ε come from the run's config.yaml, with the ε a
// resume changed before the last; a config.yaml that is missing or does not
// load is an error naming it.
func TestReadEstimator(t *testing.T) {
	dir := t.TempDir()
	cfg, err := train.Load("", []string{"model.path=m", "task.name=sst2", "task.train=t.tsv", "optimizer.name=fzoo", "optimizer.q=8", "optimizer.eps=1e-4"})
	if err != nil {
		t.Fatal(err)
	}
	y, err := cfg.YAML()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, rundir.ConfigFile), y, 0o644); err != nil {
		t.Fatal(err)
	}
	e, err := ReadEstimator(dir, Summary{})
	if err != nil || e.Q != 8 || !slices.Equal(e.Eps, []float64{1e-4}) {
		t.Errorf("ReadEstimator = %+v, %v; want q 8, ε [1e-4]", e, err)
	}
	resumed := Summary{Changes: []rundir.ConfigChange{{Step: 10, Key: "optimizer.lr", Old: 1e-5, New: 2e-5}, {Step: 50, Key: "optimizer.eps", Old: 1e-3, New: 1e-4}}}
	if e, err := ReadEstimator(dir, resumed); err != nil || !slices.Equal(e.Eps, []float64{1e-3, 1e-4}) {
		t.Errorf("resumed: %+v, %v; want ε [1e-3 1e-4]", e, err)
	}
	resumed.Changes[1].Old = "big"
	if _, err := ReadEstimator(dir, resumed); err == nil || !strings.Contains(err.Error(), "optimizer.eps at step 50") {
		t.Errorf("a change of ε to a string: %v", err)
	}
	os.WriteFile(filepath.Join(dir, rundir.ConfigFile), []byte("optimizer:\n  qq: 2\n"), 0o644)
	if _, err := ReadEstimator(dir, Summary{}); err == nil || !strings.Contains(err.Error(), rundir.ConfigFile) {
		t.Errorf("a config.yaml with an unknown key: %v", err)
	}
	if _, err := ReadEstimator(t.TempDir(), Summary{}); err == nil || !strings.Contains(err.Error(), rundir.ConfigFile) {
		t.Errorf("no config.yaml: %v", err)
	}
}
