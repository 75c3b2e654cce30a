package results

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/meazo-go/meazo/sweep"
)

// A study may compare methods that each need a config of their own: the
// paper's Figure 20 runs FZOO (q 8), ZO-SGD (at FZOO's η over its mean σ_t)
// and MEAZO on OPT-1.3B, one experiment each. A table of experiments ×
// methods would then hold one value a row; such a report has a row per
// experiment with its method and settings instead, and draws the methods'
// curves in one figure.

// oneMethodEach says whether a study, given the experiment of each of its
// sweeps, is such a comparison: two or more experiments, each of one sweep
// (one optimizer, at most one variant). The rule reads the study file, not
// the results, so that a report keeps its layout while the runs come in.
func oneMethodEach(sweepExps []string) bool {
	n := map[string]int{}
	for _, e := range sweepExps {
		n[e]++
	}
	if len(n) < 2 {
		return false
	}
	for _, k := range n {
		if k != 1 {
			return false
		}
	}
	return true
}

// methodLegend opens a report laid out by method.
const methodLegend = "# Study results\n\nEach experiment of this study runs one method, so each table has a row per experiment: its method, its η*\n" +
	"(the rate with the lowest mean best validation loss over seeds), the q (directions per step) and ε (perturbation\n" +
	"scale) its runs at η* used (their config.yaml), and the test metric of the best adapter (full-parameter: the best\n" +
	"weights) of each seed, at its lowest validation loss, mean ± sample std over seeds. Without a test evaluation\n" +
	"(eval.skip) the value is the same metric on the validation split at the best step where the runs logged it\n" +
	"(eval.validation_metrics), else the best validation loss.\n" +
	"**Bold**: the best value of the table; ⚠: the coarse stage's η* was at an end of its grid (below the tables).\n"

// writeMethodTable writes Table n of a study laid out by method: a row per
// experiment, in the paper's order of methods. The value column is headed
// by the rows' metric, or a metric column says it where rows differ (one
// run without a test evaluation); the best value of each metric is bold.
func writeMethodTable(b *strings.Builder, n int, kind string, cells []cell) {
	rows := slices.Clone(cells)
	sort.SliceStable(rows, func(i, j int) bool {
		return sweep.OptimizerRank(rows[i].optimizer) < sweep.OptimizerRank(rows[j].optimizer)
	})
	var metrics []string
	for _, c := range rows {
		if c.metric != "" && !slices.Contains(metrics, c.metric) {
			metrics = append(metrics, c.metric)
		}
	}
	fmt.Fprintf(b, "\n## Table %d: %s\n\n| method | experiment | η* | q | ε |", n, kind)
	switch len(metrics) {
	case 0:
		b.WriteString(" value |\n|---|---|---|---|---|---|\n")
	case 1:
		fmt.Fprintf(b, " %s, %s |\n|---|---|---|---|---|---|\n", metrics[0], direction(metrics[0]))
	default:
		b.WriteString(" metric | value |\n|---|---|---|---|---|---|---|\n")
	}
	best := map[int]bool{}
	for _, m := range metrics {
		same := map[int]cell{}
		for i, c := range rows {
			if c.metric == m {
				same[i] = c
			}
		}
		maps.Copy(best, bestInRow(same))
	}
	for i, c := range rows {
		eta, q, eps, value := "–", "–", "–", "–"
		if c.eta > 0 {
			eta, q, eps, value = sweep.LRString(c.eta), c.q, c.eps, c.value()
			if c.edge != "" {
				eta += " ⚠"
			}
			if best[i] {
				value = "**" + value + "**"
			}
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s |", c.method(), c.exp, eta, q, eps)
		if len(metrics) > 1 {
			metric := c.metric
			if metric != "" {
				metric += ", " + direction(metric)
			}
			fmt.Fprintf(b, " %s |", metric)
		}
		fmt.Fprintf(b, " %s |\n", value)
	}
}

// estimatorOf is the q and ε of runs (those at a sweep's η*) as their
// config.yaml says (sweep.ReadEstimator): each value once, several joined
// by " / " (seeds that differ, or ε changed on a resume), "?" added for a
// run whose could not be read, and why.
func estimatorOf(runs []sweep.Run) (q, eps string, unread []string) {
	var qs, epss []string
	add := func(list []string, v string) []string {
		if !slices.Contains(list, v) {
			list = append(list, v)
		}
		return list
	}
	for _, r := range runs {
		if r.Failed {
			continue
		}
		e, err := sweep.ReadEstimator(r.Dir, r.Summary)
		if err != nil {
			qs, epss, unread = add(qs, "?"), add(epss, "?"), append(unread, err.Error())
			continue
		}
		qs = add(qs, strconv.Itoa(e.Q))
		for _, v := range e.Eps {
			epss = add(epss, sweep.LRString(v))
		}
	}
	return strings.Join(qs, " / "), strings.Join(epss, " / "), unread
}

// writeUnread lists, under the tables, the runs whose q and ε the table
// shows as "?".
func (rep *Report) writeUnread(b *strings.Builder) {
	var lines []string
	for _, c := range rep.cells {
		for _, why := range c.unread {
			lines = append(lines, fmt.Sprintf("- %s, %s: %s", c.exp, c.method(), why))
		}
	}
	if len(lines) > 0 {
		fmt.Fprintf(b, "\n? q and ε unread:\n\n%s\n", strings.Join(lines, "\n"))
	}
}

// MethodSets returns, in a study laid out by method, the experiments of one
// model, task and adapter together, so that their methods' curves are drawn
// in one figure; none in another study. A set is named by its experiments'
// names after their common prefix, "fig20_meazo_vs_zo-sgd_vs_fzoo", in the
// paper's order of methods. Experiments whose methods repeat are not drawn
// together (one line would mix two experiments' runs), nor two that differ
// only in grouping: GroupedPairs draws those.
func (rep *Report) MethodSets() []Experiment {
	if !rep.byMethod {
		return nil
	}
	var out []Experiment
	for _, exps := range rep.bySetting() {
		if set, ok := drawTogether(exps); ok {
			out = append(out, set)
		}
	}
	return out
}

// drawTogether joins experiments of one method each into one, named
// "<common prefix><rest>_vs_<rest>…" in the paper's order of methods, when
// there are two or more, their methods are distinct, and they are not just
// one optimizer (and variant) joint and grouped.
func drawTogether(exps []Experiment) (Experiment, bool) {
	method := func(e Experiment) sweep.Method { return e.Runs[0].Method() }
	kinds := map[sweep.Method]bool{}
	ungrouped := map[sweep.Method]bool{}
	for _, e := range exps {
		m := method(e)
		if kinds[m] {
			return Experiment{}, false
		}
		kinds[m] = true
		m.Grouped = false
		ungrouped[m] = true
	}
	if len(exps) < 2 || len(ungrouped) < 2 {
		return Experiment{}, false
	}
	exps = slices.Clone(exps)
	sort.SliceStable(exps, func(i, j int) bool {
		return sweep.OptimizerRank(method(exps[i]).Optimizer) < sweep.OptimizerRank(method(exps[j]).Optimizer)
	})
	names := make([]string, len(exps))
	for i, e := range exps {
		names[i] = e.Name
	}
	prefix := commonPrefix(names)
	prefix = prefix[:strings.LastIndex(prefix, "_")+1] // whole words: "fig20_"
	var set Experiment
	for i, e := range exps {
		names[i] = strings.TrimPrefix(e.Name, prefix)
		set.Runs = append(set.Runs, e.Runs...)
	}
	set.Name = prefix + strings.Join(names, "_vs_")
	return set, true
}

// commonPrefix is the longest prefix every name shares.
func commonPrefix(names []string) string {
	p := names[0]
	for _, n := range names[1:] {
		for !strings.HasPrefix(n, p) {
			p = p[:len(p)-1]
		}
	}
	return p
}
