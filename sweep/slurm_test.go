//go:build unix

// Slurm runs on Linux: its task scripts are bash, its signals Unix's.

package sweep

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The Slurm executor: its scripts, their signals and time limits, the queue,
// lost jobs and one submission at a time.

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

// TestEarliestSignal: the task script ignores a SIGUSR1 only before the
// time limit's could come, which Slurm may send up to 60 s early (an
// ignored one let the job die at its limit without a requeue).
func TestEarliestSignal(t *testing.T) {
	for _, tc := range []struct {
		time   string
		signal int
		want   int
	}{{"1:00:00", 300, 3235}, {"2", 30, 25}, {"2", 60, 0}, {"1", 50, 0}, {"bad", 30, 0}} {
		st := &Study{Executor: Executor{Slurm: Slurm{Time: tc.time, SignalSecs: tc.signal}}}
		if got := st.earliestSignal(); got != tc.want {
			t.Errorf("time %s, signal_seconds %d: EARLIEST %d, want %d", tc.time, tc.signal, got, tc.want)
		}
	}
}

func TestParseSlurmTime(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{{"2", 120}, {"2:30", 150}, {"1:00:00", 3600}, {"1-0", 86400}, {"1-2", 93600}, {"1-2:3", 93780}, {"1-2:3:4", 93784}, {"x", -1}, {"1:2:3:4", -1}, {"-1", -1},
		{"0-4", 4 * 3600}, {"0-4:30", 4*3600 + 30*60}} { // "0-4" is 4 hours to sbatch, as "1-4" is 28
		got, err := parseSlurmTime(tc.in)
		if (err != nil) != (tc.want < 0) || (err == nil && got != tc.want) {
			t.Errorf("parseSlurmTime(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
}

func TestSlurmScripts(t *testing.T) {
	self, _ := os.Executable()
	for _, tc := range []struct {
		name     string
		slurm    string
		maxArray int
		want     []string
		arrays   int
	}{
		{"defaults", "{}", 1001, []string{"#SBATCH --array=0-5%8\n", "#SBATCH --time=1:00:00\n", "#SBATCH --signal=B:USR1@300\n", "#SBATCH --requeue\n", "EARLIEST=3235\n",
			`scontrol requeue "$task_id"`, "--resume"}, 1},
		{"pass-through", `{partition: gpu, account: a1, qos: high, time: "2:00:00", mem: 16G, gres: "gpu:1", throttle: 3, signal_seconds: 120, sbatch: ["#SBATCH --constraint=a100", "--exclusive"], setup: ["module load cuda"]}`,
			1001, []string{"#SBATCH --array=0-5%3\n", "#SBATCH --partition=gpu\n", "#SBATCH --account=a1\n", "#SBATCH --qos=high\n", "#SBATCH --mem=16G\n",
				"#SBATCH --gres=gpu:1\n", "#SBATCH --constraint=a100\n", "#SBATCH --exclusive\n", "module load cuda\n", "#SBATCH --signal=B:USR1@120\n"}, 1},
		{"split", "{throttle: 2}", 4, []string{"#SBATCH --array=0-3%2\n"}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			p := writeStudy(t, fmt.Sprintf("out: %s/out\nseeds: [0, 1]\ncoarse: [1e-3, 1e-2, 1e-1]\nexperiments:\n  - {name: e, config: ../configs/qwen06b_sst2_lora_meazo.yaml, optimizers: [meazo]}\nexecutor: {kind: slurm, trainer: %s, slurm: %s}\n", dir, self, tc.slurm))
			st, err := LoadStudy(p)
			if err != nil {
				t.Fatal(err)
			}
			sub, err := st.buildSlurm(p, st.Sweeps()[0].Stage1(), tc.maxArray, false)
			if err != nil {
				t.Fatal(err)
			}
			if len(sub.arrays) != tc.arrays {
				t.Fatalf("%d arrays, want %d", len(sub.arrays), tc.arrays)
			}
			for _, w := range tc.want {
				if !strings.Contains(sub.arrays[0].script, w) {
					t.Errorf("script lacks %q:\n%s", w, sub.arrays[0].script)
				}
			}
			if n := strings.Count(sub.arrays[0].tasks, "\n"); n != min(6, tc.maxArray) {
				t.Errorf("%d task lines", n)
			}
			if !strings.Contains(sub.selectScript, "run --slurm-select") {
				t.Errorf("selection script:\n%s", sub.selectScript)
			}
		})
	}
}

// sbatchArgs splits an #SBATCH line's options as sbatch does (Slurm's
// src/sbatch/opt.c _get_argument: white space outside quotes ends an
// argument, "…" or '…' group, a backslash escapes the next character).
func sbatchArgs(line string) []string {
	var args []string
	var cur strings.Builder
	in, quote, esc, started := false, byte(0), false, false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case esc:
			cur.WriteByte(c)
			esc = false
		case c == '\\':
			esc, started = true, true
		case in && c == quote:
			in = false
		case in:
			cur.WriteByte(c)
		case c == '"' || c == '\'':
			in, quote, started = true, c, true
		case c == ' ' || c == '\t':
			if started || cur.Len() > 0 {
				args = append(args, cur.String())
				cur.Reset()
				started = false
			}
		default:
			cur.WriteByte(c)
			started = true
		}
	}
	if started || cur.Len() > 0 {
		args = append(args, cur.String())
	}
	return args
}

// TestSbatchPath: a log file's path reaches sbatch whole, with spaces,
// quotes and % in the study's directory (an unquoted space split the
// #SBATCH --output line, and a % in a directory name read as a pattern).
func TestSbatchPath(t *testing.T) {
	for _, dir := range []string{"/runs/plain", "/runs/my study", "/runs/50% off", `/runs/it's "x"`, "/runs/tab\there"} {
		line := "#SBATCH --output=" + sbatchPath(dir+"/s1_", "%A_%a.out")
		args := sbatchArgs(strings.TrimPrefix(line, "#SBATCH "))
		want := "--output=" + strings.ReplaceAll(dir, "%", "%%") + "/s1_%A_%a.out"
		if len(args) != 1 || args[0] != want {
			t.Errorf("%q: sbatch reads %q, want [%q]", line, args, want)
		}
	}
}

// TestSlurmScriptsSpacedDir: a study whose directory holds a space gets
// #SBATCH --output lines sbatch reads whole; one with a backslash is
// refused before anything is written.
func TestSlurmScriptsSpacedDir(t *testing.T) {
	self, _ := os.Executable()
	for _, sub := range []string{"my study", `back\slash`} {
		dir := filepath.Join(t.TempDir(), sub)
		p := writeStudy(t, fmt.Sprintf("out: %q\nseeds: [0]\ncoarse: [1e-3]\nexperiments:\n  - {name: e, config: ../configs/qwen06b_sst2_lora_meazo.yaml, optimizers: [meazo]}\nexecutor: {kind: slurm, trainer: %s}\n", dir, self))
		st, err := LoadStudy(p)
		if err != nil {
			t.Fatal(err)
		}
		s, err := st.buildSlurm(p, st.Sweeps()[0].Stage1(), 1001, false)
		if strings.Contains(sub, `\`) {
			if err == nil || !strings.Contains(err.Error(), "holds a backslash") {
				t.Errorf("%s: %v, want a refusal", sub, err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, script := range []string{s.arrays[0].script, s.selectScript} {
			for _, l := range strings.Split(script, "\n") {
				if strings.HasPrefix(l, "#SBATCH --output") {
					if args := sbatchArgs(strings.TrimPrefix(l, "#SBATCH ")); len(args) != 1 || !strings.Contains(args[0], dir+"/logs/") {
						t.Errorf("%q: sbatch reads %q", l, args)
					}
				}
			}
		}
	}
}

// TestSlurmWithoutSbatch: a study with runs to submit on a machine without
// sbatch fails before it writes a script (it wrote them all, then failed).
func TestSlurmWithoutSbatch(t *testing.T) {
	defer func(f func(string) (string, error)) { lookSbatch = f }(lookSbatch)
	lookSbatch = func(string) (string, error) { return "", exec.ErrNotFound }
	dir := t.TempDir()
	self, _ := os.Executable()
	p := writeStudy(t, fmt.Sprintf("out: %s/out\nseeds: [0]\ncoarse: [1e-3, 1e-2]\nfine: false\nexperiments:\n  - {name: e, config: ../configs/qwen06b_sst2_lora_meazo.yaml, optimizers: [meazo]}\nexecutor: {kind: slurm, trainer: %s, slurm: {time: \"5\"}}\n", dir, self))
	st, err := LoadStudy(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.SlurmSubmit(p, ModeRun, false, io.Discard); err == nil || !strings.Contains(err.Error(), "sbatch is not on the PATH") {
		t.Fatalf("run: %v, want sbatch named", err)
	}
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && (strings.HasSuffix(path, ".sbatch") || strings.HasSuffix(path, ".tasks")) {
			t.Errorf("a script was written: %s", path)
		}
		return nil
	})
}
