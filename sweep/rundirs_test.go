package sweep

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/rundir"
	"github.com/meazo-go/meazo/train"
)

// fakePlot is meazo-plot's sweep-status, sweep-fine and sweep-select, as
// cmd/meazo-plot makes them of this package, for scripts/sweep.sh.
func fakePlot(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("no command")
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	rates := fs.String("rates", "", "")
	seeds := fs.String("seeds", "", "")
	coarse := fs.String("coarse", "", "")
	write := fs.String("write", "", "")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	var c []float64
	if *coarse != "" {
		var err error
		if c, err = ParseRates("--coarse", *coarse); err != nil {
			return err
		}
	}
	switch args[0] {
	case "sweep-status":
		s, err := ScriptStatus(fs.Arg(0))
		fmt.Println(s)
		return err
	case "sweep-fine":
		eta, _ := strconv.ParseFloat(fs.Arg(0), 64)
		fine, err := FineGrid(c, eta)
		fmt.Println(strings.Join(fine, " "))
		return err
	case "sweep-select":
		r, err := ParseRates("--rates", *rates)
		if err != nil {
			return err
		}
		s, err := ParseSeeds("--seeds", *seeds)
		if err != nil {
			return err
		}
		sw, err := SelectDir(fs.Arg(0), r, s, c)
		if err != nil {
			return err
		}
		if *write != "" {
			if err := sw.WriteFile(*write); err != nil {
				return err
			}
		}
		fmt.Println(strconv.FormatFloat(sw.EtaStar, 'g', -1, 64))
		return nil
	}
	return fmt.Errorf("unknown command %q", args[0])
}

// lockRun holds dir's run lock, as a meazo-train training there does, until
// the test ends.
func lockRun(t *testing.T, dir string) {
	t.Helper()
	l, err := train.LockDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Unlock)
}

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestReadState reads every status from run directories made by hand; a run
// whose lock a process holds is running (not settled), whatever else its
// directory holds from an earlier session.
func TestReadState(t *testing.T) {
	checkpoint := func(t *testing.T, dir string) {
		writeFile(t, filepath.Join(dir, rundir.CheckpointDir, rundir.StateFile), "{}")
	}
	for _, tc := range []struct {
		name    string
		setup   func(t *testing.T, dir string)
		status  string
		settled bool
	}{
		{"new", func(t *testing.T, dir string) {}, StatusNew, false},
		{"queued", func(t *testing.T, dir string) { writeFile(t, filepath.Join(dir, JobFile), "12_3\n") }, StatusQueued, false},
		{"done", func(t *testing.T, dir string) {
			writeRun(t, dir, Summary{Optimizer: "meazo", LR: 1e-3, Steps: 10, StepsDone: 10, Status: StatusDone})
		}, StatusDone, true},
		{"diverged", func(t *testing.T, dir string) {
			writeRun(t, dir, Summary{Optimizer: "meazo", LR: 1e-3, Steps: 10, Diverged: true})
		}, StatusDiverged, true},
		{"interrupted", func(t *testing.T, dir string) { checkpoint(t, dir); writeFile(t, filepath.Join(dir, ExitFile), "3\n") }, StatusInterrupted, false},
		{"failed", func(t *testing.T, dir string) { writeFile(t, filepath.Join(dir, ExitFile), "1\n") }, StatusFailed, true},
		// A trainer killed by a signal (the OOM killer's SIGKILL) after a checkpoint waits for
		// resume; one killed before any checkpoint has failed.
		{"killed after a checkpoint", func(t *testing.T, dir string) {
			checkpoint(t, dir)
			writeFile(t, filepath.Join(dir, ExitFile), "137\n")
		}, StatusInterrupted, false},
		{"killed after a checkpoint, resumed and killed again", func(t *testing.T, dir string) {
			checkpoint(t, dir)
			writeRun(t, dir, Summary{Optimizer: "meazo", LR: 1e-3, Steps: 10, StepsDone: 4, Status: StatusInterrupted})
			writeFile(t, filepath.Join(dir, ExitFile), "137\n")
		}, StatusInterrupted, false},
		{"killed before any checkpoint", func(t *testing.T, dir string) { writeFile(t, filepath.Join(dir, ExitFile), "137\n") }, StatusFailed, true},
		{"requeued by its time limit, pending", func(t *testing.T, dir string) {
			checkpoint(t, dir)
			writeRun(t, dir, Summary{Optimizer: "meazo", LR: 1e-3, Steps: 10, StepsDone: 4, Status: StatusInterrupted})
			writeFile(t, filepath.Join(dir, JobFile), "39_0\n")
		}, StatusQueued, false},
		{"lost with its Slurm job", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, ExitFile), "3 Slurm job 58_2 ended without an exit status\n")
		}, StatusInterrupted, false},
		{"unfinished", checkpoint, StatusUnfinished, false},
		{"summary.json damaged", func(t *testing.T, dir string) {
			checkpoint(t, dir)
			writeFile(t, filepath.Join(dir, rundir.SummaryFile), `{"optimizer": "meaz`)
		}, StatusUnfinished, false},
		{"unfinished, lock file left by the run", func(t *testing.T, dir string) {
			checkpoint(t, dir)
			l, err := train.LockDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			l.Unlock()
		}, StatusUnfinished, false},
		{"running, just started", func(t *testing.T, dir string) { lockRun(t, dir) }, StatusRunning, false},
		{"running, resumed", func(t *testing.T, dir string) {
			checkpoint(t, dir)
			writeRun(t, dir, Summary{Optimizer: "meazo", LR: 1e-3, Steps: 10, StepsDone: 4, Status: StatusInterrupted})
			writeFile(t, filepath.Join(dir, ExitFile), "3\n")
			lockRun(t, dir)
		}, StatusRunning, false},
		{"running, killed before", func(t *testing.T, dir string) { checkpoint(t, dir); lockRun(t, dir) }, StatusRunning, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "lr=1e-3_seed=0")
			tc.setup(t, dir)
			s, err := ReadState(dir)
			if err != nil || s.Status != tc.status || s.Settled() != tc.settled {
				t.Fatalf("ReadState: %+v, %v; want %s, settled %v", s, err, tc.status, tc.settled)
			}
			if s.Status == StatusRunning && !strings.Contains(s.Detail, fmt.Sprintf("pid %d", os.Getpid())) {
				t.Errorf("detail %q does not name the holder", s.Detail)
			}
		})
	}
}

// TestRunningRunNotStarted: meazo-sweep run and resume start no second
// meazo-train on a run another process is training, say so, and leave its
// sweep's stage 2 and sweep.json until it has ended.
func TestRunningRunNotStarted(t *testing.T) {
	self, _ := os.Executable()
	t.Setenv("MEAZO_SWEEP_TEST_TRAINER", "1")
	for _, tc := range []struct {
		name  string
		mode  Mode
		setup func(t *testing.T, dir string) // before it is locked
	}{
		{"run, just started", ModeRun, func(t *testing.T, dir string) { writeFile(t, filepath.Join(dir, rundir.ConfigFile), "{}") }},
		{"resume, resumed after an interruption", ModeResume, func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, rundir.CheckpointDir, rundir.StateFile), "{}")
			writeFile(t, filepath.Join(dir, ExitFile), "3\n")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			st, err := LoadStudy(writeStudy(t, fmt.Sprintf("out: %s/out\nseeds: [0]\ncoarse: [1e-3, 5e-3, 1e-2]\nexperiments:\n  - {name: e, config: "+testConfigs+"/qwen06b_sst2_lora_meazo.yaml, optimizers: [meazo]}\nexecutor: {parallel: 1, trainer: %s}\n", dir, self)))
			if err != nil {
				t.Fatal(err)
			}
			busy := filepath.Join(dir, "out/e_meazo/lr=1e-3_seed=0")
			tc.setup(t, busy)
			lockRun(t, busy)
			var log bytes.Buffer
			if err := st.RunLocal(context.Background(), tc.mode, &log); err != nil {
				t.Fatalf("%v\n%s", err, log.String())
			}
			if !strings.Contains(log.String(), busy+" is running in another process (pid ") || strings.Contains(log.String(), "start "+busy) {
				t.Errorf("log:\n%s\nwant %s reported running and not started", log.String(), busy)
			}
			if strings.Count(log.String(), "meazo-sweep: start ") != 2 {
				t.Errorf("log:\n%s\nwant the two other runs started", log.String())
			}
			ss, err := st.Sweeps()[0].State()
			if err != nil {
				t.Fatal(err)
			}
			if s := ss.States[busy]; s.Status != StatusRunning || ss.Stage2Known || len(ss.Stage2) > 0 {
				t.Errorf("state %+v, stage 2 known %v; want running and no stage 2 yet", s, ss.Stage2Known)
			}
			if exists(filepath.Join(dir, "out/e_meazo", SweepFile)) {
				t.Error("sweep.json written while a run is running")
			}
			var status bytes.Buffer
			if err := st.Status(&status, false); err != nil || !strings.Contains(status.String(), "running     "+busy+"  (pid ") {
				t.Errorf("status: %v\n%s", err, status.String())
			}
		})
	}
}

func TestRateName(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		want string
	}{{1e-6, "1e-6"}, {5e-5, "5e-5"}, {2.5e-4, "2.5e-4"}, {0.01, "1e-2"}, {0.05, "5e-2"}, {0.1, "1e-1"}, {0.3, "3e-1"}, {1, "1e0"}, {20, "2e1"}, {123.456, "1.23456e2"}} {
		if got := RateName(tc.v); got != tc.want {
			t.Errorf("RateName(%v) = %s, want %s", tc.v, got, tc.want)
		}
	}
}

// TestRunDirSpelling: a sweep's runs are found in the directories it already
// has whatever their rate's spelling (lr=0.01 as meazo-sweep wrote the
// coarse rates from 0.01 up, lr=1e-2 as scripts/sweep.sh and the fine grid
// do); a new seed takes its rate's spelling; a new rate RateName's.
func TestRunDirSpelling(t *testing.T) {
	dir := t.TempDir()
	sweepDir := filepath.Join(dir, "out/e_meazo")
	for _, d := range []string{"lr=0.01_seed=0", "lr=1e-1_seed=0", "lr=0.1_seed=0", "lr=0.1_seed=1", "lr=abc_seed=0", "lr=5e-2_seed=x", "lr=5e-2_seed=00"} {
		if err := os.MkdirAll(filepath.Join(sweepDir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(sweepDir, "lr=5e-2_seed=1"), "a file, not a run directory")
	// A run kept on another disk, linked in.
	elsewhere := filepath.Join(dir, "scratch", "run")
	os.MkdirAll(elsewhere, 0o755)
	if err := os.Symlink(elsewhere, filepath.Join(sweepDir, "lr=0.001_seed=0")); err != nil {
		t.Fatal(err)
	}
	st, err := LoadStudy(writeStudy(t, fmt.Sprintf("out: %s/out\nseeds: [0, 1]\ncoarse: [1e-3, 1e-2, 5e-2, 1e-1]\nexperiments:\n  - {name: e, config: "+testConfigs+"/qwen06b_sst2_lora_meazo.yaml, optimizers: [meazo]}\n", dir)))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"1e-3 lr=0.001_seed=0", "1e-3 lr=0.001_seed=1", // a link to a run directory counts as one
		"1e-2 lr=0.01_seed=0", "1e-2 lr=0.01_seed=1", // found; a new seed in the rate's spelling
		"5e-2 lr=5e-2_seed=0", "5e-2 lr=5e-2_seed=1", // not run directories (seed=x, seed=00, a file): new
		"1e-1 lr=1e-1_seed=0", "1e-1 lr=0.1_seed=1", // two for seed 0: RateName's wins
	}
	var got []string
	for _, r := range st.Sweeps()[0].Stage1() {
		got = append(got, r.LR+" "+filepath.Base(r.Dir))
	}
	if !slices.Equal(got, want) {
		t.Errorf("stage 1:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestLocalKeepsOldSpelling: a study run over a sweep directory that holds
// runs in other spellings of their rates (lr=0.01 as meazo-sweep wrote it,
// lr=5e-2 as scripts/sweep.sh did) makes no second directory for them.
func TestLocalKeepsOldSpelling(t *testing.T) {
	dir := t.TempDir()
	self, _ := os.Executable()
	t.Setenv("MEAZO_SWEEP_TEST_TRAINER", "1")
	for _, old := range []string{"0.01", "5e-2"} {
		if err := fakeTrain([]string{"--set", "optimizer.name=meazo", "--set", "optimizer.lr=" + old, "--set", "train.seed=0",
			"--out", filepath.Join(dir, "out/e_meazo/lr="+old+"_seed=0")}); err != nil {
			t.Fatal(err)
		}
	}
	st, err := LoadStudy(writeStudy(t, fmt.Sprintf("out: %s/out\nseeds: [0, 1]\ncoarse: [1e-2, 5e-2]\nfine: false\nexperiments:\n  - {name: e, config: "+testConfigs+"/qwen06b_sst2_lora_meazo.yaml, optimizers: [meazo]}\nexecutor: {parallel: 1, trainer: %s}\n", dir, self)))
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	if err := st.RunLocal(context.Background(), ModeRun, &log); err != nil || strings.Count(log.String(), "meazo-sweep: start ") != 2 {
		t.Fatalf("%v (want the two new seeds started)\n%s", err, log.String())
	}
	got, _ := filepath.Glob(filepath.Join(dir, "out/e_meazo/lr=*"))
	for i := range got {
		got[i] = filepath.Base(got[i])
	}
	if want := []string{"lr=0.01_seed=0", "lr=0.01_seed=1", "lr=5e-2_seed=0", "lr=5e-2_seed=1"}; !slices.Equal(got, want) {
		t.Errorf("run directories %v, want %v\n%s", got, want, log.String())
	}
	if sw := readSweep(t, filepath.Join(dir, "out/e_meazo", SweepFile)); sw.EtaStar != 0.01 || len(sw.Rates) != 2 {
		t.Errorf("sweep.json: η* %g, %d rates", sw.EtaStar, len(sw.Rates))
	}
}

// TestSweepScriptNames: scripts/sweep.sh spells rates as RateName does and
// picks the run directories meazo-sweep picks, old spellings included.
func TestSweepScriptNames(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash not installed")
	}
	script, err := os.ReadFile("../scripts/sweep.sh")
	if err != nil {
		t.Fatal(err)
	}
	fn := regexp.MustCompile(`(?ms)^rate_names\(\) \{.*?^\}`).Find(script)
	if fn == nil {
		t.Fatal("scripts/sweep.sh has no rate_names function")
	}
	in := []string{"1e-6", "5e-06", "0.00001", "5E-5", "1e-4", ".0005", "0.001", "5e-3", "0.01", "1e-2", "0.05", "0.1", "1e-1",
		"2.5e-4", "0.3", "1", "1.0", "20", "123.456", "3e-7", "6e-5", "0.30000000000000004", "1e-300", "7.25e12"}
	cmd := exec.Command("bash", "-c", string(fn)+"\nrate_names")
	cmd.Stdin = strings.NewReader(strings.Join(in, "\n") + "\nabc\n0\n-1e-3\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(got) != len(in)+3 || !slices.Equal(got[len(in):], []string{"-", "-", "-"}) {
		t.Fatalf("rate_names: %q", got)
	}
	for i, s := range in {
		v, _ := strconv.ParseFloat(s, 64)
		if got[i] != RateName(v) {
			t.Errorf("sweep.sh spells %s as %s, RateName as %s", s, got[i], RateName(v))
		}
	}

	// A whole search over a sweep directory that meazo-sweep began when it
	// still named lr=0.01_seed=0 so, with the coarse grid written as
	// decimals: sweep.sh uses that run and makes the directories that
	// meazo-sweep's plan names, no other.
	dir := t.TempDir()
	self, _ := os.Executable()
	wrapper := func(role string) string {
		path := filepath.Join(dir, role)
		writeFile(t, path, fmt.Sprintf("#!/bin/sh\n%s=1 exec %q \"$@\"\n", role, self))
		os.Chmod(path, 0o755)
		return path
	}
	sweepDir := filepath.Join(dir, "out/e_meazo")
	if err := fakeTrain([]string{"--set", "optimizer.name=meazo", "--set", "optimizer.lr=0.01", "--set", "train.seed=0", "--out", filepath.Join(sweepDir, "lr=0.01_seed=0")}); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "c.yaml")
	writeFile(t, config, "optimizer: {name: meazo}\n")
	sh := exec.Command("bash", "../scripts/sweep.sh", "--config", config, "--optimizer", "meazo", "--out", sweepDir, "--seeds", "0 1", "--coarse", "0.001, 0.01")
	sh.Env = append(os.Environ(), "MEAZO_TRAIN="+wrapper("MEAZO_SWEEP_TEST_TRAINER"), "MEAZO_PLOT="+wrapper("MEAZO_SWEEP_TEST_PLOT"))
	log, err := sh.CombinedOutput()
	if err != nil {
		t.Fatalf("sweep.sh: %v\n%s", err, log)
	}
	if !strings.Contains(string(log), "skip "+filepath.Join(sweepDir, "lr=0.01_seed=0")+" (done)") {
		t.Errorf("sweep.sh did not find the run already done:\n%s", log)
	}
	made, _ := filepath.Glob(filepath.Join(sweepDir, "lr=*"))
	st, err := LoadStudy(writeStudy(t, fmt.Sprintf("out: %s/out\nseeds: [0, 1]\ncoarse: [1e-3, 1e-2]\nexperiments:\n  - {name: e, config: "+testConfigs+"/qwen06b_sst2_lora_meazo.yaml, optimizers: [meazo]}\n", dir)))
	if err != nil {
		t.Fatal(err)
	}
	ss, err := st.Sweeps()[0].State()
	if err != nil {
		t.Fatal(err)
	}
	var planned []string
	for _, r := range ss.Runs() {
		planned = append(planned, r.Dir)
		if s := ss.States[r.Dir].Status; s != StatusDone {
			t.Errorf("%s: %s", r.Dir, s)
		}
	}
	slices.Sort(planned)
	if !slices.Equal(made, planned) || len(made) != 20 {
		t.Errorf("sweep.sh made\n%s\nmeazo-sweep plans\n%s", strings.Join(made, "\n"), strings.Join(planned, "\n"))
	}
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// TestStatusListsWhatNeedsALook: status counts every run but lists only
// those that need a look; queued, done and diverged runs (thousands in a
// paper study) are counted, and -v lists them too.
func TestStatusListsWhatNeedsALook(t *testing.T) {
	dir := t.TempDir()
	p := writeStudy(t, fmt.Sprintf("out: %s/out\nseeds: [0]\ncoarse: [1e-4, 1e-3, 1e-2, 1e-1]\nfine: false\nexperiments:\n  - {name: e, config: "+testConfigs+"/qwen06b_sst2_lora_meazo.yaml, optimizers: [meazo]}\n", dir))
	st, err := LoadStudy(p)
	if err != nil {
		t.Fatal(err)
	}
	runs := st.Sweeps()[0].Stage1()
	writeRun(t, runs[0].Dir, Summary{Optimizer: "meazo", LR: 1e-4, Steps: 10, StepsDone: 10, Status: StatusDone})
	writeRun(t, runs[1].Dir, Summary{Optimizer: "meazo", LR: 1e-3, Steps: 10, StepsDone: 3, Status: StatusDiverged, Diverged: true})
	writeFile(t, filepath.Join(runs[2].Dir, JobFile), "58_3\n")
	writeFile(t, filepath.Join(runs[3].Dir, ExitFile), "1\n")
	var quiet, all bytes.Buffer
	if err := st.Status(&quiet, false); err != nil {
		t.Fatal(err)
	}
	if err := st.Status(&all, true); err != nil {
		t.Fatal(err)
	}
	q := quiet.String()
	if !strings.Contains(q, "e_meazo: 4 runs: 1 diverged, 1 done, 1 failed, 1 queued") || strings.Count(q, "\n  ") != 1 ||
		!strings.Contains(q, "  failed      "+runs[3].Dir) || !strings.Contains(q, "(3 new, queued, done or diverged runs counted, not listed: -v lists every run)") {
		t.Errorf("status:\n%s", q)
	}
	if a := all.String(); strings.Count(a, "\n  ") != 4 || strings.Contains(a, "not listed") {
		t.Errorf("status -v:\n%s", a)
	}
}

// TestSweepScriptRefusesRepeats: scripts/sweep.sh refuses a seed or a rate
// given twice (0.01 and 1e-2 are one rate) before it starts a run, and
// takes seeds separated by commas as its --coarse takes rates.
func TestSweepScriptRefusesRepeats(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash not installed")
	}
	self, _ := os.Executable()
	for _, tc := range []struct{ seeds, coarse, want string }{
		{"0 1 0", "1e-3", "--seeds: 0 given twice"},
		{"0 1", "0.01, 1e-3, 1e-2", "--coarse: 1e-2 given twice"},
		{"0,1", "1e-3", ""},
	} {
		dir := t.TempDir()
		wrapper := func(role string) string {
			path := filepath.Join(dir, role)
			writeFile(t, path, fmt.Sprintf("#!/bin/sh\n%s=1 exec %q \"$@\"\n", role, self))
			os.Chmod(path, 0o755)
			return path
		}
		config := filepath.Join(dir, "c.yaml")
		writeFile(t, config, "optimizer: {name: meazo}\n")
		sweepDir := filepath.Join(dir, "out")
		sh := exec.Command("bash", "../scripts/sweep.sh", "--config", config, "--optimizer", "meazo", "--out", sweepDir, "--seeds", tc.seeds, "--coarse", tc.coarse)
		sh.Env = append(os.Environ(), "MEAZO_TRAIN="+wrapper("MEAZO_SWEEP_TEST_TRAINER"), "MEAZO_PLOT="+wrapper("MEAZO_SWEEP_TEST_PLOT"))
		log, err := sh.CombinedOutput()
		runs, _ := filepath.Glob(filepath.Join(sweepDir, "lr=*"))
		if tc.want == "" {
			if err != nil || len(runs) != 2 {
				t.Errorf("--seeds %q: %v, runs %v\n%s", tc.seeds, err, runs, log)
			}
			continue
		}
		if err == nil || !strings.Contains(string(log), tc.want) || len(runs) != 0 {
			t.Errorf("--seeds %q --coarse %q: %v, runs %v, want %q before any run\n%s", tc.seeds, tc.coarse, err, runs, tc.want, log)
		}
	}
}
