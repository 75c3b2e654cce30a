package sweep

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

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
			st, err := LoadStudy(writeStudy(t, fmt.Sprintf("out: %s/out\nseeds: [0]\ncoarse: [1e-3, 5e-3, 1e-2]\nexperiments:\n  - {name: e, config: ../configs/qwen06b_sst2_lora_meazo.yaml, optimizers: [meazo]}\nexecutor: {parallel: 1, trainer: %s}\n", dir, self)))
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
	st, err := LoadStudy(writeStudy(t, fmt.Sprintf("out: %s/out\nseeds: [0, 1]\ncoarse: [1e-3, 1e-2, 5e-2, 1e-1]\nexperiments:\n  - {name: e, config: ../configs/qwen06b_sst2_lora_meazo.yaml, optimizers: [meazo]}\n", dir)))
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
	st, err := LoadStudy(writeStudy(t, fmt.Sprintf("out: %s/out\nseeds: [0, 1]\ncoarse: [1e-2, 5e-2]\nfine: false\nexperiments:\n  - {name: e, config: ../configs/qwen06b_sst2_lora_meazo.yaml, optimizers: [meazo]}\nexecutor: {parallel: 1, trainer: %s}\n", dir, self)))
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
	st, err := LoadStudy(writeStudy(t, fmt.Sprintf("out: %s/out\nseeds: [0, 1]\ncoarse: [1e-3, 1e-2]\nexperiments:\n  - {name: e, config: ../configs/qwen06b_sst2_lora_meazo.yaml, optimizers: [meazo]}\n", dir)))
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

// TestSlurmTaskSignals runs a stage's batch script as Slurm would, with a
// fake scontrol, and signals it: SIGUSR1 (the time limit near) requeues the
// task; SIGTERM (scancel) leaves the run interrupted, not requeued.
func TestSlurmTaskSignals(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash not installed")
	}
	self, _ := os.Executable()
	for _, tc := range []struct {
		sig       syscall.Signal
		code      int    // the script's exit status
		scontrol  string // what scontrol was asked
		keepsJob  bool   // meazo-sweep.job stays (the requeued task still runs the run)
		exit      string // meazo-sweep.exit: none while the task is requeued (the run reads as queued)
		status    string
		logSubstr string
	}{
		{syscall.SIGUSR1, 0, "requeue 77_0\n", true, "", StatusQueued, "requeueing 77_0"},
		{syscall.SIGTERM, 3, "", false, "3\n", StatusInterrupted, "interrupted by SIGTERM after a checkpoint: not requeued"},
	} {
		t.Run(tc.sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			// time 5 minutes, the signal 300 s before: SIGUSR1 is honoured at once.
			p := writeStudy(t, fmt.Sprintf("out: %s/out\nseeds: [0]\ncoarse: [1e-3]\nexperiments:\n  - {name: e, config: ../configs/qwen06b_sst2_lora_meazo.yaml, optimizers: [meazo]}\nexecutor: {kind: slurm, trainer: %s, slurm: {time: \"5\", signal_seconds: 300}}\n", dir, self))
			st, err := LoadStudy(p)
			if err != nil {
				t.Fatal(err)
			}
			sub, err := st.buildSlurm(p, st.Sweeps()[0].Stage1(), 1001, false)
			if err != nil {
				t.Fatal(err)
			}
			a := sub.arrays[0]
			writeFile(t, a.tasksPath, a.tasks)
			writeFile(t, a.scriptPath, a.script)
			run := a.runs[0].Dir
			writeFile(t, filepath.Join(run, JobFile), "77_0\n")
			bin := filepath.Join(dir, "bin")
			writeFile(t, filepath.Join(bin, "scontrol"), "#!/bin/sh\necho \"$@\" >> \"$SCONTROL_LOG\"\n")
			os.Chmod(filepath.Join(bin, "scontrol"), 0o755)
			sclog := filepath.Join(dir, "scontrol.log")

			cmd := exec.Command("bash", a.scriptPath)
			cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "SCONTROL_LOG="+sclog,
				"SLURM_ARRAY_JOB_ID=77", "SLURM_ARRAY_TASK_ID=0", "MEAZO_SWEEP_TEST_TRAINER=1", "FAKE_WAIT=1")
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			for i := 0; !exists(filepath.Join(run, "started")); i++ {
				if i == 500 {
					cmd.Process.Kill()
					cmd.Wait()
					t.Fatalf("meazo-train did not start:\n%s", out.String())
				}
				time.Sleep(10 * time.Millisecond)
			}
			cmd.Process.Signal(tc.sig)
			err = cmd.Wait()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			}
			asked, _ := os.ReadFile(sclog)
			exit, _ := os.ReadFile(filepath.Join(run, ExitFile))
			if code != tc.code || string(asked) != tc.scontrol || string(exit) != tc.exit ||
				exists(filepath.Join(run, JobFile)) != tc.keepsJob || !strings.Contains(out.String(), tc.logSubstr) {
				t.Errorf("exit status %d, scontrol %q, %s %q, %s kept %v; want %d, %q, %q, %v, log with %q; log:\n%s",
					code, asked, ExitFile, exit, JobFile, exists(filepath.Join(run, JobFile)), tc.code, tc.scontrol, tc.exit, tc.keepsJob, tc.logSubstr, out.String())
			}
			if s, err := ReadState(run); err != nil || s.Status != tc.status {
				t.Errorf("state after the task: %+v, %v; want %s", s, err, tc.status)
			}
		})
	}
}

// TestSlurmSelectLostJobs: the selection job finds a run still marked
// queued whose job squeue no longer shows (cancelled while pending, or lost
// with its node): it is interrupted, not failed, so the sweep chooses no η*
// without it, the selection does not submit it again, and resume does.
func TestSlurmSelectLostJobs(t *testing.T) {
	dir := t.TempDir()
	self, _ := os.Executable()
	bin := filepath.Join(dir, "bin")
	writeFile(t, filepath.Join(bin, "squeue"), "#!/bin/sh\nexit 0\n") // shows no job
	os.Chmod(filepath.Join(bin, "squeue"), 0o755)
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	p := writeStudy(t, fmt.Sprintf("out: %s/out\nseeds: [0]\ncoarse: [1e-3, 1e-2]\nfine: false\nexperiments:\n  - {name: e, config: ../configs/qwen06b_sst2_lora_meazo.yaml, optimizers: [meazo]}\nexecutor: {kind: slurm, trainer: %s, slurm: {time: \"5\"}}\n", dir, self))
	st, err := LoadStudy(p)
	if err != nil {
		t.Fatal(err)
	}
	runs := st.Sweeps()[0].Stage1()
	writeRun(t, runs[0].Dir, Summary{Optimizer: "meazo", LR: 1e-3, Steps: 10, StepsDone: 10, Status: StatusDone})
	writeFile(t, filepath.Join(runs[1].Dir, JobFile), "58_1\n")
	var log bytes.Buffer
	got, err := st.slurmCandidates(ModeRun, true, &log)
	if err != nil || len(got) != 0 {
		t.Fatalf("the selection would submit %v (%v)\n%s", got, err, log.String())
	}
	s, err := ReadState(runs[1].Dir)
	if err != nil || s.Status != StatusInterrupted || !strings.Contains(s.Detail, "Slurm job 58_1 ended without an exit status") {
		t.Fatalf("the lost run: %+v, %v", s, err)
	}
	if ss, _ := st.Sweeps()[0].State(); ss.Complete() {
		t.Error("the sweep reads as complete with a lost run")
	}
	if got, err := st.slurmCandidates(ModeResume, false, io.Discard); err != nil || len(got) != 1 || got[0].Dir != runs[1].Dir {
		t.Errorf("resume would submit %v (%v), want the lost run", got, err)
	}
	// run submits nothing (no sbatch here) and exits as interrupted, naming it.
	log.Reset()
	if err := st.SlurmSubmit(p, ModeRun, false, &log); !errors.Is(err, ErrInterrupted) || !strings.Contains(err.Error(), runs[1].Dir) {
		t.Errorf("run: %v, want an interruption naming %s\n%s", err, runs[1].Dir, log.String())
	}
	// The selection job only logs it: its own job state stays COMPLETED.
	log.Reset()
	if err := st.SlurmSubmit(p, ModeRun, true, &log); err != nil || !strings.Contains(log.String(), runs[1].Dir+" is interrupted") {
		t.Errorf("selection: %v, want no error and the run named\n%s", err, log.String())
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

// TestSlurmQueueReadOnce: whether queued runs still have a job is read with
// one squeue for the whole study (one per run took minutes for thousands),
// and a squeue that keeps failing is an error, not every run gone.
func TestSlurmQueueReadOnce(t *testing.T) {
	dir := t.TempDir()
	self, _ := os.Executable()
	bin := filepath.Join(dir, "bin")
	calls := filepath.Join(dir, "calls")
	// Shows 58_2 (and a job of another study), logs its arguments, and fails when told to.
	writeFile(t, filepath.Join(bin, "squeue"), "#!/bin/sh\necho \"$@\" >> "+calls+"\n[ -e "+dir+"/fail ] && { echo 'slurm_load_jobs error: Socket timed out' >&2; exit 1; }\nprintf '58_2\\n77\\n'\n")
	os.Chmod(filepath.Join(bin, "squeue"), 0o755)
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	defer func(r []time.Duration) { squeueRetries = r }(squeueRetries)
	squeueRetries = []time.Duration{time.Millisecond, time.Millisecond}
	p := writeStudy(t, fmt.Sprintf("out: %s/out\nseeds: [0]\ncoarse: [1e-3, 1e-2, 1e-1]\nfine: false\nexperiments:\n  - {name: e, config: ../configs/qwen06b_sst2_lora_meazo.yaml, optimizers: [meazo]}\nexecutor: {kind: slurm, trainer: %s, slurm: {time: \"5\"}}\n", dir, self))
	st, err := LoadStudy(p)
	if err != nil {
		t.Fatal(err)
	}
	runs := st.Sweeps()[0].Stage1()
	for i, r := range runs {
		writeFile(t, filepath.Join(r.Dir, JobFile), fmt.Sprintf("58_%d\n", i+1))
	}
	// squeue failing: nothing is marked or submitted.
	writeFile(t, filepath.Join(dir, "fail"), "")
	if got, err := st.slurmCandidates(ModeRun, true, io.Discard); err == nil || !strings.Contains(err.Error(), "Socket timed out") {
		t.Fatalf("with squeue failing: %v, %v; want its error", got, err)
	}
	if n := len(readLines(t, calls)); n != 1+len(squeueRetries) {
		t.Errorf("squeue tried %d times, want %d", n, 1+len(squeueRetries))
	}
	for _, r := range runs {
		if s, _ := ReadState(r.Dir); s.Status != StatusQueued {
			t.Errorf("%s: %s after squeue failed, want queued", r.Dir, s.Status)
		}
	}
	// squeue answering: one call, for this user, each array task listed.
	os.Remove(filepath.Join(dir, "fail"))
	os.Remove(calls)
	if _, err := st.slurmCandidates(ModeRun, true, io.Discard); err != nil {
		t.Fatal(err)
	}
	if got := readLines(t, calls); len(got) != 1 || got[0] != fmt.Sprintf("-h -r -u %d -o %%i", os.Getuid()) {
		t.Errorf("squeue calls %q, want one listing this user's jobs", got)
	}
	for i, want := range []string{StatusInterrupted, StatusQueued, StatusInterrupted} {
		if s, _ := ReadState(runs[i].Dir); s.Status != want {
			t.Errorf("run of job 58_%d: %s, want %s", i+1, s.Status, want)
		}
	}
}

// TestLockSubmissions: a second Slurm submission of a study waits for the
// first (two at once submitted every run twice).
func TestLockSubmissions(t *testing.T) {
	dir := t.TempDir()
	unlock, err := lockSubmissions(dir, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		u, err := lockSubmissions(dir, io.Discard)
		if err == nil {
			u()
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("a second submission took the lock while the first held it (%v)", err)
	case <-time.After(300 * time.Millisecond):
	}
	unlock()
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the second submission did not get the lock once the first released it")
	}
}

// TestStatusListsWhatNeedsALook: status counts every run but lists only
// those that need a look; queued, done and diverged runs (thousands in a
// paper study) are counted, and -v lists them too.
func TestStatusListsWhatNeedsALook(t *testing.T) {
	dir := t.TempDir()
	p := writeStudy(t, fmt.Sprintf("out: %s/out\nseeds: [0]\ncoarse: [1e-4, 1e-3, 1e-2, 1e-1]\nfine: false\nexperiments:\n  - {name: e, config: ../configs/qwen06b_sst2_lora_meazo.yaml, optimizers: [meazo]}\n", dir))
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
