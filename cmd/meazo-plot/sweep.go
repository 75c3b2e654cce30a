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
	commands.Register("sweep-status", cli.Help{
		Summary:  "what to do with a run directory: done, diverged, resume or new (for scripts/sweep.sh)",
		Synopsis: "RUN_DIR",
		Does: `Says what scripts/sweep.sh should do with one run of its search, so that the script needs only bash: skip it
(done, or diverged: a result), continue it with meazo-train --resume (no result but a checkpoint: it failed
or was interrupted), or start it (new).`,
		Reads:   "RUN_DIR: a run directory (summary.json, checkpoint/, run.lock), or a path where none is yet.",
		Prints:  "one word: done, diverged, resume or new.",
		Example: "meazo-plot sweep-status sweeps/squad_meazo/lr=1e-4_seed=0",
	}, cmdSweepStatus)
	commands.Register("sweep-select", cli.Help{
		Summary:  "η* of a sweep directory's rates × seeds; --write records sweep.json (for scripts/sweep.sh)",
		Synopsis: "--rates LIST --seeds LIST [--coarse LIST] [--write FILE] SWEEP_DIR",
		Does: `Chooses η* among the rates scripts/sweep.sh ran, by the search's rule (docs/SWEEPS.md): the rate with the
lowest mean best validation loss over the seeds, a rate where a seed diverged not eligible.`,
		Reads: `SWEEP_DIR: the sweep's run directories, found by what their summary.json says (any names); every rate of
--rates with every seed of --seeds must have finished.`,
		Prints:  "η* on one line; with --write, the whole sweep (each rate's runs and stage) in FILE (sweep.json).",
		Example: "meazo-plot sweep-select --rates '1e-5 1e-4 1e-3' --seeds '0 1 2' --write sweeps/sq/sweep.json sweeps/sq",
	}, cmdSweepSelect)
	commands.Register("sweep-fine", cli.Help{
		Summary:  "the fine grid around a coarse η* (for scripts/sweep.sh)",
		Synopsis: "--coarse LIST ETA",
		Does: `Lists the search's stage-2 rates: every m·10^k (m = 1..9) strictly between the coarse η*'s neighbours in the
coarse grid, leaving out the coarse rates themselves; at an end of the grid only the side with a neighbour.`,
		Reads:   "ETA: the coarse stage's η*, one of --coarse's rates. Reads no file.",
		Prints:  "the fine rates on one line, separated by spaces, spelled as run directories name them (6e-5).",
		Example: "meazo-plot sweep-fine --coarse '1e-5 5e-5 1e-4 5e-4 1e-3' 1e-4",
	}, cmdSweepFine)
}

// cmdSweepStatus prints what the sweep should do with a run directory
// (sweep.ScriptStatus):
//
//	done      summary.json says all steps ran: skip it
//	diverged  summary.json says it diverged: skip it (a result, +∞ in the selection)
//	resume    no finished summary but a checkpoint: continue with --resume
//	new       neither: start it
func cmdSweepStatus(args []string, _ io.Reader, stdout io.Writer) error {
	fs := commands.Flags("sweep-status")
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
	fs := commands.Flags("sweep-fine")
	coarseList := fs.String("coarse", "", "the coarse grid, rates separated by spaces or commas")
	if err := cli.Parse(fs, args); err != nil {
		return cli.Usage(err)
	}
	if fs.NArg() != 1 {
		return cli.Usage(errors.New("want η* as the one argument"))
	}
	coarse, err := sweep.ParseRates("--coarse", *coarseList)
	if err != nil {
		return cli.Usage(err)
	}
	eta, err := strconv.ParseFloat(fs.Arg(0), 64)
	if err != nil {
		return cli.Usage(fmt.Errorf("η* %q: not a number", fs.Arg(0)))
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
	fs := commands.Flags("sweep-select")
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
		return cli.Usage(err)
	}
	seeds, err := sweep.ParseSeeds("--seeds", *seedList)
	if err != nil {
		return cli.Usage(err)
	}
	var coarse []float64
	if *coarseList != "" {
		if coarse, err = sweep.ParseRates("--coarse", *coarseList); err != nil {
			return cli.Usage(err)
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
