package main

// The helpers scripts/sweep.sh calls, so that the script needs only bash: what
// state a run directory is in, which rate won a stage (η*), and the fine grid
// around it. docs/SWEEPS.md describes the search.

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/meazo-go/meazo/plot"
	"github.com/meazo-go/meazo/rundir"
	"github.com/meazo-go/meazo/sweep"
)

// cmdSweepStatus prints what the sweep should do with a run directory:
//
//	done      summary.json says all steps ran: skip it
//	diverged  summary.json says it diverged: skip it (a result, +∞ in the selection)
//	resume    no finished summary but a checkpoint: continue with --resume
//	new       neither: start it
func cmdSweepStatus(args []string, stdout, stderr io.Writer) error {
	if len(args) != 1 {
		return errors.New("want exactly one run directory")
	}
	status, err := runStatus(args[0])
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, status)
	return nil
}

func runStatus(dir string) (string, error) {
	if exists(filepath.Join(dir, rundir.SummaryFile)) {
		r, err := loadSummary(dir)
		if err != nil {
			return "", err
		}
		if r.Diverged {
			return "diverged", nil
		}
		if r.Finished() {
			return "done", nil
		}
	}
	if exists(filepath.Join(dir, rundir.CheckpointDir, rundir.StateFile)) {
		return "resume", nil
	}
	return "new", nil
}

func cmdSweepFine(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("sweep-fine", flag.ContinueOnError)
	fs.SetOutput(stderr)
	coarseList := fs.String("coarse", "", "the coarse grid, rates separated by spaces or commas")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("want η* as the one argument")
	}
	coarse, err := parseRates("coarse", *coarseList)
	if err != nil {
		return err
	}
	eta, err := strconv.ParseFloat(fs.Arg(0), 64)
	if err != nil {
		return fmt.Errorf("η* %q: not a number", fs.Arg(0))
	}
	fine, err := fineGrid(coarse, eta)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, strings.Join(fine, " "))
	return nil
}

// cmdSweepSelect prints η* among the given rates and seeds of a sweep
// directory, and with --write records the whole sweep in sweep.json.
func cmdSweepSelect(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("sweep-select", flag.ContinueOnError)
	fs.SetOutput(stderr)
	rateList := fs.String("rates", "", "the learning rates to choose from, separated by spaces or commas")
	seedList := fs.String("seeds", "", "the seeds every rate was run with")
	coarseList := fs.String("coarse", "", "the coarse grid, to label each rate's stage in sweep.json")
	write := fs.String("write", "", "write the sweep summary to this file (sweep.json)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("want exactly one sweep directory")
	}
	rates, err := parseRates("rates", *rateList)
	if err != nil {
		return err
	}
	var seeds []uint64
	for _, f := range strings.Fields(strings.ReplaceAll(*seedList, ",", " ")) {
		s, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return fmt.Errorf("--seeds: %q is not a non-negative integer", f)
		}
		seeds = append(seeds, s)
	}
	if len(seeds) == 0 {
		return errors.New("--seeds: no seeds given")
	}
	var coarse []float64
	if *coarseList != "" {
		if coarse, err = parseRates("coarse", *coarseList); err != nil {
			return err
		}
	}
	sw, err := selectSweep(fs.Arg(0), rates, seeds, coarse)
	if err != nil {
		return err
	}
	if *write != "" {
		data, err := json.MarshalIndent(sw, "", "  ")
		if err != nil {
			return err
		}
		if err := plot.WriteFileAtomic(*write, append(data, '\n')); err != nil {
			return err
		}
	}
	fmt.Fprintln(stdout, strconv.FormatFloat(sw.EtaStar, 'g', -1, 64))
	return nil
}

// selectSweep finds the run of every (rate, seed) among dir's subdirectories
// (by what their summary.json says, whatever the directory is called), checks
// that each finished, and picks η*.
func selectSweep(dir string, rates []float64, seeds []uint64, coarse []float64) (*Sweep, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", dir, err)
	}
	type key struct {
		rate int
		seed uint64
	}
	found := map[key]Run{}
	for _, e := range entries {
		sub := filepath.Join(dir, e.Name())
		if !e.IsDir() || !exists(filepath.Join(sub, rundir.SummaryFile)) {
			continue
		}
		r, err := loadSummary(sub)
		if err != nil {
			return nil, err
		}
		i := indexRate(rates, r.LR)
		if i < 0 || !containsSeed(seeds, r.Seed) {
			continue
		}
		k := key{i, r.Seed}
		if other, dup := found[k]; dup {
			return nil, fmt.Errorf("two runs with lr %g and seed %d: %s and %s", r.LR, r.Seed, other.Dir, sub)
		}
		found[k] = r
	}
	var runs []Run
	for i, lr := range rates {
		for _, s := range seeds {
			r, ok := found[key{i, s}]
			if !ok {
				return nil, fmt.Errorf("%s: no run with lr %g and seed %d (no summary.json says so)", dir, lr, s)
			}
			if !r.Finished() {
				return nil, fmt.Errorf("%s: run did not finish (%d of %d steps) %s", r.Dir, r.StepsDone, r.Steps, r.Message)
			}
			runs = append(runs, r)
		}
	}
	first := runs[0]
	for _, r := range runs[1:] {
		if r.Method() != first.Method() {
			return nil, fmt.Errorf("a sweep is for one optimizer: %s ran %s, %s ran %s", first.Dir, first.Method(), r.Dir, r.Method())
		}
	}
	if _, err := sameSetting(runs); err != nil {
		return nil, err
	}
	return sweep.Summarize(dir, runs, seeds, coarse)
}

func containsSeed(seeds []uint64, s uint64) bool {
	for _, x := range seeds {
		if x == s {
			return true
		}
	}
	return false
}
