package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/sweep"
)

// The test binary doubles as meazo-plot and as a fake meazo-train for
// scripts/sweep.sh, chosen by MEAZO_PLOT_TEST_ROLE.
func TestMain(m *testing.M) {
	switch os.Getenv("MEAZO_PLOT_TEST_ROLE") {
	case "plot":
		main()
		os.Exit(0)
	case "trainer":
		if err := fakeTrain(os.Args[1:]); err != nil {
			fmt.Fprintln(os.Stderr, "fake trainer:", err)
			os.Exit(3)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// fakeTrain stands in for meazo-train: it logs its arguments to
// $FAKE_TRAIN_LOG and writes a run directory whose best validation loss is
// (log10 lr + 3.7)² + 1 + seed/100, lowest at lr = 2e-4. Rates ≥ 5e-2 and
// (1e-5, seed 1) diverge. The run named by $FAKE_TRAIN_KILL is "killed"
// (checkpoint written, exit 3) unless resumed.
func fakeTrain(args []string) error {
	log, err := os.OpenFile(os.Getenv("FAKE_TRAIN_LOG"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintln(log, strings.Join(args, " "))
	log.Close()
	sets := map[string]string{}
	var out, resume, config string
	for i := 0; i+1 < len(args); i += 2 {
		switch args[i] {
		case "--config":
			config = args[i+1]
		case "--out":
			out = args[i+1]
		case "--resume":
			resume = args[i+1]
		case "--set":
			k, v, _ := strings.Cut(args[i+1], "=")
			sets[k] = v
		default:
			return fmt.Errorf("unexpected argument %q", args[i])
		}
	}
	if resume != "" { // like meazo-train: the run's own config, nothing else
		if len(args) != 2 {
			return fmt.Errorf("--resume takes no other flags, got %q", args)
		}
		data, err := os.ReadFile(filepath.Join(resume, "config.yaml"))
		if err != nil {
			return err
		}
		if err := json.Unmarshal(data, &sets); err != nil {
			return err
		}
		out = resume
	} else {
		if config == "" || out == "" {
			return fmt.Errorf("missing --config or --out")
		}
		if _, err := os.Stat(filepath.Join(out, "metrics.jsonl")); err == nil {
			return fmt.Errorf("run directory %s already holds a run", out)
		}
		if err := os.MkdirAll(filepath.Join(out, "checkpoint"), 0o755); err != nil {
			return err
		}
		data, _ := json.Marshal(sets)
		os.WriteFile(filepath.Join(out, "config.yaml"), data, 0o644) // JSON is YAML
	}
	lr, err := strconv.ParseFloat(sets["optimizer.lr"], 64)
	if err != nil {
		return err
	}
	seed, _ := strconv.ParseUint(sets["train.seed"], 10, 64)
	steps, _ := strconv.Atoi(sets["train.steps"])
	if filepath.Base(out) == os.Getenv("FAKE_TRAIN_KILL") && resume == "" {
		os.WriteFile(filepath.Join(out, "metrics.jsonl"), []byte(`{"kind":"train","step":1,"loss":1}`+"\n"), 0o644)
		os.WriteFile(filepath.Join(out, "checkpoint", "state.json"), []byte(`{"step":1}`), 0o644)
		return fmt.Errorf("killed")
	}
	f := fakeRun{opt: sets["optimizer.name"], lr: lr, seed: seed, steps: steps, stateBytes: 8}
	f.best = math.Pow(math.Log10(lr)+3.7, 2) + 1 + float64(seed)/100
	f.last = f.best + 0.05
	f.diverged = lr >= 5e-2 || (lr == 1e-5 && seed == 1)
	return f.writeFiles(out)
}

func TestSweepScript(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash not installed")
	}
	script, err := filepath.Abs("../../scripts/sweep.sh")
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	wrapper := func(role string) string {
		path := filepath.Join(tmp, role)
		body := fmt.Sprintf("#!/bin/sh\nMEAZO_PLOT_TEST_ROLE=%s exec %q \"$@\"\n", role, self)
		if err := os.WriteFile(path, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
		return path
	}
	config := filepath.Join(tmp, "exp.yaml")
	os.WriteFile(config, []byte("optimizer:\n  name: meazo\n"), 0o644)
	sweepDir := filepath.Join(tmp, "sweep")
	logPath := filepath.Join(tmp, "calls.log")
	runSweep := func() (string, error) {
		cmd := exec.Command("bash", script, "--config", config, "--optimizer", "meazo", "--out", sweepDir, "--set", "train.steps=7")
		cmd.Env = append(os.Environ(), "MEAZO_TRAIN="+wrapper("trainer"), "MEAZO_PLOT="+wrapper("plot"),
			"FAKE_TRAIN_LOG="+logPath, "FAKE_TRAIN_KILL=lr=1e-4_seed=1")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return out.String(), err
	}
	calls := func() []string {
		data, _ := os.ReadFile(logPath)
		os.Remove(logPath)
		return strings.Split(strings.TrimSpace(string(data)), "\n")
	}

	// 1. The 14th coarse run (1e-4, seed 1) is killed: the sweep stops there.
	out, err := runSweep()
	if err == nil || !strings.Contains(out, "failed for "+filepath.Join(sweepDir, "lr=1e-4_seed=1")) {
		t.Fatalf("killed run: err %v, output:\n%s", err, out)
	}
	if c := calls(); len(c) != 14 {
		t.Fatalf("%d trainer calls before the kill, want 14", len(c))
	}

	// 2. Rerun: the killed run resumes, finished ones are skipped, the rest
	// of the coarse grid (19 runs) and the fine grid (7 rates × 3 seeds) run.
	out, err = runSweep()
	if err != nil {
		t.Fatalf("rerun: %v\n%s", err, out)
	}
	c := calls()
	if len(c) != 1+19+21 {
		t.Fatalf("%d trainer calls on rerun, want 41:\n%s", len(c), strings.Join(c, "\n"))
	}
	if c[0] != "--resume "+filepath.Join(sweepDir, "lr=1e-4_seed=1") {
		t.Errorf("first call does not resume the killed run: %s", c[0])
	}
	for _, call := range c[1:] {
		if !strings.Contains(call, "--set train.steps=7") || !strings.Contains(call, "--set optimizer.name=meazo") || !strings.Contains(call, "--config "+config) {
			t.Errorf("call lacks the config or the pass-through --set: %s", call)
		}
	}
	if !strings.Contains(out, "coarse η* = 0.0001") || !strings.Contains(out, "fine grid: 6e-5 7e-5 8e-5 9e-5 2e-4 3e-4 4e-4") || !strings.Contains(out, "η* = 0.0002") {
		t.Errorf("sweep output:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(sweepDir, "lr=3e-4_seed=2", "summary.json")); err != nil {
		t.Errorf("fine run directory: %v", err)
	}

	// 3. sweep.json: stages, η*, diverged rates.
	data, err := os.ReadFile(filepath.Join(sweepDir, "sweep.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sw sweep.Sweep
	if err := json.Unmarshal(data, &sw); err != nil {
		t.Fatal(err)
	}
	if sw.EtaStar != 2e-4 || sw.CoarseEta == nil || *sw.CoarseEta != 1e-4 || len(sw.Rates) != 18 || len(sw.FineRates) != 7 || sw.Optimizer != "meazo" {
		t.Errorf("sweep.json: η* %g, coarse η* %v, %d rates, fine %v", sw.EtaStar, sw.CoarseEta, len(sw.Rates), sw.FineRates)
	}
	for _, r := range sw.Rates {
		wantDiv := map[float64]int{1e-5: 1, 5e-2: 3, 1e-1: 3}[r.LR]
		if r.DivergedSeeds != wantDiv || (wantDiv > 0) != (r.MeanBestVal == nil) || len(r.Seeds) != 3 {
			t.Errorf("lr %g: %d diverged seeds, mean %v, %d seeds", r.LR, r.DivergedSeeds, r.MeanBestVal, len(r.Seeds))
		}
		// The mean of (log10 2e-4 + 3.7)² + 1 + seed/100 over seeds 0, 1, 2.
		if want := math.Pow(math.Log10(2e-4)+3.7, 2) + 1.01; r.LR == 2e-4 && (r.Stage != "fine" || math.Abs(*r.MeanBestVal-want) > 1e-12) {
			t.Errorf("lr 2e-4: stage %q, mean best %v, want fine and %v", r.Stage, *r.MeanBestVal, want)
		}
	}

	// 4. A third run has nothing to do.
	if out, err = runSweep(); err != nil {
		t.Fatalf("third run: %v\n%s", err, out)
	}
	if data, _ := os.ReadFile(logPath); len(data) != 0 {
		t.Errorf("third run called the trainer:\n%s", data)
	}

	// 5. The robustness figure from the sweep directory.
	plots := filepath.Join(tmp, "plots")
	if _, err := runCmd(t, "robustness", "--out", plots, sweepDir); err != nil {
		t.Fatalf("robustness: %v", err)
	}
	svg := checkSVG(t, filepath.Join(plots, "robustness_best.svg"))
	if !strings.Contains(svg, "MEAZO, η*=2e-4") {
		t.Error("robustness_best.svg lacks the MEAZO series with η* = 2e-4")
	}
}

func TestSweepStatus(t *testing.T) {
	root := t.TempDir()
	mk := func(name string, f *fakeRun, checkpoint bool) string {
		dir := filepath.Join(root, name)
		os.MkdirAll(dir, 0o755)
		if f != nil {
			f.write(t, dir)
		}
		if checkpoint {
			os.MkdirAll(filepath.Join(dir, "checkpoint"), 0o755)
			os.WriteFile(filepath.Join(dir, "checkpoint", "state.json"), []byte("{}"), 0o644)
		}
		return dir
	}
	failed := &fakeRun{opt: "meazo", lr: 1e-4, steps: 10}
	for _, c := range []struct {
		dir, want string
	}{
		{mk("done", &fakeRun{opt: "meazo", lr: 1e-4, steps: 10}, true), "done"},
		{mk("diverged", &fakeRun{opt: "meazo", lr: 1e-4, steps: 10, diverged: true}, true), "diverged"},
		{mk("killed", nil, true), "resume"},
		{mk("empty", nil, false), "new"},
		{filepath.Join(root, "absent"), "new"},
	} {
		out, err := runCmd(t, "sweep-status", c.dir)
		if err != nil || strings.TrimSpace(out) != c.want {
			t.Errorf("%s: %q, %v; want %s", c.dir, out, err, c.want)
		}
	}
	// A failed run (summary written, steps not all done) with a checkpoint resumes.
	dir := mk("failed", failed, true)
	os.WriteFile(filepath.Join(dir, "summary.json"), []byte(`{"optimizer":"meazo","lr":1e-4,"steps":10,"steps_done":4,"message":"out of memory"}`), 0o644)
	if out, err := runCmd(t, "sweep-status", dir); err != nil || strings.TrimSpace(out) != "resume" {
		t.Errorf("failed run: %q, %v; want resume", out, err)
	}
}

// TestSweepScriptRefusesBeforeWriting: a command sweep.sh refuses (a seed or
// a rate given twice, a rate that is not one) leaves no sweep directory
// behind, and calls no trainer.
func TestSweepScriptRefusesBeforeWriting(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash not installed")
	}
	script, err := filepath.Abs("../../scripts/sweep.sh")
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	for _, role := range []string{"trainer", "plot"} {
		body := fmt.Sprintf("#!/bin/sh\nMEAZO_PLOT_TEST_ROLE=%s exec %q \"$@\"\n", role, self)
		if err := os.WriteFile(filepath.Join(tmp, role), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	config := filepath.Join(tmp, "exp.yaml")
	os.WriteFile(config, []byte("optimizer:\n  name: meazo\n"), 0o644)
	logPath := filepath.Join(tmp, "calls.log")
	for _, tc := range []struct{ flag, value, want string }{
		{"--seeds", "0 1 0", "--seeds: 0 given twice"},
		{"--coarse", "0.01 1e-2", "--coarse: 1e-2 given twice"},
		{"--coarse", "1e-3 fast", "--coarse: not a list of positive learning rates"},
	} {
		sweepDir := filepath.Join(tmp, "sweep")
		cmd := exec.Command("bash", script, "--config", config, "--out", sweepDir, tc.flag, tc.value)
		cmd.Env = append(os.Environ(), "MEAZO_TRAIN="+filepath.Join(tmp, "trainer"), "MEAZO_PLOT="+filepath.Join(tmp, "plot"),
			"FAKE_TRAIN_LOG="+logPath)
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), tc.want) {
			t.Errorf("%s %q: err %v, output %q, want an error saying %q", tc.flag, tc.value, err, out, tc.want)
		}
		if _, err := os.Stat(sweepDir); !os.IsNotExist(err) {
			t.Errorf("%s %q: the refused command left %s behind (%v)", tc.flag, tc.value, sweepDir, err)
		}
		if _, err := os.Stat(logPath); !os.IsNotExist(err) {
			t.Errorf("%s %q: the refused command called the trainer", tc.flag, tc.value)
		}
	}
}
