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
	"github.com/meazo-go/meazo/rundir"
	"github.com/meazo-go/meazo/sweep"
)

func init() {
	commands.Register("curves", cli.Help{
		Summary:  "training and validation loss of each method at its η*, mean ± 2 std over seeds",
		Synopsis: "[--out DIR] [--smooth W] RUN_OR_SWEEP_DIR...",
		Does: `Draws the loss curves of the runs given, one line per method (optimizer, grouped or not, variant) at its η*:
the rate with the lowest mean best validation loss over seeds, as the search chooses it; a band of ± 2
standard deviations over seeds. Methods of separate sweeps (the paper's Figure 20) go in one figure.`,
		Reads:   runsRead,
		Prints:  "DIR/train_loss.svg (smoothed by --smooth) and DIR/val_loss.svg, and DIR/val_METRIC.svg of each metric the runs logged at their validations (eval.validation_metrics: val_accuracy.svg, val_f1.svg, …); their paths, one a line.",
		Example: "meazo-plot curves --out plots/squad sweeps/squad_meazo sweeps/squad_zo-sgd",
	}, drawCmd("curves", true, func(runs []sweep.Run, smooth int) ([]results.Figure, error) {
		return results.Curves(runs, smooth, warn)
	}))
	commands.Register("robustness", cli.Help{
		Summary:  "best and last validation loss against η/η* (the step-size robustness figure)",
		Synopsis: "[--out DIR] RUN_OR_SWEEP_DIR...",
		Does: `Draws the step-size robustness figure: for each method, the mean over seeds of the best and of the last
validation loss at every rate it ran, against η/η*; a rate where a seed diverged or failed is marked.`,
		Reads:   runsRead + "\nOnly summary.json is read.",
		Prints:  "DIR/robustness_best.svg and DIR/robustness_last.svg; their paths, one a line.",
		Example: "meazo-plot robustness --out plots/squad sweeps/squad_meazo sweeps/squad_zo-sgd",
	}, drawCmd("robustness", false, func(runs []sweep.Run, _ int) ([]results.Figure, error) {
		return results.Robustness(runs)
	}))
	commands.Register("vt", cli.Help{
		Summary:  "MEAZO's second moment v_t per group over training, for one run",
		Synopsis: "[--out DIR] RUN_DIR",
		Does: `Draws MEAZO's second-moment scalar v_t of every estimation unit (one, or one per parameter group) over
training, on a log axis: whether the step size adapts per layer, which is the point of grouping.`,
		Reads:   `RUN_DIR: one MEAZO run directory (summary.json, and metrics.jsonl's "v" of every step).`,
		Prints:  "DIR/vt.svg; its path.",
		Example: "meazo-plot vt --out plots/run runs/llama1b_squad_lora-grouped_meazo",
	}, cmdVT)
	commands.Register("memory", cli.Help{
		Summary:  "optimizer-state bytes and peak RSS per method (markdown, also printed)",
		Synopsis: "[--out DIR] RUN_OR_SWEEP_DIR...",
		Does: `Tabulates what each method costs in memory: the optimizer state beside the weights (MEAZO keeps ZO-SGD's, a
few bytes; ZO-Adam adds two floats per trainable parameter) and the process's measured peak resident memory.`,
		Reads:   runsRead + "\nOnly summary.json is read (optimizer_state_bytes, peak_rss_bytes).",
		Prints:  "a markdown table, one row per method (a range where its runs differ); the same in DIR/memory.md.",
		Example: "meazo-plot memory --out plots/squad sweeps/squad_meazo sweeps/squad_zo-adam",
	}, cmdMemory)
	commands.Register("vt-stats", cli.Help{
		Summary:  "min, max, mean, std, kurtosis of ZO-Adam's or R-AdaZO's v_t in a checkpoint (the paper's Table 4; markdown, also printed)",
		Synopsis: "[--out DIR] RUN_OR_CHECKPOINT_DIR...",
		Does: `Summarises the second-moment vector v_t of ZO-Adam or R-AdaZO runs as the paper's Table 4 does: its min, max,
mean, standard deviation and kurtosis, read from a checkpoint without loading a model.`,
		Reads: `RUN_OR_CHECKPOINT_DIR: run directories (their checkpoint/) or checkpoint directories, each with optimizer.bin
(the optimizer's exact state; a full-parameter run's v is in its optimizer_state.safetensors beside it); a run that
did not finish is read where its checkpoint stopped.`,
		Prints: `a markdown table, one column per directory (an unfinished run's names the step it holds); the
same in DIR/vt_stats.md.`,
		Example: "meazo-plot vt-stats --out plots/table4 runs/llama1b_sst2_lora_zo-adam runs/llama1b_sst2_lora_radazo",
	}, cmdVTStats)
	commands.Register("all", cli.Help{
		Summary:  "every figure the runs allow, and the memory table",
		Synopsis: "[--out DIR] [--smooth W] RUN_OR_SWEEP_DIR...",
		Does: `Makes every figure the runs allow in one go: the loss curves at η*, the robustness figures when a method ran
at several rates, the test-metric figures when the runs were scored on the test split, MEAZO's v_t; and
the memory table.`,
		Reads:   runsRead,
		Prints:  "the figures' SVGs and memory.md in DIR; their paths, one a line.",
		Example: "meazo-plot all --out plots/squad sweeps/squad_meazo sweeps/squad_zo-sgd",
	}, cmdAll)
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
func drawCmd(name string, smoothing bool, draw func(runs []sweep.Run, smooth int) ([]results.Figure, error)) cli.RunFunc {
	return func(args []string, _ io.Reader, stdout io.Writer) error {
		fs, out := newFlags(name)
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
	fs, out := newFlags("vt")
	if err := cli.Parse(fs, args); err != nil {
		return cli.Usage(err)
	}
	if fs.NArg() != 1 {
		return cli.Usage(errors.New("want exactly one run directory"))
	}
	r, err := sweep.LoadSummary(fs.Arg(0))
	if err != nil {
		if run, what := rundir.OfRun(fs.Arg(0)); run != "" {
			return fmt.Errorf("%s: not a run directory but %s's %s: give %s", fs.Arg(0), run, what, run)
		}
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
	fs, out := newFlags("memory")
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
	fs, out := newFlags("vt-stats")
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
	fs, out := newFlags("all")
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
