package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"

	"github.com/meazo-go/meazo/internal/cli"
	"github.com/meazo-go/meazo/plot"
	"github.com/meazo-go/meazo/results"
	"github.com/meazo-go/meazo/sweep"
)

func init() {
	commands.Register("study", cli.Help{
		Summary:  "a meazo-sweep study: tables at η*, figures per experiment, missing runs",
		Synopsis: "[--out DIR] [--smooth W] [--png=false] STUDY.yaml",
		Does: `Reports a meazo-sweep study (docs/SWEEPS.md) as the paper's tables and figures: each sweep's η* by the
search's rule, the test metric of each seed's best adapter at η* (mean ± std over seeds), the figures of
each experiment, and the runs still missing, so that a study under way gives a partial report that says so.
A study whose experiments run one method each (opt-figure20.yaml) has a row per experiment and method.`,
		Reads: `STUDY.yaml: the study file meazo-sweep ran; the run directories under its out (summary.json, metrics.jsonl,
config.yaml; docs/RUNDIR.md), whatever state they are in.`,
		Prints: `results.md (also printed: one table per adapter kind, then the missing runs), results.csv (one line per
sweep), and per experiment DIR/<experiment>/ with the loss curves at η*, the robustness and test-metric
figures and MEAZO's v_t; the curves of experiments compared in one figure (<experiment>_vs_grouped/, or
<a>_vs_<b>_vs_…/); a PNG beside each SVG. The paths written follow the table, one a line. Nothing is written
when a figure cannot be made.`,
		Example: "meazo-plot study --out sweeps/paper/report configs/studies/paper.yaml\nmeazo-plot study --png=false --out runs/study-demo/report configs/studies/demo.yaml",
	}, cmdStudy)
}

// cmdStudy reports a meazo-sweep study (docs/SWEEPS.md): Table 1/2-style
// results (each optimizer at its η*, mean ± std over seeds), the robustness
// figures, the loss curves and MEAZO's v_t per experiment, grouped against
// joint estimation where the study has both, and the runs still missing.
func cmdStudy(args []string, _ io.Reader, stdout io.Writer) error {
	fs, out := newFlags("study")
	smooth := smoothFlag(fs)
	png := fs.Bool("png", true, "also write PNGs of the figures (needs rsvg-convert or ImageMagick's convert)")
	if err := cli.Parse(fs, args); err != nil {
		return cli.Usage(err)
	}
	if fs.NArg() != 1 {
		return cli.Usage(errors.New("want one study file"))
	}
	st, err := sweep.LoadStudy(fs.Arg(0))
	if err != nil {
		return err
	}
	// A run started with other settings than the study now gives it (its
	// config or a set line edited since) is not the study's result.
	if err := st.CheckRunsMatch(); err != nil {
		return err
	}
	rep, err := results.ReadStudy(st)
	if err != nil {
		return err
	}
	// Every figure is made before anything is written, so that a report
	// that fails (an experiment with no run to draw) leaves the output
	// directory as it was (an old report is not left half replaced).
	all, err := studyFigures(rep, *smooth)
	if err != nil {
		return err
	}
	if err := mkdirOut(*out, fs.Arg(0)); err != nil {
		return err
	}
	// Every path the report writes, checked before the first is written.
	planned := []string{filepath.Join(*out, "results.md"), filepath.Join(*out, "results.csv")}
	for _, e := range all {
		for _, f := range e.figs {
			p := filepath.Join(*out, e.name, f.File)
			planned = append(planned, p)
			if *png && strings.HasSuffix(p, ".svg") {
				planned = append(planned, strings.TrimSuffix(p, ".svg")+".png")
			}
		}
	}
	if err := checkReplace(planned...); err != nil {
		return err
	}
	var paths []string
	for name, body := range map[string]string{"results.md": rep.Markdown(), "results.csv": rep.CSV()} {
		p := filepath.Join(*out, name)
		if err := plot.WriteFileAtomic(p, []byte(body)); err != nil {
			return err
		}
		paths = append(paths, p)
	}
	for _, e := range all {
		p, err := writeExperiment(*out, e.name, e.figs)
		if err != nil {
			return err
		}
		paths = append(paths, p...)
	}
	if *png {
		paths = append(paths, toPNGs(paths)...)
	}
	sort.Strings(paths)
	fmt.Fprint(stdout, rep.Markdown())
	fmt.Fprintln(stdout, strings.Join(paths, "\n"))
	return nil
}

// experimentFigures are the figures of one experiment, or of a pair that
// differs only in grouping.
type experimentFigures struct {
	name string
	figs []results.Figure
}

// studyFigures makes every experiment's figures, then the loss curves at η*
// of experiments drawn together: each pair grouped against joint estimation
// (experiments that differ only in grouping), and in a study whose
// experiments have one method each, those of one model, task and adapter
// (results.MethodSets: Figure 20's FZOO, ZO-SGD and MEAZO). A run whose
// metrics.jsonl cannot be read is only left out of the curves.
func studyFigures(rep *results.Report, smooth int) ([]experimentFigures, error) {
	var all []experimentFigures
	for _, e := range rep.Experiments {
		if len(e.Runs) == 0 {
			continue
		}
		figs, err := results.ExperimentFigures(e, smooth, warn)
		if err != nil {
			return nil, err
		}
		all = append(all, experimentFigures{e.Name, figs})
	}
	for _, set := range append(rep.GroupedPairs(), rep.MethodSets()...) {
		figs, err := results.Curves(set.Runs, smooth, warn)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", set.Name, err)
		}
		all = append(all, experimentFigures{set.Name, figs})
	}
	return all, nil
}

// toPNGs writes a PNG beside each SVG of paths and returns the PNGs'
// paths; the first that fails (no converter) is a warning, and the rest
// are not tried.
func toPNGs(paths []string) []string {
	var pngs []string
	for _, p := range paths {
		if strings.HasSuffix(p, ".svg") {
			q := strings.TrimSuffix(p, ".svg") + ".png"
			if err := plot.ToPNG(p, q); err != nil {
				warn(err.Error())
				break
			}
			pngs = append(pngs, q)
		}
	}
	return pngs
}

// writeExperiment writes an experiment's figures to its own directory under out.
func writeExperiment(out, name string, figs []results.Figure) ([]string, error) {
	dir := filepath.Join(out, name)
	if err := mkdirOut(dir); err != nil {
		return nil, err
	}
	return writeFigures(dir, figs...)
}
