package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/meazo-go/meazo/internal/cli"
	"github.com/meazo-go/meazo/results"
)

func init() {
	commands.Register("fzoo-rate", "ZO-SGD's learning rate from FZOO runs: FZOO's η over their mean σ_t (the paper's Figure 20)", cmdFZOORate)
}

// cmdFZOORate prints FZOO's η, the mean σ_t of the runs given and ZO-SGD's
// equivalent rate, the last on a line of its own for scripts.
func cmdFZOORate(args []string, _ io.Reader, stdout io.Writer) error {
	fs := flagSet("fzoo-rate", "FZOO_RUN_OR_SWEEP_DIR...")
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
