package synth

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/meazo-go/meazo/internal/parallel"
	"github.com/meazo-go/meazo/internal/stats"
	"github.com/meazo-go/meazo/plot"
	"github.com/meazo-go/meazo/zo"
)

// The 9-dimensional problems (Zhang et al. 2024, used by Orvieto et al. 2025
// App. D): three 3×3 blocks, each a random rotation of the listed eigenvalues.
var quadProblems = []struct {
	name string
	eig  [][]float64
}{
	{"heterogeneous", [][]float64{{1, 2, 3}, {99, 100, 101}, {4998, 4999, 5000}}},
	{"homogeneous", [][]float64{{1, 99, 4998}, {2, 100, 4999}, {3, 101, 5000}}},
}

var quadMethods = []string{"zo-sgd", "zo-adam", "meazo"}

// quadScheme is an update scheme: every coordinate at once (gd), or one
// block after the other (bcgd).
type quadScheme struct {
	name string
	mode zo.Mode
}

var quadSchemes = []quadScheme{{"gd", zo.Joint}, {"bcgd", zo.Cyclic}}

// capLog bounds log10 F of diverged runs so that means stay finite.
const capLog = 10.0

// meanStd is the mean and the (population) standard deviation of the seeds'
// values that the figures and tables show.
func meanStd(xs []float64) (float64, float64) { return stats.MeanStd(xs, 0) }

// quadRun returns log10 F(x_t) for t = 0..steps (capped at capLog).
func quadRun(q *quadratic, mode zo.Mode, method string, lr, eps float64, seed uint64, steps int) ([]float64, error) {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	x0 := make([]float64, q.d)
	for i := range x0 {
		x0[i] = rng.NormFloat64()
	}
	lay := newLayout(q.d, q.blocks)
	params := lay.split(x0)
	opt, err := newOptimizer(optimizerSettings{name: method, lr: lr})
	if err != nil {
		return nil, err
	}
	eng, err := zo.New(params, opt, zo.Config{Eps: eps, Q: 1, Seed: seed, Mode: mode, Workers: 1})
	if err != nil {
		return nil, err
	}
	f := lay.objective(q)
	logs := make([]float64, steps+1)
	logs[0] = math.Log10(f(params))
	for t := 1; t <= steps; t++ {
		l := capLog
		if logs[t-1] < capLog {
			if _, err := eng.Step(zo.Func(f)); err == nil {
				l = math.Log10(f(params))
			}
		}
		if math.IsNaN(l) || l > capLog {
			l = capLog
		}
		logs[t] = l
	}
	return logs, nil
}

// writeQuadratics runs every problem under every scheme, method, rate and
// seed, and writes each setting's curves and robustness figure, the
// robustness CSV and its table in summary.
func writeQuadratics(cfg PaperConfig, out string, summary, log io.Writer) error {
	fmt.Fprintf(summary, "# Synthetic quadratics (9-d, %d seeds, %d steps, q = 1, eps = %g)\n\n", cfg.Seeds, cfg.Steps, cfg.Eps)
	fmt.Fprintf(summary, "Best learning rate per method (lowest mean log10 F at the last step); final log10 F mean ± std over seeds;\n")
	fmt.Fprintf(summary, "good rates = grid rates whose final mean log10 F is at least 3 below the initial one (F reduced 1000×),\n")
	fmt.Fprintf(summary, "a measure of how flat the method is across step sizes. A run that diverges (F infinite or NaN, or log10 F past %g)\n", capLog)
	fmt.Fprintf(summary, "counts as log10 F = %g from there on, in the means and in quad_robustness.csv: a %g there is a divergence, not a measurement.\n\n", capLog, capLog)
	fmt.Fprintf(summary, "| problem | scheme | method | best lr | final log10 F | good rates |\n|---|---|---|---|---|---|\n")
	robust := [][]string{{"problem", "scheme", "method", "lr", "mean_log10_final_F", "std_log10_final_F"}}
	for pi, prob := range quadProblems {
		q := rotatedBlocks(prob.eig, rand.New(rand.NewPCG(uint64(pi)+1, 2025)))
		for _, sch := range quadSchemes {
			fmt.Fprintf(log, "quadratic %s %s ...\n", prob.name, sch.name)
			runs, err := runQuadSetting(cfg, q, sch.mode)
			if err != nil {
				return err
			}
			rows, err := runs.report(prob.name, sch, filepath.Join(out, fmt.Sprintf("quad_%s_%s", prob.name, sch.name)), summary)
			if err != nil {
				return err
			}
			robust = append(robust, rows...)
		}
	}
	fmt.Fprintln(summary)
	return writeCSV(filepath.Join(out, "quad_robustness.csv"), robust)
}

// quadRuns are one problem's runs under one scheme: log10 F per step of
// every method, rate and seed.
type quadRuns struct {
	cfg  PaperConfig
	logs [][]float64 // [(method·rates + rate)·seeds + seed][step]
}

// runQuadSetting runs every method, rate and seed on q in parallel.
func runQuadSetting(cfg PaperConfig, q *quadratic, mode zo.Mode) (*quadRuns, error) {
	type key struct{ m, l, s int }
	var keys []key
	for m := range quadMethods {
		for l := range cfg.LRs {
			for s := range cfg.Seeds {
				keys = append(keys, key{m, l, s})
			}
		}
	}
	r := &quadRuns{cfg: cfg, logs: make([][]float64, len(keys))}
	errs := make([]error, len(keys))
	parallel.For(len(keys), 0, func(i int) {
		k := keys[i]
		r.logs[i], errs[i] = quadRun(q, mode, quadMethods[k.m], cfg.LRs[k.l], cfg.Eps, uint64(k.s)+1, cfg.Steps)
	})
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return r, nil
}

// seeds returns method m's log10 F at rate l and step t, one per seed.
func (r *quadRuns) seeds(m, l, t int) []float64 {
	v := make([]float64, r.cfg.Seeds)
	for s := range v {
		v[s] = r.logs[(m*len(r.cfg.LRs)+l)*r.cfg.Seeds+s][t]
	}
	return v
}

// report writes the setting's curves (CSV and SVG, each method at its best
// rate) and robustness figure (final F against the rate) at base, and a
// line per method in summary; it returns the setting's rows of the
// robustness CSV.
func (r *quadRuns) report(problem string, sch quadScheme, base string, summary io.Writer) ([][]string, error) {
	cfg := r.cfg
	var curves, robSeries []plot.Series
	var robust [][]string
	curveCSV := [][]string{{"step"}}
	stride := max(1, cfg.Steps/400)
	for t := 0; t <= cfg.Steps; t += stride {
		curveCSV = append(curveCSV, []string{strconv.Itoa(t)})
	}
	for m, method := range quadMethods {
		rs, finals := r.robustness(m)
		robSeries = append(robSeries, rs)
		for l, lr := range cfg.LRs {
			robust = append(robust, []string{problem, sch.name, method, fmtG(lr), fmtG(finals[l][0]), fmtG(finals[l][1])})
		}
		best := 0
		for l := range finals {
			if finals[l][0] < finals[best][0] {
				best = l
			}
		}
		f0, _ := meanStd(r.seeds(m, best, 0))
		flat := 0
		for _, f := range finals {
			if f[0] <= f0-3 {
				flat++
			}
		}
		mu, sd := meanStd(r.seeds(m, best, cfg.Steps))
		fmt.Fprintf(summary, "| %s | %s | %s | %g | %.2f ± %.2f | %d/%d |\n", problem, sch.name, method, cfg.LRs[best], mu, sd, flat, len(cfg.LRs))
		curves = append(curves, r.curve(m, best, stride, curveCSV))
	}
	if err := writeCSV(base+"_curves.csv", curveCSV); err != nil {
		return nil, err
	}
	fig := &plot.Figure{Title: fmt.Sprintf("%s, %s: F at the best lr (mean ± std of log10 over %d seeds)", problem, strings.ToUpper(sch.name), cfg.Seeds),
		XLabel: "step", YLabel: "F(x)", LogY: true, Series: curves}
	if err := fig.WriteFile(base + "_curves.svg"); err != nil {
		return nil, err
	}
	fig = &plot.Figure{Title: fmt.Sprintf("%s, %s: final F after %d steps vs learning rate", problem, strings.ToUpper(sch.name), cfg.Steps),
		XLabel: "learning rate", YLabel: "final F(x)", LogX: true, LogY: true, Series: robSeries}
	return robust, fig.WriteFile(base + "_robustness.svg")
}

// robustness returns method m's final F against the rate (mean ± std of
// log10 over the seeds, as F) and, per rate, that mean and std.
func (r *quadRuns) robustness(m int) (plot.Series, [][2]float64) {
	rs := plot.Series{Name: quadMethods[m]}
	finals := make([][2]float64, len(r.cfg.LRs))
	for l, lr := range r.cfg.LRs {
		mu, sd := meanStd(r.seeds(m, l, r.cfg.Steps))
		finals[l] = [2]float64{mu, sd}
		rs.X, rs.Y = append(rs.X, lr), append(rs.Y, math.Pow(10, mu))
		rs.Lo, rs.Hi = append(rs.Lo, math.Pow(10, mu-sd)), append(rs.Hi, math.Pow(10, mu+sd))
	}
	return rs, finals
}

// curve returns method m's F per step at rate best (mean ± std of log10
// over the seeds, as F), adding its columns to the curves' CSV rows (every
// stride steps).
func (r *quadRuns) curve(m, best, stride int, rows [][]string) plot.Series {
	method := quadMethods[m]
	cs := plot.Series{Name: fmt.Sprintf("%s (lr %g)", method, r.cfg.LRs[best])}
	rows[0] = append(rows[0], method+"_mean_log10F", method+"_std_log10F")
	row := 1
	for t := 0; t <= r.cfg.Steps; t += stride {
		mu, sd := meanStd(r.seeds(m, best, t))
		rows[row] = append(rows[row], fmtG(mu), fmtG(sd))
		row++
		cs.X, cs.Y = append(cs.X, float64(t)), append(cs.Y, math.Pow(10, mu))
		cs.Lo, cs.Hi = append(cs.Lo, math.Pow(10, mu-sd)), append(cs.Hi, math.Pow(10, mu+sd))
	}
	return cs
}
