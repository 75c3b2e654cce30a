// Command meazo-sweep runs a study: the paper's two-stage learning-rate
// search (coarse grid, then a fine grid around the coarse η*) for every
// experiment × optimizer of a study file, locally or on Slurm
// (docs/SWEEPS.md):
//
//	meazo-sweep plan   STUDY.yaml      every run (and for Slurm the sbatch scripts); starts nothing
//	meazo-sweep run    STUDY.yaml      start the runs never started; stage 2 follows stage 1
//	meazo-sweep status [-v] STUDY.yaml what each run directory says (-v: every run)
//	meazo-sweep resume STUDY.yaml      also retry failed runs and continue interrupted or unfinished ones
//	meazo-sweep doc                    the study file's keys (docs/SWEEPS.md)
//
// The subcommands are dispatched by internal/cli like those of the other
// multi-command binaries; -h after one shows its flags.
//
// Exit status: 0 all started runs ended well, 1 an error or failed runs, 2
// no or an unknown command, 3 interrupted by a signal (resume continues).
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

	"github.com/meazo-go/meazo/internal/cli"
	"github.com/meazo-go/meazo/internal/outpath"
	"github.com/meazo-go/meazo/sweep"
)

func main() { newCommands(os.Stderr).Main() }

// newCommands returns meazo-sweep's subcommands; log gets their progress
// lines, flag errors and -h text (stderr; a buffer in tests).
func newCommands(log io.Writer) *cli.Set {
	s := cli.New("meazo-sweep", "command")
	s.ExitStatus(exitStatus)
	s.Register("plan", "print every run (and for executor slurm the sbatch scripts); starts nothing",
		func(args []string, _ io.Reader, stdout io.Writer) error {
			st, path, err := loadStudy(newFlags("plan", "STUDY.yaml", log), args)
			if err != nil {
				return err
			}
			if st.Executor.Kind == "slurm" {
				return st.SlurmPlan(stdout, path)
			}
			trainer, err := st.FindTrainer()
			if err != nil {
				trainer = "meazo-train"
			}
			return st.Plan(stdout, trainer)
		})
	s.Register("status", "what each run directory says (-v: every run)",
		func(args []string, _ io.Reader, stdout io.Writer) error {
			fs := newFlags("status", "[-v] STUDY.yaml", log)
			verbose := fs.Bool("v", false, "list every run")
			st, _, err := loadStudy(fs, args)
			if err != nil {
				return err
			}
			return st.Status(stdout, *verbose)
		})
	s.Register("run", "start the runs never started; stage 2 of a sweep follows its stage 1", runCmd("run", sweep.ModeRun, log))
	s.Register("resume", "also retry failed runs and continue interrupted or unfinished ones", runCmd("resume", sweep.ModeResume, log))
	s.Register("doc", "print the study file's keys", func(args []string, _ io.Reader, stdout io.Writer) error {
		fs := newFlags("doc", "", log)
		if err := cli.Parse(fs, args); err != nil {
			return cli.Usage(err)
		}
		if fs.NArg() != 0 {
			return cli.Usage(errors.New("takes no arguments"))
		}
		_, err := fmt.Fprint(stdout, sweep.StudyDoc())
		return err
	})
	return s
}

// exitStatus tells a caller what to do after a failure: 3 when a signal
// interrupted the study (meazo-sweep resume continues it), else 1.
func exitStatus(err error) int {
	if errors.Is(err, sweep.ErrInterrupted) {
		return 3
	}
	return 1
}

// newFlags makes a subcommand's flag set; synopsis is what its -h prints
// after the command's name (the flags' defaults follow).
func newFlags(name, synopsis string, log io.Writer) *flag.FlagSet {
	return cli.Flags("meazo-sweep", name, synopsis, log)
}

// loadStudy parses a subcommand's arguments, its flags and then one study
// file, and loads the study; it returns the file's path too.
func loadStudy(fs *flag.FlagSet, args []string) (*sweep.Study, string, error) {
	if err := cli.Parse(fs, args); err != nil {
		return nil, "", cli.Usage(err)
	}
	if fs.NArg() != 1 {
		return nil, "", cli.Usage(errors.New("want one study file"))
	}
	st, err := sweep.LoadStudy(fs.Arg(0))
	if err == nil { // the runs' directories go under out: not into a model's or another run's
		err = outpath.Check(fs.Arg(0)+": out", st.Out, fs.Arg(0))
	}
	return st, fs.Arg(0), err
}

// runCmd is run or resume: on Slurm it submits the study; locally it runs
// it until done or until SIGINT, SIGTERM, SIGHUP or SIGUSR1, after which the
// running meazo-train processes get SIGTERM once to checkpoint and stop
// (then it exits 3). SIGHUP is what a lost ssh session sends: without it the
// runs would go on unwatched and their exit statuses never be recorded.
func runCmd(name string, mode sweep.Mode, log io.Writer) cli.RunFunc {
	return func(args []string, _ io.Reader, _ io.Writer) error {
		fs := newFlags(name, "STUDY.yaml", log)
		selectJob := fs.Bool("slurm-select", false, "internal: run as the Slurm selection job between stages")
		st, path, err := loadStudy(fs, args)
		if err != nil {
			return err
		}
		if st.Executor.Kind == "slurm" {
			return st.SlurmSubmit(path, mode, *selectJob, log)
		}
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGUSR1)
		defer stop()
		// A lost ssh session also closes the pipes meazo-sweep logs to: a
		// write there must fail quietly, not kill meazo-sweep with SIGPIPE
		// before it has stopped its runs. (Notify, unlike Ignore, is not
		// inherited by the runs.)
		pipe := make(chan os.Signal, 1)
		signal.Notify(pipe, syscall.SIGPIPE)
		defer signal.Stop(pipe)
		return st.RunLocal(ctx, mode, log)
	}
}
