// Command meazo-plot turns meazo-train run directories (docs/RUNDIR.md) into
// figures and tables a person reads, and helps scripts/sweep.sh pick learning
// rates. The figures, tables and statistics are package results', the
// selection rule package sweep's; this command parses flags and writes files.
//
//	meazo-plot curves     [--out DIR] [--smooth W] RUN_OR_SWEEP_DIR...  training and validation loss, mean ± 2 std over seeds
//	meazo-plot robustness [--out DIR] RUN_OR_SWEEP_DIR...              best and last validation loss vs η/η*
//	meazo-plot vt         [--out DIR] RUN_DIR                          MEAZO's v_t per group over training
//	meazo-plot memory     [--out DIR] RUN_OR_SWEEP_DIR...              optimizer-state bytes and peak RSS (markdown)
//	meazo-plot vt-stats   [--out DIR] RUN_OR_CHECKPOINT_DIR...         ZO-Adam's / R-AdaZO's v_t statistics (the paper's Table 4)
//	meazo-plot all        [--out DIR] RUN_OR_SWEEP_DIR...              all of the above
//	meazo-plot study      [--out DIR] [--png=false] STUDY.yaml         a meazo-sweep study: tables at η*, figures, missing runs
//	meazo-plot fzoo-rate  FZOO_RUN_OR_SWEEP_DIR...                     ZO-SGD's η: FZOO's η over the runs' mean σ_t (Figure 20)
//
// and, for scripts/sweep.sh (docs/SWEEPS.md):
//
//	meazo-plot sweep-status RUN_DIR                                   done, diverged, resume or new
//	meazo-plot sweep-select --rates LIST --seeds LIST [--coarse LIST] [--write FILE] SWEEP_DIR
//	meazo-plot sweep-fine   --coarse LIST ETA
//
// Figures are SVG files (any browser shows them; rsvg-convert makes PNGs).
// Exit status: 0 done, 1 a command failed, 2 no or an unknown command.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/meazo-go/meazo/internal/cli"
	"github.com/meazo-go/meazo/internal/outpath"
	"github.com/meazo-go/meazo/plot"
	"github.com/meazo-go/meazo/results"
	"github.com/meazo-go/meazo/rundir"
)

var commands = cli.New("meazo-plot", "command")

func main() { commands.Main() }

// runsRead is what the commands that take RUN_OR_SWEEP_DIR... read in it.
const runsRead = `RUN_OR_SWEEP_DIR: run directories of meazo-train (summary.json, metrics.jsonl; docs/RUNDIR.md), or sweep
directories standing for their runs (the runs sweep.json lists, or every subdirectory with a summary.json);
a run that did not finish is left out with a warning. One model, task and adapter; any methods and rates.`

// newFlags makes the flag set of a command that writes files, with the
// shared --out flag.
func newFlags(name string) (*flag.FlagSet, *string) {
	fs := commands.Flags(name)
	return fs, fs.String("out", "plots", "directory for the figures and tables (created if missing)")
}

// smoothFlag is the --smooth flag of the commands that draw loss curves.
func smoothFlag(fs *flag.FlagSet) *int {
	w := new(int)
	fs.Var((*windowFlag)(w), "smooth", "training-loss running-mean window of `W` steps (0: 1% of the run's steps, at least 1)")
	return w
}

// windowFlag is --smooth's value: a whole number of steps, 0 or more (a
// negative window was taken as 0 without a word).
type windowFlag int

func (w *windowFlag) String() string { return strconv.Itoa(int(*w)) }
func (w *windowFlag) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return errors.New("want a whole number of steps, 0 (1% of the run's steps) or more")
	}
	*w = windowFlag(n)
	return nil
}

// warn prints a warning line: something was left out, the output is still usable.
func warn(msg string) { fmt.Fprintln(os.Stderr, "meazo-plot: warning:", msg) }

// mkdirOut creates the output directory, which must not be, nor be inside,
// one of the inputs, a model directory or a run directory (outpath). One
// it makes, or finds empty, it marks as meazo-plot's (plotMarker): there
// its files may be replaced by the next run; in any other, names must not
// collide (checkReplace), so that a user's own train_loss.svg survives.
func mkdirOut(dir string, inputs ...string) error {
	if err := outpath.Check("--out", dir, inputs...); err != nil {
		return err
	}
	ents, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("--out %s: %w", dir, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create output directory: %w", err)
	}
	if len(ents) == 0 {
		return plot.WriteFileAtomic(filepath.Join(dir, plotMarker), []byte("made by meazo-plot: it replaces its own figures here\n"))
	}
	return nil
}

// plotMarker marks an output directory meazo-plot made. A directory an
// older meazo-plot made has none: adding an empty one lets it be replaced.
const plotMarker = rundir.PlotMarker

// ownedDir says whether dir holds plotMarker. Only dir: a marker above it
// made every directory below meazo-plot's, a user's own one inside an
// earlier --out included, and its files were replaced.
func ownedDir(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, plotMarker))
	return err == nil
}

// checkReplace refuses to write paths where a file is already there, unless
// their directory is meazo-plot's own (mkdirOut). A command calls it with
// every path it writes before it writes the first.
func checkReplace(paths ...string) error {
	for _, p := range paths {
		if _, err := os.Lstat(p); err == nil && !ownedDir(filepath.Dir(p)) {
			return fmt.Errorf("--out: %s is already there, in a directory meazo-plot did not make (no %s in it): move it away or choose another --out "+
				"(or, if an older meazo-plot made that directory, add an empty %s to it)", p, plotMarker, plotMarker)
		}
	}
	return nil
}

// writeFigures writes each figure to dir and returns the paths written
// (also those before an error).
func writeFigures(dir string, figs ...results.Figure) ([]string, error) {
	var all []string
	for _, f := range figs {
		all = append(all, filepath.Join(dir, f.File))
	}
	if err := checkReplace(all...); err != nil {
		return nil, err
	}
	var paths []string
	for i, f := range figs {
		if err := f.WriteFile(all[i]); err != nil {
			return paths, err
		}
		paths = append(paths, all[i])
	}
	return paths, nil
}

// printPaths prints the files written, one a line, for scripts to pick up.
func printPaths(stdout io.Writer, paths []string) {
	for _, p := range paths {
		fmt.Fprintln(stdout, p)
	}
}
