package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"

	"github.com/meazo-go/meazo/internal/cli"
	"github.com/meazo-go/meazo/plot"
	"github.com/meazo-go/meazo/results"
	"github.com/meazo-go/meazo/sweep"
)

func init() {
	commands.Register("curves", "training and validation loss of each method at its η*, mean ± 2 std over seeds",
		drawCmd("curves", "[--out DIR] [--smooth W] RUN_OR_SWEEP_DIR...", true, func(runs []sweep.Run, smooth int) ([]results.Figure, error) {
			return results.Curves(runs, smooth, warn)
		}))
	commands.Register("robustness", "best and last validation loss against η/η* (the step-size robustness figure)",
		drawCmd("robustness", "[--out DIR] RUN_OR_SWEEP_DIR...", false, func(runs []sweep.Run, _ int) ([]results.Figure, error) {
			return results.Robustness(runs)
		}))
	commands.Register("vt", "MEAZO's second moment v_t per group over training, for one run", cmdVT)
	commands.Register("memory", "optimizer-state bytes and peak RSS per method (markdown, also printed)", cmdMemory)
	commands.Register("vt-stats", "min, max, mean, std, kurtosis of ZO-Adam's or R-AdaZO's v_t in a checkpoint (the paper's Table 4; markdown, also printed)", cmdVTStats)
	commands.Register("all", "every figure the runs allow, and the memory table", cmdAll)
}

// loadRuns parses a figure command's flags, loads the runs its arguments
// name and creates the output directory.
func loadRuns(fs *flag.FlagSet, args []string, out *string) ([]sweep.Run, error) {
	if err := cli.Parse(fs, args); err != nil {
		return nil, cli.Usage(err)
	}
	if fs.NArg() == 0 {
		return nil, cli.Usage(errors.New("no run or sweep directories given"))
	}
	runs, err := results.Load(fs.Args(), warn)
	if err != nil {
		return nil, err
	}
	return runs, mkdirOut(*out, fs.Args()...)
}

// drawCmd is a command that draws figures of the runs its arguments name
// (curves, robustness); smoothing adds the --smooth flag.
func drawCmd(name, synopsis string, smoothing bool, draw func(runs []sweep.Run, smooth int) ([]results.Figure, error)) cli.RunFunc {
	return func(args []string, _ io.Reader, stdout io.Writer) error {
		fs, out := newFlags(name, synopsis)
		smooth := new(int)
		if smoothing {
			smooth = smoothFlag(fs)
		}
		runs, err := loadRuns(fs, args, out)
		if err != nil {
			return err
		}
		figs, err := draw(runs, *smooth)
		if err != nil {
			return err
		}
		paths, err := writeFigures(*out, figs...)
		printPaths(stdout, paths)
		return err
	}
}

func cmdVT(args []string, _ io.Reader, stdout io.Writer) error {
	fs, out := newFlags("vt", "[--out DIR] RUN_DIR")
	if err := cli.Parse(fs, args); err != nil {
		return cli.Usage(err)
	}
	if fs.NArg() != 1 {
		return cli.Usage(errors.New("want exactly one run directory"))
	}
	r, err := sweep.LoadSummary(fs.Arg(0))
	if err != nil {
		return err
	}
	if err := mkdirOut(*out, fs.Arg(0)); err != nil {
		return err
	}
	fig, err := results.VT(r, warn)
	if err != nil {
		return err
	}
	paths, err := writeFigures(*out, results.Figure{File: "vt.svg", Figure: fig})
	printPaths(stdout, paths)
	return err
}

func cmdMemory(args []string, _ io.Reader, stdout io.Writer) error {
	fs, out := newFlags("memory", "[--out DIR] RUN_OR_SWEEP_DIR...")
	runs, err := loadRuns(fs, args, out)
	if err != nil {
		return err
	}
	table, err := results.MemoryTable(runs)
	if err != nil {
		return err
	}
	fmt.Fprint(stdout, table)
	path := filepath.Join(*out, "memory.md")
	if err := checkReplace(path); err != nil {
		return err
	}
	return plot.WriteFileAtomic(path, []byte(table))
}

// cmdVTStats prints and writes the second-moment table of the runs'
// checkpoints (results.SecondMomentTable), one column per run.
func cmdVTStats(args []string, _ io.Reader, stdout io.Writer) error {
	fs, out := newFlags("vt-stats", "[--out DIR] RUN_OR_CHECKPOINT_DIR...")
	if err := cli.Parse(fs, args); err != nil {
		return cli.Usage(err)
	}
	if fs.NArg() == 0 {
		return cli.Usage(errors.New("no run or checkpoint directories given"))
	}
	var cols []results.SecondMoment
	for _, dir := range fs.Args() {
		c, err := results.ReadSecondMoment(dir)
		if err != nil {
			return err
		}
		cols = append(cols, c)
	}
	if err := mkdirOut(*out); err != nil {
		return err
	}
	table := results.SecondMomentTable(cols)
	fmt.Fprint(stdout, table)
	path := filepath.Join(*out, "vt_stats.md")
	if err := checkReplace(path); err != nil {
		return err
	}
	return plot.WriteFileAtomic(path, []byte(table))
}

// cmdAll writes every figure the runs allow (results.All) and the memory table.
func cmdAll(args []string, _ io.Reader, stdout io.Writer) error {
	fs, out := newFlags("all", "[--out DIR] [--smooth W] RUN_OR_SWEEP_DIR...")
	smooth := smoothFlag(fs)
	runs, err := loadRuns(fs, args, out)
	if err != nil {
		return err
	}
	figs, err := results.All(runs, *smooth, warn)
	if err != nil {
		return err
	}
	table, err := results.MemoryTable(runs)
	if err != nil {
		return err
	}
	path := filepath.Join(*out, "memory.md")
	if err := checkReplace(path); err != nil {
		return err
	}
	paths, err := writeFigures(*out, figs...)
	if err != nil {
		return err
	}
	if err := plot.WriteFileAtomic(path, []byte(table)); err != nil {
		return err
	}
	printPaths(stdout, append(paths, path))
	return nil
}
