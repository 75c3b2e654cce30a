package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"

	"github.com/meazo-go/meazo/plot"
)

func cmdRobustness(args []string, stdout, stderr io.Writer) error {
	fs, out := newFlags("robustness", stderr)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return errors.New("no sweep or run directories given")
	}
	runs, err := loadRuns(fs.Args(), warner(stderr))
	if err != nil {
		return err
	}
	if err := mkdirOut(*out); err != nil {
		return err
	}
	paths, err := writeRobustness(*out, runs)
	for _, p := range paths {
		fmt.Fprintln(stdout, p)
	}
	return err
}

// writeRobustness draws the paper's step-size robustness figures: per method,
// the best (robustness_best.svg) and last (robustness_last.svg) validation
// loss against η/η*, where η* is the method's own selected rate (etaStar). A
// rate at which some seed diverged is marked with a cross on the top edge; its
// line point is the mean of the seeds that did not diverge, if any.
func writeRobustness(outDir string, runs []Run) ([]string, error) {
	setting, err := sameSetting(runs)
	if err != nil {
		return nil, err
	}
	ms, groups := byMethod(runs)
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
	anyDiverged := false
	for _, m := range ms {
		rates := rateStats(groups[m])
		star := etaStar(rates)
		if star < 0 {
			skipped = append(skipped, fmt.Sprintf("%s (a seed diverged at every rate)", m))
			continue
		}
		eta := rates[star].LR
		marker := plot.Circle
		if m.Grouped {
			marker = plot.Triangle
		}
		for i := range figs {
			s := plot.Series{Name: fmt.Sprintf("%s, η*=%s", m, lrString(eta)), Color: methodColor(m), Dashed: m.Grouped, Marker: marker}
			div := plot.Series{Color: methodColor(m), NoLine: true, InfAtTop: true}
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
				if r.Diverged > 0 {
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
	if anyDiverged {
		note += "\n× on the top edge: a rate at which at least one seed diverged (such a rate cannot be η*)."
	}
	if len(skipped) > 0 {
		note += "\nNot drawn: " + strings.Join(skipped, ", ") + "."
	}
	var paths []string
	for i, name := range []string{"robustness_best.svg", "robustness_last.svg"} {
		figs[i].Note = note
		path := filepath.Join(outDir, name)
		if err := figs[i].WriteFile(path); err != nil {
			return paths, err
		}
		paths = append(paths, path)
	}
	return paths, nil
}
