package results

import (
	"fmt"
	"math"

	"github.com/meazo-go/meazo/sweep"
)

// What makes a study's tables read like the paper's: each metric says which
// way is better, the best cell of a row is bold, and an η* whose search
// saw only one side of it is flagged.

// lossMetric is the cells' metric without a test evaluation (eval.skip):
// the selection criterion itself, a loss.
const lossMetric = "best validation loss"

// direction says which way a metric is better, for the metric column.
func direction(metric string) string {
	if metric == lossMetric {
		return "lower is better"
	}
	return "higher is better"
}

// bestInRow marks the cells of one row (one experiment) with the best mean:
// the lowest loss or the highest metric; ties are all best. A row with
// fewer than two values has no best to mark, nor has a row whose values
// are of different metrics (a test metric beside a validation one or a
// loss: eval.skip or eval.validation_metrics in some of its sweeps only),
// which are not on one scale.
func bestInRow[K comparable](row map[K]cell) map[K]bool {
	best, n := math.NaN(), 0
	better := func(a, b float64) bool { return a > b }
	metric := ""
	for _, c := range row {
		if c.eta == 0 || c.n == 0 || math.IsNaN(c.mean) {
			continue
		}
		if n > 0 && c.metric != metric {
			return map[K]bool{}
		}
		metric = c.metric
		if c.metric == lossMetric {
			better = func(a, b float64) bool { return a < b }
		}
		n++
		if math.IsNaN(best) || better(c.mean, best) {
			best = c.mean
		}
	}
	marks := map[K]bool{}
	if n < 2 {
		return marks
	}
	for o, c := range row {
		if c.eta > 0 && c.n > 0 && c.mean == best {
			marks[o] = true
		}
	}
	return marks
}

// coarseEdge says where the coarse stage's η* (the best rate of the coarse
// grid alone) lies when it is an end of the grid: "the largest" or "the
// smallest"; "" when it has neighbours on both sides, or there is no grid to
// speak of. At an end, stage 2 searched one side only, and the best rate
// may lie beyond the grid.
func coarseEdge(rates []sweep.RateStats, coarse []float64) (edge string, eta float64) {
	if len(coarse) < 2 {
		return "", 0
	}
	var onGrid []sweep.RateStats
	for _, r := range rates {
		if sweep.IndexRate(coarse, r.LR) >= 0 {
			onGrid = append(onGrid, r)
		}
	}
	i := sweep.EtaStar(onGrid)
	if i < 0 {
		return "", 0
	}
	lo, hi := coarse[0], coarse[0]
	for _, v := range coarse {
		lo, hi = min(lo, v), max(hi, v)
	}
	switch eta = onGrid[i].LR; {
	case sweep.SameRate(eta, hi):
		return "the largest", eta
	case sweep.SameRate(eta, lo):
		return "the smallest", eta
	}
	return "", eta
}

// edgeNote is a flagged cell's line under the tables.
func edgeNote(c cell) string {
	return fmt.Sprintf("- %s, %s: the coarse η* %s is %s rate of its grid, so the search saw rates on one side of it only; "+
		"the best rate may lie beyond the grid (extend `coarse`)", c.exp, c.method(), sweep.LRString(c.coarseEta), c.edge)
}
