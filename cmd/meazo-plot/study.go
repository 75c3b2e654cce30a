package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"github.com/meazo-go/meazo/plot"
	"github.com/meazo-go/meazo/sweep"
)

// cmdStudy reports a meazo-sweep study (docs/SWEEPS.md): Table 1/2-style
// results (each optimizer at its η*, mean ± std over seeds), the robustness
// figures, the loss curves and MEAZO's v_t per experiment, grouped against
// joint estimation where the study has both, and the runs still missing.
func cmdStudy(args []string, stdout, stderr io.Writer) error {
	fs, out := newFlags("study", stderr)
	smooth := fs.Int("smooth", 0, "training-loss running-mean window in steps (0: 1% of the run's steps, at least 1)")
	png := fs.Bool("png", true, "also write PNGs of the figures (needs rsvg-convert or ImageMagick's convert)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("want one study file")
	}
	st, err := sweep.LoadStudy(fs.Arg(0))
	if err != nil {
		return err
	}
	if err := mkdirOut(*out); err != nil {
		return err
	}
	warn := warner(stderr)
	rep, err := studyReport(st)
	if err != nil {
		return err
	}
	var paths []string
	for name, body := range map[string]string{"results.md": rep.markdown(), "results.csv": rep.csv()} {
		p := filepath.Join(*out, name)
		if err := plot.WriteFileAtomic(p, []byte(body)); err != nil {
			return err
		}
		paths = append(paths, p)
	}
	for _, e := range rep.experiments {
		if len(e.runs) == 0 {
			continue
		}
		dir := filepath.Join(*out, e.name)
		if err := mkdirOut(dir); err != nil {
			return err
		}
		p, err := writeCurves(dir, e.runs, *smooth, warn)
		if err != nil {
			return fmt.Errorf("%s: %w", e.name, err)
		}
		paths = append(paths, p...)
		if p, err = writeRobustness(dir, e.runs); err != nil {
			warn(fmt.Sprintf("%s: no robustness figure: %v", e.name, err))
		}
		paths = append(paths, p...)
		// v_t per parameter group of MEAZO at η* (its first seed).
		if r, ok := meazoAtEta(e.runs); ok {
			vt := filepath.Join(dir, "vt_meazo.svg")
			if err := writeVT(vt, r, warn); err != nil {
				warn(fmt.Sprintf("%s: no v_t figure: %v", e.name, err))
			} else {
				paths = append(paths, vt)
			}
		}
	}
	// Grouped against joint estimation: the loss curves at η* of the
	// experiments that differ only in grouping, in one figure.
	for _, pair := range groupedPairs(rep.experiments) {
		dir := filepath.Join(*out, pair.name)
		if err := mkdirOut(dir); err != nil {
			return err
		}
		p, err := writeCurves(dir, pair.runs, *smooth, warn)
		if err != nil {
			return fmt.Errorf("%s: %w", pair.name, err)
		}
		paths = append(paths, p...)
	}
	if *png {
		var pngs []string
		for _, p := range paths {
			if strings.HasSuffix(p, ".svg") {
				q := strings.TrimSuffix(p, ".svg") + ".png"
				if err := svgToPNG(p, q); err != nil {
					warn(err.Error())
					break
				}
				pngs = append(pngs, q)
			}
		}
		paths = append(paths, pngs...)
	}
	sort.Strings(paths)
	fmt.Fprint(stdout, rep.markdown())
	fmt.Fprintln(stdout, strings.Join(paths, "\n"))
	return nil
}

// meazoAtEta returns MEAZO's run at its η* with the lowest seed, if the
// experiment has MEAZO runs.
func meazoAtEta(runs []Run) (Run, bool) {
	var m []Run
	for _, r := range runs {
		if r.Optimizer == "meazo" {
			m = append(m, r)
		}
	}
	if len(m) == 0 {
		return Run{}, false
	}
	kept, _ := atBestRate(m)
	if len(kept) == 0 {
		return Run{}, false
	}
	best := kept[0]
	for _, r := range kept[1:] {
		if r.Seed < best.Seed {
			best = r
		}
	}
	return best, true
}

// groupedPairs finds, for each model, task and adapter, a grouped and a
// joint (ungrouped) experiment, and returns their runs together under the
// name "<joint>_vs_grouped".
func groupedPairs(exps []studyExperiment) []studyExperiment {
	type key struct{ model, task, adapter string }
	joint, grouped := map[key]studyExperiment{}, map[key]studyExperiment{}
	var order []key
	for _, e := range exps {
		if len(e.runs) == 0 {
			continue
		}
		r := e.runs[0]
		k := key{r.Model, r.Task, r.Adapter}
		if r.Grouped {
			grouped[k] = e
		} else {
			joint[k] = e
		}
		order = append(order, k)
	}
	var out []studyExperiment
	seen := map[key]bool{}
	for _, k := range order {
		j, okj := joint[k]
		g, okg := grouped[k]
		if !okj || !okg || seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, studyExperiment{name: j.name + "_vs_grouped", runs: append(append([]Run{}, j.runs...), g.runs...)})
	}
	return out
}

// svgToPNG converts with rsvg-convert, or ImageMagick's convert.
func svgToPNG(svg, png string) error {
	if p, err := exec.LookPath("rsvg-convert"); err == nil {
		if b, err := exec.Command(p, "-b", "white", "-o", png, svg).CombinedOutput(); err != nil {
			return fmt.Errorf("rsvg-convert %s: %v: %s", svg, err, b)
		}
		return nil
	}
	if p, err := exec.LookPath("convert"); err == nil {
		if b, err := exec.Command(p, "-background", "white", "-flatten", svg, png).CombinedOutput(); err != nil {
			return fmt.Errorf("convert %s: %v: %s", svg, err, b)
		}
		return nil
	}
	return errors.New("no PNGs: neither rsvg-convert (Debian: librsvg2-bin) nor ImageMagick's convert is on PATH")
}

type studyCell struct {
	exp, optimizer string
	grouped        bool
	model, task    string
	adapter        string
	eta            float64 // 0: no η*
	metric         string
	mean, std      float64
	n, seeds       int
	missing        []string // runs not done: "dir (status)"
	note           string
}

type studyExperiment struct {
	name string
	runs []Run // every finished run of every sweep of the experiment
}

type studyRep struct {
	cells       []studyCell
	experiments []studyExperiment
}

// taskMetric is the headline test metric of a task (the paper's tables).
func taskMetric(task string) (key, label string, scale float64) {
	switch task {
	case "sst2":
		return "accuracy", "accuracy (%)", 100
	case "squad":
		return "f1", "F1", 1
	case "xsum":
		return "rougeL", "ROUGE-L", 1
	}
	return "", "", 1
}

func studyReport(st *sweep.Study) (*studyRep, error) {
	rep := &studyRep{}
	byExp := map[string]*studyExperiment{}
	for _, sp := range st.Sweeps() {
		ss, err := sp.State()
		if err != nil {
			return nil, err
		}
		c := studyCell{exp: sp.Exp.Name, optimizer: sp.Optimizer, seeds: len(sp.Exp.Seeds)}
		var runs []Run
		specs := append(append([]sweep.RunSpec{}, ss.Stage1...), ss.Stage2...)
		// Every run of the sweep, a run without a result marked Failed, so that
		// a rate with a missing seed is not eligible for η* (the selection rule).
		all := sp.Results(specs, ss.States)
		for i, r := range specs {
			if all[i].Failed {
				c.missing = append(c.missing, fmt.Sprintf("%s (%s)", r.Dir, ss.States[r.Dir].Status))
			} else {
				runs = append(runs, all[i])
			}
		}
		if !ss.Stage2Known && *sp.Exp.Fine {
			c.note = "stage 2 not run yet"
		}
		e := byExp[sp.Exp.Name]
		if e == nil {
			e = &studyExperiment{name: sp.Exp.Name}
			byExp[sp.Exp.Name] = e
			rep.experiments = append(rep.experiments, studyExperiment{name: sp.Exp.Name})
		}
		e.runs = append(e.runs, runs...)
		if len(runs) == 0 {
			rep.cells = append(rep.cells, c)
			continue
		}
		c.model, c.task, c.adapter, c.grouped = runs[0].Model, runs[0].Task, runs[0].Adapter, runs[0].Grouped
		rates := rateStats(all)
		i := etaStar(rates)
		if i < 0 {
			c.note = "no η*: at every rate a seed diverged or has no result"
			rep.cells = append(rep.cells, c)
			continue
		}
		c.eta = rates[i].LR
		key, label, scale := taskMetric(c.task)
		var vals []float64
		for _, r := range rates[i].Runs {
			if v, ok := r.Test["best"][key]; ok && key != "" && !r.Diverged {
				vals = append(vals, v*scale)
			}
		}
		c.metric = label + " of the best adapter"
		if len(vals) == 0 { // no test evaluation (eval.skip): the selection criterion itself
			c.metric = "best validation loss"
			for _, r := range rates[i].Runs {
				vals = append(vals, orNaN(r.BestValLoss))
			}
		}
		c.mean, c.std, c.n = meanStd(vals)
		rep.cells = append(rep.cells, c)
	}
	for i := range rep.experiments {
		rep.experiments[i].runs = byExp[rep.experiments[i].name].runs
	}
	return rep, nil
}

func (c studyCell) value() string {
	if c.eta == 0 || c.n == 0 {
		return "–"
	}
	s := fmt.Sprintf("%.2f", c.mean)
	if c.metric == "best validation loss" {
		s = fmt.Sprintf("%.4f", c.mean)
	}
	if !math.IsNaN(c.std) {
		if c.metric == "best validation loss" {
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

// markdown is one table per adapter kind (Table 1: LoRA, Table 2: prompt
// tuning, as in the paper): rows are experiments, columns optimizers.
func (rep *studyRep) markdown() string {
	var b strings.Builder
	b.WriteString("# Study results\n\nEach cell: the test metric of the best adapter (lowest validation loss) of each seed, mean ± sample std over seeds,\n" +
		"at the optimizer's η* (the rate with the lowest mean best validation loss over seeds; η* below the value).\n" +
		"Without a test evaluation (eval.skip) the cell is the best validation loss.\n")
	kinds := map[string][]studyCell{}
	var order []string
	for _, c := range rep.cells {
		k := adapterKind(c)
		if _, ok := kinds[k]; !ok {
			order = append(order, k)
		}
		kinds[k] = append(kinds[k], c)
	}
	for ti, k := range order {
		cells := kinds[k]
		var opts []string
		var exps []string
		seenO, seenE := map[string]bool{}, map[string]bool{}
		for _, c := range cells {
			if !seenO[c.optimizer] {
				seenO[c.optimizer] = true
				opts = append(opts, c.optimizer)
			}
			if !seenE[c.exp] {
				seenE[c.exp] = true
				exps = append(exps, c.exp)
			}
		}
		sort.SliceStable(opts, func(i, j int) bool { return rankOpt(opts[i]) < rankOpt(opts[j]) })
		fmt.Fprintf(&b, "\n## Table %d: %s\n\n| experiment | metric |", ti+1, k)
		for _, o := range opts {
			fmt.Fprintf(&b, " %s |", Method{Optimizer: o})
		}
		b.WriteString("\n|---|---|" + strings.Repeat("---|", len(opts)) + "\n")
		for _, e := range exps {
			metric := ""
			row := map[string]studyCell{}
			for _, c := range cells {
				if c.exp == e {
					row[c.optimizer] = c
					if c.metric != "" {
						metric = c.metric
					}
				}
			}
			fmt.Fprintf(&b, "| %s | %s |", e, metric)
			for _, o := range opts {
				c, ok := row[o]
				switch {
				case !ok:
					b.WriteString(" |")
				case c.eta > 0:
					fmt.Fprintf(&b, " %s<br>η*=%s |", c.value(), lrString(c.eta))
				default:
					fmt.Fprintf(&b, " – |")
				}
			}
			b.WriteString("\n")
		}
	}
	var missing []string
	for _, c := range rep.cells {
		if c.note != "" {
			missing = append(missing, fmt.Sprintf("- %s_%s: %s", c.exp, c.optimizer, c.note))
		}
		for _, m := range c.missing {
			missing = append(missing, "- "+m)
		}
	}
	if len(missing) > 0 {
		fmt.Fprintf(&b, "\n## Missing (%d)\n\nRuns without a result (meazo-sweep status says more; meazo-sweep resume retries them):\n\n%s\n",
			len(missing), strings.Join(missing, "\n"))
	} else {
		b.WriteString("\nNo run is missing.\n")
	}
	return b.String()
}

func adapterKind(c studyCell) string {
	switch {
	case c.adapter == "prompt":
		return "prompt tuning"
	case c.adapter == "lora" && c.grouped:
		return "LoRA, grouped (one group per layer)"
	case c.adapter == "lora":
		return "LoRA"
	case c.adapter == "":
		return "no results yet"
	}
	return c.adapter
}

func rankOpt(o string) int {
	for i, x := range sweep.MethodOrder {
		if x == o {
			return i
		}
	}
	return len(sweep.MethodOrder)
}

func (rep *studyRep) csv() string {
	var b strings.Builder
	b.WriteString("experiment,model,task,adapter,grouped,optimizer,eta_star,metric,mean,std,n_seeds,seeds,missing_runs\n")
	num := func(v float64) string {
		if math.IsNaN(v) {
			return ""
		}
		return fmt.Sprintf("%g", v)
	}
	for _, c := range rep.cells {
		eta := ""
		if c.eta > 0 {
			eta = lrString(c.eta)
		}
		mean, std := "", ""
		if c.n > 0 {
			mean, std = num(c.mean), num(c.std)
		}
		fmt.Fprintf(&b, "%s,%s,%s,%s,%v,%s,%s,%q,%s,%s,%d,%d,%d\n", c.exp, c.model, c.task, c.adapter, c.grouped, c.optimizer, eta,
			c.metric, mean, std, c.n, c.seeds, len(c.missing))
	}
	return b.String()
}
