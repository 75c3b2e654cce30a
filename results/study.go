package results

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/meazo-go/meazo/rundir"
	"github.com/meazo-go/meazo/sweep"
)

// Report is what a meazo-sweep study's run directories say (docs/SWEEPS.md):
// one cell per sweep (experiment × optimizer) with its test metric at η*, and
// every experiment's finished runs, for the figures.
type Report struct {
	cells       []cell
	Experiments []Experiment // in study-file order
	byMethod    bool         // every experiment has one method (oneMethodEach): a row per experiment
}

// Experiment is one experiment of a study with every finished run of every
// sweep of it (all optimizers, all rates).
type Experiment struct {
	Name string
	Runs []sweep.Run
	// Incomplete names the sweeps with runs still to come (stage 2, or
	// runs without a result), whose η* the figures choose provisionally.
	Incomplete []string
}

// cell is one sweep's entry in the results tables.
type cell struct {
	sweep          string // the sweep's name, <experiment>_<optimizer>[_<variant>]
	exp, optimizer string
	variant        string // the variant's label; "" for none
	grouped        bool
	model, task    string
	adapter        string
	eta            float64 // 0: no η*
	metric         string
	mean, std      float64
	n, seeds       int
	missing        []missingRun // runs without a result
	uncounted      []string     // run directories the plan does not count (SweepPlan.Uncounted)
	note           string
	edge           string  // where the coarse η* is at an end of the grid (coarseEdge); "" inside it
	coarseEta      float64 // the coarse stage's η*
	// The q and ε of the runs at η* (estimatorOf), read in a study laid
	// out by method only; unread says why a run's could not be read.
	q, eps string
	unread []string
}

// missingRun is a run without a result, and its state (sweep.Status*).
type missingRun struct{ dir, status, why string }

func (m missingRun) String() string {
	if m.why != "" {
		return fmt.Sprintf("%s (%s: %s)", m.dir, m.status, m.why)
	}
	return fmt.Sprintf("%s (%s)", m.dir, m.status)
}

// maxWaitingListed is how many runs of a sweep that have not run yet (new,
// queued) the report lists one by one; more are counted in one line (a
// paper study has thousands before its stage 2 runs).
const maxWaitingListed = 5

// TaskMetric is the headline test metric of a task as the paper's tables
// report it: its key in summary.json's "test", its label, and the factor to
// the table's unit. An unknown task has key "". A task on the user's own
// data is shown as its paper counterpart is: a classification by accuracy
// (SST-2's), a generation by ROUGE-L (XSum's: it scores any length of
// answer, where SQuAD's F1, also in summary.json, suits short ones).
func TaskMetric(task string) (key, label string, scale float64) {
	switch task {
	case "sst2", "pets", "classification":
		return "accuracy", "accuracy (%)", 100
	case "squad":
		return "f1", "F1", 1
	case "xsum", "generation":
		return "rougeL", "ROUGE-L", 1
	}
	return "", "", 1
}

// chanceAccuracy is the accuracy (%) of a uniform guess at a classification
// task's classes: SST-2's 2, Pets' 37; 0 for another task (a
// classification's number of labels is its config's, which a run's
// summary does not say).
func chanceAccuracy(task string) float64 {
	switch task {
	case "sst2":
		return 100.0 / 2
	case "pets":
		return 100.0 / 37
	}
	return 0
}

// ReadStudy reads every sweep of the study from its run directories: each
// sweep's η* by the selection rule, over every run of both stages, a run
// without a result counting as failed, so that a rate with a missing seed is
// not eligible (a half-finished study never reports a rate that looks better
// only because its bad seed has not run yet).
func ReadStudy(st *sweep.Study) (*Report, error) {
	sweeps := st.Sweeps()
	exps := make([]string, len(sweeps))
	for i, sp := range sweeps {
		exps[i] = sp.Exp.Name
	}
	rep := &Report{byMethod: oneMethodEach(exps)}
	byExp := map[string]*Experiment{}
	for _, sp := range sweeps {
		ss, err := sp.State()
		if err != nil {
			return nil, fmt.Errorf("sweep %s: %w", sp.Name, err)
		}
		c := cell{sweep: sp.Name, exp: sp.Exp.Name, optimizer: sp.Optimizer, variant: sp.VariantTitle(), seeds: len(sp.Exp.Seeds)}
		specs := ss.Runs()
		all := sp.Results(specs, ss.States)
		runs, failed, missing := sortRuns(specs, all, ss.States)
		c.missing, c.uncounted = missing, sp.Uncounted(ss)
		if !ss.Stage2Known && *sp.Exp.Fine {
			c.note = "stage 2 not run yet"
		}
		e := byExp[sp.Exp.Name]
		if e == nil {
			e = &Experiment{Name: sp.Exp.Name}
			byExp[sp.Exp.Name] = e
			rep.Experiments = append(rep.Experiments, Experiment{Name: sp.Exp.Name})
		}
		e.Runs = append(e.Runs, runs...)
		if c.note != "" || len(missing) > 0 {
			e.Incomplete = append(e.Incomplete, sp.Name)
		}
		if len(runs) == 0 {
			rep.cells = append(rep.cells, c)
			continue
		}
		// The failed runs go to the figures too, with their sweep's setting,
		// so that the figures choose η* as this table does: a rate with a
		// seed missing cannot be it.
		for _, f := range failed {
			f.Model, f.Task, f.Adapter, f.Grouped = runs[0].Model, runs[0].Task, runs[0].Adapter, runs[0].Grouped
			e.Runs = append(e.Runs, f)
		}
		c.model, c.task, c.adapter, c.grouped = runs[0].Model, runs[0].Task, runs[0].Adapter, runs[0].Grouped
		rates := sweep.RateStatsOf(all)
		i := sweep.EtaStar(rates)
		if i < 0 {
			c.note = "no η*: at every rate a seed diverged or has no result"
			rep.cells = append(rep.cells, c)
			continue
		}
		c.eta = rates[i].LR
		if ss.Stage2Known {
			// Only a settled stage 1 has a coarse η*: before, a rate still
			// to run may be it, and "extend the grid" would be no advice.
			c.edge, c.coarseEta = coarseEdge(rates, sp.Exp.Coarse)
		}
		c.score(rates[i].Runs)
		if rep.byMethod {
			c.q, c.eps, c.unread = estimatorOf(rates[i].Runs)
		}
		rep.cells = append(rep.cells, c)
	}
	for i := range rep.Experiments {
		rep.Experiments[i] = *byExp[rep.Experiments[i].Name]
	}
	return rep, nil
}

// sortRuns sorts a sweep's runs (specs, their results all) into those with
// a result, the failed ones the figures show, and the missing ones the
// report lists (every failed one).
func sortRuns(specs []sweep.RunSpec, all []sweep.Run, states map[string]sweep.RunState) (runs, failed []sweep.Run, missing []missingRun) {
	ran := map[float64]bool{} // rates with a result
	for i := range specs {
		if !all[i].Failed {
			runs = append(runs, all[i])
			ran[all[i].LR] = true
		}
	}
	for i, r := range specs {
		if !all[i].Failed {
			continue
		}
		status := states[r.Dir].Status
		missing = append(missing, missingRun{r.Dir, status, states[r.Dir].Detail})
		// A rate none of whose runs has run yet is not yet a rate of
		// the figures: a cross would call it a failure.
		if notRunYet(status) && !ran[all[i].LR] {
			continue
		}
		failed = append(failed, all[i])
	}
	return runs, failed, missing
}

// score sets the cell's value from the runs at its η*: the task's test
// metric of their best adapters (a full-parameter run's best weights), or
// without a test evaluation (eval.skip) the same metric on the validation
// split at their best step where they logged it (eval.validation_metrics:
// best_val_metrics, on the test metric's scale), else the selection
// criterion itself, the best validation loss.
func (c *cell) score(atEta []sweep.Run) {
	key, label, scale := TaskMetric(c.task)
	of := " of the best adapter"
	if c.adapter == "full" {
		of = " of the best weights"
	}
	metricOf := func(m func(r sweep.Run) map[string]float64) []float64 {
		var vals []float64
		for _, r := range atEta {
			if v, ok := m(r)[key]; ok && key != "" && !r.Diverged {
				vals = append(vals, v*scale)
			}
		}
		return vals
	}
	c.metric = label + of
	vals := metricOf(func(r sweep.Run) map[string]float64 { return r.Test["best"] })
	if len(vals) == 0 {
		c.metric = "validation " + label + of
		vals = metricOf(func(r sweep.Run) map[string]float64 { return r.BestValMetrics })
	}
	if len(vals) == 0 {
		c.metric = lossMetric
		for _, r := range atEta {
			vals = append(vals, sweep.OrNaN(r.BestValLoss))
		}
	}
	c.mean, c.std, c.n = sweep.MeanStd(vals)
}

// notRunYet says whether a run of this status has not ended yet.
func notRunYet(status string) bool {
	return status == sweep.StatusNew || status == sweep.StatusQueued || status == sweep.StatusRunning
}

// GroupedPairs finds, for each model, task and adapter, a grouped and a
// joint (ungrouped) experiment, and returns their runs together under the
// name "<joint>_vs_grouped": the paper compares the two estimations in one
// figure.
func (rep *Report) GroupedPairs() []Experiment {
	var out []Experiment
	for _, exps := range rep.bySetting() {
		var j, g *Experiment // the last of each
		for i := range exps {
			if exps[i].Runs[0].Grouped {
				g = &exps[i]
			} else {
				j = &exps[i]
			}
		}
		if j != nil && g != nil {
			out = append(out, Experiment{Name: j.Name + "_vs_grouped", Runs: append(append([]sweep.Run{}, j.Runs...), g.Runs...)})
		}
	}
	return out
}

// bySetting groups the experiments that have runs by model, task and
// adapter (what sweep.Setting requires of one figure), each group in study
// order, the groups in the order they first appear.
func (rep *Report) bySetting() [][]Experiment {
	type key struct{ model, task, adapter string }
	index := map[key]int{}
	var groups [][]Experiment
	for _, e := range rep.Experiments {
		if len(e.Runs) == 0 {
			continue
		}
		r := e.Runs[0]
		k := key{r.Model, r.Task, r.Adapter}
		i, ok := index[k]
		if !ok {
			i = len(groups)
			index[k] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], e)
	}
	return groups
}

func (c cell) value() string {
	if c.eta == 0 || c.n == 0 {
		return "–"
	}
	s := fmt.Sprintf("%.2f", c.mean)
	if c.metric == lossMetric {
		s = fmt.Sprintf("%.4f", c.mean)
	}
	if !math.IsNaN(c.std) {
		if c.metric == lossMetric {
			s += fmt.Sprintf(" ± %.4f", c.std)
		} else {
			s += fmt.Sprintf(" ± %.2f", c.std)
		}
	}
	if c.n < c.seeds {
		s += fmt.Sprintf(" (%d/%d seeds)", c.n, c.seeds)
	}
	return s
}

// method is the column a cell belongs in: its optimizer and variant.
func (c cell) method() sweep.Method { return sweep.Method{Optimizer: c.optimizer, Variant: c.variant} }

// Markdown is one table per adapter kind (the paper's Table 1 is LoRA, its
// Table 2 prompt tuning), numbered in the order the experiments first use
// each kind: rows are experiments, columns optimizers (one per variant of
// an optimizer, labelled with it), or in a study whose experiments have one
// method each a row per experiment and its method (writeMethodTable); then
// the runs still missing, so that a partial report says it is partial.
func (rep *Report) Markdown() string {
	var b strings.Builder
	if rep.byMethod {
		b.WriteString(methodLegend)
	} else {
		b.WriteString("# Study results\n\nEach cell: the test metric of the best adapter (full-parameter: the best weights) of each seed, at its lowest\n" +
			"validation loss, mean ± sample std over seeds, at the optimizer's η* (the rate with the lowest mean best validation\n" +
			"loss over seeds; η* below the value).\n" +
			"Without a test evaluation (eval.skip) the cell is the same metric on the validation split at the best step where the\n" +
			"runs logged it (eval.validation_metrics), else the best validation loss. **Bold**: the best of its row;\n" +
			"⚠: the coarse stage's η* was at an end of its grid (below the tables).\n")
	}
	kinds := map[string][]cell{}
	var order []string
	for _, c := range rep.cells {
		k := adapterKind(c)
		if _, ok := kinds[k]; !ok {
			order = append(order, k)
		}
		kinds[k] = append(kinds[k], c)
	}
	for ti, k := range order {
		if rep.byMethod {
			writeMethodTable(&b, ti+1, k, kinds[k])
		} else {
			writeTable(&b, ti+1, k, kinds[k])
		}
	}
	var edges []string
	for _, c := range rep.cells {
		if c.eta > 0 && c.edge != "" {
			edges = append(edges, edgeNote(c))
		}
	}
	if len(edges) > 0 {
		fmt.Fprintf(&b, "\n⚠ η* at an end of the coarse grid:\n\n%s\n", strings.Join(edges, "\n"))
	}
	rep.writeUnread(&b)
	rep.writeOtherArithmetic(&b)
	rep.writeUncounted(&b)
	if missing, n := rep.missingLines(); len(missing) > 0 {
		fmt.Fprintf(&b, "\n## Missing (%d)\n\nRuns without a result (meazo-sweep status says more; meazo-sweep resume retries them):\n\n%s\n",
			n, strings.Join(missing, "\n"))
	} else {
		b.WriteString("\nNo run is missing.\n")
	}
	return b.String()
}

// writeTable writes Table n, of one adapter kind's cells: a row an
// experiment, a column a method.
func writeTable(b *strings.Builder, n int, kind string, cells []cell) {
	var opts []sweep.Method
	var exps []string
	seenO, seenE := map[sweep.Method]bool{}, map[string]bool{}
	for _, c := range cells {
		if !seenO[c.method()] {
			seenO[c.method()] = true
			opts = append(opts, c.method())
		}
		if !seenE[c.exp] {
			seenE[c.exp] = true
			exps = append(exps, c.exp)
		}
	}
	sweep.SortMethods(opts)
	fmt.Fprintf(b, "\n## Table %d: %s\n\n| experiment | metric |", n, kind)
	for _, o := range opts {
		fmt.Fprintf(b, " %s |", o)
	}
	b.WriteString("\n|---|---|" + strings.Repeat("---|", len(opts)) + "\n")
	for _, e := range exps {
		var metrics []string
		row := map[sweep.Method]cell{}
		for _, c := range cells {
			if c.exp == e {
				row[c.method()] = c
				if c.metric != "" && !slices.Contains(metrics, c.metric) {
					metrics = append(metrics, c.metric)
				}
			}
		}
		fmt.Fprintf(b, "| %s | %s |", e, metricColumn(metrics))
		best := bestInRow(row)
		for _, o := range opts {
			c, ok := row[o]
			switch {
			case !ok:
				b.WriteString(" |")
			case c.eta > 0:
				v, flag := c.value(), ""
				if best[o] {
					v = "**" + v + "**"
				}
				if c.edge != "" {
					flag = " ⚠"
				}
				fmt.Fprintf(b, " %s<br>η*=%s%s |", v, sweep.LRString(c.eta), flag)
			default:
				fmt.Fprintf(b, " – |")
			}
		}
		b.WriteString("\n")
	}
}

// writeOtherArithmetic lists the runs with a result whose later steps
// another arithmetic computed than their first (changes.jsonl's
// "arithmetic" lines): a study resumed on another CPU or GPU, or by a build
// that draws other noise (an upgrade across noise v2). Each is a correct
// run, but the study's numbers are then not those a study started afresh
// gives, which nothing else in the report says.
func (rep *Report) writeOtherArithmetic(b *strings.Builder) {
	var lines []string
	for _, e := range rep.Experiments {
		for _, r := range e.Runs {
			if r.Failed {
				continue
			}
			for _, c := range r.Changes {
				if c.Key == rundir.ArithmeticChange {
					lines = append(lines, fmt.Sprintf("- %s: from step %d on, %v (before: %v)", r.Dir, c.Step+1, c.New, c.Old))
				}
			}
		}
	}
	if len(lines) > 0 {
		fmt.Fprintf(b, "\n## Resumed on another arithmetic (%d)\n\nRuns whose later steps another arithmetic computed than their first (a resume on another\n"+
			"CPU, GPU or backend, or by a build that draws other noise; changes.jsonl): each is a correct run, but not bit for bit\n"+
			"the run a study started afresh makes.\n\n%s\n", len(lines), strings.Join(lines, "\n"))
	}
}

// writeUncounted lists the run directories no sweep's plan counts, if any.
func (rep *Report) writeUncounted(b *strings.Builder) {
	var lines []string
	for _, c := range rep.cells {
		for _, d := range c.uncounted {
			lines = append(lines, "- "+d)
		}
	}
	if len(lines) > 0 {
		fmt.Fprintf(b, "\n## Not counted (%d)\n\nRun directories in the sweeps that the study's grid no longer holds (a fine grid around an earlier η*, a rate\n"+
			"or seed the study has since left out): they are in no table or figure.\n\n%s\n", len(lines), strings.Join(lines, "\n"))
	}
}

// missingLines lists the runs without a result (a sweep's runs not run yet
// counted in one line when there are many) and counts them.
func (rep *Report) missingLines() ([]string, int) {
	var missing []string
	n := 0
	for _, c := range rep.cells {
		if c.note != "" { // a sweep's line: not counted among the runs
			missing = append(missing, fmt.Sprintf("- %s: %s", c.sweep, c.note))
		}
		var waiting []missingRun
		for _, m := range c.missing {
			if m.status == sweep.StatusNew || m.status == sweep.StatusQueued {
				waiting = append(waiting, m)
			} else {
				missing = append(missing, "- "+m.String())
			}
		}
		if len(waiting) > maxWaitingListed {
			counts := map[string]int{}
			for _, m := range waiting {
				counts[m.status]++
			}
			var parts []string
			for _, st := range []string{sweep.StatusNew, sweep.StatusQueued} {
				if counts[st] > 0 {
					parts = append(parts, fmt.Sprintf("%d %s", counts[st], st))
				}
			}
			missing = append(missing, fmt.Sprintf("- %s: %s runs, not run yet", c.sweep, strings.Join(parts, " and ")))
		} else {
			for _, m := range waiting {
				missing = append(missing, "- "+m.String())
			}
		}
		n += len(c.missing)
	}
	return missing, n
}

func adapterKind(c cell) string {
	switch {
	case c.adapter == "prompt":
		return "prompt tuning"
	case c.adapter == "lora" && c.grouped:
		return "LoRA, grouped (one group per layer)"
	case c.adapter == "lora":
		return "LoRA"
	case c.adapter == "full" && c.grouped:
		return "full-parameter, grouped (one group per layer)"
	case c.adapter == "full":
		return "full-parameter (every weight)"
	case c.adapter == "":
		return "no results yet"
	}
	return c.adapter
}

// CSV is the cells as one table for other tools (one line per sweep, empty
// where there is no value), with the number of missing runs.
func (rep *Report) CSV() string {
	var b strings.Builder
	b.WriteString("experiment,model,task,adapter,grouped,optimizer,variant,eta_star,metric,mean,std,n_seeds,seeds,missing_runs\n")
	num := func(v float64) string {
		if math.IsNaN(v) {
			return ""
		}
		return fmt.Sprintf("%g", v)
	}
	for _, c := range rep.cells {
		eta := ""
		if c.eta > 0 {
			eta = sweep.LRString(c.eta)
		}
		mean, std := "", ""
		if c.n > 0 {
			mean, std = num(c.mean), num(c.std)
		}
		// Every text field through csvField: a model is its config's
		// model.name or model.path, which may hold a comma or a quote.
		fmt.Fprintf(&b, "%s,%s,%s,%s,%v,%s,%s,%s,%s,%s,%s,%d,%d,%d\n", csvField(c.exp), csvField(c.model), csvField(c.task), csvField(c.adapter), c.grouped,
			csvField(c.optimizer), csvField(c.variant), eta, `"`+strings.ReplaceAll(c.metric, `"`, `""`)+`"`, mean, std, c.n, c.seeds, len(c.missing))
	}
	return b.String()
}

// csvField quotes a field that holds a comma or a quote (RFC 4180).
func csvField(s string) string {
	if strings.ContainsAny(s, ",\"\n") {
		return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
	}
	return s
}

// metricColumn is a row's metric column: its cells' metric, each with
// which way is better; a row whose sweeps differ (eval.skip or
// eval.validation_metrics in some only) names each of its metrics, the
// first cell's first, so that no cell's value stands under another
// metric's name.
func metricColumn(metrics []string) string {
	parts := make([]string, len(metrics))
	for i, m := range metrics {
		parts[i] = m + ", " + direction(m)
	}
	return strings.Join(parts, "; ")
}
