package results

import "testing"

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
