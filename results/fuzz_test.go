package results

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/meazo-go/meazo/rundir"
	"github.com/meazo-go/meazo/sweep"
)

// FuzzMetrics feeds a run directory's metrics.jsonl and summary.json through
// the readers meazo-plot builds on (ReadMetrics, ReadSummary, VT, Curves):
// errors, never a panic. (Its seeds run in every go test; make fuzz fuzzes it.)
func FuzzMetrics(f *testing.F) {
	for _, s := range []string{
		"{\"kind\":\"train\",\"step\":1,\"loss\":2.5,\"v\":[0.1,0.2],\"groups\":[0,1]}\n{\"kind\":\"val\",\"step\":1,\"val_loss\":2}\n{\"kind\":\"train\",\"step\":2,\"loss\":2.4,\"v\":[0.1,null],\"groups\":[0,1]}\n",
		"{\"kind\":\"train\",\"step\":1,\"loss\":null}\n{\"kind\":\"train\",\"step\":1,\"loss\":3}\n{\"kind\":\"tr",
		"{\"kind\":\"train\",\"step\":-5,\"v\":[1],\"groups\":[-1]}\n",
		"{\"kind\":\"val\",\"step\":3,\"val_loss\":null}\n{\"kind\":\"x\",\"step\":0}\n",
		"{\"kind\":\"train\",\"step\":1,\"v\":[]}\n{\"kind\":\"train\",\"step\":2,\"v\":[1],\"groups\":[0]}\n",
	} {
		f.Add([]byte(s), []byte(`{"optimizer":"meazo","lr":1e-4,"steps":10,"steps_done":10,"grouped":true}`), 0)
	}
	f.Fuzz(func(t *testing.T, metrics, summary []byte, smooth int) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, rundir.MetricsFile), metrics, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, rundir.SummaryFile), summary, 0o644); err != nil {
			t.Fatal(err)
		}
		warn := func(string) {}
		s, err := rundir.ReadSummary(dir)
		if err != nil {
			s = rundir.Summary{Optimizer: "meazo", LR: 1e-4, Steps: 10, StepsDone: 10}
		}
		r := sweep.Run{Dir: dir, Summary: s}
		VT(r, warn)
		Curves([]sweep.Run{r}, smooth%1000, warn)
	})
}
