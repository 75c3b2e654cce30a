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
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/meazo-go/meazo/plot"
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
	if exists(filepath.Join(dir, "summary.json")) {
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
	if exists(filepath.Join(dir, "checkpoint", "state.json")) {
		return "resume", nil
	}
	return "new", nil
}

// parseRates reads a list of learning rates separated by spaces or commas.
func parseRates(flagName, list string) ([]float64, error) {
	var rates []float64
	for _, f := range strings.FieldsFunc(list, func(r rune) bool { return r == ' ' || r == ',' || r == '\t' || r == '\n' }) {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil || !(v > 0) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("--%s: %q is not a positive learning rate", flagName, f)
		}
		rates = append(rates, v)
	}
	if len(rates) == 0 {
		return nil, fmt.Errorf("--%s: no learning rates given", flagName)
	}
	sort.Float64s(rates)
	return rates, nil
}

// sameRate compares learning rates written in different ways ("5e-5",
// "0.00005", a trainer's round trip through JSON).
func sameRate(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(a, b) }

func indexRate(rates []float64, v float64) int {
	for i, r := range rates {
		if sameRate(r, v) {
			return i
		}
	}
	return -1
}

// fineGrid is the second stage of the paper's search: every m·10^k with an
// integer mantissa m in 1..9 that lies strictly between η*'s neighbours in the
// sorted coarse grid, leaving out the coarse rates themselves (already run).
// At an end of the grid only the side that has a neighbour is searched. For the
// default grid and η* = 1e-4 (neighbours 5e-5 and 5e-4): 6e-5 7e-5 8e-5 9e-5
// 2e-4 3e-4 4e-4.
func fineGrid(coarse []float64, eta float64) ([]string, error) {
	i := indexRate(coarse, eta)
	if i < 0 {
		return nil, fmt.Errorf("η* %g is not in the coarse grid %v", eta, coarse)
	}
	lo, hi := eta, eta
	if i > 0 {
		lo = coarse[i-1]
	}
	if i < len(coarse)-1 {
		hi = coarse[i+1]
	}
	var out []string
	for k := int(math.Floor(math.Log10(lo))) - 1; k <= int(math.Ceil(math.Log10(hi))); k++ {
		for m := 1; m <= 9; m++ {
			s := fmt.Sprintf("%de%d", m, k)
			v, _ := strconv.ParseFloat(s, 64)
			if v > lo && v < hi && !sameRate(v, lo) && !sameRate(v, hi) && indexRate(coarse, v) < 0 {
				out = append(out, s)
			}
		}
	}
	return out, nil
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
	var seeds []int64
	for _, f := range strings.Fields(strings.ReplaceAll(*seedList, ",", " ")) {
		s, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return fmt.Errorf("--seeds: %q is not an integer", f)
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
func selectSweep(dir string, rates []float64, seeds []int64, coarse []float64) (*Sweep, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", dir, err)
	}
	type key struct {
		rate int
		seed int64
	}
	found := map[key]Run{}
	for _, e := range entries {
		sub := filepath.Join(dir, e.Name())
		if !e.IsDir() || !exists(filepath.Join(sub, "summary.json")) {
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
	stats := rateStats(runs)
	star := etaStar(stats)
	if star < 0 {
		return nil, fmt.Errorf("%s: a seed diverged at every rate, so there is no η*; lower the rates", dir)
	}
	sw := &Sweep{
		Optimizer: first.Optimizer, Grouped: first.Grouped, Model: first.Model, Task: first.Task, Adapter: first.Adapter,
		Selection: "eta_star: the rate with the lowest mean over seeds of best_val_loss; a diverged seed counts as +inf (mean null); ties go to the smaller rate",
		Seeds:     seeds, CoarseRates: coarse, EtaStar: stats[star].LR,
	}
	var coarseStats []RateStats
	for _, st := range stats {
		sr := SweepRate{LR: st.LR, DivergedSeeds: st.Diverged}
		if coarse != nil {
			if indexRate(coarse, st.LR) >= 0 {
				sr.Stage = "coarse"
				coarseStats = append(coarseStats, st)
			} else {
				sr.Stage = "fine"
				sw.FineRates = append(sw.FineRates, st.LR)
			}
		}
		if !math.IsInf(st.Score, 1) {
			sr.MeanBestVal = ptr(st.Score)
			if !math.IsNaN(st.StdBest) {
				sr.StdBestVal = ptr(st.StdBest)
			}
		}
		for _, r := range st.Runs {
			rel, err := filepath.Rel(dir, r.Dir)
			if err != nil {
				rel = r.Dir
			}
			sr.Seeds = append(sr.Seeds, SweepSeed{Seed: r.Seed, Dir: rel, Diverged: r.Diverged, BestValLoss: r.BestValLoss, LastValLoss: r.LastValLoss})
		}
		sw.Rates = append(sw.Rates, sr)
	}
	if i := etaStar(coarseStats); i >= 0 {
		sw.CoarseEta = ptr(coarseStats[i].LR)
	}
	return sw, nil
}

func containsSeed(seeds []int64, s int64) bool {
	for _, x := range seeds {
		if x == s {
			return true
		}
	}
	return false
}

func ptr(v float64) *float64 { return &v }
