package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"

	"github.com/meazo-go/meazo/internal/stopsig"
	"github.com/meazo-go/meazo/tensor/backends"
	"github.com/meazo-go/meazo/train"
)

// demo runs the built-in demo: the same tiny task trained with MEAZO,
// ZO-SGD and ZO-Adam, one run directory each (plot them with meazo-plot all;
// make demo does). Each run is its own process, so that each summary's peak
// RSS is that run's own.
func demo(opts train.Options, dir string, steps int) error {
	// Signals are the runs' to act on (runForwardingSignals); one before
	// a run starts stops the demo there.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, stopsig.Stop(syscall.SIGHUP)...)
	defer signal.Stop(sigs)
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	// The backend, chosen once here (and why, for auto) rather than in
	// each run's log, before anything is written (a backend that cannot
	// open leaves nothing behind): the runs are told which it is.
	backend, err := demoBackend(opts.Overrides)
	if err != nil {
		return err
	}
	if err := train.ClaimDemoDir(abs); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "Running the built-in demo in %s.\n"+
		"It trains LoRA on a TINY model and a synthetic sentiment task, all made on the spot, with MEAZO,\n"+
		"ZO-SGD and ZO-Adam. The model is random but for a sentiment direction planted in its word embeddings;\n"+
		"training has to learn to read it from the sentence into the answer (README.md, \"The demo\").\n\n", abs)
	path, err := train.WriteDemo(abs, steps)
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	var runs []string
	for _, opt := range train.DemoOptimizers {
		out := train.DemoRunDir(abs, opt)
		if err := train.ClaimDemoRun(out); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "== %s -> %s\n", opt, out)
		args := []string{"--config", path, "--set", "optimizer.name=" + opt, "--set", "optimizer.lr=" + train.DemoLR[opt],
			"--set", "eval.validation_metrics=true"} // (not in demo.yaml: the demo study's 60 runs need no metric)
		for _, o := range opts.Overrides {
			args = append(args, "--set", o)
		}
		args = append(args, "--set", "model.backend="+backend)
		args = append(args, "--set", "output.dir="+out) // last: nothing overrides where the demo writes
		cmd := exec.Command(self, args...)
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		select {
		case <-sigs:
			return fmt.Errorf("%w: before the %s run (the demo run again starts over)", errDemoInterrupted, opt)
		default:
		}
		signaled, err := runForwardingSignals(cmd, sigs)
		if err != nil {
			var ee *exec.ExitError
			if errors.As(err, &ee) && ee.ExitCode() == train.ExitInterrupted {
				return fmt.Errorf("%w: the %s run stopped at a checkpoint (meazo-train --resume %s continues it; the demo run again starts over)", errDemoInterrupted, opt, out)
			}
			return fmt.Errorf("demo run %s: %w", opt, err)
		}
		if signaled { // as the run ended: the next one does not start
			return fmt.Errorf("%w: after the %s run (the demo run again starts over)", errDemoInterrupted, opt)
		}
		runs = append(runs, out)
	}
	return train.DemoTable(os.Stdout, runs)
}

// demoBackend opens the backend the command line asks for (auto unless
// --backend or --set model.backend says otherwise) once, writing the choice
// and, for auto, its reason, and returns its name for the demo's runs: a
// backend that cannot open fails the demo before it writes anything.
func demoBackend(overrides []string) (string, error) {
	name := "auto"
	for _, o := range overrides {
		if k, v, _ := strings.Cut(o, "="); strings.TrimSpace(k) == "model.backend" {
			name = strings.TrimSpace(v)
		}
	}
	b, err := backends.Choose(name, 0, os.Stderr)
	if err != nil {
		return "", fmt.Errorf("demo: model.backend: %w", err)
	}
	return b, nil
}

// errDemoInterrupted says a signal stopped the demo; meazo-train exits 3.
var errDemoInterrupted = errors.New("demo interrupted")

// runForwardingSignals runs one demo run as its own process group and
// passes it the SIGINT, SIGTERM and SIGUSR1 that come on sigs, so that it stops as a run does
// (checkpoint, exit 3), once per signal: a Ctrl-C in the terminal reaches it
// once, through this process, and a SIGTERM sent to this process only
// (docker stop) reaches it too. A SIGHUP (the terminal closed) reaches it as
// SIGTERM, and the run gets a SIGTERM if this process dies (SIGKILL): it is
// in a process group of its own, which the terminal's signals miss. It says
// whether a signal came, also one that came as the run ended.
func runForwardingSignals(cmd *exec.Cmd, sigs <-chan os.Signal) (signaled bool, err error) {
	// The parent-death signal follows the thread that started the run:
	// that thread stays this goroutine's until the run ends.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cmd.SysProcAttr = demoRunAttr()
	if err := cmd.Start(); err != nil {
		return false, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for {
		select {
		case s := <-sigs:
			signaled = true
			if s == syscall.SIGHUP {
				s = syscall.SIGTERM
			}
			cmd.Process.Signal(s)
		case err := <-done:
			select {
			case <-sigs:
				signaled = true
			default:
			}
			return signaled, err
		}
	}
}
