// Command meazo-sweep runs a study: the paper's two-stage learning-rate
// search (coarse grid, then a fine grid around the coarse η*) for every
// experiment × optimizer of a study file, locally or on Slurm
// (docs/SWEEPS.md):
//
//	meazo-sweep plan   STUDY.yaml   every run (and for Slurm the sbatch scripts); starts nothing
//	meazo-sweep run    STUDY.yaml   start the runs never started; stage 2 follows stage 1
//	meazo-sweep status STUDY.yaml   what each run directory says
//	meazo-sweep resume STUDY.yaml   also retry failed runs and continue interrupted or unfinished ones
//	meazo-sweep doc                 the study file's keys (docs/SWEEPS.md)
//
// Exit status: 0 all started runs ended well, 1 an error or failed runs, 3
// interrupted by a signal (resume continues).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/meazo-go/meazo/sweep"
)

const usage = `usage: meazo-sweep COMMAND [flags] STUDY.yaml
  plan     print every run (and for executor slurm the sbatch scripts); starts nothing
  run      start the runs never started; stage 2 of a sweep follows its stage 1
  status   what each run directory says (-v: every run)
  resume   also retry failed runs and continue interrupted or unfinished ones
  doc      print the study file's keys
exit status: 0 ok, 1 error or failed runs, 3 interrupted (meazo-sweep resume continues)`

func main() {
	err := run(os.Args[1:], os.Stdout, os.Stderr)
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
	case errors.Is(err, sweep.ErrInterrupted):
		fmt.Fprintf(os.Stderr, "meazo-sweep: %v\n", err)
		os.Exit(3)
	default:
		fmt.Fprintf(os.Stderr, "meazo-sweep: %v\n", err)
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprintln(stderr, usage)
		if len(args) == 0 {
			return errors.New("no command")
		}
		return nil
	}
	cmd := args[0]
	if cmd == "doc" {
		fmt.Fprint(stdout, sweep.StudyDoc())
		return nil
	}
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	verbose := fs.Bool("v", false, "status: list every run")
	selectJob := fs.Bool("slurm-select", false, "internal: run as the Slurm selection job between stages")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("%s: want one study file\n%s", cmd, usage)
	}
	st, err := sweep.LoadStudy(fs.Arg(0))
	if err != nil {
		return err
	}
	switch cmd {
	case "plan":
		if st.Executor.Kind == "slurm" {
			return st.SlurmPlan(stdout, fs.Arg(0))
		}
		trainer, err := st.FindTrainer()
		if err != nil {
			trainer = "meazo-train"
		}
		return st.Plan(stdout, trainer)
	case "status":
		return st.Status(stdout, *verbose)
	case "run", "resume":
		mode := sweep.ModeRun
		if cmd == "resume" {
			mode = sweep.ModeResume
		}
		if st.Executor.Kind == "slurm" {
			return st.SlurmSubmit(fs.Arg(0), mode, *selectJob, stderr)
		}
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM, syscall.SIGUSR1)
		defer stop()
		return st.RunLocal(ctx, mode, stderr)
	}
	return fmt.Errorf("unknown command %q\n%s", cmd, usage)
}
