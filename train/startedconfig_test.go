package train

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/rundir"
)

// TestStartedConfig: a run's config as it started is its config.yaml with
// the settings changes.jsonl records put back to their first old values (an
// early stop's train.steps, a resume's --set changed twice), the arithmetic
// line skipped; a run without changes.jsonl is its config.yaml.
func TestStartedConfig(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(path, []byte("model: {path: m}\ntask: {name: sst2, train: t.tsv}\ntrain: {steps: 12}\noptimizer: {lr: 3.0e-3}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	now, err := Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(dir, "run")
	y, _ := now.YAML()
	if err := os.MkdirAll(run, 0o755); err != nil || os.WriteFile(filepath.Join(run, rundir.ConfigFile), y, 0o644) != nil {
		t.Fatal("writing config.yaml")
	}
	same, err := StartedConfig(run)
	if err != nil || len(ConfigDiff(same, now)) != 0 {
		t.Fatalf("without changes.jsonl: %v, %v", err, ConfigDiff(same, now))
	}
	changes := strings.Join([]string{
		`{"step":5,"key":"optimizer.lr","old":0.001,"new":0.002,"time":"t"}`,
		`{"step":5,"key":"arithmetic","old":"cpu a","new":"cpu b","time":"t"}`,
		`{"step":8,"key":"optimizer.lr","old":0.002,"new":0.003,"time":"t"}`,
		`{"step":12,"key":"train.steps","old":20,"new":12,"time":"t","reason":"train.patience 2"}`,
	}, "\n") + "\n"
	if err := os.WriteFile(filepath.Join(run, rundir.ChangesFile), []byte(changes), 0o644); err != nil {
		t.Fatal(err)
	}
	started, err := StartedConfig(run)
	if err != nil {
		t.Fatal(err)
	}
	if got := DescribeChanges(ConfigDiff(started, now)); got != "optimizer.lr 0.001 -> 0.003, train.steps 20 -> 12" {
		t.Errorf("started -> now: %s", got)
	}
	if err := os.WriteFile(filepath.Join(run, rundir.ChangesFile), []byte(`{"step":1,"key":"train.steps","old":"twenty","new":12}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := StartedConfig(run); err == nil || !strings.Contains(err.Error(), "train.steps: twenty is not a int") {
		t.Errorf("a change of the wrong type: %v", err)
	}
}
