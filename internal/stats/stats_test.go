package stats

import (
	"math"
	"slices"
	"testing"
)

func same(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }

func TestMeanStd(t *testing.T) {
	for _, c := range []struct {
		xs        []float64
		ddof      int
		mean, std float64
	}{
		{nil, 0, math.NaN(), math.NaN()},
		{[]float64{3}, 0, 3, 0},
		{[]float64{3}, 1, 3, math.NaN()},
		{[]float64{1, 3}, 0, 2, 1},
		{[]float64{1, 3}, 1, 2, math.Sqrt2},
		{[]float64{2, 4, 4, 4, 5, 5, 7, 9}, 0, 5, 2},
	} {
		m, s := MeanStd(c.xs, c.ddof)
		if !same(m, c.mean) || !same(s, c.std) {
			t.Errorf("MeanStd(%v, %d) = %v, %v; want %v, %v", c.xs, c.ddof, m, s, c.mean, c.std)
		}
	}
}

func TestMedianAndQuantiles(t *testing.T) {
	for _, c := range []struct {
		xs     []float64
		median float64
		q      []float64 // at 0, 0.25, 0.5, 0.75, 1
	}{
		{nil, math.NaN(), []float64{math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN()}},
		{[]float64{7}, 7, []float64{7, 7, 7, 7, 7}},
		{[]float64{4, 1, 3, 2}, 2.5, []float64{1, 2, 3, 3, 4}}, // ranks 0, 0.75→1, 1.5→2, 2.25→2, 3
		{[]float64{5, 1, 4, 2, 3}, 3, []float64{1, 2, 3, 4, 5}},
	} {
		in := slices.Clone(c.xs)
		if m := Median(c.xs); !same(m, c.median) {
			t.Errorf("Median(%v) = %v, want %v", c.xs, m, c.median)
		}
		q := Quantiles(c.xs, 0, 0.25, 0.5, 0.75, 1)
		for i := range q {
			if !same(q[i], c.q[i]) {
				t.Errorf("Quantiles(%v) = %v, want %v", c.xs, q, c.q)
				break
			}
		}
		if !slices.Equal(in, c.xs) {
			t.Errorf("the input changed: %v, was %v", c.xs, in)
		}
	}
}
