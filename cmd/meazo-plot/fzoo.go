package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/meazo-go/meazo/internal/cli"
	"github.com/meazo-go/meazo/results"
)

func init() {
	commands.Register("fzoo-rate", cli.Help{
		Summary:  "ZO-SGD's learning rate from FZOO runs: FZOO's η over their mean σ_t (the paper's Figure 20)",
		Synopsis: "FZOO_RUN_OR_SWEEP_DIR...",
		Does: `Computes the ZO-SGD learning rate that matches FZOO runs, as the paper's Figure 20 sets it: FZOO divides each
step by σ_t, the spread of its q projected gradients, so ZO-SGD takes a step as long on average at η / mean σ_t.`,
		Reads: `FZOO_RUN_OR_SWEEP_DIR: FZOO run directories (summary.json: the optimizer and η, one η for all;
metrics.jsonl: the σ_t every step logs), or sweep directories standing for their runs (a study's
fig20_fzoo_fzoo: the runs its sweep.json lists, or every subdirectory with a summary.json). A run of
another optimizer or η, one without σ_t, or one with a step that moved at another rate than its η (an
optimizer.schedule, a rate changed on resume) is an error; a failed run, a run that did not finish
(interrupted, or still running) and non-finite σ_t (a diverged step) are left out with a warning; a run
named twice (its sweep and itself) counts once.`,
		Prints: `FZOO's η, the number of runs, the mean σ_t and how many logged σ_t values it averages; then ZO-SGD's η on
a line of its own, last, for scripts (set it as the study's fig20_zo-sgd coarse rate). Writes no file.`,
		Example: "meazo-plot fzoo-rate sweeps/opt-figure20/fig20_fzoo_fzoo",
	}, cmdFZOORate)
}

// cmdFZOORate prints FZOO's η, the mean σ_t of the runs given and ZO-SGD's
// equivalent rate, the last on a line of its own for scripts.
func cmdFZOORate(args []string, _ io.Reader, stdout io.Writer) error {
	fs := commands.Flags("fzoo-rate")
	if err := cli.Parse(fs, args); err != nil {
		return cli.Usage(err)
	}
	if fs.NArg() == 0 {
		return cli.Usage(errors.New("no FZOO run or sweep directories given"))
	}
	r, err := results.FZOORateOf(fs.Args(), warn)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "fzoo η %g over %d run(s), mean σ_t %.6g of %d logged σ_t values\nzo-sgd η = η / mean σ_t:\n%.3g\n",
		r.LR, len(r.Runs), r.MeanSigma, r.Steps, r.ZOSGDRate)
	return nil
}
