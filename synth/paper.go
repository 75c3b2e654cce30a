package synth

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/meazo-go/meazo/plot"
)

// PaperConfig sizes the paper's synthetic experiments.
type PaperConfig struct {
	Seeds, Steps int       // quadratics: seeds per setting, steps per run
	LRs          []float64 // quadratics: learning-rate grid
	Dims         []int     // second-moment tracking: dimensions (squares ≥ 4)
	TrackSteps   int       // second-moment tracking: step cap
	Eps          float64   // the perturbation size of every ZO run
}

// FullPaper is the paper's size: 10 seeds, 2000 steps and twelve rates on
// the quadratics; d = 9 to 1024 and up to 20000 steps for the tracking.
func FullPaper() PaperConfig {
	return PaperConfig{
		Seeds: 10, Steps: 2000,
		LRs:  []float64{1e-6, 5e-6, 1e-5, 5e-5, 1e-4, 5e-4, 1e-3, 5e-3, 1e-2, 5e-2, 1e-1, 5e-1},
		Dims: []int{9, 25, 49, 100, 1024}, TrackSteps: 20000, Eps: 1e-3,
	}
}

// QuickPaper is a small version for a smoke test (3 seeds, 300 steps, 4
// rates, d = 9 and 25), a second or so.
func QuickPaper() PaperConfig {
	c := FullPaper()
	c.Seeds, c.Steps, c.LRs = 3, 300, []float64{1e-4, 1e-3, 1e-2, 1e-1}
	c.Dims, c.TrackSteps = []int{9, 25}, 1500
	return c
}

// WritePaper runs both experiments and writes into the directory out
// (which must exist) their CSV files, SVG figures and summary.md; the
// summary is also written to log after the progress lines.
func WritePaper(cfg PaperConfig, out string, log io.Writer) error {
	var summary strings.Builder
	if err := writeQuadratics(cfg, out, &summary, log); err != nil {
		return err
	}
	if err := writeTracking(cfg, out, &summary, log); err != nil {
		return err
	}
	fmt.Fprint(log, summary.String())
	return plot.WriteFileAtomic(filepath.Join(out, "summary.md"), []byte(summary.String()))
}

func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

func fmtG(x float64) string { return strconv.FormatFloat(x, 'g', 6, 64) }

func writeCSV(path string, rows [][]string) error {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	if err := w.WriteAll(rows); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return plot.WriteFileAtomic(path, b.Bytes())
}
