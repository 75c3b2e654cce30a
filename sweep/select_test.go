package sweep

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestMeanStd(t *testing.T) {
	for _, c := range []struct {
		xs        []float64
		mean, std float64
		n         int
	}{
		{[]float64{1, 2, 3}, 2, 1, 3},
		{[]float64{2, 4, 4, 4, 5, 5, 7, 9}, 5, math.Sqrt(32.0 / 7), 8},
		{[]float64{1, math.Inf(1), 3, math.NaN()}, 2, math.Sqrt2, 2},
		{[]float64{5}, 5, math.NaN(), 1},
	} {
		m, s, n := MeanStd(c.xs)
		if n != c.n || math.Abs(m-c.mean) > 1e-12 || !(math.Abs(s-c.std) < 1e-12 || math.IsNaN(s) && math.IsNaN(c.std)) {
			t.Errorf("MeanStd(%v) = %v, %v, %d; want %v, %v, %d", c.xs, m, s, n, c.mean, c.std, c.n)
		}
	}
}

// TestEtaStar checks the selection on hand-made numbers: mean best val loss,
// a diverged seed makes its rate +inf, ties go to the smaller rate.
func TestEtaStar(t *testing.T) {
	mk := func(lr float64, seed uint64, best float64, div bool) Run {
		return Run{Summary: Summary{Optimizer: "meazo", LR: lr, Seed: seed, BestValLoss: ptr(best), LastValLoss: ptr(best + 0.1), Diverged: div}}
	}
	for _, c := range []struct {
		name string
		runs []Run
		want float64 // 0: none
	}{
		{"lowest mean", []Run{mk(1e-4, 0, 1.0, false), mk(1e-4, 1, 1.4, false), mk(1e-3, 0, 1.1, false), mk(1e-3, 1, 1.2, false)}, 1e-3},
		{"diverged seed is +inf", []Run{mk(1e-4, 0, 1.3, false), mk(1e-4, 1, 1.3, false), mk(1e-3, 0, 0.5, false), mk(1e-3, 1, 0.1, true)}, 1e-4},
		{"tie goes to the smaller rate", []Run{mk(1e-3, 0, 1, false), mk(1e-4, 0, 1, false)}, 1e-4},
		// The same values in another seed order: summed in seed order, 0.1 + 0.2 + 0.3 and 0.3 + 0.2 + 0.1
		// differ in the last bit, and the larger rate won.
		{"a tie in another seed order", []Run{mk(1e-2, 0, 0.1, false), mk(1e-2, 1, 0.2, false), mk(1e-2, 2, 0.3, false),
			mk(1e-1, 0, 0.3, false), mk(1e-1, 1, 0.2, false), mk(1e-1, 2, 0.1, false)}, 1e-2},
		{"all diverged", []Run{mk(1e-3, 0, 1, true), mk(1e-4, 0, 1, true)}, 0},
	} {
		rates := RateStatsOf(c.runs)
		i := EtaStar(rates)
		got := 0.0
		if i >= 0 {
			got = rates[i].LR
		}
		if got != c.want {
			t.Errorf("%s: η* = %g, want %g", c.name, got, c.want)
		}
	}
	// The robustness figure's numbers at a rate with a diverged seed: the
	// mean and std of the others.
	rs := RateStatsOf([]Run{mk(1e-3, 0, 1, false), mk(1e-3, 1, 2, false), mk(1e-3, 2, 9, true)})[0]
	if rs.Diverged != 1 || rs.MeanBest != 1.5 || rs.StdBest != math.Sqrt(0.5) || rs.MeanLast != 1.6 || !math.IsInf(rs.Score, 1) {
		t.Errorf("rate stats %+v", rs)
	}
}

func TestFineGrid(t *testing.T) {
	coarse := []float64{1e-6, 5e-6, 1e-5, 5e-5, 1e-4, 5e-4, 1e-3, 5e-3, 1e-2, 5e-2, 1e-1}
	for _, c := range []struct {
		eta  float64
		want string
	}{
		{1e-4, "6e-5 7e-5 8e-5 9e-5 2e-4 3e-4 4e-4"},
		{5e-5, "2e-5 3e-5 4e-5 6e-5 7e-5 8e-5 9e-5"},
		{1e-6, "2e-6 3e-6 4e-6"},
		{1e-1, "6e-2 7e-2 8e-2 9e-2"},
	} {
		got, err := FineGrid(coarse, c.eta)
		if err != nil || strings.Join(got, " ") != c.want {
			t.Errorf("FineGrid(%g) = %v, %v; want %s", c.eta, got, err, c.want)
		}
	}
	if _, err := FineGrid(coarse, 2e-4); err == nil {
		t.Error("η* outside the grid: no error")
	}
}

func TestLRString(t *testing.T) {
	for v, want := range map[float64]string{1e-4: "1e-4", 2.5e-4: "2.5e-4", 0.05: "0.05", 1e-1: "0.1", 1e-6: "1e-6", 5e-3: "5e-3"} {
		if got := LRString(v); got != want {
			t.Errorf("LRString(%v) = %s, want %s", v, got, want)
		}
	}
}

// writeRun writes a run directory with only summary.json, as SelectDir and
// ScriptStatus read it.
func writeRun(t *testing.T, dir string, s Summary) {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "summary.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSelectDir finds runs by their summaries whatever their directories are
// called, picks η*, round-trips sweep.json, and refuses a missing run, a
// duplicate, and two optimizers in one sweep.
func TestSelectDir(t *testing.T) {
	dir := t.TempDir()
	run := func(name, opt string, lr float64, seed uint64, best float64) {
		writeRun(t, filepath.Join(dir, name), Summary{Model: "m", Task: "squad", Adapter: "lora", Optimizer: opt, LR: lr, Seed: seed,
			Steps: 10, StepsDone: 10, BestValLoss: ptr(best), LastValLoss: ptr(best)})
	}
	run("a", "meazo", 1e-4, 0, 1.2)
	run("b", "meazo", 1e-4, 1, 1.4)
	run("c", "meazo", 1e-3, 0, 1.0)
	run("d", "meazo", 1e-3, 1, 1.1)
	run("other-rate", "meazo", 1e-2, 0, 0.1) // not among the rates asked for
	sw, err := SelectDir(dir, []float64{1e-4, 1e-3}, []uint64{0, 1}, []float64{1e-4})
	if err != nil {
		t.Fatal(err)
	}
	if sw.EtaStar != 1e-3 || len(sw.Rates) != 2 || sw.Rates[1].Stage != "fine" || sw.Rates[0].Seeds[1].Dir != "b" || *sw.CoarseEta != 1e-4 {
		t.Errorf("sweep %+v", sw)
	}
	path := filepath.Join(dir, SweepFile)
	if err := sw.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	back, err := ReadSweep(path)
	if err != nil || back.EtaStar != sw.EtaStar || len(back.Rates) != 2 || back.Selection != Selection {
		t.Errorf("sweep.json round trip: %+v, %v", back, err)
	}
	for _, c := range []struct {
		rates []float64
		seeds []uint64
		setup func()
		want  string
	}{
		{[]float64{1e-4}, []uint64{0, 2}, nil, "no run with lr 0.0001 and seed 2"},
		{[]float64{1e-4}, []uint64{0}, func() { run("dup", "meazo", 1e-4, 0, 1) }, "two runs with lr 0.0001 and seed 0"},
		{[]float64{1e-4, 1e-2}, []uint64{0}, func() { os.RemoveAll(filepath.Join(dir, "dup")); run("sgd", "zo-sgd", 1e-2, 0, 1) }, "two runs with lr 0.01"},
		{[]float64{1e-4}, nil, nil, "no rates or no seeds"},
	} {
		if c.setup != nil {
			c.setup()
		}
		if _, err := SelectDir(dir, c.rates, c.seeds, nil); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("rates %v seeds %v: %v, want an error containing %q", c.rates, c.seeds, err, c.want)
		}
	}
	os.RemoveAll(filepath.Join(dir, "other-rate"))
	if _, err := SelectDir(dir, []float64{1e-4, 1e-2}, []uint64{0}, nil); err == nil || !strings.Contains(err.Error(), "a sweep is for one optimizer") {
		t.Errorf("two optimizers: %v", err)
	}
}

func TestScriptStatus(t *testing.T) {
	root := t.TempDir()
	done := Summary{Optimizer: "meazo", LR: 1e-4, Steps: 10, StepsDone: 10}
	diverged := Summary{Optimizer: "meazo", LR: 1e-4, Steps: 10, StepsDone: 4, Diverged: true}
	failed := Summary{Optimizer: "meazo", LR: 1e-4, Steps: 10, StepsDone: 4, Message: "out of memory"}
	for _, c := range []struct {
		name       string
		summary    *Summary
		checkpoint string // "", "checkpoint" or "checkpoint.old"
		want       string
	}{
		{"done", &done, "checkpoint", StatusDone},
		{"diverged", &diverged, "", StatusDiverged},
		{"failed", &failed, "checkpoint", ScriptResume},
		{"killed", nil, "checkpoint", ScriptResume},
		{"rotating", nil, "checkpoint.old", ScriptResume}, // killed while writing a checkpoint: --resume takes the old one
		{"failed-early", &failed, "", StatusNew},
		{"empty", nil, "", StatusNew},
	} {
		dir := filepath.Join(root, c.name)
		os.MkdirAll(dir, 0o755)
		if c.summary != nil {
			writeRun(t, dir, *c.summary)
		}
		if c.checkpoint != "" {
			os.MkdirAll(filepath.Join(dir, c.checkpoint), 0o755)
			os.WriteFile(filepath.Join(dir, c.checkpoint, "state.json"), []byte("{}"), 0o644)
		}
		if got, err := ScriptStatus(dir); err != nil || got != c.want {
			t.Errorf("%s: %q, %v; want %s", c.name, got, err, c.want)
		}
	}
}

func TestParseSeeds(t *testing.T) {
	if s, err := ParseSeeds("--seeds", "0, 1 2"); err != nil || len(s) != 3 || s[2] != 2 {
		t.Errorf("ParseSeeds: %v, %v", s, err)
	}
	for _, bad := range []string{"", "1 -2", "x"} {
		if _, err := ParseSeeds("--seeds", bad); err == nil || !strings.HasPrefix(err.Error(), "--seeds: ") {
			t.Errorf("ParseSeeds(%q): %v", bad, err)
		}
	}
}

// TestParseListsRefuseRepeats: a rate or a seed given twice (1e-2 and 0.01
// are one rate) is refused, naming it: a seed twice was counted as two seeds
// of one run in sweep.json, and a rate twice made sweep-fine's grid empty
// (the rate its own neighbour) and sweep-select look for a run it had.
func TestParseListsRefuseRepeats(t *testing.T) {
	for _, tc := range []struct{ list, want string }{
		{"1e-2 0.01 5e-2", "--coarse: 0.01 given twice (as 1e-2 before)"},
		{"5e-2, 1e-2, 5e-2", "--coarse: 5e-2 given twice"},
	} {
		if _, err := ParseRates("--coarse", tc.list); err == nil || err.Error() != tc.want {
			t.Errorf("ParseRates(%q): %v, want %q", tc.list, err, tc.want)
		}
	}
	if _, err := ParseSeeds("--seeds", "0 1 0"); err == nil || err.Error() != "--seeds: 0 given twice" {
		t.Errorf("ParseSeeds(0 1 0): %v", err)
	}
	if r, err := ParseRates("--coarse", "5e-2 1e-2"); err != nil || len(r) != 2 || r[0] != 1e-2 {
		t.Errorf("ParseRates(5e-2 1e-2): %v, %v", r, err)
	}
}

// TestNoEtaStar: without η*, the message says what to do: failed runs are
// fixed (their first named, with why), not helped by lower rates; diverged
// ones are.
func TestNoEtaStar(t *testing.T) {
	failed := func(lr float64) Run {
		return Run{Dir: fmt.Sprintf("s/lr=%g_seed=0", lr), Failed: true, Summary: Summary{LR: lr, Message: "failed meazo-train exit status 1"}}
	}
	diverged := func(lr float64) Run {
		return Run{Dir: fmt.Sprintf("s/lr=%g_seed=0", lr), Summary: Summary{LR: lr, Diverged: true, BestValLoss: ptr(1)}}
	}
	for _, c := range []struct {
		name string
		runs []Run
		want string
	}{
		{"all failed", []Run{failed(1e-3), failed(1e-2)}, "s: runs failed at every rate, so there is no η*: fix the failure (the first, s/lr=0.001_seed=0: failed meazo-train exit status 1) and resume; the rates are not its cause"},
		{"all diverged", []Run{diverged(1e-3), diverged(1e-2)}, "s: a seed diverged at every rate, so there is no η*: lower the rates"},
		{"both", []Run{diverged(1e-3), failed(1e-2)}, "s: a seed diverged or failed at every rate (runs: 1 diverged, 1 failed; the first failed, s/lr=0.01_seed=0: failed meazo-train exit status 1), so there is no η*: lower the rates and fix the failures"},
	} {
		_, err := Summarize("s", c.runs, []uint64{0}, nil)
		if err == nil || err.Error() != c.want {
			t.Errorf("%s: %v\nwant %s", c.name, err, c.want)
		}
	}
}

// TestLastError: the error meazo-train ended its log with, its lines after
// it too; nothing from a log without one.
func TestLastError(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "meazo-sweep.log")
	os.WriteFile(log, []byte("step 1/4 loss 2\nmeazo-train: note: not this\nmeazo-train: the run needs files that are missing:\n  model.path m: no such directory\n"), 0o644)
	if got, want := lastError(log, 0), "meazo-train: the run needs files that are missing:\n  model.path m: no such directory"; got != want {
		t.Errorf("lastError = %q, want %q", got, want)
	}
	if got, want := indented("a\nb"), ":\n    a\n    b"; got != want {
		t.Errorf("indented = %q, want %q", got, want)
	}
	os.WriteFile(log, []byte("step 1/4 loss 2\nKilled\n"), 0o644)
	if got := lastError(log, 0); got != "" || indented(got) != "" {
		t.Errorf("a log without an error: %q", got)
	}
	if got := lastError(filepath.Join(dir, "none"), 0); got != "" {
		t.Errorf("no log: %q", got)
	}
	// A resumed run's log holds every attempt: an earlier attempt's error
	// or signal line is not the cause of this one's crash.
	before := "meazo-train: the run needs files that are missing:\n  model.path m: no such directory\n" +
		"meazo-train: SIGTERM: stopping after the current step or evaluation batch (checkpoint, then exit 3)\n"
	os.WriteFile(log, []byte(before+"resuming r at step 4 of 8\npanic: runtime error\n"), 0o644)
	if got := lastError(log, int64(len(before))); got != "" {
		t.Errorf("an earlier attempt's line quoted as this attempt's error: %q", got)
	}
}

// A run whose summary.json names another rate than its directory's (resumed
// with --set optimizer.lr) must not count as a seed of that other rate, nor
// leave its own rate eligible with a seed missing.
func TestResultsAtAnotherRateThanPlanned(t *testing.T) {
	fine := false
	sp := &SweepPlan{Name: "e_meazo", Dir: "/s", Optimizer: "meazo", Exp: &Experiment{Seeds: []uint64{0, 1}, Coarse: []float64{1e-2, 5e-2}, Fine: &fine}}
	v := func(x float64) *float64 { return &x }
	specs := []RunSpec{}
	states := map[string]RunState{}
	add := func(lr string, seed uint64, sumLR, best float64) {
		dir := filepath.Join("/s", runDirName(lr, seed))
		specs = append(specs, RunSpec{Sweep: sp, LR: lr, Seed: seed, Stage: 1, Dir: dir})
		states[dir] = RunState{Status: StatusDone, Run: Run{Dir: dir, Summary: Summary{Optimizer: "meazo", LR: sumLR, Seed: seed, Steps: 1, StepsDone: 1, BestValLoss: v(best)}}}
	}
	add("1e-2", 0, 0.01, 5)
	add("1e-2", 1, 0.05, 1) // resumed with --set optimizer.lr=0.05
	add("5e-2", 0, 0.05, 6)
	add("5e-2", 1, 0.05, 6)
	for _, st := range RateStatsOf(sp.Results(specs, states)) {
		if len(st.Runs) != 2 {
			t.Errorf("rate %g counts %d runs, want one per seed (2)", st.LR, len(st.Runs))
		}
	}
	sw, err := Summarize("/s", sp.Results(specs, states), sp.Exp.Seeds, sp.Exp.Coarse)
	if err != nil {
		t.Fatal(err)
	}
	if sw.EtaStar != 0.05 {
		t.Errorf("η* = %g from rate 0.01's one matching seed; want 0.05 (0.01 has a seed that is not its own)", sw.EtaStar)
	}
}
