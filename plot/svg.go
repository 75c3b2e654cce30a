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
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/meazo-go/meazo/internal/atomicfile"
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
	Marker Marker // drawn at every drawable point (and in the legend)
	NoLine bool   // markers only, no connecting line
	// InfAtTop draws points whose Y is +Inf as markers on the top edge of the
	// plot (a cross when Marker is None): values that exist but cannot be
	// drawn, such as the loss of a diverged run.
	InfAtTop bool
}

// Marker is the shape drawn at a series' points.
type Marker int

const (
	None Marker = iota
	Circle
	Square
	Triangle
	Cross
)

// Figure is one chart.
type Figure struct {
	Title, XLabel, YLabel string
	LogX, LogY            bool
	Width, Height         int // pixels; 0 means 640 × 420
	Series                []Series
	// Note is printed in small type under the chart, one line per "\n":
	// what the shading means, which runs were left out and why.
	Note string
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
	// Pad by 3% so that points on the extremes (markers especially) are not
	// cut by the frame.
	pad := 0.03 * (a.hi - a.lo)
	a.lo, a.hi = a.lo-pad, a.hi+pad
	return a
}

// ticks returns tick values (data units) and labels. A log axis gets its
// decades, or 1-2-5 (then 1…9) mantissas when fewer than two decades show.
func (a axis) ticks() ([]float64, []string) {
	var vs []float64
	var ls []string
	if a.log {
		for _, ms := range [][]int{{1}, {1, 2, 5}, {1, 2, 3, 4, 5, 6, 7, 8, 9}} {
			vs, ls = vs[:0], ls[:0]
			for e := math.Floor(a.lo); e <= math.Ceil(a.hi); e++ {
				for _, m := range ms {
					v := float64(m) * math.Pow(10, e)
					if lv := math.Log10(v); lv < a.lo-1e-9 || lv > a.hi+1e-9 {
						continue
					}
					vs = append(vs, v)
					ls = append(ls, strconv.Itoa(m)+"e"+strconv.Itoa(int(e)))
				}
			}
			if len(vs) >= 2 {
				break
			}
		}
		if len(vs) > 10 { // many decades: every other, every third, …
			step := (len(vs) + 7) / 8
			var tv []float64
			var tl []string
			for i := 0; i < len(vs); i += step {
				tv, tl = append(tv, vs[i]), append(tl, ls[i])
			}
			vs, ls = tv, tl
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
	for i := math.Ceil(a.lo / step); i*step <= a.hi+1e-9*step; i++ {
		v := i * step // not a running sum, which drifts (0.30000000000000004)
		if v == 0 {
			v = 0 // no "-0"
		}
		vs = append(vs, v)
		if v == math.Trunc(v) && math.Abs(v) < 1e7 {
			ls = append(ls, strconv.FormatFloat(v, 'f', -1, 64)) // steps: 20000, not 2e+04
		} else {
			ls = append(ls, strconv.FormatFloat(v, 'g', 4, 64))
		}
	}
	return vs, ls
}

// SVG renders the figure.
func (f *Figure) SVG() []byte {
	w, h := f.Width, f.Height
	if w == 0 || h == 0 {
		w, h = 640, 420
	}
	const left, top = 70.0, 36.0
	// Room for the legend; long names widen the image, not shrink the plot.
	right := 170.0
	for _, s := range f.Series {
		right = math.Max(right, 44+textWidth(s.Name))
	}
	right = math.Min(right, 420)
	w += int(right) - 170
	// Notes get their own lines under the plot, wrapped to the image's
	// width (11 px text, about 6 px a character); the plot keeps its size.
	var notes []string
	if f.Note != "" {
		for _, line := range strings.Split(f.Note, "\n") {
			notes = append(notes, wrap(line, (w-16)/6)...)
		}
	}
	h += 15 * len(notes)
	bottom := 50.0 + 15*float64(len(notes))
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
	fmt.Fprintf(&b, `<text x="%g" y="22" text-anchor="middle" font-size="14">%s</text>`+"\n", float64(w)/2, html.EscapeString(f.Title))
	f.frame(&b, ax, ay, notes)
	fmt.Fprintf(&b, `<clipPath id="area"><rect x="%.1f" y="%.1f" width="%.1f" height="%.1f"/></clipPath>`+"\n", ax.p0, ay.p1, ax.p1-ax.p0, ay.p0-ay.p1)
	b.WriteString(`<g clip-path="url(#area)">` + "\n")
	for k := range f.Series {
		f.Series[k].draw(&b, k, ax, ay)
	}
	b.WriteString("</g>\n")
	f.legend(&b, ax.p1+10, ay.p1+8, ay.p0)
	b.WriteString("</svg>\n")
	return b.Bytes()
}

// frame draws the grid, the ticks and their labels, the plot's border, the
// axes' labels and the notes under the plot.
func (f *Figure) frame(b *bytes.Buffer, ax, ay axis, notes []string) {
	tv, tl := ax.ticks()
	for i, v := range tv {
		x := ax.t(v)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", x, ay.p1, x, ay.p0)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", x, ay.p0+16, tl[i])
	}
	tv, tl = ay.ticks()
	for i, v := range tv {
		y := ay.t(v)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", ax.p0, y, ax.p1, y)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n", ax.p0-6, y+4, tl[i])
	}
	fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="black"/>`+"\n", ax.p0, ay.p1, ax.p1-ax.p0, ay.p0-ay.p1)
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", (ax.p0+ax.p1)/2, ay.p0+38, html.EscapeString(f.XLabel))
	fmt.Fprintf(b, `<text transform="translate(16 %.1f) rotate(-90)" text-anchor="middle">%s</text>`+"\n", (ay.p0+ay.p1)/2, html.EscapeString(f.YLabel))
	for i, line := range notes {
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="11" fill="#444">%s</text>`+"\n", 8.0, ay.p0+58+15*float64(i), html.EscapeString(line))
	}
}

// draw draws the k-th series: its band, its line (a point alone as a dot)
// and markers, and its +Inf values as markers at the top.
func (s *Series) draw(b *bytes.Buffer, k int, ax, ay axis) {
	color := s.color(k)
	if s.Lo != nil && s.Hi != nil {
		for _, seg := range segments(len(s.X), func(i int) bool { return ax.ok(s.X[i]) && ay.ok(s.Lo[i]) && ay.ok(s.Hi[i]) }) {
			var pts bytes.Buffer
			for _, i := range seg {
				fmt.Fprintf(&pts, "%.1f,%.1f ", ax.t(s.X[i]), ay.t(s.Hi[i]))
			}
			for n := len(seg) - 1; n >= 0; n-- {
				fmt.Fprintf(&pts, "%.1f,%.1f ", ax.t(s.X[seg[n]]), ay.t(s.Lo[seg[n]]))
			}
			fmt.Fprintf(b, `<polygon points="%s" fill="%s" fill-opacity="0.18" stroke="none"/>`+"\n", pts.String(), color)
		}
	}
	dash := ""
	if s.Dashed {
		dash = ` stroke-dasharray="6 4"`
	}
	for _, seg := range segments(len(s.X), func(i int) bool { return ax.ok(s.X[i]) && ay.ok(s.Y[i]) }) {
		if len(seg) == 1 && s.Marker == None && !s.NoLine {
			fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="2.5" fill="%s"/>`+"\n", ax.t(s.X[seg[0]]), ay.t(s.Y[seg[0]]), color)
			continue
		}
		if len(seg) > 1 && !s.NoLine {
			var pts bytes.Buffer
			for _, i := range seg {
				fmt.Fprintf(&pts, "%.1f,%.1f ", ax.t(s.X[i]), ay.t(s.Y[i]))
			}
			fmt.Fprintf(b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="1.6"%s/>`+"\n", pts.String(), color, dash)
		}
		for _, i := range seg {
			marker(b, s.Marker, ax.t(s.X[i]), ay.t(s.Y[i]), color)
		}
	}
	if s.InfAtTop {
		m := s.Marker
		if m == None {
			m = Cross
		}
		for i := range s.X {
			if ax.ok(s.X[i]) && math.IsInf(s.Y[i], 1) {
				marker(b, m, ax.t(s.X[i]), ay.p1+6, color)
			}
		}
	}
}

func (s *Series) color(k int) string {
	if s.Color != "" {
		return s.Color
	}
	return palette[k%len(palette)]
}

// legend lists the named series from y0 down, as many as fit above yMax; the
// rest are summarised as "+N more".
func (f *Figure) legend(b *bytes.Buffer, x, y0, yMax float64) {
	var named []int
	for k, s := range f.Series {
		if s.Name != "" {
			named = append(named, k)
		}
	}
	fit := int((yMax-y0)/18) + 1
	for n, k := range named {
		y := y0 + 18*float64(n)
		if n == fit-1 && len(named) > fit {
			fmt.Fprintf(b, `<text x="%.1f" y="%.1f">+%d more</text>`+"\n", x, y+4, len(named)-n)
			return
		}
		s := &f.Series[k]
		color := s.color(k)
		if !s.NoLine {
			dash := ""
			if s.Dashed {
				dash = ` stroke-dasharray="6 4"`
			}
			fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2"%s/>`+"\n", x, y, x+20, y, color, dash)
		}
		m := s.Marker
		if m == None && s.NoLine {
			m = Cross
		}
		marker(b, m, x+10, y, color)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f">%s</text>`+"\n", x+26, y+4, html.EscapeString(s.Name))
	}
}

// marker draws one marker centred on (x, y).
func marker(b *bytes.Buffer, m Marker, x, y float64, color string) {
	const r = 3.5
	switch m {
	case Circle:
		fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="%g" fill="%s"/>`+"\n", x, y, r, color)
	case Square:
		fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%g" height="%g" fill="%s"/>`+"\n", x-r, y-r, 2*r, 2*r, color)
	case Triangle:
		fmt.Fprintf(b, `<polygon points="%.1f,%.1f %.1f,%.1f %.1f,%.1f" fill="%s"/>`+"\n", x, y-r-1, x-r-1, y+r, x+r+1, y+r, color)
	case Cross:
		fmt.Fprintf(b, `<path d="M%.1f %.1fL%.1f %.1fM%.1f %.1fL%.1f %.1f" stroke="%s" stroke-width="2"/>`+"\n", x-r, y-r, x+r, y+r, x-r, y+r, x+r, y-r, color)
	}
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

// WriteFileAtomic writes data so that a reader never sees a partial file
// (see internal/atomicfile).
func WriteFileAtomic(path string, data []byte) error { return atomicfile.WriteFile(path, data) }

// textWidth estimates the width in pixels of s in 12 px sans-serif, from
// the advance widths of DejaVu Sans (the sans-serif of rsvg-convert and of
// browsers on Linux; Helvetica and Arial are narrower) by class of
// character: legends are sized by it, so it errs on the wide side.
func textWidth(s string) float64 {
	w := 0.0
	for _, r := range s {
		switch {
		case strings.ContainsRune("MWmw", r):
			w += 11.5
		case r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '=' || r == '+' || r >= 128:
			w += 8
		case strings.ContainsRune(" .,:;!|'()[]ijlftr", r):
			w += 4.4
		default:
			w += 7.3
		}
	}
	return w
}

// wrap breaks line at spaces into lines of at most n characters (a word
// longer than n stands alone).
func wrap(line string, n int) []string {
	var out []string
	cur := ""
	for _, word := range strings.Fields(line) {
		switch {
		case cur == "":
			cur = word
		case utf8.RuneCountInString(cur)+1+utf8.RuneCountInString(word) <= n:
			cur += " " + word
		default:
			out = append(out, cur)
			cur = word
		}
	}
	return append(out, cur)
}
