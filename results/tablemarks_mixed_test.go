package results

import (
	"strings"
	"testing"
)

// A row whose cells are of different metrics (one sweep's runs skipped the
// test evaluation and logged no validation metric, another's were tested)
// has no best: an accuracy and a loss are not on one scale, and which one
// won depended on the map's order.
func TestBestInRowMixedMetrics(t *testing.T) {
	for range 20 {
		row := map[string]cell{
			"a": {eta: 1e-6, n: 3, mean: 91.2, metric: "accuracy (%) of the best adapter"},
			"b": {eta: 1e-6, n: 3, mean: 0.3012, metric: lossMetric},
			"c": {eta: 1e-6, n: 3, mean: 88.0, metric: "accuracy (%) of the best adapter"},
		}
		if marks := bestInRow(row); len(marks) != 0 {
			t.Fatalf("bestInRow of a mixed row = %v, want nothing marked", marks)
		}
	}
	row := map[string]cell{
		"a": {eta: 1e-6, n: 3, mean: 0.41, metric: lossMetric},
		"b": {eta: 1e-6, n: 3, mean: 0.30, metric: lossMetric},
	}
	if marks := bestInRow(row); !marks["b"] || len(marks) != 1 {
		t.Fatalf("bestInRow of a loss row = %v, want b", marks)
	}
}

// A mixed row's metric column names each of its cells' metrics, not the
// last cell's alone (a loss of 0.3012 under "accuracy (%) …, higher is
// better"), and marks no best.
func TestMarkdownMixedRow(t *testing.T) {
	acc := "accuracy (%) of the best adapter"
	rep := &Report{cells: []cell{
		{exp: "sst2_lora", optimizer: "meazo", model: "m", task: "sst2", adapter: "lora", eta: 1e-4, metric: acc, mean: 91.2, std: 1, n: 2, seeds: 2},
		{exp: "sst2_lora", optimizer: "zo-sgd", model: "m", task: "sst2", adapter: "lora", eta: 1e-3, metric: lossMetric, mean: 0.3012, std: 0.01, n: 2, seeds: 2},
	}}
	md := rep.Markdown()
	want := "| sst2_lora | " + acc + ", higher is better; " + lossMetric + ", lower is better | 91.20 ± 1.00<br>η*=1e-4 | 0.3012 ± 0.0100<br>η*=1e-3 |"
	if !strings.Contains(md, want) {
		t.Errorf("markdown lacks %q:\n%s", want, md)
	}
}
