package rundir_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/meazo-go/meazo/rundir"
)

// A metrics.jsonl as a run killed while it wrote step 3's line leaves it
// (DIR stands for the directory): the reader takes every whole line, each
// kind sorted by step, and drops the cut one with a warning; a bad line
// anywhere else is an error naming the file and line. meazo-train's
// training lines have more fields (TrainLine); a reader needs these.
func ExampleReadMetrics() {
	dir, err := os.MkdirTemp("", "rundir-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	lines := strings.Join([]string{
		`{"kind":"train","step":1,"loss":0.71}`,
		`{"kind":"train","step":2,"loss":0.69}`,
		`{"kind":"val","step":2,"val_loss":0.70}`,
		`{"kind":"train","st`,
	}, "\n")
	if err := os.WriteFile(filepath.Join(dir, rundir.MetricsFile), []byte(lines), 0o644); err != nil {
		fmt.Println(err)
		return
	}
	train, val, err := rundir.ReadMetrics(dir, func(w string) { fmt.Println("warning:", strings.ReplaceAll(w, dir, "DIR")) })
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, p := range train {
		fmt.Printf("step %d: loss %.2f\n", p.Step, p.Loss)
	}
	for _, p := range val {
		fmt.Printf("step %d: validation loss %.2f\n", p.Step, p.ValLoss)
	}
	// Output:
	// warning: DIR/metrics.jsonl line 4: ignoring a cut-off last line
	// step 1: loss 0.71
	// step 2: loss 0.69
	// step 2: validation loss 0.70
}

// summary.json is what a run ends with: meazo-train writes a Summary,
// readers get it back typed with ReadSummary, which refuses one without
// the fields every reader needs (an optimizer, a positive learning rate).
// Finished says whether its numbers are a result: all steps done, or
// stopped by divergence.
func ExampleReadSummary() {
	dir, err := os.MkdirTemp("", "rundir-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	best := 0.41
	b, _ := json.Marshal(rundir.Summary{Task: "sst2", Adapter: "lora", Optimizer: "meazo", LR: 1e-3, Seed: 0,
		Steps: 1000, StepsDone: 1000, BestValLoss: &best, BestStep: 800, Status: rundir.StatusDone})
	if err := os.WriteFile(filepath.Join(dir, rundir.SummaryFile), b, 0o644); err != nil {
		fmt.Println(err)
		return
	}
	s, err := rundir.ReadSummary(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s at lr %g: best validation loss %.2f at step %d; finished: %v\n", s.Optimizer, s.LR, *s.BestValLoss, s.BestStep, s.Finished())

	if err := os.WriteFile(filepath.Join(dir, rundir.SummaryFile), []byte(`{"optimizer": "meazo", "lr": 0}`), 0o644); err != nil {
		fmt.Println(err)
		return
	}
	_, err = rundir.ReadSummary(dir)
	fmt.Println(strings.ReplaceAll(err.Error(), dir, "DIR"))
	// Output:
	// meazo at lr 0.001: best validation loss 0.41 at step 800; finished: true
	// DIR/summary.json: field "lr" is 0, want a positive learning rate
}
