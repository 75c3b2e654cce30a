package plot_test

import (
	"bytes"
	"fmt"
	"math"
	"regexp"
	"strings"

	"github.com/meazo-go/meazo/plot"
)

// A training-loss chart: one optimizer's mean over seeds with its band
// (mean ± 2 std), and another's run that diverged at step 300, whose +Inf
// loss is drawn as a cross on the top edge rather than dropped. SVG returns
// the standalone file (WriteFile writes it atomically); printed here are
// its text (the title, the axes' ticks and labels, the note, the legend)
// and what it draws. The log axis is labelled 1-2-5 since it spans less
// than two decades.
func ExampleFigure() {
	steps := []float64{0, 100, 200, 300, 400}
	f := plot.Figure{
		Title: "SST-2, LoRA", XLabel: "step", YLabel: "training loss", LogY: true,
		Series: []plot.Series{
			{Name: "MEAZO", X: steps, Y: []float64{0.7, 0.5, 0.4, 0.35, 0.3},
				Lo: []float64{0.65, 0.45, 0.35, 0.3, 0.25}, Hi: []float64{0.75, 0.55, 0.45, 0.4, 0.35}},
			{Name: "ZO-SGD (diverged)", X: steps, Y: []float64{0.7, 0.9, 2, math.Inf(1), math.NaN()}, Dashed: true, InfAtTop: true},
		},
		Note: "shaded: mean ± 2 std over 3 seeds",
	}
	svg := f.SVG()
	var texts []string
	for _, m := range regexp.MustCompile(`<text[^>]*>([^<]*)</text>`).FindAllSubmatch(svg, -1) {
		texts = append(texts, string(m[1]))
	}
	fmt.Println(strings.Join(texts, " | "))
	fmt.Printf("lines %d, bands %d, crosses %d\n", bytes.Count(svg, []byte("<polyline")), bytes.Count(svg, []byte("<polygon")), bytes.Count(svg, []byte(`<path d="M`)))
	// Output:
	// SST-2, LoRA | 0 | 100 | 200 | 300 | 400 | 5e-1 | 1e0 | 2e0 | step | training loss | shaded: mean ± 2 std over 3 seeds | MEAZO | ZO-SGD (diverged)
	// lines 2, bands 1, crosses 1
}
