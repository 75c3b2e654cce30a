package results

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/rundir"
	"github.com/meazo-go/meazo/sweep"
)

func ptr(v float64) *float64 { return &v }

func TestStats(t *testing.T) {
	got := RunningMean([]float64{1, 3, math.NaN(), 5, 7}, 2)
	want := []float64{1, 2, 3, 5, 6}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("RunningMean = %v, want %v", got, want)
			break
		}
	}
	b := SeedBand([]map[int]float64{{1: 1, 2: 2}, {1: 3}})
	if b.Mean[0] != 2 || b.Hi[0] != 2+2*math.Sqrt2 || b.Mean[1] != 2 || b.N[1] != 1 || !math.IsNaN(b.Hi[1]) {
		t.Errorf("SeedBand = %+v", b)
	}
	// Thinning keeps every k-th point and the last, at most about max.
	for _, c := range []struct {
		n, max int
		want   []int
	}{
		{0, 3, nil},
		{3, 3, []int{0, 1, 2}},
		{7, 3, []int{0, 3, 6}},
		{8, 3, []int{0, 3, 6, 7}},
	} {
		if got := thinned(c.n, c.max); !slices.Equal(got, c.want) {
			t.Errorf("thinned(%d, %d) = %v, want %v", c.n, c.max, got, c.want)
		}
	}
	long := Band{}
	for i := range 2500 {
		long.X = append(long.X, float64(i))
		long.Mean, long.Lo, long.Hi, long.N = append(long.Mean, 1), append(long.Lo, 0), append(long.Hi, 2), append(long.N, 1)
	}
	if th := long.Thin(1000); len(th.X) != 834 || th.X[len(th.X)-1] != 2499 || len(th.N) != len(th.X) {
		t.Errorf("Thin: %d points, last %g", len(th.X), th.X[len(th.X)-1])
	}
}

func run(opt string, grouped bool, lr float64, seed uint64, best float64, diverged bool) sweep.Run {
	return sweep.Run{Dir: "runs/" + opt, Summary: sweep.Summary{Model: "models/Llama-3.2-1B", Task: "squad", Adapter: "lora", Optimizer: opt, Grouped: grouped,
		LR: lr, Seed: seed, Steps: 10, StepsDone: 10, BestValLoss: ptr(best), LastValLoss: ptr(best), Diverged: diverged,
		TrainableParams: 1000, StateBytes: map[string]int64{"meazo": 8, "zo-adam": 8000}[opt], PeakRSSBytes: 3 << 30}}
}

// TestBestRate: each method keeps its η*'s runs (by seed), a method with a
// diverged seed everywhere its smallest rate; v_t is drawn for MEAZO only.
func TestBestRate(t *testing.T) {
	runs := []sweep.Run{
		run("meazo", false, 1e-3, 1, 1.0, false), run("meazo", false, 1e-3, 0, 1.0, false), run("meazo", false, 1e-4, 0, 1.5, false),
		run("zo-sgd", false, 1e-3, 0, 1, true), run("zo-sgd", false, 1e-4, 0, 1, true),
		run("meazo", true, 1e-4, 3, 1.1, false),
	}
	kept, notes := AtBestRate(runs)
	var got []string
	for _, r := range kept {
		got = append(got, sweep.LRString(r.LR)+"/"+r.Method().String())
	}
	if want := "1e-3/MEAZO 1e-3/MEAZO 1e-4/MEAZO (grouped) 1e-4/ZO-SGD"; strings.Join(got, " ") != want {
		t.Errorf("AtBestRate kept %v, want %s", got, want)
	}
	if notes[sweep.Method{Optimizer: "meazo"}] != ", η*=1e-3 of 2 rates" || notes[sweep.Method{Optimizer: "meazo", Grouped: true}] != ", η=1e-4" {
		t.Errorf("notes %v", notes)
	}
	// ZO-SGD diverged at both rates: no η* (its legend once said "η*=1e-4", which the table and sweep.json deny).
	if n := notes[sweep.Method{Optimizer: "zo-sgd"}]; n != ", no η* (a seed diverged or failed at each of 2 rates): η=1e-4, the smallest drawn" {
		t.Errorf("ZO-SGD's note %q", n)
	}
	vt := VTRuns(runs)
	if len(vt) != 2 || vt[0].Seed != 0 || vt[0].LR != 1e-3 || !vt[1].Grouped {
		t.Errorf("VTRuns = %+v", vt)
	}
	if !SeveralRates(runs) || SeveralRates(runs[:2]) {
		t.Error("SeveralRates")
	}
}

func TestMemoryTable(t *testing.T) {
	runs := []sweep.Run{run("meazo", false, 1e-3, 0, 1, false), run("zo-adam", false, 1e-3, 0, 1, false), run("zo-adam", false, 1e-4, 0, 1, false)}
	runs[2].TrainableParams = 2000
	table, err := MemoryTable(runs)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Memory per optimizer, Llama-3.2-1B, squad, lora", "| MEAZO | 1 | 1000 | 8 B | 0.008 | 3.0 GiB |", "| ZO-Adam | 2 | 1000 – 2000 | 7.8 KiB | – | 3.0 GiB |"} {
		if !strings.Contains(table, want) {
			t.Errorf("memory table lacks %q:\n%s", want, table)
		}
	}
	if strings.Contains(table, "GPU") {
		t.Errorf("CPU runs got a GPU column:\n%s", table)
	}
	runs[1].PeakDeviceBytes = 5 << 30
	table, err = MemoryTable(runs)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"peak GPU memory (max over runs) |\n|---|---:|---:|---:|---:|---:|---:|", "| MEAZO | 1 | 1000 | 8 B | 0.008 | 3.0 GiB | – |", "| 7.8 KiB | – | 3.0 GiB | 5.0 GiB |"} {
		if !strings.Contains(table, want) {
			t.Errorf("memory table with a GPU run lacks %q:\n%s", want, table)
		}
	}
	runs[0].PeakRSSBytes = 0 // a run outside Linux, where peak RSS is not read
	if table, err = MemoryTable(runs); err != nil || !strings.Contains(table, "| MEAZO | 1 | 1000 | 8 B | 0.008 | – | – |") {
		t.Errorf("a run without peak RSS: %v\n%s", err, table)
	}
	other := run("meazo", false, 1e-3, 0, 1, false)
	other.Task = "sst2"
	if _, err := MemoryTable(append(runs, other)); err == nil || !strings.Contains(err.Error(), "runs from different experiments") {
		t.Errorf("two experiments: %v", err)
	}
}

// TestSources: a run directory stands for itself, a sweep directory for what
// its sweep.json lists (failed runs as Failed Runs with the sweep's setting)
// or else its run subdirectories.
func TestSources(t *testing.T) {
	root := t.TempDir()
	mk := func(dir string) {
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, "summary.json"), []byte(`{"optimizer":"meazo","lr":1e-4,"steps":1,"steps_done":1}`), 0o644)
	}
	mk(filepath.Join(root, "run"))
	mk(filepath.Join(root, "open", "a"))
	mk(filepath.Join(root, "open", "b"))
	os.MkdirAll(filepath.Join(root, "open", "c"), 0o755) // no summary yet
	sw := sweep.Sweep{Optimizer: "meazo", Grouped: true, Variant: "β1 = 0", Model: "m", Task: "squad", Adapter: "lora",
		Rates: []sweep.SweepRate{{LR: 1e-4, Seeds: []sweep.SweepSeed{{Seed: 0, Dir: "x"}, {Seed: 1, Dir: "y", Failed: true}}}}}
	os.MkdirAll(filepath.Join(root, "closed"), 0o755)
	b, _ := json.Marshal(sw)
	os.WriteFile(filepath.Join(root, "closed", "sweep.json"), b, 0o644)
	// A seed still training in the open sweep (config.yaml, no summary.json): left out, with a warning.
	os.MkdirAll(filepath.Join(root, "open", "training"), 0o755)
	os.WriteFile(filepath.Join(root, "open", "training", rundir.ConfigFile), nil, 0o644)
	var warns []string
	got, failed, err := sources([]string{filepath.Join(root, "run"), filepath.Join(root, "open"), filepath.Join(root, "closed")}, func(s string) { warns = append(warns, s) })
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		got[i].dir, _ = filepath.Rel(root, got[i].dir)
	}
	// The runs of a sweep.json carry its variant; the others have none.
	if want := []source{{"run", ""}, {"open/a", ""}, {"open/b", ""}, {"closed/x", "β1 = 0"}}; !slices.Equal(got, want) {
		t.Errorf("dirs = %v, want %v", got, want)
	}
	want := sweep.Run{Dir: filepath.Join(root, "closed", "y"), Failed: true, Variant: "β1 = 0", Summary: sweep.Summary{
		Model: "m", Task: "squad", Adapter: "lora", Grouped: true, Optimizer: "meazo", LR: 1e-4, Seed: 1}}
	if len(failed) != 1 || !reflect.DeepEqual(failed[0], want) {
		t.Errorf("failed = %+v, want [%+v]", failed, want)
	}
	if len(warns) != 1 || !strings.Contains(warns[0], filepath.Join("open", "training")+": a run without a result yet") {
		t.Errorf("warnings %q, want one on open/training", warns)
	}
	if _, _, err := sources([]string{filepath.Join(root, "open", "c")}, func(string) {}); err == nil || !strings.Contains(err.Error(), "not a run directory") {
		t.Errorf("empty directory: %v", err)
	}
}

// TestFailedSeedRules: a rate with a failed seed cannot be η* in the
// figures, as in the table and sweep.json, even when the seeds that finished
// there did best; the failed run is not drawn, and the robustness figure
// marks its rate.
func TestFailedSeedRules(t *testing.T) {
	failed := run("meazo", false, 1e-3, 1, 0, false)
	failed.Failed, failed.BestValLoss, failed.LastValLoss = true, nil, nil
	runs := []sweep.Run{
		run("meazo", false, 1e-3, 0, 0.5, false), failed,
		run("meazo", false, 1e-4, 0, 1.0, false), run("meazo", false, 1e-4, 1, 1.2, false),
	}
	kept, notes := AtBestRate(runs)
	if len(kept) != 2 || kept[0].LR != 1e-4 || kept[1].LR != 1e-4 || !strings.Contains(notes[kept[0].Method()], "η*=1e-4") {
		t.Errorf("AtBestRate kept %+v (%v), want the two 1e-4 runs", kept, notes)
	}
	alone, _ := AtBestRate([]sweep.Run{run("meazo", false, 1e-3, 0, 0.5, false), failed})
	if len(alone) != 1 || alone[0].Failed {
		t.Errorf("one rate with a failed seed: kept %+v, want the finished seed only", alone)
	}
	// Every seed of the smallest rate failed, none is eligible: the curves
	// fall back to the smallest rate with a run, 1e-3.
	gone := run("meazo", false, 1e-5, 0, 0, false)
	gone.Failed = true
	if kept, _ := AtBestRate([]sweep.Run{gone, run("meazo", false, 1e-3, 0, 0.5, false), failed}); len(kept) != 1 || kept[0].LR != 1e-3 {
		t.Errorf("no eligible rate: kept %+v, want the finished 1e-3 seed", kept)
	}
	if table, err := MemoryTable(append(runs, failed)); err != nil || !strings.Contains(table, "| MEAZO | 3 | 1000 | 8 B |") {
		t.Errorf("memory table with failed runs: %v\n%s", err, table)
	}
	figs, err := Robustness(runs)
	if err != nil {
		t.Fatal(err)
	}
	f := figs[0].Figure
	if len(f.Series) != 2 || len(f.Series[1].X) != 1 || f.Series[1].X[0] != 10 || !strings.Contains(f.Note, "diverged or failed") {
		t.Errorf("robustness: series %+v, note %q; want the 1e-3 rate (η/η* = 10) marked", f.Series, f.Note)
	}
}

// TestReportTables checks the markdown and CSV of hand-made cells: values at
// η*, seeds short, no η*, the validation loss without a test metric, missing runs.
func TestReportTables(t *testing.T) {
	rep := &Report{cells: []cell{
		{exp: "squad_lora", optimizer: "zo-sgd", model: "m", task: "squad", adapter: "lora", eta: 1e-3, metric: "F1 of the best adapter", mean: 70.5, std: 0.70710678, n: 2, seeds: 2},
		{exp: "squad_lora", optimizer: "meazo", model: "m", task: "squad", adapter: "lora", eta: 1e-4, metric: "F1 of the best adapter", mean: 71, std: math.NaN(), n: 1, seeds: 2, missing: []missingRun{{"out/squad_lora_meazo/lr=1e-4_seed=1", "new", ""}, {"out/squad_lora_meazo/lr=1e-3_seed=1", "failed", "meazo-train exit status 1"}}},
		{exp: "sst2_prompt", optimizer: "meazo", model: "m", task: "sst2", adapter: "prompt", eta: 1e-2, metric: "best validation loss", mean: 0.5, std: 0.01, n: 2, seeds: 2},
		{sweep: "sst2_prompt_zo-sgd", exp: "sst2_prompt", optimizer: "zo-sgd", seeds: 2, note: "stage 2 not run yet"},
		// Variants of one optimizer: a column each, in the study's order.
		{exp: "xsum_lora", optimizer: "zo-adam", variant: "β1 = 0.9", model: "m", task: "xsum", adapter: "lora", eta: 1e-4, metric: "ROUGE-L of the best adapter", mean: 20, std: 1, n: 2, seeds: 2},
		{exp: "xsum_lora", optimizer: "zo-adam", variant: "β1 = 0", model: "m", task: "xsum", adapter: "lora", eta: 2e-4, metric: "ROUGE-L of the best adapter", mean: 21, std: 1, n: 2, seeds: 2},
	}}
	md := rep.Markdown()
	for _, want := range []string{
		"## Table 1: LoRA\n\n| experiment | metric | MEAZO | ZO-SGD | ZO-Adam (β1 = 0.9) | ZO-Adam (β1 = 0) |",
		"| xsum_lora | ROUGE-L of the best adapter, higher is better | | | 20.00 ± 1.00<br>η*=1e-4 | **21.00 ± 1.00**<br>η*=2e-4 |",
		"| squad_lora | F1 of the best adapter, higher is better | **71.00 (1/2 seeds)**<br>η*=1e-4 | 70.50 ± 0.71<br>η*=1e-3 |",
		"## Table 2: prompt tuning", "| sst2_prompt | best validation loss, lower is better | 0.5000 ± 0.0100<br>η*=0.01 |",
		"## Table 3: no results yet",
		"## Missing (2)", "- out/squad_lora_meazo/lr=1e-4_seed=1 (new)", "- out/squad_lora_meazo/lr=1e-3_seed=1 (failed: meazo-train exit status 1)",
		"- sst2_prompt_zo-sgd: stage 2 not run yet",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	csv := rep.CSV()
	for _, want := range []string{
		`squad_lora,m,squad,lora,false,meazo,,1e-4,"F1 of the best adapter",71,,1,2,2`,
		`sst2_prompt,,,,false,zo-sgd,,,"",,,0,2,0`,
		`xsum_lora,m,xsum,lora,false,zo-adam,β1 = 0,2e-4,"ROUGE-L of the best adapter",21,1,2,2,0`,
	} {
		if !strings.Contains(csv, want) {
			t.Errorf("CSV lacks %q:\n%s", want, csv)
		}
	}
	for _, c := range []struct {
		task, key, label string
		scale            float64
	}{
		{"sst2", "accuracy", "accuracy (%)", 100},
		{"pets", "accuracy", "accuracy (%)", 100},
		{"classification", "accuracy", "accuracy (%)", 100},
		{"squad", "f1", "F1", 1},
		{"xsum", "rougeL", "ROUGE-L", 1},
		{"generation", "rougeL", "ROUGE-L", 1},
		{"other", "", "", 1},
	} {
		if key, label, scale := TaskMetric(c.task); key != c.key || label != c.label || scale != c.scale {
			t.Errorf("TaskMetric(%s) = %s, %s, %g; want %s, %s, %g", c.task, key, label, scale, c.key, c.label, c.scale)
		}
	}
}

func TestGroupedPairs(t *testing.T) {
	rep := &Report{Experiments: []Experiment{
		{Name: "squad_lora", Runs: []sweep.Run{run("meazo", false, 1e-3, 0, 1, false)}},
		{Name: "squad_lora_grouped", Runs: []sweep.Run{run("meazo", true, 1e-3, 0, 1, false)}},
		{Name: "empty"},
	}}
	pairs := rep.GroupedPairs()
	if len(pairs) != 1 || pairs[0].Name != "squad_lora_vs_grouped" || len(pairs[0].Runs) != 2 {
		t.Errorf("GroupedPairs = %+v", pairs)
	}
}

// TestFigureSets checks which figures All and ExperimentFigures make, and
// under which file names.
func TestFigureSets(t *testing.T) {
	root := t.TempDir()
	var runs []sweep.Run
	for i, r := range []sweep.Run{
		run("meazo", false, 1e-3, 0, 1.0, false), run("meazo", false, 1e-4, 0, 1.2, false),
		run("meazo", true, 1e-4, 0, 1.1, false), run("zo-sgd", false, 1e-4, 0, 1.3, true),
	} {
		r.Dir = filepath.Join(root, string(rune('a'+i)))
		r.StepsDone = 1 // as its metrics.jsonl below
		os.MkdirAll(r.Dir, 0o755)
		v := `null`
		if r.Optimizer == "meazo" {
			v = `[0.1]`
		}
		lines := `{"kind":"train","step":1,"loss":2,"groups":[-1],"v":` + v + "}\n" + `{"kind":"val","step":1,"val_loss":1.5}` + "\n"
		if err := os.WriteFile(filepath.Join(r.Dir, "metrics.jsonl"), []byte(lines), 0o644); err != nil {
			t.Fatal(err)
		}
		runs = append(runs, r)
	}
	names := func(figs []Figure) string {
		var s []string
		for _, f := range figs {
			s = append(s, f.File)
		}
		return strings.Join(s, " ")
	}
	figs, err := All(runs, 0, func(w string) { t.Log(w) })
	if want := "train_loss.svg val_loss.svg robustness_best.svg robustness_last.svg vt_meazo.svg vt_meazo_grouped.svg"; err != nil || names(figs) != want {
		t.Errorf("All: %s, %v; want %s", names(figs), err, want)
	}
	if figs, err = All(runs[3:], 0, func(w string) { t.Log(w) }); err != nil || names(figs) != "train_loss.svg val_loss.svg" {
		t.Errorf("All of one ZO-SGD run: %s, %v", names(figs), err)
	}
	var warnings []string
	figs, err = ExperimentFigures(Experiment{Name: "e", Runs: runs[3:]}, 0, func(w string) { warnings = append(warnings, w) })
	if err != nil || names(figs) != "train_loss.svg val_loss.svg" || len(warnings) != 1 || !strings.HasPrefix(warnings[0], "e: no robustness figure: ") {
		t.Errorf("ExperimentFigures: %s, %v, warnings %q", names(figs), err, warnings)
	}
	// A run whose metrics.jsonl holds no steps draws nothing, and says so.
	os.WriteFile(filepath.Join(runs[3].Dir, "metrics.jsonl"), nil, 0o644)
	warnings = nil
	if _, err := Curves(runs[3:], 0, func(w string) { warnings = append(warnings, w) }); err != nil || len(warnings) != 1 || !strings.Contains(warnings[0], "no training steps") {
		t.Errorf("empty metrics.jsonl: %v, warnings %q", err, warnings)
	}
	// A damaged metrics.jsonl leaves its run out of the curves, warned and
	// noted; the others are drawn. With no run left, there is nothing to draw.
	os.WriteFile(filepath.Join(runs[0].Dir, "metrics.jsonl"), []byte(`{"kind":"train","step":1,"loss":2}`+"\n\x00\x00\x00\n"+`{"kind":"train","step":3,"loss":2}`+"\n"), 0o644)
	warnings = nil
	figs, err = Curves([]sweep.Run{runs[0], runs[2]}, 0, func(w string) { warnings = append(warnings, w) })
	if err != nil || len(figs) != 2 || len(warnings) != 1 || !strings.Contains(warnings[0], runs[0].Dir+"/metrics.jsonl line 2") {
		t.Fatalf("a damaged metrics.jsonl: %v, warnings %q", err, warnings)
	}
	train := figs[0].Figure
	if len(train.Series) != 1 || !strings.Contains(train.Series[0].Name, "(1 seed, ") || !strings.Contains(train.Note, "Left out, their metrics.jsonl unreadable: "+runs[0].Dir+".") {
		t.Errorf("a damaged metrics.jsonl: series %d (%q), note %q", len(train.Series), train.Series[0].Name, train.Note)
	}
	if _, err := Curves(runs[:1], 0, func(string) {}); err == nil || !strings.Contains(err.Error(), "nothing to draw") {
		t.Errorf("only a damaged metrics.jsonl: %v", err)
	}
	// A log cut off before the steps its summary counts (a crash's last
	// line) is drawn as far as it goes, and the note says so.
	runs[2].StepsDone = 10
	warnings = nil
	figs, err = Curves([]sweep.Run{runs[1], runs[2]}, 0, func(w string) { warnings = append(warnings, w) })
	if err != nil || !strings.Contains(figs[0].Note, "cut off before the steps their summary counts: "+runs[2].Dir+" (to step 1 of 10).") {
		t.Errorf("a cut-off metrics.jsonl: %v, note %q, warnings %q", err, figs[0].Note, warnings)
	}
}

// TestFiguresAroundBadSeeds: a MEAZO seed that diverged at its first step
// (no v logged) neither stops All nor takes the v_t figure from a seed that
// has one; seeds of different lengths are said under the curves.
func TestFiguresAroundBadSeeds(t *testing.T) {
	root := t.TempDir()
	write := func(r sweep.Run, lines string) sweep.Run {
		r.Dir = filepath.Join(root, fmt.Sprintf("%s-%d", r.Optimizer, r.Seed))
		os.MkdirAll(r.Dir, 0o755)
		if err := os.WriteFile(filepath.Join(r.Dir, "metrics.jsonl"), []byte(lines), 0o644); err != nil {
			t.Fatal(err)
		}
		return r
	}
	step := func(n int, v string) string {
		var b strings.Builder
		for s := 1; s <= n; s++ {
			fmt.Fprintf(&b, `{"kind":"train","step":%d,"loss":2,"groups":[0],"v":%s}`+"\n", s, v)
		}
		return b.String()
	}
	dead := run("meazo", false, 1e-3, 0, 1, true)
	dead.StepsDone = 0
	ok := run("meazo", false, 1e-3, 1, 1, false)
	short := run("zo-sgd", false, 1e-3, 0, 1, false)
	short.StepsDone = 4
	runs := []sweep.Run{write(dead, ""), write(ok, step(10, "[0.1]")), write(short, step(4, "null")), write(run("zo-sgd", false, 1e-3, 1, 1, false), step(10, "null"))}
	if vt := VTRuns(runs); len(vt) != 1 || vt[0].Seed != 1 {
		t.Errorf("VTRuns = %+v, want MEAZO's seed 1 (seed 0 diverged)", vt)
	}
	var warnings []string
	figs, err := All(runs, 1, func(w string) { warnings = append(warnings, w) })
	if err != nil || len(figs) != 3 || figs[2].File != "vt_meazo.svg" {
		t.Fatalf("All: %d figures, %v", len(figs), err)
	}
	if !strings.Contains(figs[0].Note, "ZO-SGD: seeds ran 4 to 10 steps") {
		t.Errorf("curves' note lacks the seeds' lengths: %q (warnings %q)", figs[0].Note, warnings)
	}
	// v values a log axis cannot show are said; none to show is an error.
	zero := write(run("meazo", false, 1e-3, 5, 1, false), step(3, "[0]"))
	if _, err := VT(zero, func(string) {}); err == nil || !strings.Contains(err.Error(), "no v value is positive and finite (3 values)") {
		t.Errorf("v all 0: %v", err)
	}
	some := write(run("meazo", false, 1e-3, 6, 1, false), step(3, "[0.1]")+`{"kind":"train","step":4,"loss":2,"groups":[0],"v":[0]}`+"\n")
	if fig, err := VT(some, func(string) {}); err != nil || !strings.Contains(fig.Note, "1 of 4 v values are 0, negative or not finite") {
		t.Errorf("one v of 0: %v", err)
	}
	// An empty v list first, then v (found by fuzzing: an index panic).
	empty := write(run("meazo", false, 1e-3, 7, 1, false), `{"kind":"train","step":1,"loss":2,"v":[]}`+"\n"+`{"kind":"train","step":2,"loss":2,"groups":[0],"v":[1]}`+"\n")
	if _, err := VT(empty, func(string) {}); err == nil || !strings.Contains(err.Error(), "step 1: 0 groups but 0 v values") {
		t.Errorf("empty v: %v", err)
	}
	// With no MEAZO seed that has v, All still writes the other figures.
	warnings = nil
	figs, err = All(runs[:1], 1, func(w string) { warnings = append(warnings, w) })
	if err != nil || len(figs) != 2 || len(warnings) == 0 || !strings.Contains(warnings[len(warnings)-1], "no vt_meazo.svg") {
		t.Errorf("All without v: %d figures, %v, warnings %q", len(figs), err, warnings)
	}
}

// TestReportCountsWaitingRuns: a sweep's runs that have not run yet are
// listed one by one up to a few, then counted in one line (thousands before
// a paper study's stage 2); runs that need a look are always listed.
func TestReportCountsWaitingRuns(t *testing.T) {
	var many []missingRun
	for i := range 7 {
		status := "new"
		if i >= 5 {
			status = "queued"
		}
		many = append(many, missingRun{fmt.Sprintf("out/e_meazo/lr=1e-%d_seed=0", i+1), status, ""})
	}
	many = append(many, missingRun{"out/e_meazo/lr=1_seed=0", "failed", ""})
	rep := &Report{cells: []cell{
		{sweep: "e_meazo", exp: "e", optimizer: "meazo", seeds: 1, missing: many},
		{exp: "e", optimizer: "zo-sgd", seeds: 1, missing: many[:2]},
	}}
	md := rep.Markdown()
	for _, want := range []string{"## Missing (10)", "- e_meazo: 5 new and 2 queued runs, not run yet", "- out/e_meazo/lr=1_seed=0 (failed)",
		"- out/e_meazo/lr=1e-1_seed=0 (new)\n- out/e_meazo/lr=1e-2_seed=0 (new)\n"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	if strings.Count(md, "lr=1e-1_seed=0") != 1 {
		t.Errorf("a counted run is listed too:\n%s", md)
	}
}

// TestVariantFigures: the variants of one optimizer are separate methods in
// the figures, each labelled with its variant and in a colour of its own;
// MEAZO's v_t figure of each variant has a file of its own.
func TestVariantFigures(t *testing.T) {
	var runs []sweep.Run
	for _, v := range []string{"β1 = 0", "β1 = 0.9"} {
		for _, lr := range []float64{1e-4, 1e-3} {
			r := run("zo-adam", false, lr, 0, 1+lr, false)
			r.Variant = v
			runs = append(runs, r)
		}
	}
	runs = append(runs, run("meazo", false, 1e-4, 0, 1, false), run("meazo", false, 1e-3, 0, 1.1, false))
	figs, err := Robustness(runs)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	colors := map[string]bool{}
	for _, s := range figs[0].Series {
		names = append(names, s.Name)
		colors[s.Color] = true
	}
	if want := []string{"MEAZO, η*=1e-4", "ZO-Adam (β1 = 0), η*=1e-4", "ZO-Adam (β1 = 0.9), η*=1e-4"}; !slices.Equal(names, want) {
		t.Errorf("series %q, want %q", names, want)
	}
	if len(colors) != 3 || colors[""] {
		t.Errorf("colours %v: want three distinct ones", colors)
	}
	for m, want := range map[sweep.Method]string{
		{Optimizer: "meazo"}:                                     "vt_meazo.svg",
		{Optimizer: "meazo", Grouped: true}:                      "vt_meazo_grouped.svg",
		{Optimizer: "meazo", Variant: "sphere"}:                  "vt_meazo_sphere.svg",
		{Optimizer: "meazo", Grouped: true, Variant: "β1 = 0.9"}: "vt_meazo_grouped_-1-=-0.9.svg",
	} {
		if got := VTFile(m); got != want {
			t.Errorf("VTFile(%+v) = %q, want %q", m, got, want)
		}
	}
}

// TestReportMarks: in a row of losses the lowest is bold, in a row of a
// metric the highest (ties both); one value alone is not marked; an η*
// whose coarse stage ended at an end of the grid is flagged, with a line
// under the tables.
func TestReportMarks(t *testing.T) {
	loss := func(o string, mean float64, edge string) cell {
		return cell{exp: "loss_row", optimizer: o, adapter: "lora", eta: 0.05, metric: lossMetric, mean: mean, std: math.NaN(), n: 1, seeds: 1,
			edge: edge, coarseEta: 0.05}
	}
	acc := func(o string, mean float64) cell {
		return cell{exp: "acc_row", optimizer: o, adapter: "lora", eta: 0.02, metric: "accuracy (%) of the best adapter", mean: mean, std: math.NaN(), n: 1, seeds: 1}
	}
	rep := &Report{cells: []cell{
		loss("meazo", 4.5, "the largest"), loss("zo-sgd", 4.7, ""), loss("zo-adam", 4.5, ""),
		acc("meazo", 61.5), acc("zo-sgd", 70),
		{exp: "alone", optimizer: "meazo", adapter: "prompt", eta: 0.01, metric: "F1 of the best adapter", mean: 50, std: math.NaN(), n: 1, seeds: 1},
	}}
	md := rep.Markdown()
	for _, want := range []string{
		"| loss_row | best validation loss, lower is better | **4.5000**<br>η*=0.05 ⚠ | 4.7000<br>η*=0.05 | **4.5000**<br>η*=0.05 |",
		"| acc_row | accuracy (%) of the best adapter, higher is better | 61.50<br>η*=0.02 | **70.00**<br>η*=0.02 |",
		"| alone | F1 of the best adapter, higher is better | 50.00<br>η*=0.01 |",
		"- loss_row, MEAZO: the coarse η* 0.05 is the largest rate of its grid",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	if strings.Count(md, "⚠") != 3 { // the legend, the cell, the note
		t.Errorf("flags:\n%s", md)
	}
}

// TestCoarseEdge: the coarse stage's η* (over the coarse rates only) at an
// end of the grid is named; inside it, or with no grid, it is not.
func TestCoarseEdge(t *testing.T) {
	coarse := []float64{1e-2, 2e-2, 5e-2}
	stats := func(scores map[float64]float64) []sweep.RateStats {
		var out []sweep.RateStats
		for _, lr := range []float64{1e-2, 2e-2, 3e-2, 4e-2, 5e-2} {
			if sc, ok := scores[lr]; ok {
				out = append(out, sweep.RateStats{LR: lr, Score: sc, Runs: []sweep.Run{{}}})
			}
		}
		return out
	}
	for _, tc := range []struct {
		scores map[float64]float64
		want   string
	}{
		{map[float64]float64{1e-2: 3, 2e-2: 2, 5e-2: 1, 4e-2: 0.5}, "the largest"}, // the fine rate 0.04 won, but stage 1 ended at 0.05
		{map[float64]float64{1e-2: 1, 2e-2: 2, 5e-2: 3}, "the smallest"},
		{map[float64]float64{1e-2: 3, 2e-2: 1, 5e-2: 2, 3e-2: 0.5}, ""},
	} {
		if got, _ := coarseEdge(stats(tc.scores), coarse); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.scores, got, tc.want)
		}
	}
	if got, _ := coarseEdge(stats(map[float64]float64{1e-2: 1}), []float64{1e-2}); got != "" {
		t.Errorf("a one-rate grid: %q", got)
	}
}

// TestTestFigures: the test metric's figures draw, per method at its η*,
// the base model at step 0 and the best adapter at its mean best step
// (mean over seeds), with chance for accuracy; against η/η* when a method
// ran at several rates; nothing without a test metric.
func TestTestFigures(t *testing.T) {
	run := func(opt string, lr float64, seed uint64, best, base float64, bestStep int) sweep.Run {
		r := sweep.Run{Dir: fmt.Sprintf("out/%s/lr=%g_seed=%d", opt, lr, seed)}
		r.Model, r.Task, r.Adapter, r.Optimizer, r.LR, r.Seed, r.BestStep = "m", "sst2", "lora", opt, lr, seed, bestStep
		v := 1.0 + lr // the selection: the smaller rate wins
		r.BestValLoss, r.LastValLoss = &v, &v
		r.Test = map[string]map[string]float64{"best": {"accuracy": best}, "base": {"accuracy": base}}
		return r
	}
	runs := []sweep.Run{
		run("meazo", 0.01, 0, 0.90, 0.365, 500), run("meazo", 0.01, 1, 0.94, 0.365, 600),
		run("zo-sgd", 0.01, 0, 0.70, 0.365, 600),
	}
	figs, err := TestFigures(runs)
	if err != nil || len(figs) != 1 || figs[0].File != "test_accuracy.svg" {
		t.Fatalf("one rate each: %v, %d figures", err, len(figs))
	}
	s := figs[0].Series[0]
	if s.Name != "MEAZO (2 seeds, η=0.01)" || !reflect.DeepEqual(s.X, []float64{0, 550}) || math.Abs(s.Y[0]-36.5) > 1e-9 || math.Abs(s.Y[1]-92) > 1e-9 {
		t.Errorf("MEAZO: %q at %v: %v", s.Name, s.X, s.Y)
	}
	if last := figs[0].Series[len(figs[0].Series)-1]; last.Name != "chance (50 %)" || last.Y[0] != 50 {
		t.Errorf("no chance line: %+v", last)
	}
	// Pets: chance is one class in 37.
	pets := slices.Clone(runs)
	for i := range pets {
		pets[i].Task = "pets"
	}
	if figs, err := TestFigures(pets); err != nil || len(figs) != 1 || figs[0].Series[len(figs[0].Series)-1].Name != "chance (2.7 %)" {
		t.Errorf("pets: %v, %+v", err, figs)
	}
	if !strings.Contains(figs[0].Title, "best adapter") || !strings.Contains(figs[0].Note, "best adapter") {
		t.Errorf("LoRA: %q / %q", figs[0].Title, figs[0].Note)
	}
	// A full-parameter study scores its best weights: no adapter.
	full := slices.Clone(runs)
	for i := range full {
		full[i].Adapter = "full"
	}
	if figs, err := TestFigures(full); err != nil || len(figs) != 1 {
		t.Errorf("full: %v, %d figures", err, len(figs))
	} else if f := figs[0]; strings.Contains(f.Title+f.XLabel+f.Note, "adapter") || !strings.Contains(f.Title, "best weights") || !strings.Contains(f.XLabel, "best weights") {
		t.Errorf("full-parameter: %q / %q / %q", f.Title, f.XLabel, f.Note)
	}
	// Several rates: the robustness figure of the test metric too, each
	// rate's mean against η/η*.
	runs = append(runs, run("meazo", 0.02, 0, 0.50, 0.365, 100), run("meazo", 0.02, 1, 0.60, 0.365, 100))
	if figs, err = TestFigures(runs); err != nil || len(figs) != 2 || figs[1].File != "robustness_test.svg" {
		t.Fatalf("several rates: %v, %d figures", err, len(figs))
	}
	if s := figs[1].Series[0]; !reflect.DeepEqual(s.X, []float64{1, 2}) || math.Abs(s.Y[0]-92) > 1e-9 || math.Abs(s.Y[1]-55) > 1e-9 {
		t.Errorf("robustness: %v %v", s.X, s.Y)
	}
	// No test metric (eval.skip): no figure.
	for i := range runs {
		runs[i].Test = nil
	}
	if figs, err := TestFigures(runs); err != nil || len(figs) != 0 {
		t.Errorf("without test metrics: %v, %d figures", err, len(figs))
	}
}

// TestAdapterKindTitles: each table's title names its adapter kind in
// words (a full-parameter study's table read "Table 1: full").
func TestAdapterKindTitles(t *testing.T) {
	for _, c := range []struct {
		adapter string
		grouped bool
		want    string
	}{
		{"lora", false, "LoRA"}, {"lora", true, "LoRA, grouped (one group per layer)"}, {"prompt", false, "prompt tuning"},
		{"full", false, "full-parameter (every weight)"}, {"full", true, "full-parameter, grouped (one group per layer)"},
		{"", false, "no results yet"},
	} {
		if got := adapterKind(cell{adapter: c.adapter, grouped: c.grouped}); got != c.want {
			t.Errorf("%q grouped %v: %q, want %q", c.adapter, c.grouped, got, c.want)
		}
	}
}

// TestLoadRefusesARunTwice: two run directories of one method, rate and
// seed (a sweep and a copy of it, or two attempts at one sweep, named by a
// glob) would be averaged as two seeds, shrinking the bands; Load refuses
// them naming both. The same directory named twice (a sweep and one of its
// runs, or the sweep twice) counts once.
func TestLoadRefusesARunTwice(t *testing.T) {
	root := t.TempDir()
	mk := func(dir, opt string, lr float64, seed int) {
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, "summary.json"), fmt.Appendf(nil, `{"optimizer":%q,"lr":%g,"seed":%d,"steps":1,"steps_done":1,"best_val_loss":1}`, opt, lr, seed), 0o644)
	}
	mk(filepath.Join(root, "sw", "lr=1e-4_seed=0"), "meazo", 1e-4, 0)
	mk(filepath.Join(root, "sw", "lr=1e-4_seed=1"), "meazo", 1e-4, 1)
	mk(filepath.Join(root, "old", "lr=1e-4_seed=1"), "meazo", 1e-4, 1)
	mk(filepath.Join(root, "more", "lr=1e-4_seed=2"), "meazo", 1e-4, 2)
	mk(filepath.Join(root, "sgd", "lr=1e-4_seed=0"), "zo-sgd", 1e-4, 0)
	quiet := func(string) {}
	runs, err := Load([]string{filepath.Join(root, "sw"), filepath.Join(root, "sw", "lr=1e-4_seed=0"), filepath.Join(root, "sw") + "/",
		filepath.Join(root, "more"), filepath.Join(root, "sgd")}, quiet)
	if err != nil || len(runs) != 4 {
		t.Fatalf("a directory named twice, other seeds and another optimizer: %d runs, %v; want 4 runs", len(runs), err)
	}
	_, err = Load([]string{filepath.Join(root, "sw"), filepath.Join(root, "old")}, quiet)
	for _, want := range []string{filepath.Join(root, "sw", "lr=1e-4_seed=1"), filepath.Join(root, "old", "lr=1e-4_seed=1"), "seed 1"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("two runs of MEAZO at 1e-4, seed 1: %v, want an error naming %q", err, want)
		}
	}
}

// results.csv stays 14 columns whatever the model's name (a path with a
// comma or a quote): every text field is quoted as CSV quotes.
func TestCSVQuotesTextFields(t *testing.T) {
	rep := &Report{cells: []cell{{sweep: "e_meazo", exp: "e", optimizer: "meazo", model: `/data/llama,3 "1B"`, task: "sst2", adapter: "lora",
		eta: 0.05, metric: "accuracy (%) of the best adapter", mean: 57.25, std: 3.18, n: 2, seeds: 2}}}
	rows, err := csv.NewReader(strings.NewReader(rep.CSV())).ReadAll()
	if err != nil {
		t.Fatalf("results.csv does not parse: %v\n%s", err, rep.CSV())
	}
	if len(rows[1]) != len(rows[0]) {
		t.Fatalf("row has %d fields, header %d:\n%s", len(rows[1]), len(rows[0]), rep.CSV())
	}
	if rows[1][1] != `/data/llama,3 "1B"` || rows[1][9] != "57.25" {
		t.Errorf("model %q mean %q", rows[1][1], rows[1][9])
	}
}

// A sweep directory without sweep.json (still running): a rate one of whose
// seeds has not finished must not become η* on the seeds that did.
func TestLoadUnfinishedSeedBarsItsRate(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, lr float64, seed int, best float64, done int) {
		d := filepath.Join(dir, name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		status := "done"
		if done < 20 {
			status = "interrupted"
		}
		b, _ := json.Marshal(map[string]any{"optimizer": "meazo", "lr": lr, "seed": seed, "model": "m", "task": "sst2", "adapter": "lora",
			"steps": 20, "steps_done": done, "status": status, "diverged": false, "best_val_loss": best, "last_val_loss": best})
		if err := os.WriteFile(filepath.Join(d, "summary.json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("lr=1e-2_seed=0", 0.01, 0, 1, 20)
	write("lr=1e-2_seed=1", 0.01, 1, 9, 10) // interrupted half way
	write("lr=2e-2_seed=0", 0.02, 0, 5, 20)
	write("lr=2e-2_seed=1", 0.02, 1, 5, 20)
	runs, err := Load([]string{dir}, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	_, notes := AtBestRate(runs)
	for m, n := range notes {
		if n != ", η*=0.02 of 2 rates" {
			t.Errorf("%s: %q; want η*=0.02 (0.01 has a seed without a result)", m, n)
		}
	}
}

// A run still training (config.yaml and run.lock, no summary.json yet) is
// named as such, not as "not a run directory".
func TestLoadRunNotEnded(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{rundir.ConfigFile, rundir.LockFile} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Load([]string{dir}, func(string) {}); err == nil || !strings.Contains(err.Error(), "a run that has not ended") {
		t.Errorf("got %v", err)
	}
}

// TestVTFilesUnique: two variants whose labels spell the same file name
// ("β₁ = 0" and "β₂ = 0": vt_meazo_---=-0.svg) get two names; the second
// figure replaced the first.
func TestVTFilesUnique(t *testing.T) {
	var runs []sweep.Run
	for _, label := range []string{"β₁ = 0", "β₂ = 0", "", "a b", "a-b"} {
		r := run("meazo", false, 1e-3, 0, 1, false)
		r.Variant = label
		runs = append(runs, r)
	}
	got := vtFiles(runs)
	want := []string{"vt_meazo_---=-0.svg", "vt_meazo_---=-0_2.svg", "vt_meazo.svg", "vt_meazo_a-b.svg", "vt_meazo_a-b_2.svg"}
	if !slices.Equal(got, want) {
		t.Errorf("vtFiles = %q, want %q", got, want)
	}
}

// TestTestFiguresVariantColours: a study's variants of one optimizer take
// colours of their own in the test-metric figures, as in the curves (both
// were ZO-Adam's green).
func TestTestFiguresVariantColours(t *testing.T) {
	var runs []sweep.Run
	for _, v := range []string{"β1 = 0", "β1 = 0.9"} {
		for _, lr := range []float64{1e-3, 1e-2} {
			for seed := uint64(0); seed < 2; seed++ {
				r := run("zo-adam", false, lr, seed, 1+lr, false)
				r.Variant, r.Task = v, "sst2"
				r.Test = map[string]map[string]float64{"best": {"accuracy": 0.9}, "base": {"accuracy": 0.5}}
				runs = append(runs, r)
			}
		}
	}
	figs, err := TestFigures(runs)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range figs {
		colors := map[string]bool{}
		for _, s := range f.Series {
			colors[s.Color] = true
		}
		if len(f.Series) < 2 || len(colors) != len(f.Series) {
			t.Errorf("%s: %d series in %d colours", f.File, len(f.Series), len(colors))
		}
	}
}

// TestRunningMeanNoWindow: a window of 1 or less is a copy, as documented
// (w ≤ 0 gave the running mean of everything so far).
func TestRunningMeanNoWindow(t *testing.T) {
	for _, w := range []int{-3, 0, 1} {
		if got := RunningMean([]float64{1, 3, 5, 7}, w); !slices.Equal(got, []float64{1, 3, 5, 7}) {
			t.Errorf("RunningMean(w=%d) = %v", w, got)
		}
	}
}
