package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/meazo-go/meazo/plot"
	"github.com/meazo-go/meazo/rundir"
)

func cmdVT(args []string, stdout, stderr io.Writer) error {
	fs, out := newFlags("vt", stderr)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("want exactly one run directory")
	}
	r, err := loadSummary(fs.Arg(0))
	if err != nil {
		return err
	}
	if err := mkdirOut(*out); err != nil {
		return err
	}
	path := filepath.Join(*out, "vt.svg")
	if err := writeVT(path, r, warner(stderr)); err != nil {
		return err
	}
	fmt.Fprintln(stdout, path)
	return nil
}

// writeVT draws MEAZO's second-moment scalar v_t of every estimation unit
// (one, or one per group) over training, on a log axis.
func writeVT(path string, r Run, warn func(string)) error {
	tp, _, err := loadMetrics(r.Dir, warn)
	if err != nil {
		return err
	}
	metrics := filepath.Join(r.Dir, rundir.MetricsFile)
	var units []int // the group of each unit, from the first line with v
	var steps []float64
	var vs [][]float64 // per unit
	for _, p := range tp {
		if p.V == nil {
			continue
		}
		if units == nil {
			units = p.Groups
			if len(units) != len(p.V) {
				return fmt.Errorf("%s step %d: %d groups but %d v values", metrics, p.Step, len(p.Groups), len(p.V))
			}
			vs = make([][]float64, len(p.V))
		}
		if len(p.V) != len(units) {
			return fmt.Errorf("%s step %d: %d v values, earlier steps have %d", metrics, p.Step, len(p.V), len(units))
		}
		steps = append(steps, float64(p.Step))
		for u, v := range p.V {
			vs[u] = append(vs[u], v)
		}
	}
	if units == nil {
		return fmt.Errorf("%s: no v values (optimizer %s; only MEAZO logs v)", metrics, r.Optimizer)
	}
	fig := &plot.Figure{
		Title:  fmt.Sprintf("%s second moment v_t per group (η=%s, seed %d)", r.Method(), lrString(r.LR), r.Seed),
		XLabel: "step", YLabel: "v_t (log scale)", LogY: true, Width: 760, Height: 460,
		Note: "v_t: the optimizer's scalar second-moment estimate of each estimation unit after the step. Run: " + filepath.Base(filepath.Dir(r.Dir)) + "/" + r.Name(),
	}
	k := max(1, (len(steps)+maxPoints-1)/maxPoints)
	for u, g := range units {
		name := fmt.Sprintf("group %d", g)
		if g < 0 || (!r.Grouped && len(units) == 1) {
			name = "all parameters (one unit)"
		}
		s := plot.Series{Name: name}
		if len(units) > 10 {
			s.Color = gradient(float64(u) / float64(len(units)-1))
		}
		for i := range steps {
			if i%k == 0 || i == len(steps)-1 {
				s.X = append(s.X, steps[i])
				s.Y = append(s.Y, vs[u][i])
			}
		}
		fig.Series = append(fig.Series, s)
	}
	if len(units) > 10 {
		fig.Note += fmt.Sprintf("\n%d groups, coloured from dark blue (first) to yellow (last).", len(units))
	}
	return fig.WriteFile(path)
}

// gradient maps t in [0, 1] to a colour from dark blue to yellow (a few
// stops of the viridis map, interpolated), for figures with many lines.
func gradient(t float64) string {
	stops := [][3]float64{{68, 1, 84}, {59, 82, 139}, {33, 145, 140}, {94, 201, 98}, {253, 231, 37}}
	t = min(max(t, 0), 1) * float64(len(stops)-1)
	i := min(int(t), len(stops)-2)
	f := t - float64(i)
	var c [3]int
	for j := range c {
		c[j] = int(stops[i][j] + f*(stops[i+1][j]-stops[i][j]) + 0.5)
	}
	return fmt.Sprintf("#%02x%02x%02x", c[0], c[1], c[2])
}
