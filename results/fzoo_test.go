package results

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/rundir"
)

// writeFZOORun writes a run directory with summary.json and a metrics.jsonl
// whose train lines carry the σ_t given (nil: none).
func writeFZOORun(t *testing.T, optimizer string, lr float64, sigmas [][]float64) string {
	dir := t.TempDir()
	s, _ := json.Marshal(rundir.Summary{Model: "m", Task: "sst2", Adapter: "full", Optimizer: optimizer, LR: lr, Steps: len(sigmas), StepsDone: len(sigmas), Status: rundir.StatusDone})
	var lines []string
	for i, sg := range sigmas {
		b, _ := json.Marshal(rundir.TrainLine{Kind: rundir.KindTrain, Step: i + 1, Loss: 0.5, LR: lr, Sigma: sg})
		lines = append(lines, string(b))
	}
	for name, b := range map[string]string{rundir.SummaryFile: string(s), rundir.MetricsFile: strings.Join(lines, "\n") + "\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestFZOORate: ZO-SGD's rate is FZOO's η over the mean σ_t of every unit's
// every step of every run; a run of another optimizer, of another η or
// without σ_t is refused.
func TestFZOORate(t *testing.T) {
	a := writeFZOORun(t, "fzoo", 1e-5, [][]float64{{30}, {40}})
	b := writeFZOORun(t, "fzoo", 1e-5, [][]float64{{50}})
	r, err := FZOORateOf([]string{a, b}, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	if r.Steps != 3 || r.MeanSigma != 40 || math.Abs(r.ZOSGDRate-2.5e-7) > 1e-20 {
		t.Errorf("%+v, want 3 σ_t of mean 40 and rate 2.5e-7", r)
	}
	for _, c := range []struct {
		dirs []string
		want string
	}{
		{[]string{writeFZOORun(t, "meazo", 1e-5, [][]float64{{1}})}, "not FZOO's"},
		{[]string{a, writeFZOORun(t, "fzoo", 1e-4, [][]float64{{1}})}, "runs of one rate"},
		{[]string{writeFZOORun(t, "fzoo", 1e-5, [][]float64{nil})}, "no σ_t"},
		{nil, "no finished FZOO run"},
		{[]string{t.TempDir()}, "not a run directory"},
	} {
		if _, err := FZOORateOf(c.dirs, func(string) {}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want one saying %s", c.dirs, err, c.want)
		}
	}
}

// TestFZOORateOfSweep: a sweep directory stands for its runs, as for the
// figure commands (the README's study names fig20_fzoo_fzoo): with
// sweep.json, the runs it lists, its failed ones left out with a warning;
// before it, every subdirectory with a summary.json.
func TestFZOORateOfSweep(t *testing.T) {
	sw := t.TempDir()
	for name, sigmas := range map[string][][]float64{"lr=1e-5_seed=0": {{30}, {40}}, "lr=1e-5_seed=1": {{50}}} {
		if err := os.Rename(writeFZOORun(t, "fzoo", 1e-5, sigmas), filepath.Join(sw, name)); err != nil {
			t.Fatal(err)
		}
	}
	r, err := FZOORateOf([]string{sw}, func(string) {})
	if err != nil || len(r.Runs) != 2 || r.Steps != 3 || r.MeanSigma != 40 {
		t.Fatalf("a sweep directory before sweep.json: %+v, %v; want its 2 runs' 3 σ_t of mean 40", r, err)
	}
	sweepJSON := `{"rates":[{"lr":1e-05,"seeds":[{"seed":0,"dir":"lr=1e-5_seed=0"},{"seed":2,"dir":"lr=1e-5_seed=2","failed":true}]}]}`
	if err := os.WriteFile(filepath.Join(sw, "sweep.json"), []byte(sweepJSON), 0o644); err != nil {
		t.Fatal(err)
	}
	var warned []string
	r, err = FZOORateOf([]string{sw}, func(s string) { warned = append(warned, s) })
	if err != nil || len(r.Runs) != 1 || r.MeanSigma != 35 || len(warned) != 1 || !strings.Contains(warned[0], "seed=2") {
		t.Errorf("a sweep directory with sweep.json: %+v, %v, warnings %q; want seed 0's run alone (mean σ_t 35), seed 2's failed one named", r, err, warned)
	}
}

// TestFZOORateOneConstantRate: η / mean σ_t holds for a run that moved at its
// η every step. A run whose logged rate changed (a schedule's decay, a
// resume's --set optimizer.lr, after which summary.json's η is the new one)
// is refused, naming the run and the step; a line without "lr" (an older
// run's) is taken at the run's η.
func TestFZOORateOneConstantRate(t *testing.T) {
	dir := writeFZOORun(t, "fzoo", 1e-3, [][]float64{{30}, {40}, {50}})
	lines := []string{
		`{"kind":"train","step":1,"loss":0.5,"lr":0.00001,"sigma":[30]}`, // before a resume's --set optimizer.lr=1e-3
		`{"kind":"train","step":2,"loss":0.5,"lr":0.001,"sigma":[40]}`,
		`{"kind":"train","step":3,"loss":0.5,"lr":0.001,"sigma":[50]}`,
	}
	if err := os.WriteFile(filepath.Join(dir, rundir.MetricsFile), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r, err := FZOORateOf([]string{dir}, func(string) {}); err == nil || !strings.Contains(err.Error(), "step 1 moved at η 1e-05, not the run's 0.001") {
		t.Errorf("a run whose rate changed: %+v, %v; want an error naming step 1 and both rates", r, err)
	}
	lines[0] = `{"kind":"train","step":1,"loss":0.5,"sigma":[30]}`
	lines[1] = `{"kind":"train","step":2,"loss":0.5,"sigma":[40]}`
	lines[2] = `{"kind":"train","step":3,"loss":0.5,"sigma":[50]}`
	if err := os.WriteFile(filepath.Join(dir, rundir.MetricsFile), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r, err := FZOORateOf([]string{dir}, func(string) {}); err != nil || r.MeanSigma != 40 || r.LR != 1e-3 {
		t.Errorf("lines without lr: %+v, %v; want mean σ_t 40 at the run's η 1e-3", r, err)
	}
}

// TestFZOORateCountsEachRunOnce: a run named twice (its sweep and itself, as
// the README's "the sweep directory, or some of its runs" invites) counts
// once, and a run that did not finish (interrupted, or still running) is left
// out with a warning naming it, as the figures leave it out.
func TestFZOORateCountsEachRunOnce(t *testing.T) {
	sw := t.TempDir()
	for name, sigmas := range map[string][][]float64{"lr=1e-5_seed=0": {{30}, {40}}, "lr=1e-5_seed=1": {{50}, {60}}} {
		if err := os.Rename(writeFZOORun(t, "fzoo", 1e-5, sigmas), filepath.Join(sw, name)); err != nil {
			t.Fatal(err)
		}
	}
	seed0 := filepath.Join(sw, "lr=1e-5_seed=0")
	r, err := FZOORateOf([]string{sw, seed0, sw + "/"}, func(string) {})
	if err != nil || len(r.Runs) != 2 || r.Steps != 4 || r.MeanSigma != 45 {
		t.Errorf("the sweep and its seed 0 named: %+v, %v; want its 2 runs once, 4 σ_t of mean 45", r, err)
	}
	interrupted, _ := json.Marshal(rundir.Summary{Model: "m", Task: "sst2", Adapter: "full", Optimizer: "fzoo", LR: 1e-5,
		Steps: 4, StepsDone: 2, Status: rundir.StatusInterrupted})
	if err := os.WriteFile(filepath.Join(sw, "lr=1e-5_seed=1", rundir.SummaryFile), interrupted, 0o644); err != nil {
		t.Fatal(err)
	}
	var warned []string
	r, err = FZOORateOf([]string{sw}, func(s string) { warned = append(warned, s) })
	if err != nil || len(r.Runs) != 1 || r.MeanSigma != 35 || len(warned) != 1 || !strings.Contains(warned[0], "seed=1: run did not finish (2 of 4 steps)") {
		t.Errorf("an interrupted seed: %+v, %v, warnings %q; want seed 0's run alone (mean σ_t 35), seed 1 named", r, err, warned)
	}
}
