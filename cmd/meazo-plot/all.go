package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/meazo-go/meazo/plot"
)

// cmdAll makes every figure the runs allow: loss curves (each method at its
// best rate), the robustness figure when some method was run at several
// rates, v_t for each MEAZO method's first seed at its best rate, and the
// memory table.
func cmdAll(args []string, stdout, stderr io.Writer) error {
	fs, out := newFlags("all", stderr)
	smooth := fs.Int("smooth", 0, "training-loss running-mean window in steps (0: 1% of the run's steps, at least 1)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return errors.New("no run directories given")
	}
	warn := warner(stderr)
	runs, err := loadRuns(fs.Args(), warn)
	if err != nil {
		return err
	}
	if err := mkdirOut(*out); err != nil {
		return err
	}
	paths, err := writeCurves(*out, runs, *smooth, warn)
	if err != nil {
		return err
	}
	ms, groups := byMethod(runs)
	for _, m := range ms {
		if len(rateStats(groups[m])) > 1 {
			p, err := writeRobustness(*out, runs)
			if err != nil {
				return err
			}
			paths = append(paths, p...)
			break
		}
	}
	best, _ := atBestRate(runs)
	ms, groups = byMethod(best)
	for _, m := range ms {
		if m.Optimizer != "meazo" {
			continue
		}
		r := groups[m][0]
		name := "vt_meazo.svg"
		if m.Grouped {
			name = "vt_meazo_grouped.svg"
		}
		path := filepath.Join(*out, name)
		if err := writeVT(path, r, warn); err != nil {
			return err
		}
		paths = append(paths, path)
	}
	table, err := memoryTable(runs)
	if err != nil {
		return err
	}
	path := filepath.Join(*out, "memory.md")
	if err := plot.WriteFileAtomic(path, []byte(table)); err != nil {
		return err
	}
	paths = append(paths, path)
	fmt.Fprintln(stdout, strings.Join(paths, "\n"))
	return nil
}
