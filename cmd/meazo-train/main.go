// Command meazo-train runs zeroth-order fine-tuning as a YAML config says:
//
//	meazo-train --config configs/llama1b_squad_lora_meazo.yaml [--set optimizer.lr=2e-4] [--seed 1] [--out runs/x]
//	meazo-train --resume runs/x          # continue an interrupted run bit-identically
//	meazo-train                          # the built-in demo: a tiny model made on the spot, no downloads
//	meazo-train --config-doc > docs/CONFIG.md
//
// Everything a run produces lands in its run directory (docs/RUNDIR.md).
//
// SIGINT, SIGTERM or SIGUSR1 end a run cleanly: the step in progress
// finishes, a checkpoint is written, summary.json says "status":
// "interrupted" with the signal, and meazo-train exits with status 3
// (train.ExitInterrupted); --resume continues bit-identically. A second
// SIGINT exits at once (status 130; the last checkpoint is kept).
// Exit statuses: 0 done or diverged, 1 error, 3 interrupted.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/meazo-go/meazo/internal/cli"
	"github.com/meazo-go/meazo/train"
)

// setFlags collects repeated --set key=value.
type setFlags []string

func (s *setFlags) String() string     { return strings.Join(*s, " ") }
func (s *setFlags) Set(v string) error { *s = append(*s, v); return nil }

func main() {
	var sets setFlags
	config := flag.String("config", "", "experiment YAML (see docs/CONFIG.md); without it the built-in demo runs")
	flag.Var(&sets, "set", "override a config key, e.g. --set optimizer.lr=2e-4 (repeatable)")
	seed := flag.String("seed", "", "shorthand for --set train.seed=N")
	out := flag.String("out", "", "shorthand for --set output.dir=DIR")
	resume := flag.String("resume", "", "continue the run in this directory from its last checkpoint")
	demoDir := flag.String("demo-dir", "demo-run", "where the built-in demo writes its model, data and run")
	demoSteps := flag.Int("demo-steps", 150, "steps of each run of the built-in demo")
	configDoc := flag.Bool("config-doc", false, "print the documentation of every config key (docs/CONFIG.md) and exit")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), `usage: meazo-train [--config FILE.yaml] [--set key=value]... [--seed N] [--out DIR]
       meazo-train --resume RUN_DIR
SIGINT, SIGTERM or SIGUSR1 finish the current step, write a checkpoint and
record the stop in summary.json ("status": "interrupted"), then exit 3.
exit status: 0 done (or diverged: a result), 1 error, 3 interrupted (continue with --resume)
flags:
`)
		flag.PrintDefaults()
	}
	flag.Parse()
	cli.LowGC()
	if flag.NArg() > 0 {
		fail(fmt.Errorf("unexpected argument %q (flags only; see -h)", flag.Arg(0)))
	}
	if *configDoc {
		fmt.Print(train.ConfigDoc())
		return
	}
	if *seed != "" {
		sets = append(sets, "train.seed="+*seed)
	}
	if *out != "" {
		sets = append(sets, "output.dir="+*out)
	}
	opts := train.Options{ConfigPath: *config, Overrides: sets, Resume: *resume, Log: os.Stderr, Terminal: isTerminal(os.Stderr)}
	if *config == "" && *resume == "" {
		demo(opts, *demoDir, *demoSteps)
		return
	}
	opts.Stop = stopOnSignals()
	report(train.Run(opts))
}

// demo runs the built-in default: the same tiny task trained with MEAZO,
// ZO-SGD and ZO-Adam, one run directory each (plot them with meazo-plot all;
// make demo does). Each run is its own process, so that each summary's peak
// RSS is that run's own.
func demo(opts train.Options, dir string, steps int) {
	abs, _ := filepath.Abs(dir)
	fmt.Fprintf(os.Stderr, "No --config given: running the built-in demo in %s.\n"+
		"It trains LoRA on a TINY RANDOM model and a synthetic sentiment task, all made on the spot, with\n"+
		"MEAZO, ZO-SGD and ZO-Adam: the numbers show the whole pipeline working, not a useful model.\n"+
		"See README.md for real runs.\n\n", abs)
	path, err := train.WriteDemo(abs, steps)
	if err != nil {
		fail(err)
	}
	opts.ConfigPath = path
	for _, opt := range []string{"meazo", "zo-sgd", "zo-adam"} {
		out := filepath.Join(abs, "run-"+opt)
		if err := os.RemoveAll(out); err != nil {
			fail(err)
		}
		fmt.Fprintf(os.Stderr, "== %s -> %s\n", opt, out)
		self, err := os.Executable()
		if err != nil {
			fail(err)
		}
		args := []string{"--config", path, "--set", "optimizer.name=" + opt, "--set", "output.dir=" + out}
		for _, o := range opts.Overrides {
			args = append(args, "--set", o)
		}
		cmd := exec.Command(self, args...)
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			fail(fmt.Errorf("demo run %s: %w", opt, err))
		}
	}
}

func report(s *train.Summary, err error) {
	if err != nil {
		fail(err)
	}
	if s.Diverged {
		fmt.Fprintf(os.Stderr, "run diverged: %s\n", s.Message)
		return
	}
	if s.Interrupted() {
		fmt.Fprintf(os.Stderr, "meazo-train: %s\n", s.Message)
		os.Exit(train.ExitInterrupted)
	}
	fmt.Fprintf(os.Stderr, "done: %d steps, best validation loss %s at step %d; test %v\n\n", s.StepsDone, fmtPtr(s.BestValLoss), s.BestStep, s.Test)
}

func fmtPtr(p *float64) string {
	if p == nil {
		return "n/a"
	}
	return fmt.Sprintf("%.4f", *p)
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "meazo-train: %v\n", err)
	os.Exit(1)
}

// isTerminal reports whether f is a character device (a terminal).
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
