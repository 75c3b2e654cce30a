//go:build unix

// The tests here signal running processes, which Windows cannot do
// (os.Process.Signal supports only Kill there).

package main

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/meazo-go/meazo/rundir"
	"github.com/meazo-go/meazo/train"
)

// TestMain lets the test binary act as meazo-train (MEAZO_TRAIN_AS_MAIN=1),
// so that the signal test runs a real process without building one.
func TestMain(m *testing.M) {
	if os.Getenv("MEAZO_TRAIN_AS_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestSignalInterruptsAndResumes sends each signal to a running meazo-train
// and checks the exit status, summary.json and that --resume finishes the run.
func TestSignalInterruptsAndResumes(t *testing.T) {
	dir := t.TempDir()
	cfg, err := train.WriteDemo(dir, 60)
	if err != nil {
		t.Fatal(err)
	}
	for _, sig := range []syscall.Signal{syscall.SIGUSR1, syscall.SIGTERM, syscall.SIGINT} {
		name := map[syscall.Signal]string{syscall.SIGUSR1: "SIGUSR1", syscall.SIGTERM: "SIGTERM", syscall.SIGINT: "SIGINT"}[sig]
		t.Run(name, func(t *testing.T) {
			out := filepath.Join(dir, name)
			cmd := self(t, "--config", cfg, "--set", "eval.skip=true", "--set", "task.max_validation=8", "--set", "train.eval_every=1000",
				"--set", "train.checkpoint_every=1000", "--out", out)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			waitForLines(t, filepath.Join(out, "metrics.jsonl"), 3)
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			err := cmd.Wait()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != train.ExitInterrupted {
				t.Fatalf("exit after %s: %v, want status %d", name, err, train.ExitInterrupted)
			}
			var s train.Summary
			b, err := os.ReadFile(filepath.Join(out, "summary.json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &s); err != nil {
				t.Fatal(err)
			}
			if s.Status != "interrupted" || s.Signal != name || s.StepsDone < 1 || s.StepsDone >= 60 {
				t.Fatalf("summary: status %q signal %q steps_done %d", s.Status, s.Signal, s.StepsDone)
			}
			if sig != syscall.SIGUSR1 {
				return
			}
			cmd = self(t, "--resume", out, "--set", "x=1")
			if err := cmd.Run(); err == nil {
				t.Fatal("--resume with --set was accepted")
			}
			cmd = self(t, "--resume", out)
			if b, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("resume: %v\n%s", err, b)
			}
		})
	}
}

func self(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "MEAZO_TRAIN_AS_MAIN=1")
	return cmd
}

// waitForLines waits until path has n lines (the run is training).
func waitForLines(t *testing.T, path string, n int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(path); err == nil && strings.Count(string(b), "\n") >= n {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s: no %d lines after 2 minutes", path, n)
}

// TestDemoStopsOnSignal: a SIGTERM sent to meazo-train --demo alone (as
// docker stop sends one) reaches the run in progress, which checkpoints,
// and the demo exits 3 saying so; a signal while a run starts (before its
// first step) exits 3 too, with nothing written that a new start refuses.
func TestDemoStopsOnSignal(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo")
	var stderr strings.Builder
	var ee *exec.ExitError
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGHUP} { // the terminal's SIGHUP reaches the run as SIGTERM
		os.RemoveAll(filepath.Join(dir, "run-meazo")) // the last round's: metrics.jsonl below is this round's
		cmd := self(t, "--demo", "--demo-dir", dir, "--demo-steps", "5000")
		stderr.Reset()
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		run := filepath.Join(dir, "run-meazo")
		waitForLines(t, filepath.Join(run, "metrics.jsonl"), 3)
		if err := cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		err := cmd.Wait()
		if !errors.As(err, &ee) || ee.ExitCode() != train.ExitInterrupted || !strings.Contains(stderr.String(), "demo interrupted: the meazo run stopped at a checkpoint") {
			t.Fatalf("exit after %v: %v, want status %d\n%s", sig, err, train.ExitInterrupted, stderr.String())
		}
		s, err := rundir.ReadSummary(run)
		if err != nil || s.Status != rundir.StatusInterrupted || s.Signal != "SIGTERM" {
			t.Fatalf("after %v, summary: %+v, %v", sig, s, err)
		}
	}

	// A run asked to stop while it starts.
	out := filepath.Join(t.TempDir(), "run")
	cmd := self(t, "--config", filepath.Join(dir, "demo.yaml"), "--out", out)
	stderr.Reset()
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitForFile(t, filepath.Join(out, "config.yaml"))
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if !errors.As(err, &ee) || ee.ExitCode() != train.ExitInterrupted {
		t.Fatalf("exit after SIGTERM while starting: %v, want status %d\n%s", err, train.ExitInterrupted, stderr.String())
	}
	if strings.Contains(stderr.String(), "stopped while starting") {
		// It stopped before its first step: a new start takes the directory.
		cmd = self(t, "--config", filepath.Join(dir, "demo.yaml"), "--out", out, "--set", "train.steps=2", "--set", "eval.skip=true")
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("a new start after a stop while starting: %v\n%s", err, b)
		}
	}
}

// waitForFile waits until path exists.
func waitForFile(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(path); err == nil {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("%s: not there after 2 minutes", path)
}

// TestExitStatuses runs meazo-train to each end a run can come to and
// checks its exit status, summary.json's status and its last line: done
// and diverged (a result) exit 0, a failure 1 with no summary.json (here a
// file-size limit, as a full disk, fails the first checkpoint's write),
// and a --set the run refuses 2, a bad command line.
// An interrupted run's exit 3 is TestSignalInterruptsAndResumes's.
func TestExitStatuses(t *testing.T) {
	dir := t.TempDir()
	cfg, err := train.WriteDemo(dir, 4)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		set    []string
		limit  string // ulimit -f: the largest file the run may write, in blocks ("": none)
		exit   int
		status string // "": no summary.json
		last   string // how stderr's last line begins
	}{
		{"done", nil, "", 0, rundir.StatusDone, "done: 4 steps, best validation loss "},
		{"diverged", []string{"optimizer.name=zo-sgd", "optimizer.lr=1e30"}, "", 0, rundir.StatusDiverged, "diverged at step 2: "},
		{"failed", nil, "8", 1, "", "meazo-train: write safetensors "},
		// A --set the run refuses is a bad command line, as -h says.
		{"bad --set value", []string{"train.steps=abc"}, "", 2, "", "meazo-train: --set train.steps: want a whole number"},
		{"--set refused by the checks", []string{"train.batch_size=0"}, "", 2, "", "meazo-train: --set train.batch_size: "},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, tc.name)
			args := []string{"--config", cfg, "--out", out, "--set", "eval.skip=true", "--set", "train.eval_every=2",
				"--set", "task.max_train=64", "--set", "task.max_validation=8"}
			for _, s := range tc.set {
				args = append(args, "--set", s)
			}
			cmd := self(t, args...)
			if tc.limit != "" {
				cmd = exec.Command("/bin/sh", append([]string{"-c", `ulimit -f "$0" && exec "$@"`, tc.limit, os.Args[0]}, args...)...)
				cmd.Env = append(os.Environ(), "MEAZO_TRAIN_AS_MAIN=1")
			}
			var stderr strings.Builder
			cmd.Stderr = &stderr
			code := 0
			var ee *exec.ExitError
			if err := cmd.Run(); errors.As(err, &ee) {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tc.exit {
				t.Fatalf("exit status %d, want %d\n%s", code, tc.exit, stderr.String())
			}
			lines := strings.Split(strings.TrimRight(stderr.String(), "\n"), "\n")
			if last := lines[len(lines)-1]; !strings.HasPrefix(last, tc.last) {
				t.Errorf("stderr's last line is %q, want it to begin %q", last, tc.last)
			}
			s, err := rundir.ReadSummary(out)
			switch {
			case tc.status == "" && !errors.Is(err, os.ErrNotExist):
				t.Errorf("summary.json: %+v, %v; want none", s, err)
			case tc.status != "" && (err != nil || s.Status != tc.status):
				t.Errorf("summary.json: %+v, %v; want status %q", s, err, tc.status)
			}
		})
	}
}

// TestCheckStopsOnSignal: a SIGTERM during --check's validation (or, on a
// fast machine, its steps: it stops before its report either way) ends it
// with exit status 1 (not a run's 3, "continue with --resume": a check has
// nothing to resume), a signal line and an error that say so, and nothing
// written.
func TestCheckStopsOnSignal(t *testing.T) {
	dir := t.TempDir()
	cfg, err := train.WriteDemo(dir, 4)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "run")
	// Steps of 64 examples: long enough to be signalled in.
	cmd := self(t, "--check", "--config", cfg, "--out", out, "--set", "train.batch_size=64")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	buf := make([]byte, 4096)
	for !strings.Contains(log.String(), "validation of step 0") {
		n, err := stderr.Read(buf)
		log.Write(buf[:n])
		if err != nil {
			t.Fatalf("the check ended before its validation: %v\n%s", err, log.String())
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(stderr)
	log.Write(rest)
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("exit after SIGTERM: %v, want status 1\n%s", err, log.String())
	}
	for _, want := range []string{"meazo-train: SIGTERM: stopping the check after the current step or evaluation batch (it writes nothing; exit 1)",
		"meazo-train: the check was stopped by SIGTERM during ", "nothing was written, and the run is not checked (run the check again)"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, log.String())
		}
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a stopped check made %s: %v", out, err)
	}
}

// TestCheckReportsOnStdout: meazo-train --check prints its report as one
// JSON line on stdout, alone (meazo-sweep check reads it; the check's lines
// go to stderr), exits 0, and writes nothing; a check the start would
// refuse exits 1 with no report.
func TestCheckReportsOnStdout(t *testing.T) {
	dir := t.TempDir()
	cfg, err := train.WriteDemo(dir, 4)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "run")
	args := []string{"--check", "--config", cfg, "--out", out, "--set", "task.max_validation=8", "--set", "task.max_test=8"}
	var stdout, stderr strings.Builder
	cmd := self(t, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	var rep train.CheckReport
	if err := json.Unmarshal([]byte(stdout.String()), &rep); err != nil || strings.Count(stdout.String(), "\n") != 1 {
		t.Fatalf("stdout is not one JSON line (%v):\n%s", err, stdout.String())
	}
	if rep.Steps != 4 || rep.StepSeconds <= 0 || rep.RunSeconds <= 0 || !strings.Contains(stderr.String(), "check passed: nothing was written") {
		t.Errorf("report %+v\n%s", rep, stderr.String())
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the check made %s: %v", out, err)
	}
	stdout.Reset()
	stderr.Reset()
	cmd = self(t, append(args, "--set", "model.path="+filepath.Join(dir, "nothing"))...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	var ee *exec.ExitError
	if err := cmd.Run(); !errors.As(err, &ee) || ee.ExitCode() != 1 || stdout.Len() != 0 {
		t.Errorf("a refused check: %v, stdout %q, want exit status 1 and no report\n%s", err, stdout.String(), stderr.String())
	}
}
