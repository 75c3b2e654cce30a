// Package sweep is the paper's two-stage learning-rate search over studies of
// many experiments (docs/SWEEPS.md): reading run directories (docs/RUNDIR.md),
// the selection rule (η*), the fine grid, sweep.json, the study file, and the
// executors that run a study locally or on Slurm. cmd/meazo-sweep is its
// command line; scripts/sweep.sh reaches the same rule through meazo-plot's
// sweep-* commands, and package results uses it for the figures and tables,
// so that every η* in the project comes from one place.
package sweep

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/meazo-go/meazo/internal/atomicfile"
	"github.com/meazo-go/meazo/internal/stats"
	"github.com/meazo-go/meazo/rundir"
	"github.com/meazo-go/meazo/train"
)

// Summary is a run's summary.json (docs/RUNDIR.md); package rundir owns the format.
type Summary = rundir.Summary

// OrNaN reads an optional number, NaN when absent.
func OrNaN(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}

// Run is one run directory with its summary. Failed marks a run that ended
// with an error (no result): the selection treats its rate like a diverged
// one (+∞) without counting it as diverged.
type Run struct {
	Dir string
	Summary
	Failed bool
	// Pending marks a Failed run that has no result yet rather than none
	// at all (new, queued, running, interrupted or unfinished): a study in
	// progress, whose figures say so.
	Pending bool
	Variant string // the study's label of the run's variant (Variant.Title); "" for none
}

// Name is the run's directory name, for titles and messages.
func (r *Run) Name() string { return filepath.Base(filepath.Clean(r.Dir)) }

// LoadSummary reads dir/summary.json and checks the fields every reader needs
// (rundir.ReadSummary).
func LoadSummary(dir string) (Run, error) {
	s, err := rundir.ReadSummary(dir)
	if err != nil {
		return Run{}, err
	}
	return Run{Dir: dir, Summary: s}, nil
}

// Method identifies what a figure or table compares: an optimizer, grouped
// or not, in a study's variant (β1 = 0, sphere noise, …) or none.
type Method struct {
	Optimizer string
	Grouped   bool
	Variant   string // Variant.Title; "" for none
}

func (r *Run) Method() Method { return Method{r.Optimizer, r.Grouped, r.Variant} }

// MethodOrder is the paper's order of optimizers.
var MethodOrder = []string{"meazo", "zo-sgd", "zo-adam", "radazo", "fzoo"}

var displayNames = map[string]string{"meazo": "MEAZO", "zo-sgd": "ZO-SGD", "zo-adam": "ZO-Adam", "radazo": "R-AdaZO", "fzoo": "FZOO"}

func (m Method) String() string {
	name, ok := displayNames[m.Optimizer]
	if !ok {
		name = m.Optimizer
	}
	var qualifiers []string
	if m.Grouped {
		qualifiers = append(qualifiers, "grouped")
	}
	if m.Variant != "" {
		qualifiers = append(qualifiers, m.Variant)
	}
	if len(qualifiers) > 0 {
		name += " (" + strings.Join(qualifiers, ", ") + ")"
	}
	return name
}

// OptimizerRank is an optimizer's place in the paper's order (MethodOrder);
// unknown names come after every known one.
func OptimizerRank(optimizer string) int {
	for i, o := range MethodOrder {
		if o == optimizer {
			return i
		}
	}
	return len(MethodOrder)
}

// SortMethods orders methods as the paper lists them, unknown names last;
// the variants of one method keep their order in ms (the study's order).
func SortMethods(ms []Method) {
	sort.SliceStable(ms, func(i, j int) bool {
		a, b := ms[i], ms[j]
		if ra, rb := OptimizerRank(a.Optimizer), OptimizerRank(b.Optimizer); ra != rb {
			return ra < rb
		}
		if a.Optimizer != b.Optimizer {
			return a.Optimizer < b.Optimizer
		}
		return !a.Grouped && b.Grouped
	})
}

// Setting checks that the runs come from one experiment (model, task and
// adapter): a figure, a table or a sweep compares optimizers or rates, which
// means nothing across experiments. It returns the experiment as titles name
// it ("Llama-3.2-1B, squad, lora").
func Setting(runs []Run) (string, error) {
	first := runs[0]
	for _, r := range runs[1:] {
		if r.Model != first.Model || r.Task != first.Task || r.Adapter != first.Adapter {
			return "", fmt.Errorf("runs from different experiments: %s is %s/%s/%s, %s is %s/%s/%s; plot them separately",
				first.Dir, first.Model, first.Task, first.Adapter, r.Dir, r.Model, r.Task, r.Adapter)
		}
	}
	var parts []string
	if first.Model != "" {
		parts = append(parts, filepath.Base(first.Model))
	}
	task := first.Task
	if first.Model == train.DemoModelName { // scored as SST-2, but not SST-2
		task = train.DemoTaskLabel
	}
	for _, p := range []string{task, first.Adapter} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, ", "), nil
}

// ByMethod groups runs by method, in the paper's order.
func ByMethod(runs []Run) ([]Method, map[Method][]Run) {
	groups := map[Method][]Run{}
	var ms []Method
	for _, r := range runs {
		m := r.Method()
		if _, ok := groups[m]; !ok {
			ms = append(ms, m)
		}
		groups[m] = append(groups[m], r)
	}
	SortMethods(ms)
	return ms, groups
}

// MeanStd returns the mean and the sample standard deviation (n−1 in the
// denominator) of the finite values in xs, and how many there were. The
// standard deviation is NaN below two values: one seed has no spread to show.
func MeanStd(xs []float64) (mean, std float64, n int) {
	finite := slices.DeleteFunc(slices.Clone(xs), func(x float64) bool { return math.IsNaN(x) || math.IsInf(x, 0) })
	mean, std = stats.MeanStd(finite, 1)
	return mean, std, len(finite)
}

// RateStats is one learning rate of one method with the runs at it (one per
// seed), as the paper's learning-rate selection sees it.
type RateStats struct {
	LR   float64
	Runs []Run
	// Score is the selection criterion: the mean over seeds of the best
	// validation loss, +Inf when any seed diverged, failed or has no
	// validation loss.
	Score float64
	// MeanBest/StdBest and MeanLast/StdLast are over the seeds that neither
	// diverged nor failed (what the robustness figure draws); Diverged and
	// Failed count the others.
	MeanBest, StdBest, MeanLast, StdLast float64
	Diverged, Failed                     int
}

// RateStatsOf groups one method's runs by learning rate, in increasing order.
func RateStatsOf(runs []Run) []RateStats {
	byLR := map[float64][]Run{}
	for _, r := range runs {
		byLR[r.LR] = append(byLR[r.LR], r)
	}
	var out []RateStats
	for lr, rs := range byLR {
		sort.Slice(rs, func(i, j int) bool { return rs[i].Seed < rs[j].Seed })
		st := RateStats{LR: lr, Runs: rs}
		var best, last, scores []float64
		for _, r := range rs {
			b := OrNaN(r.BestValLoss)
			if r.Diverged || r.Failed || math.IsNaN(b) {
				b = math.Inf(1)
			}
			scores = append(scores, b)
			if r.Failed {
				st.Failed++
				continue
			}
			if r.Diverged {
				st.Diverged++
				continue
			}
			best = append(best, b)
			last = append(last, OrNaN(r.LastValLoss))
		}
		// Summed in increasing order, not the seeds': two rates whose
		// seeds' losses are the same values in another order tie exactly,
		// and the tie goes to the smaller rate, as EtaStar says.
		slices.Sort(scores)
		var sum float64
		for _, x := range scores {
			sum += x
		}
		st.Score = sum / float64(len(rs))
		st.MeanBest, st.StdBest, _ = MeanStd(best)
		st.MeanLast, st.StdLast, _ = MeanStd(last)
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].LR < out[j].LR })
	return out
}

// EtaStar returns the index of the rate with the lowest score (the paper's
// η*: lowest mean best validation loss over seeds, diverged or failed
// counting as +∞), the smaller rate on a tie, or -1 when every rate has a
// diverged or failed seed.
func EtaStar(rates []RateStats) int {
	best := -1
	for i, r := range rates {
		if math.IsInf(r.Score, 1) || math.IsNaN(r.Score) {
			continue
		}
		if best < 0 || r.Score < rates[best].Score {
			best = i
		}
	}
	return best
}

// ParseRates reads a list of learning rates separated by spaces or commas;
// what names the list in messages (a flag or a key).
func ParseRates(what, list string) ([]float64, error) {
	var rates []float64
	var spelt []string // each rate as written, for the message about a repeat
	for _, f := range strings.FieldsFunc(list, func(r rune) bool { return r == ' ' || r == ',' || r == '\t' || r == '\n' }) {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil || !(v > 0) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("%s: %q is not a positive learning rate", what, f)
		}
		// A rate twice would be its own neighbour in FineGrid (an empty
		// fine grid) and its runs counted twice.
		if i := IndexRate(rates, v); i >= 0 {
			if spelt[i] != f {
				return nil, fmt.Errorf("%s: %s given twice (as %s before)", what, f, spelt[i])
			}
			return nil, fmt.Errorf("%s: %s given twice", what, f)
		}
		rates, spelt = append(rates, v), append(spelt, f)
	}
	if len(rates) == 0 {
		return nil, fmt.Errorf("%s: no learning rates given", what)
	}
	sort.Float64s(rates)
	return rates, nil
}

// ParseSeeds reads a list of seeds separated by spaces or commas; what names
// the list in messages.
func ParseSeeds(what, list string) ([]uint64, error) {
	var seeds []uint64
	for _, f := range strings.Fields(strings.ReplaceAll(list, ",", " ")) {
		s, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %q is not a non-negative integer", what, f)
		}
		if slices.Contains(seeds, s) { // its run would count as two seeds
			return nil, fmt.Errorf("%s: %d given twice", what, s)
		}
		seeds = append(seeds, s)
	}
	if len(seeds) == 0 {
		return nil, fmt.Errorf("%s: no seeds given", what)
	}
	return seeds, nil
}

// SameRate compares learning rates written in different ways ("5e-5",
// "0.00005", a trainer's round trip through JSON).
func SameRate(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(a, b) }

// IndexRate is the index of v in rates (SameRate), or -1.
func IndexRate(rates []float64, v float64) int {
	for i, r := range rates {
		if SameRate(r, v) {
			return i
		}
	}
	return -1
}

// FineGrid is the second stage of the paper's search: every m·10^k with an
// integer mantissa m in 1..9 that lies strictly between η*'s neighbours in the
// sorted coarse grid, leaving out the coarse rates themselves (already run).
// At an end of the grid only the side that has a neighbour is searched. For the
// default grid and η* = 1e-4 (neighbours 5e-5 and 5e-4): 6e-5 7e-5 8e-5 9e-5
// 2e-4 3e-4 4e-4.
func FineGrid(coarse []float64, eta float64) ([]string, error) {
	i := IndexRate(coarse, eta)
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
			if v > lo && v < hi && !SameRate(v, lo) && !SameRate(v, hi) && IndexRate(coarse, v) < 0 {
				out = append(out, RateName(v))
			}
		}
	}
	return out, nil
}

// LRString writes a learning rate for people to read (messages, tables,
// figures): 1e-4, 2.5e-4, 0.05 rather than 0.0001 or 1e-04. Directory names
// use RateName.
func LRString(v float64) string {
	if v >= 0.01 && v < 1000 {
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	return RateName(v)
}

// RateName is the one spelling of a learning rate in run directory names
// (lr=<RateName>_seed=<seed>) and in meazo-sweep's --set optimizer.lr: the
// shortest mantissa that reads back as the same number, in e-notation with a
// bare exponent (1e-2, 2.5e-4, 1e0), as the docs write the grids and
// FineGrid writes the fine rates. scripts/sweep.sh spells rates the same
// way (its rate_names; TestSweepScriptNames checks that they agree), so
// that both find the same run directory for a rate.
func RateName(v float64) string {
	mant, exp, _ := strings.Cut(strconv.FormatFloat(v, 'e', -1, 64), "e")
	e, _ := strconv.Atoi(exp) // "-02", "+00"
	return mant + "e" + strconv.Itoa(e)
}

// SweepFile is the name of a sweep directory's summary: the sweep's rates,
// seeds, runs and η*.
const SweepFile = "sweep.json"

// Sweep is sweep.json: one optimizer's search on one experiment.
type Sweep struct {
	Optimizer   string      `json:"optimizer"`
	Grouped     bool        `json:"grouped"`
	Variant     string      `json:"variant,omitempty"` // the study's label of the sweep's variant
	Model       string      `json:"model"`
	Task        string      `json:"task"`
	Adapter     string      `json:"adapter"`
	Selection   string      `json:"selection"`
	Seeds       []uint64    `json:"seeds"`
	CoarseRates []float64   `json:"coarse_rates,omitempty"`
	CoarseEta   *float64    `json:"coarse_eta_star,omitempty"`
	FineRates   []float64   `json:"fine_rates,omitempty"`
	EtaStar     float64     `json:"eta_star"`
	Rates       []SweepRate `json:"rates"`
}

// SweepRate is one learning rate of a sweep with its seeds' results.
type SweepRate struct {
	LR            float64     `json:"lr"`
	Stage         string      `json:"stage,omitempty"`    // "coarse" or "fine"
	MeanBestVal   *float64    `json:"mean_best_val_loss"` // null: a seed diverged or failed (+inf)
	StdBestVal    *float64    `json:"std_best_val_loss"`
	DivergedSeeds int         `json:"diverged_seeds"`
	FailedSeeds   int         `json:"failed_seeds,omitempty"`
	Seeds         []SweepSeed `json:"seeds"`
}

// SweepSeed is one run of a sweep.
type SweepSeed struct {
	Seed        uint64   `json:"seed"`
	Dir         string   `json:"dir"` // relative to the sweep directory
	Diverged    bool     `json:"diverged"`
	Failed      bool     `json:"failed,omitempty"`
	BestValLoss *float64 `json:"best_val_loss"`
	LastValLoss *float64 `json:"last_val_loss"`
}

// Selection is the rule, as sweep.json states it.
const Selection = "eta_star: the rate with the lowest mean over seeds of best_val_loss; a diverged or failed seed counts as +inf (mean null); ties go to the smaller rate"

// noEtaStar says why runs, a seed of which diverged or failed at every
// rate, give no η*: lower rates help diverged runs, not failed ones, whose
// cause (a missing model, a bad setting) is the same at every rate and is
// named from the first.
func noEtaStar(dir string, runs []Run) error {
	var diverged, failed int
	var first *Run
	for i, r := range runs {
		switch {
		case r.Failed:
			failed++
			if first == nil {
				first = &runs[i]
			}
		case r.Diverged:
			diverged++
		}
	}
	switch {
	case failed == 0:
		return fmt.Errorf("%s: a seed diverged at every rate, so there is no η*: lower the rates", dir)
	case diverged == 0:
		return fmt.Errorf("%s: runs failed at every rate, so there is no η*: fix the failure (the first, %s: %s) and resume; the rates are not its cause",
			dir, first.Dir, strings.TrimSpace(first.Message))
	}
	return fmt.Errorf("%s: a seed diverged or failed at every rate (runs: %d diverged, %d failed; the first failed, %s: %s), so there is no η*: lower the rates and fix the failures",
		dir, diverged, failed, first.Dir, strings.TrimSpace(first.Message))
}

// Summarize picks η* among runs (one method, every rate × seed) and describes
// the sweep as sweep.json does; dir is what the runs' "dir" is relative to,
// coarse (optional) labels each rate's stage. It fails when no rate is
// eligible.
func Summarize(dir string, runs []Run, seeds []uint64, coarse []float64) (*Sweep, error) {
	if len(runs) == 0 {
		return nil, fmt.Errorf("%s: no runs", dir)
	}
	first := runs[0]
	for _, r := range runs {
		if !r.Failed {
			first = r
			break
		}
	}
	stats := RateStatsOf(runs)
	star := EtaStar(stats)
	if star < 0 {
		return nil, noEtaStar(dir, runs)
	}
	sw := &Sweep{
		Optimizer: first.Optimizer, Grouped: first.Grouped, Variant: first.Variant, Model: first.Model, Task: first.Task, Adapter: first.Adapter,
		Selection: Selection, Seeds: seeds, CoarseRates: coarse, EtaStar: stats[star].LR,
	}
	var coarseStats []RateStats
	for _, st := range stats {
		sr := SweepRate{LR: st.LR, DivergedSeeds: st.Diverged, FailedSeeds: st.Failed}
		if coarse != nil {
			if IndexRate(coarse, st.LR) >= 0 {
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
			sr.Seeds = append(sr.Seeds, SweepSeed{Seed: r.Seed, Dir: rel, Diverged: r.Diverged, Failed: r.Failed,
				BestValLoss: r.BestValLoss, LastValLoss: r.LastValLoss})
		}
		sw.Rates = append(sw.Rates, sr)
	}
	if i := EtaStar(coarseStats); i >= 0 {
		sw.CoarseEta = ptr(coarseStats[i].LR)
	}
	return sw, nil
}

func ptr(v float64) *float64 { return &v }

// WriteFile writes sw to path as sweep.json is written (indented JSON),
// atomically, so that a reader never sees half a sweep.
func (sw *Sweep) WriteFile(path string) error {
	b, err := json.MarshalIndent(sw, "", "  ")
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return atomicfile.WriteFile(path, append(b, '\n'))
}

// ReadSweep reads a sweep.json.
func ReadSweep(path string) (*Sweep, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	var sw Sweep
	if err := json.Unmarshal(data, &sw); err != nil {
		return nil, fmt.Errorf("parse %s: %w", path, err)
	}
	return &sw, nil
}

// SelectDir is the selection of a sweep that scripts/sweep.sh ran (docs/SWEEPS.md):
// it finds the run of every (rate, seed) among dir's subdirectories by what
// their summary.json says (whatever the directory is called), checks that
// each finished and that they are one method on one experiment, and picks η*
// (Summarize). A missing or unfinished run is an error, not a +∞: the script
// runs every run before it selects, so one missing means something went wrong.
func SelectDir(dir string, rates []float64, seeds []uint64, coarse []float64) (*Sweep, error) {
	if len(rates) == 0 || len(seeds) == 0 {
		return nil, fmt.Errorf("%s: no rates or no seeds to select among", dir)
	}
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
		r, err := LoadSummary(sub)
		if err != nil {
			return nil, err
		}
		i := IndexRate(rates, r.LR)
		if i < 0 || !slices.Contains(seeds, r.Seed) {
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
	if _, err := Setting(runs); err != nil {
		return nil, err
	}
	return Summarize(dir, runs, seeds, coarse)
}
