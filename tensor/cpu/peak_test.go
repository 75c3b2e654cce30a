package cpu

import (
	"math"
	"testing"
)

// TestPeakLoops runs each path's FMA peak loop briefly and compares its
// result with a float64 model of its chains, so that a loop that skips a
// chain or an iteration (and would overstate the peak) fails: one chain
// less changes the sum by at least 1.
func TestPeakLoops(t *testing.T) {
	for _, tc := range []struct {
		path string
		step func(c float64) float64 // one iteration of a chain
	}{
		{"avx512", func(c float64) float64 { return c*float64(float32(0.999999)) + float64(float32(1e-7)) }},
		{"avx2", func(c float64) float64 { return c*float64(float32(0.999999)) + float64(float32(1e-7)) }},
		{"neon", func(c float64) float64 { return c + 0.5/1024 }},
	} {
		loop, lanes, chains, ok := PeakLoop(tc.path)
		if !ok {
			t.Logf("%s: no peak loop in this build or on this CPU", tc.path)
			continue
		}
		if lanes <= 0 || chains <= 0 {
			t.Fatalf("%s: lanes %d, chains %d", tc.path, lanes, chains)
		}
		for _, n := range []int{0, 1, 1000} {
			want := 0.0
			for i := range chains {
				c := float64(i + 1)
				for range n {
					c = tc.step(c)
				}
				want += c
			}
			got := float64(loop(n))
			if math.Abs(got-want) > 1e-5*want {
				t.Errorf("%s: loop(%d) = %v, want %v (%d chains)", tc.path, n, got, want, chains)
			}
		}
	}
}
