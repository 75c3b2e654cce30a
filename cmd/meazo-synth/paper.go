package main

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/meazo-go/meazo/internal/cli"
	"github.com/meazo-go/meazo/internal/outpath"
	"github.com/meazo-go/meazo/plot"
	"github.com/meazo-go/meazo/zo"
)

// paperConfig sizes the experiments; quick shrinks them for tests.
type paperConfig struct {
	seeds, steps int       // quadratics: seeds per setting, steps per run
	lrs          []float64 // quadratics: learning-rate grid
	dims         []int     // second-moment tracking: dimensions
	trackSteps   int       // second-moment tracking: step cap
	eps          float64
}

// runPaper runs the paper subcommand: the files go to --out; progress, the
// summary, flag errors and -h text to logw.
func runPaper(args []string, logw io.Writer) error {
	fs := newFlags("paper", "--out DIR [--quick]", logw)
	out := fs.String("out", "", "output directory (created)")
	quick := fs.Bool("quick", false, "small version (3 seeds, 300 steps, 4 rates, d = 9 and 25) for a smoke test")
	if err := cli.Parse(fs, args); err != nil {
		return cli.Usage(err)
	}
	if *out == "" {
		return cli.Usage(fmt.Errorf("--out is required"))
	}
	if err := outpath.Check("--out", *out); err != nil {
		return err
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	cfg := paperConfig{
		seeds: 10, steps: 2000,
		lrs:  []float64{1e-6, 5e-6, 1e-5, 5e-5, 1e-4, 5e-4, 1e-3, 5e-3, 1e-2, 5e-2, 1e-1, 5e-1},
		dims: []int{9, 25, 49, 100, 1024}, trackSteps: 20000, eps: 1e-3,
	}
	if *quick {
		cfg.seeds, cfg.steps, cfg.lrs = 3, 300, []float64{1e-4, 1e-3, 1e-2, 1e-1}
		cfg.dims, cfg.trackSteps = []int{9, 25}, 1500
	}
	var summary strings.Builder
	if err := runQuadratics(cfg, *out, &summary, logw); err != nil {
		return err
	}
	if err := runTracking(cfg, *out, &summary, logw); err != nil {
		return err
	}
	fmt.Fprint(logw, summary.String())
	return plot.WriteFileAtomic(filepath.Join(*out, "summary.md"), []byte(summary.String()))
}

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

var quadSchemes = []struct {
	name string
	mode zo.Mode
}{{"gd", zo.Joint}, {"bcgd", zo.Cyclic}}

// capLog bounds log10 F of diverged runs so that means stay finite.
const capLog = 10.0

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

func meanStd(xs []float64) (float64, float64) {
	var m, s float64
	for _, x := range xs {
		m += x
	}
	m /= float64(len(xs))
	for _, x := range xs {
		s += (x - m) * (x - m)
	}
	return m, math.Sqrt(s / float64(len(xs)))
}

// parallel runs f(0..n-1) on GOMAXPROCS goroutines; f writes disjoint outputs.
func parallel(n int, f func(i int)) {
	var wg sync.WaitGroup
	next := make(chan int, n)
	for i := range n {
		next <- i
	}
	close(next)
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				f(i)
			}
		}()
	}
	wg.Wait()
}

func runQuadratics(cfg paperConfig, out string, summary, logw io.Writer) error {
	fmt.Fprintf(summary, "# Synthetic quadratics (9-d, %d seeds, %d steps, q = 1, eps = %g)\n\n", cfg.seeds, cfg.steps, cfg.eps)
	fmt.Fprintf(summary, "Best learning rate per method (lowest mean log10 F at the last step); final log10 F mean ± std over seeds;\n")
	fmt.Fprintf(summary, "good rates = grid rates whose final mean log10 F is at least 3 below the initial one (F reduced 1000×),\n")
	fmt.Fprintf(summary, "a measure of how flat the method is across step sizes.\n\n")
	fmt.Fprintf(summary, "| problem | scheme | method | best lr | final log10 F | good rates |\n|---|---|---|---|---|---|\n")
	var robust [][]string
	robust = append(robust, []string{"problem", "scheme", "method", "lr", "mean_log10_final_F", "std_log10_final_F"})
	for pi, prob := range quadProblems {
		q := rotatedBlocks(prob.eig, rand.New(rand.NewPCG(uint64(pi)+1, 2025)))
		for _, sch := range quadSchemes {
			fmt.Fprintf(logw, "quadratic %s %s ...\n", prob.name, sch.name)
			// runs[m][l][s]
			type key struct{ m, l, s int }
			var keys []key
			for m := range quadMethods {
				for l := range cfg.lrs {
					for s := range cfg.seeds {
						keys = append(keys, key{m, l, s})
					}
				}
			}
			res := make([][]float64, len(keys))
			errs := make([]error, len(keys))
			parallel(len(keys), func(i int) {
				k := keys[i]
				res[i], errs[i] = quadRun(q, sch.mode, quadMethods[k.m], cfg.lrs[k.l], cfg.eps, uint64(k.s)+1, cfg.steps)
			})
			for _, err := range errs {
				if err != nil {
					return err
				}
			}
			at := func(m, l, s int) []float64 { return res[(m*len(cfg.lrs)+l)*cfg.seeds+s] }
			var curves []plot.Series
			var robSeries []plot.Series
			curveCSV := [][]string{{"step"}}
			stride := max(1, cfg.steps/400)
			for t := 0; t <= cfg.steps; t += stride {
				curveCSV = append(curveCSV, []string{strconv.Itoa(t)})
			}
			for m, method := range quadMethods {
				finals := make([]float64, len(cfg.lrs))
				rs := plot.Series{Name: method}
				for l, lr := range cfg.lrs {
					fin := make([]float64, cfg.seeds)
					for s := range fin {
						fin[s] = at(m, l, s)[cfg.steps]
					}
					mu, sd := meanStd(fin)
					finals[l] = mu
					robust = append(robust, []string{prob.name, sch.name, method, fmtG(lr), fmtG(mu), fmtG(sd)})
					rs.X, rs.Y = append(rs.X, lr), append(rs.Y, math.Pow(10, mu))
					rs.Lo, rs.Hi = append(rs.Lo, math.Pow(10, mu-sd)), append(rs.Hi, math.Pow(10, mu+sd))
				}
				robSeries = append(robSeries, rs)
				best := 0
				for l := range finals {
					if finals[l] < finals[best] {
						best = l
					}
				}
				var start []float64
				for s := range cfg.seeds {
					start = append(start, at(m, best, s)[0])
				}
				f0, _ := meanStd(start)
				flat := 0
				for _, f := range finals {
					if f <= f0-3 {
						flat++
					}
				}
				fin := make([]float64, cfg.seeds)
				for s := range fin {
					fin[s] = at(m, best, s)[cfg.steps]
				}
				mu, sd := meanStd(fin)
				fmt.Fprintf(summary, "| %s | %s | %s | %g | %.2f ± %.2f | %d/%d |\n", prob.name, sch.name, method, cfg.lrs[best], mu, sd, flat, len(cfg.lrs))
				cs := plot.Series{Name: fmt.Sprintf("%s (lr %g)", method, cfg.lrs[best])}
				curveCSV[0] = append(curveCSV[0], method+"_mean_log10F", method+"_std_log10F")
				row := 1
				for t := 0; t <= cfg.steps; t += stride {
					vals := make([]float64, cfg.seeds)
					for s := range vals {
						vals[s] = at(m, best, s)[t]
					}
					mu, sd := meanStd(vals)
					curveCSV[row] = append(curveCSV[row], fmtG(mu), fmtG(sd))
					row++
					cs.X, cs.Y = append(cs.X, float64(t)), append(cs.Y, math.Pow(10, mu))
					cs.Lo, cs.Hi = append(cs.Lo, math.Pow(10, mu-sd)), append(cs.Hi, math.Pow(10, mu+sd))
				}
				curves = append(curves, cs)
			}
			base := filepath.Join(out, fmt.Sprintf("quad_%s_%s", prob.name, sch.name))
			if err := writeCSV(base+"_curves.csv", curveCSV); err != nil {
				return err
			}
			fig := &plot.Figure{Title: fmt.Sprintf("%s, %s: F at the best lr (mean ± std of log10 over %d seeds)", prob.name, strings.ToUpper(sch.name), cfg.seeds),
				XLabel: "step", YLabel: "F(x)", LogY: true, Series: curves}
			if err := fig.WriteFile(base + "_curves.svg"); err != nil {
				return err
			}
			fig = &plot.Figure{Title: fmt.Sprintf("%s, %s: final F after %d steps vs learning rate", prob.name, strings.ToUpper(sch.name), cfg.steps),
				XLabel: "learning rate", YLabel: "final F(x)", LogX: true, LogY: true, Series: robSeries}
			if err := fig.WriteFile(base + "_robustness.svg"); err != nil {
				return err
			}
		}
	}
	fmt.Fprintln(summary)
	return writeCSV(filepath.Join(out, "quad_robustness.csv"), robust)
}

// trackProblem: √d blocks of size √d, block b's eigenvalues spread ±10%
// around the b-th of √d log-spaced centres from 1 to 1000, randomly rotated.
func trackProblem(d int) (*quadratic, error) {
	k := int(math.Round(math.Sqrt(float64(d))))
	if k*k != d || k < 2 {
		return nil, fmt.Errorf("d = %d is not a square ≥ 4", d)
	}
	eig := make([][]float64, k)
	for b := range eig {
		c := math.Pow(10, 3*float64(b)/float64(k-1))
		eig[b] = make([]float64, k)
		for i := range eig[b] {
			eig[b][i] = c * (0.9 + 0.2*float64(i)/float64(k-1))
		}
	}
	return rotatedBlocks(eig, rand.New(rand.NewPCG(uint64(d), 7))), nil
}

// trackSample is one recorded step of a tracking run.
type trackSample struct {
	step        int
	f, grad2q   float64   // F(x_t), ‖∇F(x_t)‖²/q
	vq          []float64 // bias-corrected v̂ quantiles over coordinates: min, 25%, 50%, 75%, max (MEAZO: its scalar ×5)
	spreadLog10 float64   // log10(max v̂ / min v̂)
}

func quantiles(v []float64) []float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	at := func(p float64) float64 { return s[int(math.Round(p*float64(len(s)-1)))] }
	return []float64{at(0), at(0.25), at(0.5), at(0.75), at(1)}
}

// trackRun runs one method ("fo-adam", "zo-adam", "meazo") until F < 1e-3 or
// maxSteps, recording every `every` steps.
func trackRun(q *quadratic, method string, qDirs, maxSteps, every int, eps float64) ([]trackSample, error) {
	const lr, beta2 = 1e-4, 0.999
	rng := rand.New(rand.NewPCG(uint64(q.d), 11))
	x := make([]float64, q.d)
	for i := range x {
		x[i] = rng.NormFloat64() / math.Sqrt(float64(q.d))
	}
	grad := make([]float64, q.d)
	vhat := make([]float64, q.d)
	record := func(t int, f float64, xs []float64, v []float64) trackSample {
		q.grad(xs, grad)
		var g2 float64
		for _, g := range grad {
			g2 += g * g
		}
		qs := quantiles(v)
		return trackSample{t, f, g2 / float64(qDirs), qs, math.Log10(qs[4] / qs[0])}
	}
	var out []trackSample
	if method == "fo-adam" {
		m, v := make([]float64, q.d), make([]float64, q.d)
		for t := 1; t <= maxSteps; t++ {
			q.grad(x, grad)
			for i, g := range grad {
				m[i] = 0.9*m[i] + 0.1*g
				v[i] = beta2*v[i] + (1-beta2)*g*g
				vhat[i] = v[i] / (1 - math.Pow(beta2, float64(t)))
				x[i] -= lr * (m[i] / (1 - math.Pow(0.9, float64(t)))) / (math.Sqrt(vhat[i]) + 1e-8)
			}
			f := q.value(x)
			if t%every == 0 || f < 1e-3 {
				out = append(out, record(t, f, x, vhat))
			}
			if f < 1e-3 {
				break
			}
		}
		return out, nil
	}
	lay := newLayout(q.d, [][]int{seq(q.d)})
	params := lay.split(x)
	opt, err := newOptimizer(optimizerSettings{name: method, lr: lr})
	if err != nil {
		return nil, err
	}
	eng, err := zo.New(params, opt, zo.Config{Eps: eps, Q: qDirs, Seed: 1, Workers: 1})
	if err != nil {
		return nil, err
	}
	xf := make([]float64, q.d)
	obj := zo.Func(func(p [][]float32) float64 {
		for i, v := range p[0] {
			xf[i] = float64(v)
		}
		return q.value(xf)
	})
	for t := 1; t <= maxSteps; t++ {
		st, err := eng.Step(obj)
		if err != nil {
			return nil, err
		}
		f := obj(params)
		if t%every == 0 || f < 1e-3 {
			if method == "meazo" {
				for i := range vhat {
					vhat[i] = st.V[0] / (1 - math.Pow(beta2, float64(t)))
				}
			} else {
				v := opt.(*zo.Adam).SecondMoment(0)
				for i := range vhat {
					vhat[i] = float64(v[i]) / (1 - math.Pow(beta2, float64(t)))
				}
			}
			out = append(out, record(t, f, lay.flat(params), vhat))
		}
		if f < 1e-3 {
			break
		}
	}
	return out, nil
}

func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

func runTracking(cfg paperConfig, out string, summary, logw io.Writer) error {
	const qDirs = 10
	methods := []string{"fo-adam", "zo-adam", "meazo"}
	fmt.Fprintf(summary, "# Second-moment tracking (eta = 1e-4, q = %d, until F < 1e-3 or %d steps)\n\n", qDirs, cfg.trackSteps)
	fmt.Fprintf(summary, "spread = median over recorded steps ≥ 500 of log10(max_i v̂_i / min_i v̂_i); zo/‖∇F‖²/q = median of median_i v̂_i divided by ‖∇F‖²/q.\n\n")
	fmt.Fprintf(summary, "| d | method | steps | final F | spread | v̂ / (‖∇F‖²/q) |\n|---|---|---|---|---|---|\n")
	type job struct{ d, m int }
	var jobs []job
	for di := range cfg.dims {
		for m := range methods {
			jobs = append(jobs, job{di, m})
		}
	}
	res := make([][]trackSample, len(jobs))
	errs := make([]error, len(jobs))
	fmt.Fprintf(logw, "second-moment tracking ...\n")
	parallel(len(jobs), func(i int) {
		q, err := trackProblem(cfg.dims[jobs[i].d])
		if err != nil {
			errs[i] = err
			return
		}
		res[i], errs[i] = trackRun(q, methods[jobs[i].m], qDirs, cfg.trackSteps, max(1, cfg.trackSteps/1000), cfg.eps)
	})
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	for di, d := range cfg.dims {
		rows := [][]string{{"method", "step", "F", "grad_norm2_over_q", "vhat_min", "vhat_q25", "vhat_median", "vhat_q75", "vhat_max"}}
		var series []plot.Series
		colors := map[string]string{"fo-adam": "#1f77b4", "zo-adam": "#d62728", "meazo": "#2ca02c"}
		for m, method := range methods {
			smp := res[di*len(methods)+m]
			var spreads, ratios []float64
			s := plot.Series{Name: method + " v̂ median", Color: colors[method]}
			band := plot.Series{Color: colors[method]}
			g := plot.Series{Name: "‖∇F‖²/q (" + method + " run)", Color: "#000000", Dashed: true}
			for _, p := range smp {
				row := []string{method, strconv.Itoa(p.step), fmtG(p.f), fmtG(p.grad2q)}
				for _, v := range p.vq {
					row = append(row, fmtG(v))
				}
				rows = append(rows, row)
				x := float64(p.step)
				s.X, s.Y = append(s.X, x), append(s.Y, p.vq[2])
				band.X, band.Y = append(band.X, x), append(band.Y, math.NaN())
				band.Lo, band.Hi = append(band.Lo, p.vq[0]), append(band.Hi, p.vq[4])
				g.X, g.Y = append(g.X, x), append(g.Y, p.grad2q)
				if p.step >= 500 {
					spreads = append(spreads, p.spreadLog10)
					ratios = append(ratios, p.vq[2]/p.grad2q)
				}
			}
			if method == "meazo" {
				s.Name = "meazo v̂"
			} else {
				band.Name = method + " v̂ min..max"
				series = append(series, band)
			}
			series = append(series, s)
			if method == "zo-adam" {
				series = append(series, g)
			}
			last := smp[len(smp)-1]
			fmt.Fprintf(summary, "| %d | %s | %d | %.3g | %.2f | %.3g |\n", d, method, last.step, last.f, median(spreads), median(ratios))
		}
		base := filepath.Join(out, fmt.Sprintf("vtrack_d%d", d))
		if err := writeCSV(base+".csv", rows); err != nil {
			return err
		}
		fig := &plot.Figure{Title: fmt.Sprintf("second moments, d = %d (bias-corrected v̂ over coordinates)", d),
			XLabel: "step", YLabel: "v̂", LogY: true, Width: 760, Height: 460, Series: series}
		if err := fig.WriteFile(base + ".svg"); err != nil {
			return err
		}
	}
	fmt.Fprintln(summary)
	return nil
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

func fmtG(x float64) string { return strconv.FormatFloat(x, 'g', 6, 64) }

func writeCSV(path string, rows [][]string) error {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	if err := w.WriteAll(rows); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return plot.WriteFileAtomic(path, b.Bytes())
}
