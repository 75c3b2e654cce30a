package results

import (
	"fmt"
	"maps"
	"slices"

	"github.com/meazo-go/meazo/plot"
	"github.com/meazo-go/meazo/rundir"
	"github.com/meazo-go/meazo/sweep"
)

// The validation metric's curves: runs with eval.validation_metrics log the
// task's metric at each validation (metrics.jsonl's val_metrics), which
// Curves draws beside the validation loss, one figure a metric; runs
// without it draw none.

// addMetricCurves adds a seed's validation metrics (vp, one run's) to
// curves, a curve of each metric it logged.
func addMetricCurves(curves map[string][]map[int]float64, vp []rundir.ValPoint) map[string][]map[int]float64 {
	seed := map[string]map[int]float64{}
	for _, p := range vp {
		for k, v := range p.Metrics {
			if seed[k] == nil {
				seed[k] = map[int]float64{}
			}
			seed[k][p.Step] = v * valMetricScale(k)
		}
	}
	if len(seed) > 0 && curves == nil {
		curves = map[string][]map[int]float64{}
	}
	for k, c := range seed {
		curves[k] = append(curves[k], c)
	}
	return curves
}

// valMetricScale is the factor from a validation metric as logged (the test
// split's scales: accuracy in 0–1, the others in 0–100) to its figure's unit:
// accuracy in %, as the test accuracy's figure and the study tables draw it
// (TaskMetric), the others as they are.
func valMetricScale(k string) float64 {
	if k == "accuracy" {
		return 100
	}
	return 1
}

// valMetricLabel is metric k's name in its figure, with its unit where it
// is scaled (valMetricScale).
func valMetricLabel(k string) string {
	if valMetricScale(k) == 100 {
		return k + " (%)"
	}
	return k
}

// valMetricCurves are the series of each validation metric, by metric, in
// the order of the methods added.
type valMetricCurves map[string][]plot.Series

// add draws method m's seeds' curves of each metric (readMethod's) in its
// colour, named with their count and its rate's note.
func (v valMetricCurves) add(m sweep.Method, color, rateNote string, curves map[string][]map[int]float64) {
	for k, seeds := range curves {
		name := fmt.Sprintf("%s (%s%s)", m, sweep.Plural(len(seeds), "seed"), rateNote)
		v[k] = append(v[k], bandSeries(m, color, name, SeedBand(seeds).Thin(MaxPoints)))
	}
}

// figures are val_METRIC.svg of each metric, sorted by name (none for runs
// without eval.validation_metrics; none of a name that is not letters,
// digits and underscores, nor of one named loss, whose val_loss.svg would
// take the validation loss's place), with the loss figures' note.
func (v valMetricCurves) figures(setting, note string) []Figure {
	var figs []Figure
	for _, k := range slices.Sorted(maps.Keys(v)) {
		if !safeName(k) || k == "loss" { // a name from metrics.jsonl becomes a file's
			continue
		}
		label := valMetricLabel(k)
		figs = append(figs, Figure{"val_" + k + ".svg", &plot.Figure{
			Title: fmt.Sprintf("Validation %s, %s", label, setting), XLabel: "step", YLabel: "validation " + label, Width: 760, Height: 460,
			Series: v[k],
			Note:   note + fmt.Sprintf("\nThe task's %s on the validation split at each validation (eval.validation_metrics), scored as the test split is; η* is chosen by the validation loss.", k),
		}})
	}
	return figs
}

// safeName says whether a metric's name is letters, digits and underscores
// alone (meazo-train's are: accuracy, exact_match, rougeL, …).
func safeName(k string) bool {
	for _, r := range k {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_') {
			return false
		}
	}
	return k != ""
}
