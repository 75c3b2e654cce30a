package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/internal/cli"
	"github.com/meazo-go/meazo/internal/fixture"
	"github.com/meazo-go/meazo/train"
)

// TestTaskOnDemo evaluates the demo's tiny model on its SST-2-style test file,
// without a saved LoRA adapter, with it, and with it merged (--merge).
func TestTaskOnDemo(t *testing.T) {
	dir := t.TempDir()
	cfg, err := train.WriteDemo(dir, 2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := train.Run(train.Options{ConfigPath: cfg, Overrides: []string{"eval.skip=true", "task.max_train=32", "task.max_validation=8"}}); err != nil {
		t.Fatal(err)
	}
	best := filepath.Join(dir, "run", "best")
	accs := map[string]float64{}
	for _, c := range []struct {
		name string
		args []string
	}{{"base", nil}, {"adapter", []string{"--adapter", best}}, {"merged", []string{"--adapter", best, "--merge"}}} {
		adapter := c.name
		var out bytes.Buffer
		args := append([]string{"--model", filepath.Join(dir, "model"), "--task", "sst2", "--data", filepath.Join(dir, "data", "dev.tsv"), "--max-examples", "20"}, c.args...)
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
		accs[c.name] = res["accuracy"]
	}
	// Merging LoRA into the weights rounds differently but scores the same labels.
	if accs["merged"] != accs["adapter"] {
		t.Errorf("accuracy with the adapter merged %v, attached %v", accs["merged"], accs["adapter"])
	}
	if err := runTask([]string{"--model", filepath.Join(dir, "model"), "--task", "sst2", "--data", filepath.Join(dir, "nope.tsv")}, io.Discard, io.Discard); err == nil {
		t.Error("a missing data file gave no error")
	}
}

// TestTaskCommandLine: what the flags cannot mean is a usage error, before
// any model loads.
func TestTaskCommandLine(t *testing.T) {
	base := []string{"--model", "m", "--task", "sst2", "--data", "d.tsv"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{append(base, "extra"), `unexpected argument "extra"`},
		{append(base, "--max-examples", "-5"), "must not be negative"},
		{append(base, "--batch-size", "0"), "--batch-size must be at least 1"},
		{[]string{"--task", "sst2"}, "--model, --task and --data are required"},
	} {
		err := runTask(c.args, io.Discard, io.Discard)
		var ue *cli.UsageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want a usage error with %q", c.args, err, c.want)
		}
	}
}

// TestTaskRefusesNonFiniteModel: a model whose weights hold NaN is refused,
// by label scoring (SST-2) and by generation (SQuAD), not scored.
func TestTaskRefusesNonFiniteModel(t *testing.T) {
	dir := t.TempDir()
	if _, err := train.WriteDemo(dir, 1); err != nil {
		t.Fatal(err)
	}
	fixture.PoisonWeights(t, filepath.Join(dir, "model", "model.safetensors"), "model.norm.weight")
	err := runTask([]string{"--model", filepath.Join(dir, "model"), "--task", "sst2", "--data", filepath.Join(dir, "data", "dev.tsv"), "--max-examples", "4"}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), `test example "0": the loss of its answer "terrible" is not finite (NaN)`) {
		t.Errorf("sst2: %v, want the loss refused", err)
	}
	squad := filepath.Join(dir, "squad.jsonl")
	row := `{"id":"q1","title":"T","context":"Paris is in France.","question":"Where is Paris?","answers":{"text":["France"],"answer_start":[12]}}`
	if err := os.WriteFile(squad, []byte(row+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err = runTask([]string{"--model", filepath.Join(dir, "model"), "--task", "squad", "--data", squad, "--max-new-tokens", "3"}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "the logits of sequence 0 are not finite") {
		t.Errorf("squad: %v, want the logits refused", err)
	}
}

// TestTaskLengthRule: --max-length skips the examples whose evaluation
// would take more tokens, naming how many and which on stderr, and scores
// the others; 0 skips none.
func TestTaskLengthRule(t *testing.T) {
	dir := t.TempDir()
	if _, err := train.WriteDemo(dir, 1); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "test.tsv")
	long := strings.Repeat("the film is great ", 60)
	if err := os.WriteFile(data, []byte("sentence\tlabel\n"+strings.Repeat("x", 10<<20)+"\t1\na fine film\t1\n"+long+"\t0\ndull\t0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"--model", filepath.Join(dir, "model"), "--task", "sst2", "--data", data}
	var stderr strings.Builder
	var out bytes.Buffer
	if err := runTask(append(args, "--max-length", "200"), &out, &stderr); err != nil {
		t.Fatal(err)
	}
	if want := `2 examples skipped as their evaluation would exceed --max-length 200 tokens (2: ids "0", "2"); the metric is over the other 2`; !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
	}
	if err := runTask(append(args, "--max-length", "-1"), io.Discard, io.Discard); err == nil {
		t.Error("--max-length -1 was accepted")
	}
}
