// Command meazo-plot turns meazo-train run directories (docs/RUNDIR.md) into
// figures and tables a person reads, and helps scripts/sweep.sh pick learning
// rates.
//
//	meazo-plot curves     [--out DIR] [--smooth W] RUN_OR_SWEEP_DIR...  training and validation loss, mean ± 2 std over seeds
//	meazo-plot robustness [--out DIR] RUN_OR_SWEEP_DIR...              best and last validation loss vs η/η*
//	meazo-plot vt         [--out DIR] RUN_DIR                          MEAZO's v_t per group over training
//	meazo-plot memory     [--out DIR] RUN_OR_SWEEP_DIR...              optimizer-state bytes and peak RSS (markdown)
//	meazo-plot all        [--out DIR] RUN_OR_SWEEP_DIR...              all of the above
//	meazo-plot study      [--out DIR] [--png=false] STUDY.yaml         a meazo-sweep study: tables at η*, figures, missing runs
//
// and, for scripts/sweep.sh (docs/SWEEPS.md):
//
//	meazo-plot sweep-status RUN_DIR                                   done, diverged, resume or new
//	meazo-plot sweep-select --rates LIST --seeds LIST [--coarse LIST] [--write FILE] SWEEP_DIR
//	meazo-plot sweep-fine   --coarse LIST ETA
//
// Figures are SVG files (any browser shows them; rsvg-convert makes PNGs).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

const usage = `usage:
  meazo-plot curves     [--out DIR] [--smooth W] RUN_OR_SWEEP_DIR...
  meazo-plot robustness [--out DIR] RUN_OR_SWEEP_DIR...
  meazo-plot vt         [--out DIR] RUN_DIR
  meazo-plot memory     [--out DIR] RUN_OR_SWEEP_DIR...
  meazo-plot all        [--out DIR] [--smooth W] RUN_OR_SWEEP_DIR...
  meazo-plot study      [--out DIR] [--smooth W] [--png=false] STUDY.yaml
  meazo-plot sweep-status RUN_DIR
  meazo-plot sweep-select --rates LIST --seeds LIST [--coarse LIST] [--write FILE] SWEEP_DIR
  meazo-plot sweep-fine   --coarse LIST ETA
run "meazo-plot COMMAND -h" for a command's flags`

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintf(os.Stderr, "meazo-plot: %v\n", err)
		os.Exit(1)
	}
}

// command is one subcommand: it parses its own flags from args.
type command func(args []string, stdout, stderr io.Writer) error

var commands = map[string]command{
	"curves":       cmdCurves,
	"robustness":   cmdRobustness,
	"vt":           cmdVT,
	"memory":       cmdMemory,
	"all":          cmdAll,
	"sweep-status": cmdSweepStatus,
	"sweep-select": cmdSweepSelect,
	"sweep-fine":   cmdSweepFine,
	"study":        cmdStudy,
}

func run(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprintln(stderr, usage)
		if len(args) == 0 {
			return errors.New("no command")
		}
		return nil
	}
	cmd, ok := commands[args[0]]
	if !ok {
		return fmt.Errorf("unknown command %q\n%s", args[0], usage)
	}
	if err := cmd(args[1:], stdout, stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%s: %w", args[0], err)
	}
	return nil
}

// newFlags makes a subcommand's flag set with the shared --out flag.
func newFlags(name string, stderr io.Writer) (*flag.FlagSet, *string) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "plots", "directory for the figures and tables (created if missing)")
	return fs, out
}

// warner returns a function that prints a warning line to stderr.
func warner(stderr io.Writer) func(string) {
	return func(msg string) { fmt.Fprintln(stderr, "meazo-plot: warning:", msg) }
}

func mkdirOut(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create output directory: %w", err)
	}
	return nil
}
