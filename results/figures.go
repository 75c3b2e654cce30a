package results

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"

	"github.com/meazo-go/meazo/plot"
	"github.com/meazo-go/meazo/rundir"
	"github.com/meazo-go/meazo/sweep"
)

// MaxPoints bounds the points drawn per curve (see Band.Thin).
const MaxPoints = 1000

// Figure is a figure and the name of the file it is written to, so that
// every report names the same figure the same way.
type Figure struct {
	File string
	*plot.Figure
}

// All is every figure the runs allow: the loss curves (each method at its
// η*), the robustness figures when some method was run at several rates, and
// v_t of each MEAZO method (VTRuns).
func All(runs []sweep.Run, smooth int, warn func(string)) ([]Figure, error) {
	figs, err := Curves(runs, smooth, warn)
	if err != nil {
		return nil, err
	}
	if SeveralRates(runs) {
		rob, err := Robustness(runs)
		if err != nil {
			return nil, err
		}
		figs = append(figs, rob...)
	}
	test, err := TestFigures(runs)
	if err != nil {
		return nil, err
	}
	figs = append(figs, test...)
	vts := VTRuns(runs)
	for i, name := range vtFiles(vts) {
		r := vts[i]
		fig, err := VT(r, warn)
		if err != nil { // the other figures are still worth writing
			warn(fmt.Sprintf("no %s: %v", name, err))
			continue
		}
		figs = append(figs, Figure{name, fig})
	}
	return figs, nil
}

// VTFile names a MEAZO method's v_t figure: vt_meazo.svg, with _grouped and
// the variant (its label, spelled for a file name) appended.
func VTFile(m sweep.Method) string {
	name := "vt_" + m.Optimizer
	if m.Grouped {
		name += "_grouped"
	}
	if m.Variant != "" {
		name += "_" + strings.Map(func(r rune) rune {
			if r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_.=", r)) {
				return r
			}
			return '-'
		}, m.Variant)
	}
	return name + ".svg"
}

// vtFiles names the v_t figures of runs (VTFile), one name each: two
// variants whose labels spell the same file name ("β₁ = 0" and "β₂ = 0"
// both vt_meazo_---=-0.svg; the second figure once replaced the first)
// take _2, _3, … after the first, in the runs' order.
func vtFiles(runs []sweep.Run) []string {
	names := make([]string, len(runs))
	used := map[string]bool{}
	for i, r := range runs {
		name := VTFile(r.Method())
		base := strings.TrimSuffix(name, ".svg")
		for n := 2; used[name]; n++ {
			name = fmt.Sprintf("%s_%d.svg", base, n)
		}
		used[name], names[i] = true, name
	}
	return names
}

// ExperimentFigures are a study experiment's figures: the loss curves, and
// where the runs allow them the robustness figures and MEAZO's v_t (a
// warning says why one is missing: a study in progress lacks some).
func ExperimentFigures(e Experiment, smooth int, warn func(string)) ([]Figure, error) {
	figs, err := Curves(e.Runs, smooth, warn)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", e.Name, err)
	}
	if rob, err := Robustness(e.Runs); err != nil {
		warn(fmt.Sprintf("%s: no robustness figure: %v", e.Name, err))
	} else {
		figs = append(figs, rob...)
	}
	if test, err := TestFigures(e.Runs); err != nil {
		warn(fmt.Sprintf("%s: no test-metric figure: %v", e.Name, err))
	} else {
		figs = append(figs, test...)
	}
	// v_t per parameter group of each MEAZO method at η* (its first seed).
	vts := VTRuns(e.Runs)
	for i, name := range vtFiles(vts) {
		r := vts[i]
		if fig, err := VT(r, warn); err != nil {
			warn(fmt.Sprintf("%s: no %s: %v", e.Name, name, err))
		} else {
			figs = append(figs, Figure{name, fig})
		}
	}
	if len(e.Incomplete) > 0 {
		for _, f := range figs {
			f.Figure.Note += fmt.Sprintf("\nProvisional: %s not complete (meazo-sweep status says what is left); η* may change.", strings.Join(e.Incomplete, ", "))
		}
	}
	return figs, nil
}

// One colour per optimizer; grouped variants get their own colour (and a
// dashed line) so that both can share a figure.
var (
	colors        = map[string]string{"meazo": "#1f77b4", "zo-sgd": "#d62728", "zo-adam": "#2ca02c", "radazo": "#ff7f0e", "fzoo": "#9467bd"}
	groupedColors = map[string]string{"meazo": "#17becf", "zo-sgd": "#e377c2", "zo-adam": "#bcbd22", "radazo": "#8c564b", "fzoo": "#7f7f7f"}
)

// variantColors are given, in order, to the variants of a method after its
// first (which keeps the optimizer's colour): colours neither table uses.
var variantColors = []string{"#000000", "#e6ab02", "#a6761d", "#666666", "#1b9e77", "#e7298a", "#66a61e", "#7570b3"}

// MethodColor is a method's colour in every figure, so that a reader can
// follow one optimizer from figure to figure; "" (the plot palette) for an
// optimizer without one. Variants of one optimizer need more: MethodColors.
func MethodColor(m sweep.Method) string {
	table := colors
	if m.Grouped {
		table = groupedColors
	}
	return table[m.Optimizer]
}

// MethodColors gives each of a figure's methods its colour: MethodColor,
// except that the second and later variants of one optimizer (grouped or
// not) take the next of variantColors, so that no two lines share one.
func MethodColors(ms []sweep.Method) map[sweep.Method]string {
	out := map[sweep.Method]string{}
	first := map[sweep.Method]bool{} // by the method without its variant: its colour is taken
	next := 0
	for _, m := range ms {
		base := sweep.Method{Optimizer: m.Optimizer, Grouped: m.Grouped}
		if !first[base] {
			first[base] = true
			out[m] = MethodColor(m)
			continue
		}
		out[m] = variantColors[next%len(variantColors)]
		next++
	}
	return out
}

// Curves draws the training and validation loss of each method at its η*
// (AtBestRate): the mean over seeds with a band of ± 2 sample standard
// deviations. Each seed's training loss is first smoothed by a trailing
// running mean of smooth steps (≤ 0: 1% of the longest run, at least 1),
// since single-step ZO losses are too noisy to compare by eye. A seed whose
// metrics.jsonl cannot be read (a damaged file) is left out, with a warning
// and a note in the figures: one damaged file among a study's thousands does
// not cost the whole report.
// The figures are train_loss.svg and val_loss.svg, and where the runs
// logged the task's metric at their validations (eval.validation_metrics)
// val_METRIC.svg of each (valMetricFigures).
func Curves(runs []sweep.Run, smooth int, warn func(string)) ([]Figure, error) {
	setting, err := sweep.Setting(runs)
	if err != nil {
		return nil, err
	}
	runs, rateNote := AtBestRate(runs)
	ms, groups := sweep.ByMethod(runs)
	color := MethodColors(ms)
	if smooth <= 0 {
		maxSteps := 0
		for _, r := range runs {
			maxSteps = max(maxSteps, r.Steps)
		}
		smooth = max(1, maxSteps/100)
	}
	train := &plot.Figure{Title: "Training loss, " + setting, XLabel: "step", YLabel: fmt.Sprintf("training loss (running mean of %d steps)", smooth), Width: 760, Height: 460}
	val := &plot.Figure{Title: "Validation loss, " + setting, XLabel: "step", YLabel: "validation loss", Width: 760, Height: 460}
	var notes curveNotes
	metrics := valMetricCurves{}
	for _, m := range ms {
		trainCurves, valCurves, metricCurves := notes.readMethod(m, groups[m], smooth, warn)
		if len(trainCurves) == 0 {
			continue
		}
		name := fmt.Sprintf("%s (%s%s)", m, sweep.Plural(len(trainCurves), "seed"), rateNote[m])
		train.Series = append(train.Series, bandSeries(m, color[m], name, SeedBand(trainCurves).Thin(MaxPoints)))
		val.Series = append(val.Series, bandSeries(m, color[m], name, SeedBand(valCurves).Thin(MaxPoints)))
		metrics.add(m, color[m], rateNote[m], metricCurves)
	}
	if len(train.Series) == 0 {
		return nil, fmt.Errorf("nothing to draw: %s", strings.Join(notes.readErrs, "; "))
	}
	note := notes.note(warn)
	train.Note = note + fmt.Sprintf("\nEach seed's training loss is first smoothed by a trailing running mean over %d steps.", smooth)
	val.Note = note
	return append([]Figure{{"train_loss.svg", train}, {"val_loss.svg", val}}, metrics.figures(setting, note)...), nil
}

// curveNotes collects, while Curves reads the seeds, what its figures'
// note says about them.
type curveNotes struct {
	diverged, uneven, cut []string // per method drawn; the seeds cut short
	unreadable, readErrs  []string // the seeds left out, and why
}

// readMethod reads the training (smoothed) and validation loss curves of a
// method's seeds, and by metric those of the validation metrics they
// logged (none without eval.validation_metrics), noting those it leaves
// out, those cut short, those that diverged, and seeds of different lengths.
func (n *curveNotes) readMethod(m sweep.Method, runs []sweep.Run, smooth int, warn func(string)) (trainCurves, valCurves []map[int]float64, metricCurves map[string][]map[int]float64) {
	nDiv := 0
	lo, hi := math.MaxInt, 0 // the steps of the seeds that did not diverge
	for _, r := range runs {
		tp, vp, err := rundir.ReadMetrics(r.Dir, warn)
		if err != nil {
			warn(fmt.Sprintf("left out of the loss curves: %v", err))
			n.unreadable, n.readErrs = append(n.unreadable, r.Dir), append(n.readErrs, err.Error())
			continue
		}
		// The steps drawn are those read: a log a crash cut off ends
		// before the steps its summary counts.
		last := 0
		if len(tp) > 0 {
			last = tp[len(tp)-1].Step
		}
		if !r.Diverged {
			lo, hi = min(lo, last), max(hi, last)
			if last < r.StepsDone {
				n.cut = append(n.cut, fmt.Sprintf("%s (to step %d of %d)", r.Dir, last, r.StepsDone))
			}
		}
		if len(tp) == 0 {
			warn(fmt.Sprintf("%s: %s has no training steps: nothing to draw for it", r.Dir, rundir.MetricsFile))
		}
		losses := make([]float64, len(tp))
		for i, p := range tp {
			losses[i] = p.Loss
		}
		sm := RunningMean(losses, smooth)
		c := map[int]float64{}
		for i, p := range tp {
			c[p.Step] = sm[i]
		}
		trainCurves = append(trainCurves, c)
		c = map[int]float64{}
		for _, p := range vp {
			c[p.Step] = p.ValLoss
		}
		valCurves = append(valCurves, c)
		metricCurves = addMetricCurves(metricCurves, vp)
		if r.Diverged {
			nDiv++
		}
	}
	if len(trainCurves) == 0 {
		return nil, nil, nil
	}
	if nDiv > 0 {
		n.diverged = append(n.diverged, fmt.Sprintf("%s: %d of %d seeds diverged", m, nDiv, len(trainCurves)))
	}
	if lo < hi {
		n.uneven = append(n.uneven, fmt.Sprintf("%s: seeds ran %d to %d steps", m, lo, hi))
	}
	return trainCurves, valCurves, metricCurves
}

// note is the figures' note, warning of the seeds cut short and of seeds
// of different lengths.
func (n *curveNotes) note(warn func(string)) string {
	note := "Line: mean over seeds; shading: mean ± 2 sample standard deviations over seeds (none with one seed)."
	if len(n.unreadable) > 0 {
		note += fmt.Sprintf("\nLeft out, their %s unreadable: %s.", rundir.MetricsFile, strings.Join(n.unreadable, ", "))
	}
	if len(n.cut) > 0 {
		note += fmt.Sprintf("\nDrawn as far as their %s goes, cut off before the steps their summary counts: %s.", rundir.MetricsFile, strings.Join(n.cut, ", "))
		warn(fmt.Sprintf("%s cut off: %s", rundir.MetricsFile, strings.Join(n.cut, ", ")))
	}
	if len(n.diverged) > 0 {
		note += "\nDiverged seeds count up to their last finite step: " + strings.Join(n.diverged, "; ") + "."
	}
	if len(n.uneven) > 0 {
		note += "\nPast its shortest seed a line is the mean of fewer seeds: " + strings.Join(n.uneven, "; ") + "."
		warn("seeds of different lengths: " + strings.Join(n.uneven, "; "))
	}
	return note
}

// bandSeries draws a method's band in its colour, dashed when grouped.
func bandSeries(m sweep.Method, color, name string, b Band) plot.Series {
	return plot.Series{Name: name, X: b.X, Y: b.Mean, Lo: b.Lo, Hi: b.Hi, Color: color, Dashed: m.Grouped}
}

// Robustness draws the paper's step-size robustness figures: per method, the
// best and the last validation loss against η/η*, where η* is the method's
// own selected rate (sweep.EtaStar), so that methods with different scales of
// rate share one axis. A rate at which some seed diverged or failed is marked
// with a cross on the top edge; its line point is the mean of the seeds that
// finished, if any. The figures are robustness_best.svg and robustness_last.svg.
func Robustness(runs []sweep.Run) ([]Figure, error) {
	setting, err := sweep.Setting(runs)
	if err != nil {
		return nil, err
	}
	ms, groups := sweep.ByMethod(runs)
	color := MethodColors(ms)
	var figs [2]*plot.Figure
	for i, which := range []string{"best", "last"} {
		figs[i] = &plot.Figure{
			Title:  fmt.Sprintf("Step-size robustness: %s validation loss, %s", which, setting),
			XLabel: "η / η*  (η*: the method's rate with the lowest mean best validation loss)",
			YLabel: which + " validation loss (mean over seeds)",
			LogX:   true, Width: 760, Height: 460,
		}
	}
	var skipped []string
	anyDiverged, anyPending := false, false
	for _, m := range ms {
		for _, r := range groups[m] {
			anyPending = anyPending || r.Failed && r.Pending
		}
		rates := sweep.RateStatsOf(groups[m])
		star := sweep.EtaStar(rates)
		if star < 0 {
			skipped = append(skipped, fmt.Sprintf("%s (a seed diverged or failed at every rate)", m))
			continue
		}
		eta := rates[star].LR
		marker := plot.Circle
		if m.Grouped {
			marker = plot.Triangle
		}
		for i := range figs {
			s := plot.Series{Name: fmt.Sprintf("%s, η*=%s", m, sweep.LRString(eta)), Color: color[m], Dashed: m.Grouped, Marker: marker}
			div := plot.Series{Color: color[m], NoLine: true, InfAtTop: true}
			for _, r := range rates {
				x := r.LR / eta
				mean, std := r.MeanBest, r.StdBest
				if i == 1 {
					mean, std = r.MeanLast, r.StdLast
				}
				s.X = append(s.X, x)
				s.Y = append(s.Y, mean)
				s.Lo = append(s.Lo, mean-2*std)
				s.Hi = append(s.Hi, mean+2*std)
				if r.Diverged > 0 || r.Failed > 0 {
					anyDiverged = true
					div.X = append(div.X, x)
					div.Y = append(div.Y, math.Inf(1))
				}
			}
			figs[i].Series = append(figs[i].Series, s)
			if len(div.X) > 0 {
				figs[i].Series = append(figs[i].Series, div)
			}
		}
	}
	if len(skipped) == len(ms) {
		return nil, fmt.Errorf("no method has a rate at which all seeds finished: %s", strings.Join(skipped, ", "))
	}
	note := "Line: mean over the seeds that did not diverge; shading: mean ± 2 sample standard deviations."
	switch {
	case anyDiverged && anyPending:
		note += "\n× on the top edge: a rate at which at least one seed diverged, failed or has no result yet (such a rate cannot be η*)."
	case anyDiverged:
		note += "\n× on the top edge: a rate at which at least one seed diverged or failed (such a rate cannot be η*)."
	}
	if len(skipped) > 0 {
		note += "\nNot drawn: " + strings.Join(skipped, ", ") + "."
	}
	for _, f := range figs {
		f.Note = note
	}
	return []Figure{{"robustness_best.svg", figs[0]}, {"robustness_last.svg", figs[1]}}, nil
}

// VT draws MEAZO's second-moment scalar v_t of every estimation unit (one, or
// one per group) over training, on a log axis: it shows whether the step
// size adapts per layer, which is the point of grouping.
func VT(r sweep.Run, warn func(string)) (*plot.Figure, error) {
	tp, _, err := rundir.ReadMetrics(r.Dir, warn)
	if err != nil {
		return nil, err
	}
	metrics := filepath.Join(r.Dir, rundir.MetricsFile)
	seen := false   // a line with v was read
	var units []int // the group of each unit, from the first line with v
	var steps []float64
	var vs [][]float64 // per unit
	for _, p := range tp {
		if p.V == nil {
			continue
		}
		if !seen {
			if len(p.V) == 0 || len(p.Groups) != len(p.V) {
				return nil, fmt.Errorf("%s step %d: %d groups but %d v values", metrics, p.Step, len(p.Groups), len(p.V))
			}
			seen, units = true, p.Groups
			vs = make([][]float64, len(p.V))
		}
		if len(p.V) != len(units) {
			return nil, fmt.Errorf("%s step %d: %d v values, earlier steps have %d", metrics, p.Step, len(p.V), len(units))
		}
		steps = append(steps, float64(p.Step))
		for u, v := range p.V {
			vs[u] = append(vs[u], v)
		}
	}
	if !seen {
		why := "only MEAZO logs v"
		if r.Optimizer == "meazo" {
			why = "no training step was logged"
		}
		return nil, fmt.Errorf("%s: no v values (optimizer %s; %s)", metrics, r.Optimizer, why)
	}
	fig := &plot.Figure{
		Title:  fmt.Sprintf("%s second moment v_t per group (η=%s, seed %d)", r.Method(), sweep.LRString(r.LR), r.Seed),
		XLabel: "step", YLabel: "v_t (log scale)", LogY: true, Width: 760, Height: 460,
		Note: "v_t: the optimizer's scalar second-moment estimate of each estimation unit after the step. Run: " + runLabel(r.Dir),
	}
	// A log axis has no place for v ≤ 0 (a flat step's v after β-decay is
	// still positive, but a logged 0 or NaN is possible): said, not hidden.
	bad, total := 0, 0
	for _, col := range vs {
		for _, v := range col {
			total++
			if !(v > 0) || math.IsInf(v, 0) {
				bad++
			}
		}
	}
	if bad == total {
		return nil, fmt.Errorf("%s: no v value is positive and finite (%d values): nothing to draw on a log axis", metrics, total)
	}
	if bad > 0 {
		fig.Note += fmt.Sprintf("\n%d of %d v values are 0, negative or not finite: not drawn.", bad, total)
		warn(fmt.Sprintf("%s: %d of %d v values are 0, negative or not finite: not drawn", metrics, bad, total))
	}
	keep := thinned(len(steps), MaxPoints)
	for u, g := range units {
		name := fmt.Sprintf("group %d", g)
		if g < 0 || (!r.Grouped && len(units) == 1) {
			name = "all parameters (one unit)"
		}
		s := plot.Series{Name: name}
		if len(units) > 10 {
			s.Color = gradient(float64(u) / float64(len(units)-1))
		}
		for _, i := range keep {
			s.X = append(s.X, steps[i])
			s.Y = append(s.Y, vs[u][i])
		}
		fig.Series = append(fig.Series, s)
	}
	if len(units) > 10 {
		fig.Note += fmt.Sprintf("\n%d groups, coloured from dark blue (first) to yellow (last).", len(units))
	}
	return fig, nil
}

// gradient maps t in [0, 1] to a colour from dark blue to yellow (a few
// stops of the viridis map, interpolated), for figures with many lines.
func gradient(t float64) string {
	stops := [][3]float64{{68, 1, 84}, {59, 82, 139}, {33, 145, 140}, {94, 201, 98}, {253, 231, 37}}
	t = min(max(t, 0), 1) * float64(len(stops)-1)
	i := min(int(t), len(stops)-2)
	f := t - float64(i)
	var c [3]int
	for j := range c {
		c[j] = int(stops[i][j] + f*(stops[i+1][j]-stops[i][j]) + 0.5)
	}
	return fmt.Sprintf("#%02x%02x%02x", c[0], c[1], c[2])
}

// runLabel names a run directory by its parent and itself ("sweep/lr=1e-4_seed=0"),
// for notes; "." is named as what it is.
func runLabel(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return filepath.Base(filepath.Dir(dir)) + "/" + filepath.Base(dir)
}
