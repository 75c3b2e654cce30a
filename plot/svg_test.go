package plot

import (
	"bytes"
	"encoding/xml"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSVG(t *testing.T) {
	f := &Figure{Title: "loss <&>", XLabel: "step", YLabel: "F", LogY: true, Series: []Series{
		{Name: "a", X: []float64{0, 1, 2, 3}, Y: []float64{1, 0.1, math.NaN(), 0.001}, Lo: []float64{0.5, 0.05, 0.01, 0.0005}, Hi: []float64{2, 0.2, 0.02, 0.002}},
		{Name: "b", X: []float64{0, 1, 2, 3}, Y: []float64{1, 0, 0.5, 0.25}, Dashed: true},
	}}
	svg := f.SVG()
	// Well-formed XML.
	d := xml.NewDecoder(strings.NewReader(string(svg)))
	for {
		if _, err := d.Token(); err != nil {
			if err.Error() == "EOF" {
				break
			}
			t.Fatalf("invalid SVG: %v", err)
		}
	}
	s := string(svg)
	for _, want := range []string{"loss &lt;&amp;&gt;", ">1e-3<", ">1e0<", "stroke-dasharray", "<polygon"} {
		if !strings.Contains(s, want) {
			t.Errorf("SVG lacks %q", want)
		}
	}
	// a breaks at the NaN (line 0-1, lone point 3); b at the 0 that a log
	// axis cannot show (lone point 0, line 2-3).
	if p, c := strings.Count(s, "<polyline"), strings.Count(s, "<circle"); p != 2 || c != 2 {
		t.Errorf("%d polylines and %d lone points, want 2 and 2", p, c)
	}
	path := filepath.Join(t.TempDir(), "f.svg")
	if err := f.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != s {
		t.Error("file differs from SVG()")
	}
}

func TestMarkersNotesLegend(t *testing.T) {
	var series []Series
	series = append(series,
		Series{Name: "points", X: []float64{0.1, 1, 10}, Y: []float64{2, 1, 3}, Marker: Triangle},
		Series{X: []float64{0.1, 10}, Y: []float64{math.Inf(1), 1}, NoLine: true, InfAtTop: true})
	for i := range 30 { // more names than the legend has room for
		series = append(series, Series{Name: "s", X: []float64{1}, Y: []float64{float64(i)}})
	}
	f := &Figure{Title: "t", LogX: true, Note: "first note\nsecond note", Series: series}
	s := string(f.SVG())
	for _, want := range []string{">first note<", ">second note<", "more</text>", `<path d="M`, ">1e-1<", ">1e1<"} {
		if !strings.Contains(s, want) {
			t.Errorf("SVG lacks %q", want)
		}
	}
	// The triangle series draws 3 markers plus its legend one. The unnamed
	// marker-less series draws only its +Inf point, as a cross on the top edge.
	if n := strings.Count(s, `<polygon points=`); n < 4 {
		t.Errorf("%d triangles, want at least 4", n)
	}
	if n := strings.Count(s, `<path d="M`); n != 1 {
		t.Errorf("%d crosses, want 1 (the +Inf point)", n)
	}
	if strings.Contains(s, ">-0<") {
		t.Error("a tick reads -0")
	}
}

func TestLogTicksWithinADecade(t *testing.T) {
	a := newAxis(true, [][]float64{{2e-4, 8e-4}}, 0, 100)
	_, labels := a.ticks()
	if strings.Join(labels, " ") != "2e-4 5e-4" {
		t.Errorf("ticks %v, want 2e-4 5e-4", labels)
	}
}

func TestToPNG(t *testing.T) {
	dir := t.TempDir()
	svg, png := filepath.Join(dir, "f.svg"), filepath.Join(dir, "f.png")
	f := &Figure{Title: "t", Series: []Series{{Name: "a", X: []float64{1, 2}, Y: []float64{1, 3}}}}
	if err := f.WriteFile(svg); err != nil {
		t.Fatal(err)
	}
	t.Run("no converter", func(t *testing.T) {
		t.Setenv("PATH", dir)
		if err := ToPNG(svg, png); err == nil || !strings.Contains(err.Error(), "neither rsvg-convert") {
			t.Errorf("without converters: %v", err)
		}
	})
	if err := ToPNG(svg, png); err != nil {
		t.Skip(err) // no converter on this machine
	}
	b, err := os.ReadFile(png)
	if err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) {
		t.Errorf("%s is not a PNG (%v)", png, err)
	}
}

// TestNotesWrapAndStepTicks: a long note is wrapped to the image's width
// instead of running off it, and step ticks stay plain numbers at 10,000
// and above.
func TestNotesWrapAndStepTicks(t *testing.T) {
	f := &Figure{Title: "t", Width: 400, Height: 300, Note: strings.Repeat("word ", 200),
		Series: []Series{{Name: "a", X: []float64{0, 50000, 100000}, Y: []float64{1, 2, 3}}}}
	svg := string(f.SVG())
	lines := strings.Count(svg, `font-size="11" fill="#444"`)
	if lines < 10 {
		t.Errorf("a 1,000-character note on %d lines, want it wrapped", lines)
	}
	for _, l := range wrap(strings.Repeat("word ", 200), 64) {
		if len(l) > 64 {
			t.Errorf("wrapped line of %d characters: %q", len(l), l)
		}
	}
	if !strings.Contains(svg, ">100000<") || strings.Contains(svg, "e+0") {
		t.Errorf("step ticks: want 100000, not 1e+05")
	}
}

// TestTextWidth: a legend is sized by its text's width, which must not
// fall short of the width rsvg-convert draws (DejaVu Sans, 12 px; measured
// on the rendered PNGs) nor exceed it by much.
func TestTextWidth(t *testing.T) {
	for _, c := range []struct {
		s        string
		rendered float64
	}{
		{"MEAZO (Rademacher), η*=1", 171},
		{"ZO-Adam (β1 = 0.9) (2 seeds, η*=1 of 4 rates)", 281},
		{"MEAZO (3 seeds, η*=1e-4 of 3 rates)", 222},
		{"abcdefghijklmnopqrstuvwxyz", 175},
		{"ABCDEFGHIJKLMNOPQRSTUVWXYZ", 209},
		{"0123456789", 76},
		{"mean", 33},
	} {
		if w := textWidth(c.s); w < c.rendered || w > 1.15*c.rendered {
			t.Errorf("textWidth(%q) = %g, rendered %g px", c.s, w, c.rendered)
		}
	}
}
