package sweep

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/train"
)

// fakeCheck is the fake meazo-train's --check: it appends its arguments to
// $FAKE_CHECK_LOG (and CUDA_VISIBLE_DEVICES where set) and prints a report whose run takes 100 s with meazo and
// 200 s with another optimizer; with $FAKE_CHECK_FAIL it fails as a refused
// start does.
func fakeCheck(args []string) error {
	if f := os.Getenv("FAKE_CHECK_LOG"); f != "" {
		lf, err := os.OpenFile(f, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		line := strings.Join(args, " ")
		if g, ok := os.LookupEnv("CUDA_VISIBLE_DEVICES"); ok {
			line += " CUDA_VISIBLE_DEVICES=" + g
		}
		fmt.Fprintln(lf, line)
		lf.Close()
	}
	switch os.Getenv("FAKE_CHECK_FAIL") {
	case "":
	case "old": // an older meazo-train, without --check: the flag package's refusal
		fmt.Fprintln(os.Stderr, "flag provided but not defined: -check")
		os.Exit(2)
	case "silent":
		os.Exit(1)
	default:
		return fmt.Errorf("model.path models/x: no such directory")
	}
	run := 200.0
	if slices.Contains(args, "optimizer.name=meazo") {
		run = 100
	}
	rep := train.CheckReport{StartSeconds: 10, ValidationSeconds: 30, StepSeconds: 0.5, Steps: 100, RunSeconds: run, PeakRSSBytes: 1 << 30}
	if os.Getenv("FAKE_CHECK_FULL") != "" { // a full-parameter run's: a checkpoint of 1 GiB
		rep.CheckpointBytes = 1 << 30
	}
	b, _ := json.Marshal(rep)
	fmt.Println(string(b))
	return nil
}

// TestCheckCost: meazo-sweep check runs meazo-train --check once per sweep,
// on its first run's settings with output.dir in a temporary directory (not
// the run's), sums each sweep's stage 1 and the most its stage 2 can have,
// writes nothing in the study, takes -sweep patterns, and shows a failed
// check's lines.
func TestCheckCost(t *testing.T) {
	dir := t.TempDir()
	self, _ := os.Executable()
	t.Setenv("MEAZO_SWEEP_TEST_TRAINER", "1")
	calls := filepath.Join(dir, "calls")
	t.Setenv("FAKE_CHECK_LOG", calls)
	p := writeStudy(t, fmt.Sprintf(`out: %s/out
seeds: [0, 1]
coarse: [1e-3, 5e-3, 1e-2, 5e-2]
experiments:
  - {name: e, config: "`+testConfigs+`/qwen06b_sst2_lora_{optimizer}.yaml", optimizers: [meazo, zo-sgd]}
executor: {kind: local, trainer: %s}
`, dir, self))
	st, out := checkCostOf(t, p, self)
	var err error
	var log bytes.Buffer
	fine := maxFine([]float64{1e-3, 5e-3, 1e-2, 5e-2}) * 2
	for _, want := range []string{
		"sweep e_meazo: a run about 1m 50s (its start 10s, 100 steps of 0.5s, a validation 30s); stage 1: 8 runs, about 14m 40s; " +
			fmt.Sprintf("stage 2: up to %d runs, about %s; peak RSS 1.0 GiB\n", fine, train.FormatDuration(float64(fine)*110)),
		"sweep e_zo-sgd: a run about 3m 30s",
		fmt.Sprintf("the 2 sweeps checked: 16 runs in stage 1, about 42m 40s of run time, and up to %d in stage 2, %s more on this machine", 2*fine, "about "+train.FormatDuration(float64(fine)*320)),
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("want %q in:\n%s", want, out.String())
		}
	}
	b, _ := os.ReadFile(calls)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "--set optimizer.name=meazo --set optimizer.lr=1e-3 --set train.seed=0 --out ") ||
		strings.Contains(lines[0], filepath.Join(dir, "out")) {
		t.Errorf("the checks were run with:\n%s\nwant the first run's settings, output.dir elsewhere than the study's", b)
	}
	if _, err := os.Stat(filepath.Join(dir, "out")); err == nil {
		t.Errorf("the check wrote the study's out")
	}
	log.Reset()
	if err := st.CheckCost(context.Background(), out, &log, self, []string{"e_meazo"}, true); err != nil ||
		!strings.Contains(log.String(), "(the output.dir above is the check's temporary one; the run's is "+filepath.Join(dir, "out", "e_meazo")) {
		t.Errorf("-v: %v; the log does not say whose output.dir the check's is:\n%s", err, log.String())
	}
	out.Reset()
	if err := st.CheckCost(context.Background(), out, &log, self, []string{"*_zo-sgd"}, false); err != nil || strings.Contains(out.String(), "e_meazo") || !strings.Contains(out.String(), "the 1 sweep checked") {
		t.Errorf("-sweep *_zo-sgd: %v\n%s", err, out.String())
	}
	if err := st.CheckCost(context.Background(), out, &log, self, []string{"x*"}, false); err == nil || !strings.Contains(err.Error(), "no sweep of the study matches -sweep x*; its sweeps: e_meazo, e_zo-sgd") {
		t.Errorf("-sweep x*: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := st.CheckCost(ctx, out, &log, self, nil, false); err == nil || !strings.Contains(err.Error(), "stopped by a signal during the check of ") {
		t.Errorf("a stopped check: %v", err)
	}
	t.Setenv("FAKE_CHECK_FAIL", "1")
	log.Reset()
	err = st.CheckCost(context.Background(), out, &log, self, nil, false)
	if err == nil || !strings.Contains(err.Error(), "sweep e_meazo: "+self+" --check of ") || !strings.Contains(err.Error(), "its lines are above") ||
		!strings.Contains(log.String(), "no such directory") {
		t.Errorf("a failed check: %v\n%s", err, log.String())
	}
	// A trainer that fails without a word: no "lines above" to point at.
	t.Setenv("FAKE_CHECK_FAIL", "silent")
	log.Reset()
	err = st.CheckCost(context.Background(), out, &log, self, nil, false)
	if err == nil || !strings.Contains(err.Error(), self+" --check of ") || !strings.Contains(err.Error(), "failed (exit status 1) and printed nothing on stderr") {
		t.Errorf("a silent failed check: %v\n%s", err, log.String())
	}
	// An older meazo-train: said so, not left to the user to read the flag error.
	t.Setenv("FAKE_CHECK_FAIL", "old")
	err = st.CheckCost(context.Background(), out, &log, self, nil, false)
	if err == nil || !strings.Contains(err.Error(), self+" has no --check (exit status 2): an older meazo-train?") {
		t.Errorf("a trainer without --check: %v", err)
	}
}

// TestSlurmFit: a run longer than a job takes several, each paying the
// start again; a job that cannot hold the start, a validation and a step is
// a warning (a job stopped during a validation runs it again).
func TestSlurmFit(t *testing.T) {
	rep := &train.CheckReport{StartSeconds: 60, ValidationSeconds: 600, StepSeconds: 2, RunSeconds: 10000}
	for _, c := range []struct {
		time string
		rep  *train.CheckReport
		want string
	}{
		{"4:00:00", rep, ""},
		{"1:00:00", rep, "each run takes about 4 jobs of executor.slurm.time 1:00:00 (1h 00m) (requeued when one is stopped, each starting again: 1m 00s; a run about 2h 50m in all)"},
		// A run of exactly two jobs' work (3300 s less the start, twice) takes two, not three.
		{"1:00:00", &train.CheckReport{StartSeconds: 60, ValidationSeconds: 600, StepSeconds: 2, RunSeconds: 2 * 3240}, "each run takes about 2 jobs of"},
		// A projection that is a lower bound gives a lower bound.
		{"1:00:00", &train.CheckReport{StartSeconds: 60, ValidationSeconds: 600, StepSeconds: 2, RunSeconds: 10000, RunAtLeast: true}, "each run takes at least 4 jobs of"},
		{"15", rep, "warning: a job of executor.slurm.time 15 (15m 00s), less signal_seconds 300, has 10m 00s: less than the run's start (1m 00s), a validation (10m 00s) and a step (2.0s)"},
		// A time limit within signal_seconds: no time at all, not "<1ms".
		{"5", rep, "warning: executor.slurm.time 5 (5m 00s) is not longer than signal_seconds 300: each job is told to stop as it starts"},
		{"1", &train.CheckReport{StartSeconds: 1, RunSeconds: 2}, "warning: executor.slurm.time 1 (1m 00s) is not longer than signal_seconds 300"},
	} {
		st := &Study{Executor: Executor{Kind: "slurm", Slurm: Slurm{Time: c.time, SignalSecs: 300}}}
		if got := st.slurmFit(c.rep); !strings.HasPrefix(got, c.want) || (c.want == "") != (got == "") {
			t.Errorf("time %s, %+v: %q, want %q", c.time, c.rep, got, c.want)
		}
	}
}

// TestCheckCostLeft: check counts what a study has left to run, by its run
// directories: a stage's runs without a result, stage 2's own grid once
// stage 1 has all its results (not the most it could have), and a complete
// sweep is neither checked nor counted.
func TestCheckCostLeft(t *testing.T) {
	dir := t.TempDir()
	self, _ := os.Executable()
	t.Setenv("MEAZO_SWEEP_TEST_TRAINER", "1")
	calls := filepath.Join(dir, "calls")
	t.Setenv("FAKE_CHECK_LOG", calls)
	st, err := LoadStudy(writeStudy(t, fmt.Sprintf(`out: %s/out
seeds: [0, 1]
coarse: [1e-3, 5e-3, 1e-2, 5e-2]
experiments:
  - {name: e, config: "`+testConfigs+`/qwen06b_sst2_lora_{optimizer}.yaml", optimizers: [meazo, zo-sgd]}
  - {name: f, config: "`+testConfigs+`/qwen06b_sst2_lora_meazo.yaml", optimizers: [meazo], fine: false}
executor: {kind: local, trainer: %s}
`, dir, self)))
	if err != nil {
		t.Fatal(err)
	}
	runAll := func(runs []RunSpec) {
		for _, r := range runs {
			if err := fakeTrain(r.FreshArgs()); err != nil {
				t.Fatal(err)
			}
		}
	}
	sweeps := st.Sweeps() // e_meazo, e_zo-sgd, f_meazo
	runAll(sweeps[0].Stage1())
	ss, err := sweeps[0].State()
	if err != nil || !ss.Stage2Known || len(ss.Stage2) < 3 {
		t.Fatalf("e_meazo's stage 2 after its stage 1: %v, %+v", err, ss)
	}
	n2 := len(ss.Stage2)
	runAll(ss.Stage2[:2])
	runAll(sweeps[1].Stage1()[:3])
	runAll(sweeps[2].Stage1())

	var out, log bytes.Buffer
	if err := st.CheckCost(context.Background(), &out, &log, self, nil, false); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	upTo := maxFine([]float64{1e-3, 5e-3, 1e-2, 5e-2}) * 2
	for _, want := range []string{
		fmt.Sprintf("sweep e_meazo: a run about 1m 50s (its start 10s, 100 steps of 0.5s, a validation 30s); stage 1: all 8 runs have a result; stage 2: %d of %d runs left, about %s; peak RSS",
			n2-2, n2, train.FormatDuration(float64(n2-2)*110)),
		fmt.Sprintf("sweep e_zo-sgd: a run about 3m 30s (its start 10s, 100 steps of 0.5s, a validation 30s); stage 1: 5 of 8 runs left, about 17m 30s; stage 2: up to %d runs, about %s; peak RSS",
			upTo, train.FormatDuration(float64(upTo)*210)),
		"sweep f_meazo: complete, all 8 runs have a result: not checked\n",
		fmt.Sprintf("the 2 sweeps checked: 5 runs left in stage 1, about 17m 30s of run time, and up to %d left in stage 2, about %s more on this machine",
			n2-2+upTo, train.FormatDuration(float64(n2-2)*110+float64(upTo)*210)),
		"; 1 sweep complete, not checked\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("want %q in:\n%s", want, out.String())
		}
	}
	// One run left in stage 1: "1 run", not "1 runs".
	runAll(sweeps[1].Stage1()[3:7])
	out.Reset()
	if err := st.CheckCost(context.Background(), &out, &log, self, nil, false); err != nil || !strings.Contains(out.String(), "the 2 sweeps checked: 1 run left in stage 1, about 3m 30s of run time") {
		t.Errorf("one run left in stage 1: %v\n%s", err, out.String())
	}
	if b, _ := os.ReadFile(calls); strings.Count(string(b), "\n") != 4 {
		t.Errorf("want 2 checks each time (not the complete sweep's), got:\n%s", b)
	}
	out.Reset()
	if err := st.CheckCost(context.Background(), &out, &log, self, []string{"f_*"}, false); err != nil || !strings.HasSuffix(out.String(), "nothing left to run: the 1 sweep is complete\n") {
		t.Errorf("-sweep f_*: %v\n%s", err, out.String())
	}
}

// TestCheckCostSlurm: under executor slurm each sweep's line is followed by
// how a run fits a job, and a time limit that leaves the task script too
// little to tell the time limit's SIGUSR1 from a re-sent one is warned of
// once, as run warns of it; one within signal_seconds only by the sweeps'
// own warning.
func TestCheckCostSlurm(t *testing.T) {
	dir := t.TempDir()
	self, _ := os.Executable()
	t.Setenv("MEAZO_SWEEP_TEST_TRAINER", "1")
	for _, c := range []struct {
		time, signal string
		want         []string
		not          string
	}{
		{"2", "60", []string{"warning: executor.slurm.time 2 leaves under 75 s before signal_seconds 60: ",
			"  each run takes about 2 jobs of executor.slurm.time 2 (2m 00s) (requeued when one is stopped, each starting again: 10s; a run about 2m 00s in all)"}, ""},
		{"1", "300", []string{"  warning: executor.slurm.time 1 (1m 00s) is not longer than signal_seconds 300"}, "leaves under"},
		{"1:00:00", "300", []string{"sweep e_meazo: "}, "warning"},
	} {
		st, err := LoadStudy(writeStudy(t, fmt.Sprintf("out: %s/out\nseeds: [0]\ncoarse: [1e-3, 1e-2]\nexperiments:\n  - {name: e, config: "+testConfigs+
			"/qwen06b_sst2_lora_meazo.yaml, optimizers: [meazo]}\nexecutor: {kind: slurm, slurm: {time: \"%s\", signal_seconds: %s}}\n", dir, c.time, c.signal)))
		if err != nil {
			t.Fatal(err)
		}
		var out, log bytes.Buffer
		if err := st.CheckCost(context.Background(), &out, &log, self, nil, false); err != nil {
			t.Fatalf("%v\n%s", err, log.String())
		}
		for _, want := range c.want {
			if !strings.Contains(out.String(), want) {
				t.Errorf("time %s, signal_seconds %s: want %q in:\n%s", c.time, c.signal, want, out.String())
			}
		}
		if c.not != "" && strings.Contains(out.String(), c.not) {
			t.Errorf("time %s, signal_seconds %s: want no %q in:\n%s", c.time, c.signal, c.not, out.String())
		}
	}
}

// TestCheckCostGPU: with executor.gpus, the check runs on the study's first
// GPU, as its runs run on the study's GPUs (not on GPU 0, which the study
// may leave to others).
func TestCheckCostGPU(t *testing.T) {
	dir := t.TempDir()
	self, _ := os.Executable()
	t.Setenv("MEAZO_SWEEP_TEST_TRAINER", "1")
	t.Setenv("CUDA_VISIBLE_DEVICES", "0,1,2,3")
	calls := filepath.Join(dir, "calls")
	t.Setenv("FAKE_CHECK_LOG", calls)
	st, err := LoadStudy(writeStudy(t, fmt.Sprintf("out: %s/out\nseeds: [0]\ncoarse: [1e-3, 1e-2]\nexperiments:\n  - {name: e, config: "+testConfigs+
		"/qwen06b_sst2_lora_meazo.yaml, optimizers: [meazo]}\nexecutor: {kind: local, gpus: [2, 3]}\n", dir)))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.CheckCost(context.Background(), io.Discard, io.Discard, self, nil, false); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(calls); !strings.HasSuffix(strings.TrimSpace(string(b)), " CUDA_VISIBLE_DEVICES=2") {
		t.Errorf("the check ran with %s, want CUDA_VISIBLE_DEVICES=2 (executor.gpus [2, 3])", b)
	}
}

// TestCheckCostDisk: for full-parameter runs, check adds what the runs left
// keep on the study's disk by their output.keep_weights (all: up to two
// checkpoints each; best: one; none: nothing) and what the runs side by
// side hold while they run (three each), against the free space of out's
// file system, with a warning where it does not fit; an adapter's study
// gets no disk line.
func TestCheckCostDisk(t *testing.T) {
	dir := t.TempDir()
	self, _ := os.Executable()
	t.Setenv("MEAZO_SWEEP_TEST_TRAINER", "1")
	defer func(f func(string) (uint64, bool)) { diskFree = f }(diskFree)
	var asked string
	free := uint64(100 << 30)
	diskFree = func(d string) (uint64, bool) { asked = d; return free, true }
	fine := maxFine([]float64{1e-3, 5e-3, 1e-2, 5e-2}) * 2
	for _, c := range []struct {
		keep     string
		full     bool
		free     uint64
		want     string
		warnings bool
	}{
		{"best", false, 100 << 30, "", false},
		{"best", true, 100 << 30, fmt.Sprintf("disk: the full-parameter runs left keep up to %d.0 GiB once finished (output.keep_weights), and 2 runs at a time up to 3.0 GiB each while they run: up to %d.0 GiB; the disk of %s/out has 100.0 GiB free", 8+fine, 8+fine+6, dir), false},
		{"all", true, 10 << 30, fmt.Sprintf("warning: disk: the full-parameter runs left keep up to %d.0 GiB once finished", 2*(8+fine)), true},
		{"none", true, 10 << 30, "disk: the full-parameter runs left keep up to 0 B once finished (output.keep_weights), and 2 runs at a time up to 3.0 GiB each while they run: up to 6.0 GiB", false},
	} {
		t.Setenv("FAKE_CHECK_FULL", map[bool]string{true: "1"}[c.full])
		free = c.free
		p := writeStudy(t, fmt.Sprintf(`out: %s/out
seeds: [0, 1]
coarse: [1e-3, 5e-3, 1e-2, 5e-2]
set: [output.keep_weights=%s]
experiments:
  - {name: e, config: "`+testConfigs+`/qwen06b_sst2_lora_{optimizer}.yaml", optimizers: [meazo]}
executor: {kind: local, parallel: 2, trainer: %s}
`, dir, c.keep, self))
		_, out := checkCostOf(t, p, self)
		got := out.String()
		if c.want == "" && strings.Contains(got, "disk") || c.want != "" && !strings.Contains(got, c.want) {
			t.Errorf("keep %s, full %v: want %q in:\n%s", c.keep, c.full, c.want, got)
		}
		if strings.Contains(got, "warning: disk") != c.warnings {
			t.Errorf("keep %s, free %d: warned %v:\n%s", c.keep, c.free, !c.warnings, got)
		}
		if c.full && asked != dir {
			t.Errorf("free space read for %q, want out's nearest existing directory %q", asked, dir)
		}
	}
}

// checkCostOf loads the study file p and runs its check with the fake
// trainer self, every sweep, not verbose; out holds what it printed.
func checkCostOf(t *testing.T, p, self string) (st *Study, out *bytes.Buffer) {
	t.Helper()
	st, err := LoadStudy(p)
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	out = new(bytes.Buffer)
	if err := st.CheckCost(context.Background(), out, &log, self, nil, false); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	return st, out
}
