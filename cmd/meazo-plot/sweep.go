package main

// The helpers scripts/sweep.sh calls, so that the script needs only bash: what
// state a run directory is in, which rate won a stage (η*), and the fine grid
// around it. docs/SWEEPS.md describes the search; package sweep holds it.

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/meazo-go/meazo/internal/cli"
	"github.com/meazo-go/meazo/sweep"
)

func init() {
	commands.Register("sweep-status", "what to do with a run directory: done, diverged, resume or new (for scripts/sweep.sh)", cmdSweepStatus)
	commands.Register("sweep-select", "η* of a sweep directory's rates × seeds; --write records sweep.json (for scripts/sweep.sh)", cmdSweepSelect)
	commands.Register("sweep-fine", "the fine grid around a coarse η* (for scripts/sweep.sh)", cmdSweepFine)
}

// cmdSweepStatus prints what the sweep should do with a run directory
// (sweep.ScriptStatus):
//
//	done      summary.json says all steps ran: skip it
//	diverged  summary.json says it diverged: skip it (a result, +∞ in the selection)
//	resume    no finished summary but a checkpoint: continue with --resume
//	new       neither: start it
func cmdSweepStatus(args []string, _ io.Reader, stdout io.Writer) error {
	fs := flagSet("sweep-status", "RUN_DIR")
	if err := cli.Parse(fs, args); err != nil {
		return cli.Usage(err)
	}
	if fs.NArg() != 1 {
		return cli.Usage(errors.New("want exactly one run directory"))
	}
	status, err := sweep.ScriptStatus(fs.Arg(0))
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, status)
	return nil
}

func cmdSweepFine(args []string, _ io.Reader, stdout io.Writer) error {
	fs := flagSet("sweep-fine", "--coarse LIST ETA")
	coarseList := fs.String("coarse", "", "the coarse grid, rates separated by spaces or commas")
	if err := cli.Parse(fs, args); err != nil {
		return cli.Usage(err)
	}
	if fs.NArg() != 1 {
		return cli.Usage(errors.New("want η* as the one argument"))
	}
	coarse, err := sweep.ParseRates("--coarse", *coarseList)
	if err != nil {
		return err
	}
	eta, err := strconv.ParseFloat(fs.Arg(0), 64)
	if err != nil {
		return fmt.Errorf("η* %q: not a number", fs.Arg(0))
	}
	fine, err := sweep.FineGrid(coarse, eta)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, strings.Join(fine, " "))
	return nil
}

// cmdSweepSelect prints η* among the given rates and seeds of a sweep
// directory (sweep.SelectDir), and with --write records the whole sweep in
// sweep.json.
func cmdSweepSelect(args []string, _ io.Reader, stdout io.Writer) error {
	fs := flagSet("sweep-select", "--rates LIST --seeds LIST [--coarse LIST] [--write FILE] SWEEP_DIR")
	rateList := fs.String("rates", "", "the learning rates to choose from, separated by spaces or commas")
	seedList := fs.String("seeds", "", "the seeds every rate was run with")
	coarseList := fs.String("coarse", "", "the coarse grid, to label each rate's stage in sweep.json")
	write := fs.String("write", "", "write the sweep summary to this file (sweep.json)")
	if err := cli.Parse(fs, args); err != nil {
		return cli.Usage(err)
	}
	if fs.NArg() != 1 {
		return cli.Usage(errors.New("want exactly one sweep directory"))
	}
	rates, err := sweep.ParseRates("--rates", *rateList)
	if err != nil {
		return err
	}
	seeds, err := sweep.ParseSeeds("--seeds", *seedList)
	if err != nil {
		return err
	}
	var coarse []float64
	if *coarseList != "" {
		if coarse, err = sweep.ParseRates("--coarse", *coarseList); err != nil {
			return err
		}
	}
	sw, err := sweep.SelectDir(fs.Arg(0), rates, seeds, coarse)
	if err != nil {
		return err
	}
	if *write != "" {
		if err := sw.WriteFile(*write); err != nil {
			return err
		}
	}
	fmt.Fprintln(stdout, strconv.FormatFloat(sw.EtaStar, 'g', -1, 64))
	return nil
}
