package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/train"
)

// TestStudyReport writes a small study's runs (one missing) and checks the
// tables, the CSV, the figures and the list of missing runs.
func TestStudyReport(t *testing.T) {
	dir := t.TempDir()
	study := filepath.Join(dir, "study.yaml")
	body := fmt.Sprintf("out: %s/out\nseeds: [0, 1]\ncoarse: [1e-3, 1e-2]\nfine: false\nexperiments:\n  - {name: squad_lora, config: c.yaml, optimizers: [meazo, zo-sgd]}\n", dir)
	if err := os.WriteFile(study, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, opt := range []string{"meazo", "zo-sgd"} {
		for _, lr := range []string{"1e-3", "0.01"} {
			for seed := uint64(0); seed < 2; seed++ {
				if opt == "meazo" && lr == "0.01" && seed == 1 {
					continue // missing
				}
				var v float64
				fmt.Sscan(lr, &v)
				run := filepath.Join(dir, "out", "squad_lora_"+opt, fmt.Sprintf("lr=%s_seed=%d", lr, seed))
				best := 1.0
				if lr == "0.01" {
					best = 0.9
				}
				fakeRun{opt: opt, lr: v, seed: seed, steps: 20, best: best + float64(seed)/100, last: best + 0.1}.write(t, run)
				// add the test metrics meazo-train writes
				p := filepath.Join(run, "summary.json")
				b, _ := os.ReadFile(p)
				var s map[string]any
				json.Unmarshal(b, &s)
				s["test"] = map[string]any{"best": map[string]float64{"f1": 70 + float64(seed)}}
				s["status"] = "done"
				b, _ = json.Marshal(s)
				os.WriteFile(p, b, 0o644)
			}
		}
	}
	// A run of a rate the grid no longer holds (an earlier study's), better
	// than every counted one: listed as not counted, and in no cell.
	stray := filepath.Join(dir, "out", "squad_lora_zo-sgd", "lr=5e-2_seed=0")
	fakeRun{opt: "zo-sgd", lr: 0.05, seed: 0, steps: 20, best: 0.1, last: 0.2}.write(t, stray)
	out := filepath.Join(dir, "report")
	stdout, err := runCmd(t, "study", "--out", out, "--png=false", study)
	if err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(filepath.Join(out, "results.md"))
	// MEAZO's stage 1 is not settled (a run missing at 0.01): its η* so far
	// is no coarse η*, so it is not flagged at the grid's end; ZO-SGD's is.
	if strings.Contains(string(md), "MEAZO: the coarse η*") {
		t.Errorf("results.md flags MEAZO's unsettled stage 1 at the grid's end:\n%s", md)
	}
	for _, want := range []string{"## Table 1: LoRA", "| squad_lora | F1 of the best adapter, higher is better | **70.50 ± 0.71**<br>η*=1e-3 | **70.50 ± 0.71**<br>η*=0.01 ⚠ |",
		"- squad_lora, ZO-SGD: the coarse η* 0.01 is the largest rate of its grid",
		"## Missing (1)", "squad_lora_meazo/lr=0.01_seed=1 (new)", "## Not counted (1)", "- " + stray} {
		if !strings.Contains(string(md), want) {
			t.Errorf("results.md lacks %q:\n%s", want, md)
		}
	}
	if !strings.Contains(stdout, "Table 1") {
		t.Errorf("stdout: %s", stdout)
	}
	csv, _ := os.ReadFile(filepath.Join(out, "results.csv"))
	if !strings.Contains(string(csv), `squad_lora,models/Llama-3.2-1B,squad,lora,false,meazo,,1e-3,"F1 of the best adapter",70.5,0.7071067811865476,2,2,1`) {
		t.Errorf("results.csv:\n%s", csv)
	}
	for _, f := range []string{"train_loss.svg", "val_loss.svg", "robustness_best.svg", "robustness_last.svg", "test_f1.svg", "robustness_test.svg"} {
		checkSVG(t, filepath.Join(out, "squad_lora", f))
	}
	// The figures' η* is the table's: MEAZO's 0.01 lacks a seed, so its
	// curves are at 1e-3 although the seed it has at 0.01 did better.
	val, _ := os.ReadFile(filepath.Join(out, "squad_lora", "val_loss.svg"))
	if !strings.Contains(string(val), "MEAZO (2 seeds, η*=1e-3 of 2 rates)") {
		t.Errorf("val_loss.svg does not draw MEAZO at the table's η* = 1e-3")
	}

	// A run whose metrics.jsonl cannot be read is left out of the curves,
	// which say so; the report is written.
	os.Remove(filepath.Join(dir, "out", "squad_lora_zo-sgd", "lr=0.01_seed=0", "metrics.jsonl"))
	if _, err := runCmd(t, "study", "--out", out, "--png=false", study); err != nil {
		t.Fatalf("a missing metrics.jsonl: %v", err)
	}
	if val, _ := os.ReadFile(filepath.Join(out, "squad_lora", "val_loss.svg")); !strings.Contains(string(val), "Left out, their metrics.jsonl unreadable:") {
		t.Errorf("val_loss.svg does not say that a run was left out")
	}
	// A report with nothing to draw stops before it writes anything: the
	// old report stays whole, and no new directory is made.
	ms, _ := filepath.Glob(filepath.Join(dir, "out", "*", "*", "metrics.jsonl"))
	for _, m := range ms {
		os.Remove(m)
	}
	os.WriteFile(filepath.Join(out, "results.md"), []byte("old"), 0o644)
	if _, err := runCmd(t, "study", "--out", out, "--png=false", study); err == nil || !strings.Contains(err.Error(), "metrics.jsonl") {
		t.Fatalf("no metrics.jsonl: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(out, "results.md")); string(b) != "old" {
		t.Errorf("a failed report rewrote results.md")
	}
	fresh := filepath.Join(dir, "fresh")
	if _, err := runCmd(t, "study", "--out", fresh, "--png=false", study); err == nil {
		t.Fatal("no metrics.jsonl: no error")
	}
	if _, err := os.Stat(fresh); !os.IsNotExist(err) {
		t.Errorf("a failed report made %s (%v)", fresh, err)
	}
}

// TestStudyReportInProgress: a rate none of whose runs has run yet is not a
// rate of the figures (a cross would call it a failure), while the table
// lists its runs as missing.
func TestStudyReportInProgress(t *testing.T) {
	dir := t.TempDir()
	study := filepath.Join(dir, "study.yaml")
	body := fmt.Sprintf("out: %s/out\nseeds: [0, 1]\ncoarse: [1e-3, 1e-2, 1e-1]\nfine: false\nexperiments:\n  - {name: squad_lora, config: c.yaml, optimizers: [meazo]}\n", dir)
	if err := os.WriteFile(study, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, lr := range []float64{1e-3, 1e-2} {
		for seed := uint64(0); seed < 2; seed++ {
			run := filepath.Join(dir, "out", "squad_lora_meazo", fmt.Sprintf("lr=%g_seed=%d", lr, seed))
			fakeRun{opt: "meazo", lr: lr, seed: seed, steps: 20, best: 1 + lr + float64(seed)/100, last: 1.1}.write(t, run)
		}
	}
	out := filepath.Join(dir, "report")
	if _, err := runCmd(t, "study", "--out", out, "--png=false", study); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(out, "squad_lora", "val_loss.svg")); !strings.Contains(string(b), "of 2 rates") {
		t.Errorf("val_loss.svg counts the rate not run yet:\n%s", b)
	}
	if b, _ := os.ReadFile(filepath.Join(out, "squad_lora", "robustness_best.svg")); strings.Contains(string(b), ">1e2<") {
		t.Errorf("robustness_best.svg draws the rate not run yet (η/η* = 100):\n%s", b)
	}
	md, _ := os.ReadFile(filepath.Join(out, "results.md"))
	if !strings.Contains(string(md), "lr=1e-1_seed=0 (new)") {
		t.Errorf("results.md does not list the runs not run yet:\n%s", md)
	}
	// η* so far is the smallest rate, but stage 1 is not settled: no coarse
	// η* yet, so no "at an end of the coarse grid, extend coarse".
	if strings.Contains(string(md), "η*=1e-3 ⚠") || strings.Contains(string(md), "⚠ η* at an end") || !strings.Contains(string(md), "η*=1e-3 |") {
		t.Errorf("results.md flags the edge of a stage 1 still under way:\n%s", md)
	}
}

// TestStudyReportProvisional: the figures of a study in progress say that
// they are provisional, and a rate crossed because a seed has no result yet
// is not called diverged or failed; once every run is in, neither is said.
func TestStudyReportProvisional(t *testing.T) {
	dir := t.TempDir()
	study := filepath.Join(dir, "study.yaml")
	body := fmt.Sprintf("out: %s/out\nseeds: [0, 1]\ncoarse: [1e-3, 1e-2]\nfine: false\nexperiments:\n  - {name: squad_lora, config: c.yaml, optimizers: [meazo]}\n", dir)
	if err := os.WriteFile(study, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	write := func(lr float64, seed uint64) {
		run := filepath.Join(dir, "out", "squad_lora_meazo", fmt.Sprintf("lr=%g_seed=%d", lr, seed))
		fakeRun{opt: "meazo", lr: lr, seed: seed, steps: 20, best: 1 + lr + float64(seed)/100, last: 1.1}.write(t, run)
	}
	write(1e-3, 0)
	write(1e-3, 1)
	write(1e-2, 0) // seed 1 of 1e-2 has not run yet
	for _, complete := range []bool{false, true} {
		if complete {
			write(1e-2, 1)
		}
		out := filepath.Join(dir, fmt.Sprintf("report-%v", complete))
		if _, err := runCmd(t, "study", "--out", out, "--png=false", study); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"robustness_best.svg", "val_loss.svg", "train_loss.svg"} {
			b, _ := os.ReadFile(filepath.Join(out, "squad_lora", f))
			if got := strings.Contains(string(b), "Provisional: squad_lora_meazo not complete"); got == complete {
				t.Errorf("complete %v: %s says provisional: %v", complete, f, got)
			}
		}
		b, _ := os.ReadFile(filepath.Join(out, "squad_lora", "robustness_best.svg"))
		if got := strings.Contains(string(b), "diverged, failed or has no result yet"); got == complete {
			t.Errorf("complete %v: robustness_best.svg's cross is for a seed without a result yet: %v", complete, got)
		}
	}
}

// TestStudyReportRefusesEditedStudy: a study edited after its runs started
// (a set line changed) is not reported as if the runs were its own: the
// report says which run and which setting, as meazo-sweep run does, and
// writes nothing; put back as it was, it is reported.
func TestStudyReportRefusesEditedStudy(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(cfg, []byte("model: {path: m}\ntask: {name: sst2, train: t.tsv}\ntrain: {steps: 20}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	study := filepath.Join(dir, "study.yaml")
	write := func(steps int) {
		body := fmt.Sprintf("out: %s/out\nseeds: [0]\ncoarse: [1e-2]\nfine: false\nset: [train.steps=%d]\nexperiments:\n  - {name: e, config: %s, optimizers: [meazo]}\n", dir, steps, cfg)
		if err := os.WriteFile(study, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := filepath.Join(dir, "out", "e_meazo", "lr=1e-2_seed=0")
	fakeRun{opt: "meazo", lr: 0.01, seed: 0, steps: 20, best: 1, last: 1.1}.write(t, run)
	c, err := train.Load(cfg, []string{"train.steps=20", "optimizer.name=meazo", "optimizer.lr=1e-2", "train.seed=0", "output.dir=" + run})
	if err != nil {
		t.Fatal(err)
	}
	y, _ := c.YAML()
	if err := os.WriteFile(filepath.Join(run, "config.yaml"), y, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "report")
	write(30)
	_, err = runCmd(t, "study", "--out", out, "--png=false", study)
	if err == nil || !strings.Contains(err.Error(), "the run "+run+" was started with other settings than the study gives it now (train.steps 20 -> 30; run -> study)") {
		t.Fatalf("edited study: %v, want the run and the setting named", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("the refused report wrote %s (%v)", out, err)
	}
	write(20)
	if _, err := runCmd(t, "study", "--out", out, "--png=false", study); err != nil {
		t.Fatalf("the study as its runs started: %v", err)
	}
}
