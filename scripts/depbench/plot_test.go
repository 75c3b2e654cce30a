package depbench

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	mplot "github.com/meazo-go/meazo/plot"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgpdf"
	"gonum.org/v1/plot/vg/vgsvg"
)

// --- what switching to gonum/plot would take: meazo-go's figure (plot.Figure)
// drawn by gonum/plot, every feature the paper's figures use. ---

// drawGonum draws f on c: the plot, the legend right of it, the note under
// it (gonum/plot has neither a legend outside the data area nor notes).
func drawGonum(f *mplot.Figure, c draw.Canvas) error {
	p := plot.New()
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = f.Title, f.XLabel, f.YLabel
	if f.LogX {
		p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	}
	if f.LogY {
		p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	}
	p.Add(plotter.NewGrid())
	legend := plot.NewLegend()
	var tops []*plotter.Scatter // +Inf points: placed once the y range is known
	var topX [][]float64
	for _, s := range f.Series {
		col := hexColor(s.Color)
		var thumbs []plot.Thumbnailer
		for _, seg := range segments(s.X, s.Y, f.LogX, f.LogY) { // NaN breaks a line: gonum refuses NaN
			if s.Lo != nil {
				band := make(plotter.XYs, 0, 2*len(seg))
				for _, i := range seg {
					band = append(band, plotter.XY{X: s.X[i], Y: s.Hi[i]})
				}
				for k := len(seg) - 1; k >= 0; k-- {
					band = append(band, plotter.XY{X: s.X[seg[k]], Y: s.Lo[seg[k]]})
				}
				if poly, err := plotter.NewPolygon(band); err == nil { // a NaN bound: no band there
					poly.Color, poly.LineStyle.Width = color.NRGBA{col.R, col.G, col.B, 46}, 0
					p.Add(poly)
				}
			}
			xys := make(plotter.XYs, len(seg))
			for k, i := range seg {
				xys[k] = plotter.XY{X: s.X[i], Y: s.Y[i]}
			}
			if !s.NoLine {
				l, err := plotter.NewLine(xys)
				if err != nil {
					return err
				}
				l.Color, l.Width = col, vg.Points(1.2)
				if s.Dashed {
					l.Dashes = []vg.Length{vg.Points(4.5), vg.Points(3)}
				}
				p.Add(l)
				thumbs = []plot.Thumbnailer{l}
			}
			if s.Marker != mplot.None {
				sc, err := plotter.NewScatter(xys)
				if err != nil {
					return err
				}
				sc.GlyphStyle = glyph(s.Marker, col)
				p.Add(sc)
				thumbs = append(thumbs[:min(len(thumbs), 1)], sc)
			}
		}
		if s.InfAtTop {
			var xs []float64
			for i, y := range s.Y {
				if math.IsInf(y, 1) {
					xs = append(xs, s.X[i])
				}
			}
			sc, _ := plotter.NewScatter(plotter.XYs{})
			sc.GlyphStyle = glyph(mplot.Cross, col)
			tops, topX = append(tops, sc), append(topX, xs)
			if len(thumbs) == 0 {
				thumbs = []plot.Thumbnailer{sc}
			}
		}
		if s.Name != "" {
			legend.Add(s.Name, thumbs...)
		}
	}
	for k, sc := range tops { // on the top edge of the range the data gave
		for _, x := range topX[k] {
			sc.XYs = append(sc.XYs, plotter.XY{X: x, Y: p.Y.Max})
		}
		p.Add(sc)
	}
	legendW := legendWidth(legend, f)
	noteLines := strings.Split(f.Note, "\n")
	noteH := vg.Points(11) * vg.Length(len(noteLines)+1)
	p.Draw(draw.Crop(c, 0, -legendW, noteH, 0))
	legend.Top, legend.Left = true, true
	legend.Draw(draw.Crop(c, c.Max.X-c.Min.X-legendW+vg.Points(8), 0, noteH, -vg.Points(30)))
	sty := plot.DefaultTextHandler
	ts := legend.TextStyle
	ts.Font.Size, ts.Handler = vg.Points(8), sty
	for i, line := range noteLines {
		c.FillText(ts, vg.Point{X: c.Min.X + vg.Points(6), Y: c.Min.Y + noteH - vg.Points(11)*vg.Length(i+1)}, line)
	}
	return nil
}

// legendWidth is the widest legend entry plus its thumbnail.
func legendWidth(l plot.Legend, f *mplot.Figure) vg.Length {
	w := vg.Length(0)
	for _, s := range f.Series {
		w = max(w, l.TextStyle.Width(s.Name))
	}
	return w + l.ThumbnailWidth + vg.Points(20)
}

// segments splits the drawable points into runs (NaN, ±Inf, ≤ 0 on a log axis break them).
func segments(x, y []float64, logX, logY bool) [][]int {
	ok := func(v float64, log bool) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) && (!log || v > 0) }
	var segs [][]int
	var cur []int
	for i := range x {
		if ok(x[i], logX) && ok(y[i], logY) {
			cur = append(cur, i)
			continue
		}
		if len(cur) > 0 {
			segs, cur = append(segs, cur), nil
		}
	}
	if len(cur) > 0 {
		segs = append(segs, cur)
	}
	return segs
}

func glyph(m mplot.Marker, c color.NRGBA) draw.GlyphStyle {
	shapes := map[mplot.Marker]draw.GlyphDrawer{mplot.Circle: draw.CircleGlyph{}, mplot.Square: draw.SquareGlyph{},
		mplot.Triangle: draw.TriangleGlyph{}, mplot.Cross: draw.CrossGlyph{}}
	return draw.GlyphStyle{Color: c, Radius: vg.Points(2.6), Shape: shapes[m]}
}

func hexColor(s string) color.NRGBA {
	var r, g, b uint8
	if _, err := fmt.Sscanf(s, "#%02x%02x%02x", &r, &g, &b); err != nil {
		return color.NRGBA{31, 119, 180, 255}
	}
	return color.NRGBA{r, g, b, 255}
}

// --- the comparison ---

// paperFigures are figures with every feature the paper's use: bands of
// mean ± 2 std, a dashed (grouped) method, a NaN that breaks a line, a log
// axis with markers, a diverged rate's cross on the top edge, a note.
func paperFigures() map[string]*mplot.Figure {
	val := &mplot.Figure{Title: "Validation loss, Llama-3.2-1B, squad, lora", XLabel: "step", YLabel: "validation loss",
		Width: 760, Height: 460, Note: "Line: mean over seeds; shading: mean ± 2 sample standard deviations over seeds."}
	for k, m := range []struct {
		name, color string
		dashed      bool
	}{{"MEAZO (3 seeds, η*=2e-4 of 11 rates)", "#1f77b4", false}, {"ZO-SGD (3 seeds, η*=1e-4 of 11 rates)", "#d62728", false},
		{"MEAZO (grouped) (3 seeds, η*=5e-4 of 11 rates)", "#17becf", true}} {
		s := mplot.Series{Name: m.name, Color: m.color, Dashed: m.dashed}
		for i := 0; i <= 20; i++ {
			x := float64(i * 500)
			y := 1.2 + 0.8*math.Exp(-x/(2000+1000*float64(k)))
			if k == 1 && i == 7 {
				y = math.NaN()
			}
			s.X, s.Y = append(s.X, x), append(s.Y, y)
			s.Lo, s.Hi = append(s.Lo, y-0.05), append(s.Hi, y+0.05)
		}
		val.Series = append(val.Series, s)
	}
	rob := &mplot.Figure{Title: "Step-size robustness: best validation loss", XLabel: "η / η*", YLabel: "best validation loss",
		LogX: true, Width: 760, Height: 460, Note: "× on the top edge: a rate at which at least one seed diverged."}
	for k, c := range []string{"#1f77b4", "#d62728"} {
		s := mplot.Series{Name: fmt.Sprintf("method %d, η*=1e-4", k+1), Color: c, Marker: mplot.Circle}
		div := mplot.Series{Color: c, NoLine: true, InfAtTop: true}
		for _, x := range []float64{0.01, 0.1, 0.5, 1, 5, 10} {
			y := 1 + 0.2*math.Abs(math.Log10(x)) + 0.05*float64(k)
			s.X, s.Y, s.Lo, s.Hi = append(s.X, x), append(s.Y, y), append(s.Lo, y-0.03), append(s.Hi, y+0.03)
		}
		div.X, div.Y = []float64{50}, []float64{math.Inf(1)}
		rob.Series = append(rob.Series, s, div)
	}
	return map[string]*mplot.Figure{"val_loss": val, "robustness_best": rob}
}

// TestDrawBoth writes each paper figure with meazo-go's plot package (SVG,
// PNG through rsvg-convert when present) and with gonum/plot (SVG, PNG, PDF)
// into $DEPBENCH_OUT (default: a temporary directory, logged), to be looked
// at side by side; it fails if either cannot draw them.
func TestDrawBoth(t *testing.T) {
	out := os.Getenv("DEPBENCH_OUT")
	if out == "" {
		out = t.TempDir()
	}
	for name, f := range paperFigures() {
		ours := filepath.Join(out, name+"_ours.svg")
		if err := f.WriteFile(ours); err != nil {
			t.Fatal(err)
		}
		if err := mplot.ToPNG(ours, strings.TrimSuffix(ours, ".svg")+".png"); err != nil {
			t.Log(err)
		}
		w, h := vg.Length(f.Width+170)*0.75, vg.Length(f.Height+40)*0.75 // px to points, as ours
		for _, format := range []string{"svg", "png", "pdf"} {
			var dc vg.CanvasWriterTo
			switch format {
			case "svg":
				dc = vgsvg.New(w, h)
			case "png":
				dc = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(96))}
			case "pdf":
				dc = vgpdf.New(w, h)
			}
			if err := drawGonum(f, draw.New(dc)); err != nil {
				t.Fatal(err)
			}
			file, err := os.Create(filepath.Join(out, name+"_gonum."+format))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := dc.WriteTo(file); err != nil {
				t.Fatal(err)
			}
			file.Close()
		}
	}
	t.Logf("figures in %s", out)
}
