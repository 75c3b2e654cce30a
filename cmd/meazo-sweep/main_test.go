package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/train"
)

// TestCommandLine runs meazo-sweep's command lines as main does and checks
// the exit status, the output, and the error on one line after the
// program's and the subcommand's names.
func TestCommandLine(t *testing.T) {
	dir := t.TempDir()
	// The demo's config: plan checks it loads, and that its model and data are there.
	if _, err := train.WriteDemo(filepath.Join(dir, "demo"), 10); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "demo", "demo.yaml")
	// study writes a one-sweep study whose runs are the given trainer.
	study := func(name, trainer string) string {
		path := filepath.Join(dir, name+".yaml")
		os.WriteFile(path, []byte("out: "+dir+"/"+name+"\nseeds: [0]\ncoarse: [1e-3, 1e-2]\nexperiments:\n  - {name: e, config: "+config+", optimizers: [meazo]}\nexecutor: {trainer: "+trainer+"}\n"), 0o644)
		return path
	}
	// script writes an executable shell script that exits with code.
	script := func(name, code string) string {
		path := filepath.Join(dir, name)
		os.WriteFile(path, []byte("#!/bin/sh\nexit "+code+"\n"), 0o755)
		return path
	}
	good := study("good", "/bin/true")
	// A study whose first run has finished (its summary says so; its
	// checkpoint stays): plan gives it no command, as resume would refuse it.
	finished := study("finished", "/bin/true")
	doneRun := filepath.Join(dir, "finished", "e_meazo", "lr=1e-3_seed=0")
	os.MkdirAll(filepath.Join(doneRun, "checkpoint"), 0o755)
	os.WriteFile(filepath.Join(doneRun, "checkpoint", "state.json"), []byte("{}"), 0o644)
	os.WriteFile(filepath.Join(doneRun, "summary.json"), []byte(`{"optimizer":"meazo","lr":1e-3,"seed":0,"steps":1,"steps_done":1,"best_val_loss":1}`), 0o644)
	// Its second run trains now (a meazo-train holds its lock): no command either.
	runningRun := filepath.Join(dir, "finished", "e_meazo", "lr=1e-2_seed=0")
	os.MkdirAll(runningRun, 0o755)
	lock, err := train.LockDir(runningRun)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Unlock()
	// A trainer that checkpoints, then is killed by SIGKILL (as by an out-of-memory killer).
	killed := filepath.Join(dir, "killed.sh")
	os.WriteFile(killed, []byte("#!/bin/sh\nwhile [ $# -gt 0 ]; do if [ \"$1\" = --out ]; then d=$2; fi; shift; done\n"+
		"mkdir -p \"$d/checkpoint\" && echo '{}' > \"$d/checkpoint/state.json\"\nkill -KILL $$\n"), 0o755)
	// A study whose out lies inside a run's directory.
	os.MkdirAll(filepath.Join(dir, "arun"), 0o755)
	os.WriteFile(filepath.Join(dir, "arun", "run.lock"), nil, 0o644)
	nested := study("arun/study", "/bin/true")
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("out: x\nexperiment: []\n"), 0o644)
	for _, tc := range []struct {
		args           []string
		status         int
		stdout, stderr string // contained in each
	}{
		{[]string{}, 2, "", "usage: meazo-sweep <command> [flags]"},
		{[]string{"frobnicate", good}, 2, "", "meazo-sweep: unknown command \"frobnicate\"\n"},
		{[]string{"run"}, 2, "", "meazo-sweep run: want one study file\n"},
		{[]string{"status", "-x", good}, 2, "", "meazo-sweep status: flag provided but not defined: -x\n"},
		{[]string{"status", "-h"}, 0, "", "usage: meazo-sweep status [-v] STUDY.yaml\n"},
		{[]string{"run", "-h"}, 0, "", "\nReads:    STUDY.yaml: a study file"},
		{[]string{"status", filepath.Join(dir, "missing.yaml")}, 1, "", "missing.yaml: no such file"},
		{[]string{"plan", bad}, 1, "", "meazo-sweep plan: study " + bad + `:2: unknown key "experiment" (did you mean "experiments"?)` + "\n"},
		{[]string{"doc", "x"}, 2, "", "meazo-sweep doc: takes no arguments\n"},
		{[]string{"status", good}, 0, "e_meazo: 2 runs: 2 new; stage 1 (coarse)", ""},
		{[]string{"plan", good}, 0, "--set optimizer.lr=1e-3 --set train.seed=0 --out " + dir + "/good/e_meazo/lr=1e-3_seed=0", ""},
		{[]string{"plan", finished}, 0, "stage1 done       " + doneRun + " (nothing to run)\nstage1 running    " + runningRun + " (training now: pid ", ""},
		{[]string{"doc"}, 0, "| `executor.slurm.throttle` |", ""},
		{[]string{"run", nested}, 1, "", "out " + dir + "/arun/study is inside the run directory " + dir + "/arun"},
		{[]string{"run", study("failing", script("fail.sh", "1"))}, 1, "", "meazo-sweep run: 2 runs failed (meazo-sweep resume retries them): " +
			dir + "/failing/e_meazo/lr=1e-3_seed=0, " + dir + "/failing/e_meazo/lr=1e-2_seed=0\n"},
		// meazo-train exits 3 when a signal stopped it after a checkpoint.
		{[]string{"run", study("interrupted", script("interrupted.sh", "3"))}, 3, "", "meazo-sweep run: interrupted: meazo-sweep resume continues the study\n"},
		// Killed by a signal after a checkpoint: interrupted too, not failed, and the sweep waits (no stage 2).
		{[]string{"run", study("killed", killed)}, 3, "", "killed by SIGKILL (exit status 137) after a checkpoint: meazo-sweep resume continues it"},
		{[]string{"status", filepath.Join(dir, "killed.yaml")}, 0, "e_meazo: 2 runs: 2 interrupted; stage 1 (coarse)", ""},
	} {
		var stdout, stderr bytes.Buffer
		status := newCommands(&stderr).Exec(tc.args, nil, &stdout, &stderr)
		if status != tc.status || !strings.Contains(stdout.String(), tc.stdout) || !strings.Contains(stderr.String(), tc.stderr) {
			t.Errorf("%q: status %d, stdout:\n%s\nstderr:\n%s\nwant status %d, stdout with %q, stderr with %q",
				tc.args, status, stdout.String(), stderr.String(), tc.status, tc.stdout, tc.stderr)
		}
	}
}

// TestHelp: every command's -h says what it does, what it reads, what it
// prints and an example (cli.CheckHelp).
func TestHelp(t *testing.T) {
	if err := newCommands(io.Discard).CheckHelp(); err != nil {
		t.Fatal(err)
	}
}

// TestStatusEditedStudy: status counts the run directories, and says too
// when the study was edited after they started (a set line changed), which
// run would refuse.
func TestStatusEditedStudy(t *testing.T) {
	dir := t.TempDir()
	if _, err := train.WriteDemo(filepath.Join(dir, "demo"), 10); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "demo", "demo.yaml")
	study := filepath.Join(dir, "study.yaml")
	write := func(steps int) {
		body := fmt.Sprintf("out: %s/out\nseeds: [0]\ncoarse: [1e-2]\nfine: false\nset: [train.steps=%d]\nexperiments:\n  - {name: e, config: %s, optimizers: [meazo]}\n", dir, steps, cfg)
		if err := os.WriteFile(study, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := filepath.Join(dir, "out", "e_meazo", "lr=1e-2_seed=0")
	c, err := train.Load(cfg, []string{"train.steps=20", "optimizer.name=meazo", "optimizer.lr=1e-2", "train.seed=0", "output.dir=" + run})
	if err != nil {
		t.Fatal(err)
	}
	y, _ := c.YAML()
	os.MkdirAll(run, 0o755)
	if err := os.WriteFile(filepath.Join(run, "config.yaml"), y, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		steps int
		warn  bool
	}{{20, false}, {30, true}} {
		write(tc.steps)
		var stdout, stderr bytes.Buffer
		status := newCommands(&stderr).Exec([]string{"status", study}, nil, &stdout, &stderr)
		warned := strings.Contains(stdout.String(), "warning: run, resume and meazo-plot study refuse this study as it stands: ") &&
			strings.Contains(stdout.String(), "(train.steps 20 -> 30; run -> study)")
		if status != 0 || warned != tc.warn || !strings.Contains(stdout.String(), "total: 1 new") {
			t.Errorf("train.steps=%d: status %d, stdout:\n%s\nstderr:\n%s\nwant status 0, the warning %v", tc.steps, status, stdout.String(), stderr.String(), tc.warn)
		}
	}
}
