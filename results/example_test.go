package results_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/meazo-go/meazo/results"
	"github.com/meazo-go/meazo/rundir"
	"github.com/meazo-go/meazo/sweep"
)

// A sweep's loss curves, as meazo-plot draws them: Load reads the runs of a
// sweep directory (each subdirectory with a summary.json; here three small
// runs written by writeRun, as meazo-train would write them), and Curves
// draws each method at its η*, the rate of lowest mean best validation
// loss: the run at 1e-4 is left out. Each line is the mean over seeds, with
// a band of ± 2 standard deviations; WriteFile would write each figure
// under its File name.
func ExampleCurves() {
	sweepDir, err := os.MkdirTemp("", "results-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(sweepDir)
	for _, r := range []struct {
		lr     float64
		seed   uint64
		losses []float64
	}{
		{1e-3, 0, []float64{0.70, 0.60, 0.50}},
		{1e-3, 1, []float64{0.70, 0.64, 0.54}},
		{1e-4, 0, []float64{0.70, 0.68, 0.66}},
	} {
		dir := filepath.Join(sweepDir, fmt.Sprintf("lr=%s_seed=%d", sweep.RateName(r.lr), r.seed))
		if err := writeRun(dir, r.lr, r.seed, r.losses); err != nil {
			fmt.Println(err)
			return
		}
	}

	runs, err := results.Load([]string{sweepDir}, func(w string) { fmt.Println("warning:", w) })
	if err != nil {
		fmt.Println(err)
		return
	}
	figs, err := results.Curves(runs, 1, func(w string) { fmt.Println("warning:", w) })
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, f := range figs {
		fmt.Printf("%s: %s\n", f.File, f.Title)
		for _, s := range f.Series {
			last := len(s.X) - 1
			fmt.Printf("  %s: steps %v, mean %.2f, band %.2f–%.2f at the last\n", s.Name, s.X, s.Y, s.Lo[last], s.Hi[last])
		}
	}
	// Output:
	// train_loss.svg: Training loss, Llama-3.2-1B, sst2, lora
	//   MEAZO (2 seeds, η*=1e-3 of 2 rates): steps [1 2 3], mean [0.70 0.62 0.52], band 0.46–0.58 at the last
	// val_loss.svg: Validation loss, Llama-3.2-1B, sst2, lora
	//   MEAZO (2 seeds, η*=1e-3 of 2 rates): steps [3], mean [0.54], band 0.48–0.60 at the last
}

// writeRun writes a finished run's summary.json and metrics.jsonl (one
// training line a step, a validation after the last) in dir.
func writeRun(dir string, lr float64, seed uint64, losses []float64) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	val := losses[len(losses)-1] + 0.02
	var metrics []byte
	for step, loss := range losses {
		line, _ := json.Marshal(rundir.TrainLine{Kind: rundir.KindTrain, Step: step + 1, Loss: loss, LR: lr})
		metrics = append(append(metrics, line...), '\n')
	}
	line, _ := json.Marshal(rundir.ValLine{Kind: rundir.KindVal, Step: len(losses), ValLoss: val})
	metrics = append(append(metrics, line...), '\n')
	if err := os.WriteFile(filepath.Join(dir, rundir.MetricsFile), metrics, 0o644); err != nil {
		return err
	}
	summary, _ := json.Marshal(rundir.Summary{
		Model: "models/Llama-3.2-1B", Task: "sst2", Adapter: "lora", Optimizer: "meazo", LR: lr, Seed: seed,
		Steps: len(losses), StepsDone: len(losses), BestValLoss: &val, BestStep: len(losses), LastValLoss: &val,
		Status: rundir.StatusDone,
	})
	return os.WriteFile(filepath.Join(dir, rundir.SummaryFile), summary, 0o644)
}
