package synth

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strconv"

	"github.com/meazo-go/meazo/internal/parallel"
	"github.com/meazo-go/meazo/internal/stats"
	"github.com/meazo-go/meazo/plot"
	"github.com/meazo-go/meazo/zo"
)

// The second-moment tracking runs: η = 1e-4, q = 10 directions, β2 = 0.999,
// until F < 1e-3 or cfg.TrackSteps steps.
const (
	trackLR, trackBeta2 = 1e-4, 0.999
	trackDirs           = 10
	trackTarget         = 1e-3
)

var trackMethods = []string{"fo-adam", "zo-adam", "meazo"}

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

// tracker records a tracking run's samples.
type tracker struct {
	q       *quadratic
	qDirs   int
	every   int
	grad, v []float64 // scratch: ∇F, and the bias-corrected v̂ of the step recorded
	samples []trackSample
}

// due says whether step t, where F = f, is recorded: every `every` steps,
// and the last one (F below the target).
func (tr *tracker) due(t int, f float64) bool { return t%tr.every == 0 || f < trackTarget }

// add records step t: F = f at xs, the bias-corrected v̂ in tr.v.
func (tr *tracker) add(t int, f float64, xs []float64) {
	tr.q.grad(xs, tr.grad)
	var g2 float64
	for _, g := range tr.grad {
		g2 += g * g
	}
	qs := stats.Quantiles(tr.v, 0, 0.25, 0.5, 0.75, 1)
	tr.samples = append(tr.samples, trackSample{t, f, g2 / float64(tr.qDirs), qs, math.Log10(qs[4] / qs[0])})
}

// trackRun runs one method ("fo-adam", "zo-adam", "meazo") until F < 1e-3 or
// maxSteps, recording every `every` steps.
func trackRun(q *quadratic, method string, qDirs, maxSteps, every int, eps float64) ([]trackSample, error) {
	rng := rand.New(rand.NewPCG(uint64(q.d), 11))
	x := make([]float64, q.d)
	for i := range x {
		x[i] = rng.NormFloat64() / math.Sqrt(float64(q.d))
	}
	tr := &tracker{q: q, qDirs: qDirs, every: every, grad: make([]float64, q.d), v: make([]float64, q.d)}
	if method == "fo-adam" {
		tr.foAdam(x, maxSteps)
		return tr.samples, nil
	}
	err := tr.zo(x, method, maxSteps, eps)
	return tr.samples, err
}

// foAdam runs first-order Adam (β1 = 0.9) from x.
func (tr *tracker) foAdam(x []float64, maxSteps int) {
	m, v := make([]float64, len(x)), make([]float64, len(x))
	for t := 1; t <= maxSteps; t++ {
		tr.q.grad(x, tr.grad)
		for i, g := range tr.grad {
			m[i] = 0.9*m[i] + 0.1*g
			v[i] = trackBeta2*v[i] + (1-trackBeta2)*g*g
			tr.v[i] = v[i] / (1 - math.Pow(trackBeta2, float64(t)))
			x[i] -= trackLR * (m[i] / (1 - math.Pow(0.9, float64(t)))) / (math.Sqrt(tr.v[i]) + 1e-8)
		}
		f := tr.q.value(x)
		if tr.due(t, f) {
			tr.add(t, f, x)
		}
		if f < trackTarget {
			return
		}
	}
}

// zo runs a ZO optimizer (zo-adam or meazo) from x with qDirs directions.
func (tr *tracker) zo(x []float64, method string, maxSteps int, eps float64) error {
	q := tr.q
	lay := newLayout(q.d, [][]int{seq(q.d)})
	params := lay.split(x)
	opt, err := newOptimizer(optimizerSettings{name: method, lr: trackLR})
	if err != nil {
		return err
	}
	eng, err := zo.New(params, opt, zo.Config{Eps: eps, Q: tr.qDirs, Seed: 1, Workers: 1})
	if err != nil {
		return err
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
			return err
		}
		f := obj(params)
		if tr.due(t, f) {
			if method == "meazo" {
				for i := range tr.v {
					tr.v[i] = st.V[0] / (1 - math.Pow(trackBeta2, float64(t)))
				}
			} else {
				v := opt.(*zo.Adam).SecondMoment(0)
				for i := range tr.v {
					tr.v[i] = float64(v[i]) / (1 - math.Pow(trackBeta2, float64(t)))
				}
			}
			tr.add(t, f, lay.flat(params))
		}
		if f < trackTarget {
			return nil
		}
	}
	return nil
}

// writeTracking runs every method on every dimension's problem and writes
// each dimension's CSV and figure, and their table in summary.
func writeTracking(cfg PaperConfig, out string, summary, log io.Writer) error {
	fmt.Fprintf(summary, "# Second-moment tracking (eta = 1e-4, q = %d, until F < 1e-3 or %d steps)\n\n", trackDirs, cfg.TrackSteps)
	fmt.Fprintf(summary, "spread = median over recorded steps ≥ 500 of log10(max_i v̂_i / min_i v̂_i); v̂ / (‖∇F‖²/q) = median of median_i v̂_i divided by ‖∇F‖²/q (each median of an even count the upper of its two middle values).\n\n")
	fmt.Fprintf(summary, "| d | method | steps | final F | spread | v̂ / (‖∇F‖²/q) |\n|---|---|---|---|---|---|\n")
	fmt.Fprintf(log, "second-moment tracking ...\n")
	res, err := runTracking(cfg)
	if err != nil {
		return err
	}
	for di, d := range cfg.Dims {
		if err := reportTracking(d, res[di*len(trackMethods):(di+1)*len(trackMethods)], filepath.Join(out, fmt.Sprintf("vtrack_d%d", d)), summary); err != nil {
			return err
		}
	}
	fmt.Fprintln(summary)
	return nil
}

// runTracking runs every method on every dimension's problem in parallel:
// the samples of dimension di's method m are at di·methods + m.
func runTracking(cfg PaperConfig) ([][]trackSample, error) {
	type job struct{ d, m int }
	var jobs []job
	for di := range cfg.Dims {
		for m := range trackMethods {
			jobs = append(jobs, job{di, m})
		}
	}
	res := make([][]trackSample, len(jobs))
	errs := make([]error, len(jobs))
	parallel.For(len(jobs), 0, func(i int) {
		q, err := trackProblem(cfg.Dims[jobs[i].d])
		if err != nil {
			errs[i] = err
			return
		}
		res[i], errs[i] = trackRun(q, trackMethods[jobs[i].m], trackDirs, cfg.TrackSteps, max(1, cfg.TrackSteps/1000), cfg.Eps)
	})
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return res, nil
}

// trackColors gives each method its colour in the figures.
var trackColors = map[string]string{"fo-adam": "#1f77b4", "zo-adam": "#d62728", "meazo": "#2ca02c"}

// reportTracking writes dimension d's samples (one list per method) as
// base.csv and base.svg, and a line per method in summary.
func reportTracking(d int, samples [][]trackSample, base string, summary io.Writer) error {
	rows := [][]string{{"method", "step", "F", "grad_norm2_over_q", "vhat_min", "vhat_q25", "vhat_median", "vhat_q75", "vhat_max"}}
	var series []plot.Series
	for m, method := range trackMethods {
		smp := samples[m]
		var spreads, ratios []float64
		s := plot.Series{Name: method + " v̂ median", Color: trackColors[method]}
		band := plot.Series{Color: trackColors[method]}
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
		// The medians are of recorded steps: each one a step's value
		// (the upper of the two middle ones for an even count).
		med := stats.Quantiles(spreads, 0.5)[0]
		fmt.Fprintf(summary, "| %d | %s | %d | %.3g | %.2f | %.3g |\n", d, method, last.step, last.f, med, stats.Quantiles(ratios, 0.5)[0])
	}
	if err := writeCSV(base+".csv", rows); err != nil {
		return err
	}
	fig := &plot.Figure{Title: fmt.Sprintf("second moments, d = %d (bias-corrected v̂ over coordinates)", d),
		XLabel: "step", YLabel: "v̂", LogY: true, Width: 760, Height: 460, Series: series}
	return fig.WriteFile(base + ".svg")
}
