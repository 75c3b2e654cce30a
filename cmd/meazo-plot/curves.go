package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/meazo-go/meazo/plot"
)

// maxPoints bounds the points drawn per curve (see Band.thin).
const maxPoints = 1000

func cmdCurves(args []string, stdout, stderr io.Writer) error {
	fs, out := newFlags("curves", stderr)
	smooth := fs.Int("smooth", 0, "training-loss running-mean window in steps (0: 1% of the run's steps, at least 1)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return errors.New("no run directories given")
	}
	runs, err := loadRuns(fs.Args(), warner(stderr))
	if err != nil {
		return err
	}
	if err := mkdirOut(*out); err != nil {
		return err
	}
	paths, err := writeCurves(*out, runs, *smooth, warner(stderr))
	for _, p := range paths {
		fmt.Fprintln(stdout, p)
	}
	return err
}

// atBestRate keeps, for each method run at several learning rates, only the
// runs at its η* (see etaStar): loss curves compare optimizers each at its
// own best rate, as the paper does. It also returns a legend suffix per
// method saying so.
func atBestRate(runs []Run) ([]Run, map[Method]string) {
	ms, groups := byMethod(runs)
	var kept []Run
	notes := map[Method]string{}
	for _, m := range ms {
		rates := rateStats(groups[m])
		if len(rates) == 1 {
			kept = append(kept, rates[0].Runs...)
			notes[m] = fmt.Sprintf(", η=%s", lrString(rates[0].LR))
			continue
		}
		i := etaStar(rates)
		if i < 0 {
			i = 0 // every rate diverged somewhere: show the smallest
		}
		kept = append(kept, rates[i].Runs...)
		notes[m] = fmt.Sprintf(", η*=%s of %d rates", lrString(rates[i].LR), len(rates))
	}
	return kept, notes
}

// writeCurves writes train_loss.svg and val_loss.svg: per method, the mean
// over seeds with a band of ± 2 sample standard deviations.
func writeCurves(outDir string, runs []Run, smooth int, warn func(string)) ([]string, error) {
	setting, err := sameSetting(runs)
	if err != nil {
		return nil, err
	}
	runs, rateNote := atBestRate(runs)
	ms, groups := byMethod(runs)
	if smooth <= 0 {
		maxSteps := 0
		for _, r := range runs {
			maxSteps = max(maxSteps, r.Steps)
		}
		smooth = max(1, maxSteps/100)
	}
	train := &plot.Figure{Title: "Training loss, " + setting, XLabel: "step", YLabel: fmt.Sprintf("training loss (running mean of %d steps)", smooth), Width: 760, Height: 460}
	val := &plot.Figure{Title: "Validation loss, " + setting, XLabel: "step", YLabel: "validation loss", Width: 760, Height: 460}
	var diverged []string
	for _, m := range ms {
		var trainCurves, valCurves []map[int]float64
		nDiv := 0
		for _, r := range groups[m] {
			tp, vp, err := loadMetrics(r.Dir, warn)
			if err != nil {
				return nil, err
			}
			losses := make([]float64, len(tp))
			for i, p := range tp {
				losses[i] = p.Loss
			}
			sm := runningMean(losses, smooth)
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
			if r.Diverged {
				nDiv++
			}
		}
		name := fmt.Sprintf("%s (%d seeds%s)", m, len(groups[m]), rateNote[m])
		if nDiv > 0 {
			diverged = append(diverged, fmt.Sprintf("%s: %d of %d seeds diverged", m, nDiv, len(groups[m])))
		}
		train.Series = append(train.Series, bandSeries(m, name, seedBand(trainCurves).thin(maxPoints)))
		val.Series = append(val.Series, bandSeries(m, name, seedBand(valCurves).thin(maxPoints)))
	}
	note := "Line: mean over seeds; shading: mean ± 2 sample standard deviations over seeds (none with one seed)."
	if len(diverged) > 0 {
		note += "\nDiverged seeds count up to their last finite step: " + strings.Join(diverged, "; ") + "."
	}
	train.Note = note + fmt.Sprintf("\nEach seed's training loss is first smoothed by a trailing running mean over %d steps.", smooth)
	val.Note = note
	var paths []string
	for _, f := range []struct {
		fig  *plot.Figure
		name string
	}{{train, "train_loss.svg"}, {val, "val_loss.svg"}} {
		path := filepath.Join(outDir, f.name)
		if err := f.fig.WriteFile(path); err != nil {
			return paths, err
		}
		paths = append(paths, path)
	}
	return paths, nil
}

// bandSeries draws a method's band: its colour, dashed when grouped.
func bandSeries(m Method, name string, b Band) plot.Series {
	return plot.Series{Name: name, X: b.X, Y: b.Mean, Lo: b.Lo, Hi: b.Hi, Color: methodColor(m), Dashed: m.Grouped}
}
