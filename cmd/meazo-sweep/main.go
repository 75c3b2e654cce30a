// Command meazo-sweep runs a study: the paper's two-stage learning-rate
// search (coarse grid, then a fine grid around the coarse η*) for every
// experiment × optimizer of a study file, locally or on Slurm
// (docs/SWEEPS.md):
//
//	meazo-sweep plan   STUDY.yaml      every run (and for Slurm the sbatch scripts); starts nothing
//	meazo-sweep run    STUDY.yaml      start the runs never started; stage 2 follows stage 1
//	meazo-sweep status [-v] STUDY.yaml what each run directory says (-v: every run)
//	meazo-sweep resume STUDY.yaml      also retry failed runs and continue interrupted or unfinished ones
//	meazo-sweep check  STUDY.yaml      time one run of each sweep here; what the study would take
//	meazo-sweep doc                    the study file's keys (docs/SWEEPS.md)
//
// The subcommands are dispatched by internal/cli like those of the other
// multi-command binaries; -h after one says what it reads and prints, with an
// example, and its flags.
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
	"strings"
	"syscall"

	"github.com/meazo-go/meazo/internal/cli"
	"github.com/meazo-go/meazo/internal/outpath"
	"github.com/meazo-go/meazo/internal/stopsig"
	"github.com/meazo-go/meazo/sweep"
)

func main() { newCommands(os.Stderr).Main() }

// newCommands returns meazo-sweep's subcommands; log gets their progress
// lines, flag errors and -h text (stderr; a buffer in tests).
func newCommands(log io.Writer) *cli.Set {
	s := cli.New("meazo-sweep", "command")
	s.ExitStatus(exitStatus)
	s.Register("plan", cli.Help{
		Summary:  "print every run (and for executor slurm the sbatch scripts); starts nothing",
		Synopsis: "STUDY.yaml",
		Does: `Shows what the study would run before it runs: every run of every sweep (experiment × optimizer × variant)
with its state and the meazo-train command that starts or resumes it; stage 2 as far as stage 1's results
fix it. Every sweep's config is loaded first, so a mistake in one shows here. Starts nothing.`,
		Reads: studyReads,
		Prints: `per sweep a comment line, then a line per run: stage, state, meazo-train command; for executor
slurm also the sbatch scripts run would submit. Writes nothing.`,
		Example: "meazo-sweep plan configs/studies/paper.yaml",
	},
		func(args []string, _ io.Reader, stdout io.Writer) error {
			st, path, err := loadStudy(s.Flags("plan"), args)
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
	s.Register("status", cli.Help{
		Summary:  "what each run directory says (-v: every run)",
		Synopsis: "[-v] STUDY.yaml",
		Does: `Tells how far a study is, from its run directories alone (while it runs, too): each sweep's runs counted by
state (new, queued, running, done, diverged, failed, interrupted, unfinished) and its stage, and the runs
that need a look listed with why.`,
		Reads: studyReads,
		Prints: `a line per sweep with its counts and stage, the runs that need a look (-v: every run), and the
total; a warning when a run was started with other settings than the study now gives it (run refuses the
study then). Writes nothing.`,
		Example: "meazo-sweep status configs/studies/demo.yaml\nmeazo-sweep status -v configs/studies/opt-figure20.yaml",
	},
		func(args []string, _ io.Reader, stdout io.Writer) error {
			fs := s.Flags("status")
			verbose := fs.Bool("v", false, "list every run")
			st, _, err := loadStudy(fs, args)
			if err != nil {
				return err
			}
			if err := st.Status(stdout, *verbose); err != nil {
				return err
			}
			// The runs' counts above are the directories'; say too when
			// the study has been edited since they started (run refuses it).
			if err := st.CheckRunsMatch(); err != nil {
				fmt.Fprintf(stdout, "warning: run, resume and meazo-plot study refuse this study as it stands: %v\n", err)
			}
			return nil
		})
	s.Register("run", cli.Help{
		Summary:  "start the runs never started; stage 2 of a sweep follows its stage 1",
		Synopsis: "STUDY.yaml",
		Does: `Runs the study: the paper's two-stage learning-rate search for every sweep. Locally, executor.parallel
meazo-train processes at a time, each sweep's stage 2 (the fine grid) as soon as its stage 1 is settled,
until all have run or a signal stops them (they checkpoint; exit 3, resume continues); on Slurm, it submits
the runs as job arrays and a selection job after them. Runs already started (done, failed, interrupted)
are left alone: resume retries those.`,
		Reads: studyReads + "\nEvery sweep's meazo-train config (and the demo's files, written first if the study names demo).",
		Prints: `progress on stderr: a line as each run ends (how far the study is), each sweep's η*; under out, each run's
directory (meazo-train's files, meazo-sweep.exit, meazo-sweep.log) and each settled sweep's sweep.json.`,
		Example: "meazo-sweep run configs/studies/demo.yaml",
	}, runCmd("run", sweep.ModeRun, s, log))
	s.Register("resume", cli.Help{
		Summary:  "also retry failed runs and continue interrupted or unfinished ones",
		Synopsis: "STUDY.yaml",
		Does: `Does what run does, and also continues the runs that stopped: interrupted or unfinished ones from their
checkpoint (meazo-train --resume), failed ones again.`,
		Reads:   studyReads,
		Prints:  "as run: progress on stderr; the runs' directories and sweep.json under out.",
		Example: "meazo-sweep resume configs/studies/paper.yaml",
	}, runCmd("resume", sweep.ModeResume, s, log))
	s.Register("check", cli.Help{
		Summary:  "time one run of each sweep here and say what the study would take; writes nothing",
		Synopsis: "[-v] [-sweep PATTERN]... STUDY.yaml",
		Does: `Runs meazo-train --check for the first run of every sweep (or of those -sweep names): the run's start,
step 0's validation of a sample, the test evaluation of a sample and two steps, timed, on this machine,
writing nothing. Then says what each sweep's runs would take (stage 1, and the most stage 2 can have; in a
study under way, the runs left, and a complete sweep is not checked) and the study's sum; for executor
slurm, how a run fits executor.slurm.time (how many requeued jobs, or a warning where a job cannot hold
the run's start and a validation, which a stopped job runs again from its start). Run it where the runs
will run (a node of the Slurm partition: srun meazo-sweep check …), one check at a time.`,
		Reads: studyReads + "\nEvery checked sweep's meazo-train config, model and data, as its runs read them.",
		Prints: `a line per sweep checked and the study's sum on stdout; "checking sweep …" and, for a failed check (or
with -v every check), meazo-train's lines on stderr. Writes nothing.`,
		Example: "meazo-sweep check configs/studies/demo.yaml\nmeazo-sweep check -sweep 'qwen06b_*' configs/studies/paper.yaml",
	}, func(args []string, _ io.Reader, stdout io.Writer) error {
		fs := s.Flags("check")
		verbose := fs.Bool("v", false, "show every check's own lines (stderr)")
		var patterns patternFlags
		fs.Var(&patterns, "sweep", "check only the sweeps whose name matches `PATTERN` (path.Match: qwen06b_*; repeatable)")
		st, _, err := loadStudy(fs, args)
		if err != nil {
			return err
		}
		trainer, err := st.FindTrainer()
		if err != nil {
			return err
		}
		ctx, stop := signal.NotifyContext(context.Background(), stopsig.Stop(syscall.SIGHUP)...)
		defer stop()
		return st.CheckCost(ctx, stdout, log, trainer, patterns, *verbose)
	})
	s.Register("doc", cli.Help{
		Summary: "print the study file's keys",
		Does:    "Prints the keys a study file takes, with their defaults and meaning (the table in docs/SWEEPS.md).",
		Reads:   "nothing.",
		Prints:  "a markdown table of the study file's keys.",
		Example: "meazo-sweep doc",
	}, func(args []string, _ io.Reader, stdout io.Writer) error {
		fs := s.Flags("doc")
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

// patternFlags collects repeated -sweep PATTERN.
type patternFlags []string

func (p *patternFlags) String() string { return strings.Join(*p, " ") }
func (p *patternFlags) Set(v string) error {
	*p = append(*p, v)
	return nil
}

// exitStatus tells a caller what to do after a failure: 3 when a signal
// interrupted the study (meazo-sweep resume continues it), else 1.
func exitStatus(err error) int {
	if errors.Is(err, sweep.ErrInterrupted) {
		return 3
	}
	return 1
}

// studyReads is what the commands that take a study file read.
const studyReads = `STUDY.yaml: a study file (configs/studies/; its keys: meazo-sweep doc), and the run directories under its out
(summary.json, checkpoint/, run.lock, meazo-sweep.exit).`

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
func runCmd(name string, mode sweep.Mode, s *cli.Set, log io.Writer) cli.RunFunc {
	return func(args []string, _ io.Reader, _ io.Writer) error {
		fs := s.Flags(name)
		selectJob := fs.Bool("slurm-select", false, "internal: run as the Slurm selection job between stages")
		st, path, err := loadStudy(fs, args)
		if err != nil {
			return err
		}
		if st.Executor.Kind == "slurm" {
			return st.SlurmSubmit(path, mode, *selectJob, log)
		}
		ctx, stop := signal.NotifyContext(context.Background(), stopsig.Stop(syscall.SIGHUP)...)
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
