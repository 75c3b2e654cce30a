package main

import (
	"bytes"
	"encoding/json"
	"io"
	"path/filepath"
	"testing"

	"github.com/meazo-go/meazo/train"
)

// TestTaskOnDemo evaluates the demo's tiny model on its SST-2-style test file,
// with and without a saved LoRA adapter.
func TestTaskOnDemo(t *testing.T) {
	dir := t.TempDir()
	cfg, err := train.WriteDemo(dir, 2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := train.Run(train.Options{ConfigPath: cfg, Overrides: []string{"eval.skip=true", "task.max_train=32", "task.max_validation=8"}}); err != nil {
		t.Fatal(err)
	}
	for _, adapter := range []string{"", filepath.Join(dir, "run", "best")} {
		var out bytes.Buffer
		args := []string{"--model", filepath.Join(dir, "model"), "--task", "sst2", "--data", filepath.Join(dir, "data", "dev.tsv"), "--max-examples", "20"}
		if adapter != "" {
			args = append(args, "--adapter", adapter)
		}
		if err := runTask(args, &out, io.Discard); err != nil {
			t.Fatal(err)
		}
		var res map[string]float64
		if err := json.Unmarshal(out.Bytes(), &res); err != nil {
			t.Fatalf("output %q: %v", out.String(), err)
		}
		if acc, ok := res["accuracy"]; !ok || acc < 0 || acc > 1 {
			t.Errorf("adapter %q: result %v", adapter, res)
		}
	}
	if err := runTask([]string{"--model", filepath.Join(dir, "model"), "--task", "sst2", "--data", filepath.Join(dir, "nope.tsv")}, io.Discard, io.Discard); err == nil {
		t.Error("a missing data file gave no error")
	}
}
