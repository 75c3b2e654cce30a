// Package plot draws line charts as standalone SVG files: a few series with
// optional shaded bands (mean ± std), linear or log axes, a legend. It is the
// project's one place for plotting (synthetic experiments, training curves),
// kept small on purpose: no fonts, no dependencies, readable in any browser.
package plot

import (
	"bytes"
	"fmt"
	"html"
	"math"
	"os"
	"path/filepath"
	"strconv"
)

// Series is one line. X and Y have the same length; points whose value cannot
// be drawn (NaN, ±Inf, or ≤ 0 on a log axis) break the line. Lo and Hi, when
// set, give a shaded band around the line (same length as X).
type Series struct {
	Name   string
	X, Y   []float64
	Lo, Hi []float64
	Color  string // CSS colour; empty picks from the palette
	Dashed bool
}

// Figure is one chart.
type Figure struct {
	Title, XLabel, YLabel string
	LogX, LogY            bool
	Width, Height         int // pixels; 0 means 640 × 420
	Series                []Series
}

var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"}

// axis maps data values to pixels.
type axis struct {
	log    bool
	lo, hi float64 // data range (log10 of it on a log axis)
	p0, p1 float64 // pixel range
}

func (a axis) ok(v float64) bool {
	return !math.IsNaN(v) && !math.IsInf(v, 0) && (!a.log || v > 0)
}

func (a axis) t(v float64) float64 {
	if a.log {
		v = math.Log10(v)
	}
	return a.p0 + (v-a.lo)/(a.hi-a.lo)*(a.p1-a.p0)
}

func newAxis(log bool, vals [][]float64, p0, p1 float64) axis {
	a := axis{log: log, lo: math.Inf(1), hi: math.Inf(-1), p0: p0, p1: p1}
	for _, vs := range vals {
		for _, v := range vs {
			if !a.ok(v) {
				continue
			}
			if log {
				v = math.Log10(v)
			}
			a.lo, a.hi = math.Min(a.lo, v), math.Max(a.hi, v)
		}
	}
	if a.lo > a.hi { // nothing drawable
		a.lo, a.hi = 0, 1
	}
	if a.hi-a.lo < 1e-12*math.Max(1, math.Abs(a.hi)) {
		a.lo, a.hi = a.lo-0.5, a.hi+0.5
	}
	if log {
		a.lo, a.hi = math.Floor(a.lo), math.Ceil(a.hi)
	} else {
		pad := 0.03 * (a.hi - a.lo)
		a.lo, a.hi = a.lo-pad, a.hi+pad
	}
	return a
}

// ticks returns tick values (data units) and labels.
func (a axis) ticks() ([]float64, []string) {
	var vs []float64
	var ls []string
	if a.log {
		step := math.Max(1, math.Ceil((a.hi-a.lo)/8))
		for e := a.lo; e <= a.hi+1e-9; e += step {
			vs = append(vs, math.Pow(10, e))
			ls = append(ls, "1e"+strconv.Itoa(int(e)))
		}
		return vs, ls
	}
	raw := (a.hi - a.lo) / 6
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	for v := math.Ceil(a.lo/step) * step; v <= a.hi+1e-9*step; v += step {
		vs = append(vs, v)
		ls = append(ls, strconv.FormatFloat(v, 'g', 4, 64))
	}
	return vs, ls
}

// SVG renders the figure.
func (f *Figure) SVG() []byte {
	w, h := f.Width, f.Height
	if w == 0 || h == 0 {
		w, h = 640, 420
	}
	const left, right, top, bottom = 70.0, 170.0, 36.0, 50.0
	var xs, ys [][]float64
	for _, s := range f.Series {
		xs = append(xs, s.X)
		ys = append(ys, s.Y, s.Lo, s.Hi)
	}
	ax := newAxis(f.LogX, xs, left, float64(w)-right)
	ay := newAxis(f.LogY, ys, float64(h)-bottom, top)

	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", w, h, w, h)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%g" y="22" text-anchor="middle" font-size="14">%s</text>`+"\n", (ax.p0+ax.p1)/2, html.EscapeString(f.Title))
	// Grid and ticks.
	tv, tl := ax.ticks()
	for i, v := range tv {
		x := ax.t(v)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", x, ay.p1, x, ay.p0)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", x, ay.p0+16, tl[i])
	}
	tv, tl = ay.ticks()
	for i, v := range tv {
		y := ay.t(v)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", ax.p0, y, ax.p1, y)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n", ax.p0-6, y+4, tl[i])
	}
	fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="black"/>`+"\n", ax.p0, ay.p1, ax.p1-ax.p0, ay.p0-ay.p1)
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", (ax.p0+ax.p1)/2, h-12, html.EscapeString(f.XLabel))
	fmt.Fprintf(&b, `<text transform="translate(16 %.1f) rotate(-90)" text-anchor="middle">%s</text>`+"\n", (ay.p0+ay.p1)/2, html.EscapeString(f.YLabel))

	fmt.Fprintf(&b, `<clipPath id="area"><rect x="%.1f" y="%.1f" width="%.1f" height="%.1f"/></clipPath>`+"\n", ax.p0, ay.p1, ax.p1-ax.p0, ay.p0-ay.p1)
	b.WriteString(`<g clip-path="url(#area)">` + "\n")
	for k, s := range f.Series {
		color := s.Color
		if color == "" {
			color = palette[k%len(palette)]
		}
		if s.Lo != nil && s.Hi != nil {
			for _, seg := range segments(len(s.X), func(i int) bool { return ax.ok(s.X[i]) && ay.ok(s.Lo[i]) && ay.ok(s.Hi[i]) }) {
				var pts bytes.Buffer
				for _, i := range seg {
					fmt.Fprintf(&pts, "%.1f,%.1f ", ax.t(s.X[i]), ay.t(s.Hi[i]))
				}
				for n := len(seg) - 1; n >= 0; n-- {
					fmt.Fprintf(&pts, "%.1f,%.1f ", ax.t(s.X[seg[n]]), ay.t(s.Lo[seg[n]]))
				}
				fmt.Fprintf(&b, `<polygon points="%s" fill="%s" fill-opacity="0.18" stroke="none"/>`+"\n", pts.String(), color)
			}
		}
		dash := ""
		if s.Dashed {
			dash = ` stroke-dasharray="6 4"`
		}
		for _, seg := range segments(len(s.X), func(i int) bool { return ax.ok(s.X[i]) && ay.ok(s.Y[i]) }) {
			var pts bytes.Buffer
			for _, i := range seg {
				fmt.Fprintf(&pts, "%.1f,%.1f ", ax.t(s.X[i]), ay.t(s.Y[i]))
			}
			if len(seg) == 1 {
				fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="2.5" fill="%s"/>`+"\n", ax.t(s.X[seg[0]]), ay.t(s.Y[seg[0]]), color)
				continue
			}
			fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="1.6"%s/>`+"\n", pts.String(), color, dash)
		}
	}
	b.WriteString("</g>\n")
	// Legend.
	for k, s := range f.Series {
		if s.Name == "" {
			continue
		}
		color := s.Color
		if color == "" {
			color = palette[k%len(palette)]
		}
		y := ay.p1 + 8 + 18*float64(k)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2"/>`+"\n", ax.p1+10, y, ax.p1+30, y, color)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f">%s</text>`+"\n", ax.p1+36, y+4, html.EscapeString(s.Name))
	}
	b.WriteString("</svg>\n")
	return b.Bytes()
}

// segments splits 0..n-1 into runs of consecutive drawable points.
func segments(n int, ok func(int) bool) [][]int {
	var segs [][]int
	var cur []int
	for i := range n {
		if ok(i) {
			cur = append(cur, i)
			continue
		}
		if len(cur) > 0 {
			segs = append(segs, cur)
			cur = nil
		}
	}
	if len(cur) > 0 {
		segs = append(segs, cur)
	}
	return segs
}

// WriteFile writes the figure's SVG to path atomically.
func (f *Figure) WriteFile(path string) error {
	return WriteFileAtomic(path, f.SVG())
}

// WriteFileAtomic writes data to a temporary file in path's directory and
// renames it over path, so a reader never sees a partial file.
func WriteFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	_, werr := tmp.Write(data)
	if werr == nil {
		werr = tmp.Chmod(0o644) // CreateTemp makes 0600; outputs are for people to read
	}
	cerr := tmp.Close()
	if werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), path)
	}
	if werr != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", path, werr)
	}
	return nil
}
