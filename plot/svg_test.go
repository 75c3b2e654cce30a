package plot

import (
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
