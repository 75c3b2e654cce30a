package results

import (
	"fmt"
	"math"
	"strings"

	"github.com/meazo-go/meazo/plot"
	"github.com/meazo-go/meazo/sweep"
)

// TestFigures are the figures of the test metric the runs were scored on
// (TaskMetric: SST-2's and Pets' accuracy, SQuAD's F1, XSum's ROUGE-L), the number a
// run is about, where the runs have one (none with eval.skip):
//
//   - test_<metric>.svg: each method at its η*, the base model (at step 0,
//     where the runs evaluated it: eval.base) and the best adapter (at its
//     step; a full-parameter study's best weights), mean over seeds;
//   - robustness_test.svg, when a method ran at several rates: the best
//     adapter's test metric against η/η*, as robustness_best.svg draws the
//     validation loss.
func TestFigures(runs []sweep.Run) ([]Figure, error) {
	setting, err := sweep.Setting(runs)
	if err != nil {
		return nil, err
	}
	key, label, scale := TaskMetric(runs[0].Task)
	if key == "" || !hasTest(runs, key, "best") {
		return nil, nil
	}
	figs := []Figure{{"test_" + key + ".svg", baseAndBest(runs, key, label, scale, setting)}}
	if SeveralRates(runs) {
		figs = append(figs, Figure{"robustness_test.svg", testRobustness(runs, key, label, scale, setting)})
	}
	return figs, nil
}

// bestName names what a run's "best" test result scored: the adapter with
// the lowest validation loss, or a full-parameter run's weights (one figure's
// runs share their adapter kind: sweep.Setting).
func bestName(runs []sweep.Run) string {
	if runs[0].Adapter == "full" {
		return "best weights"
	}
	return "best adapter"
}

// hasTest says whether some run has the metric key for which ("best", "base").
func hasTest(runs []sweep.Run, key, which string) bool {
	for _, r := range runs {
		if _, ok := r.Test[which][key]; ok && !r.Failed {
			return true
		}
	}
	return false
}

// testValues are the runs' metric key of which, scaled, and their mean best
// step; diverged and failed runs, and runs without it, are left out.
func testValues(runs []sweep.Run, key, which string, scale float64) (vals []float64, step float64) {
	for _, r := range runs {
		if v, ok := r.Test[which][key]; ok && !r.Diverged && !r.Failed {
			vals = append(vals, v*scale)
			step += float64(r.BestStep)
		}
	}
	if len(vals) > 0 {
		step /= float64(len(vals))
	}
	return vals, step
}

// baseAndBest draws, per method at its η*, the base model's and the best
// adapter's test metric: two measurements, as markers.
func baseAndBest(runs []sweep.Run, key, label string, scale float64, setting string) *plot.Figure {
	best, rateNote := AtBestRate(runs)
	ms, groups := sweep.ByMethod(best)
	name := bestName(runs)
	fig := &plot.Figure{Title: fmt.Sprintf("Test %s: base model (step 0), %s, %s", label, name, setting),
		XLabel: "step (base model: 0; " + name + ": the step of its lowest validation loss)",
		YLabel: "test " + label + " (mean over seeds)", Width: 760, Height: 460}
	maxStep := 0.0
	colors := MethodColors(ms) // a variant after an optimizer's first takes its own, as in the curves
	for _, m := range ms {
		marker := plot.Circle
		if m.Grouped {
			marker = plot.Triangle
		}
		// Markers only: nothing is measured between the two points.
		s := plot.Series{Color: colors[m], Marker: marker, NoLine: true}
		n := 0
		for _, which := range []string{"base", "best"} {
			vals, step := testValues(groups[m], key, which, scale)
			if len(vals) == 0 {
				continue
			}
			if which == "base" {
				step = 0
			}
			mean, _, k := sweep.MeanStd(vals)
			s.X, s.Y = append(s.X, step), append(s.Y, mean)
			maxStep, n = math.Max(maxStep, step), max(n, k)
		}
		if len(s.X) == 0 {
			continue
		}
		s.Name = fmt.Sprintf("%s (%s%s)", m, sweep.Plural(n, "seed"), rateNote[m])
		fig.Series = append(fig.Series, s)
	}
	note := []string{"Points: the test " + label + " of the base model (before training: step 0, where the runs evaluated it: eval.base)",
		"and of the " + name + " (the lowest validation loss) at its step; mean over seeds (the results table gives their spread)."}
	if c := chanceAccuracy(runs[0].Task); key == "accuracy" && c > 0 {
		fig.Series = append(fig.Series, plot.Series{Name: fmt.Sprintf("chance (%.3g %%)", c), X: []float64{0, math.Max(maxStep, 1)}, Y: []float64{c, c}, Color: "#888888", Dashed: true})
	}
	fig.Note = strings.Join(note, "\n")
	return fig
}

// testRobustness draws the best adapter's test metric against η/η* per
// method (η*: the method's own, chosen by validation loss).
func testRobustness(runs []sweep.Run, key, label string, scale float64, setting string) *plot.Figure {
	fig := &plot.Figure{Title: fmt.Sprintf("Step-size robustness: test %s, %s", label, setting),
		XLabel: "η / η*  (η*: the method's rate with the lowest mean best validation loss)",
		YLabel: "test " + label + " of the " + bestName(runs) + " (mean over seeds)", LogX: true, Width: 760, Height: 460,
		Note: "Line: mean over the seeds with a test result (a diverged or failed seed has none); shading: mean ± 2 sample standard deviations."}
	ms, groups := sweep.ByMethod(runs)
	colors := MethodColors(ms)
	for _, m := range ms {
		rates := sweep.RateStatsOf(groups[m])
		star := sweep.EtaStar(rates)
		if star < 0 {
			continue
		}
		eta := rates[star].LR
		marker := plot.Circle
		if m.Grouped {
			marker = plot.Triangle
		}
		s := plot.Series{Name: fmt.Sprintf("%s, η*=%s", m, sweep.LRString(eta)), Color: colors[m], Dashed: m.Grouped, Marker: marker}
		for _, r := range rates {
			vals, _ := testValues(r.Runs, key, "best", scale)
			mean, std, _ := sweep.MeanStd(vals)
			if math.IsNaN(std) {
				std = 0
			}
			s.X, s.Y = append(s.X, r.LR/eta), append(s.Y, mean)
			s.Lo, s.Hi = append(s.Lo, mean-2*std), append(s.Hi, mean+2*std)
		}
		fig.Series = append(fig.Series, s)
	}
	return fig
}
