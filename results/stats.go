package results

import (
	"math"
	"slices"
	"sort"

	"github.com/meazo-go/meazo/sweep"
)

// RunningMean smooths ys with a trailing window: out[i] is the mean of the
// finite values among ys[i-w+1..i] (fewer at the start), NaN when there are
// none. w ≤ 1 returns a copy. A diverged step (NaN, ±Inf) thus leaves a gap
// only where the window holds nothing else.
func RunningMean(ys []float64, w int) []float64 {
	if w <= 1 {
		return slices.Clone(ys)
	}
	out := make([]float64, len(ys))
	var sum float64
	var n int
	for i, y := range ys {
		if !math.IsNaN(y) && !math.IsInf(y, 0) {
			sum += y
			n++
		}
		if w > 0 && i >= w {
			if old := ys[i-w]; !math.IsNaN(old) && !math.IsInf(old, 0) {
				sum -= old
				n--
			}
		}
		if n == 0 {
			out[i] = math.NaN()
		} else {
			out[i] = sum / float64(n)
		}
	}
	return out
}

// Band is a curve over seeds: at each X the mean and mean ± 2 std of the
// seeds that have a finite value there, and how many did.
type Band struct {
	X, Mean, Lo, Hi []float64
	N               []int
}

// SeedBand aggregates per-seed curves (step → value) at every step any seed
// has. Seeds missing a step (a diverged run stops early) do not count there.
func SeedBand(curves []map[int]float64) Band {
	steps := map[int]bool{}
	for _, c := range curves {
		for s := range c {
			steps[s] = true
		}
	}
	xs := make([]int, 0, len(steps))
	for s := range steps {
		xs = append(xs, s)
	}
	sort.Ints(xs)
	var b Band
	vals := make([]float64, 0, len(curves))
	for _, s := range xs {
		vals = vals[:0]
		for _, c := range curves {
			if v, ok := c[s]; ok {
				vals = append(vals, v)
			}
		}
		m, sd, n := sweep.MeanStd(vals)
		b.X = append(b.X, float64(s))
		b.Mean = append(b.Mean, m)
		b.Lo = append(b.Lo, m-2*sd)
		b.Hi = append(b.Hi, m+2*sd)
		b.N = append(b.N, n)
	}
	return b
}

// Thin keeps at most about most points of a band (see thinned), so that a
// 20,000-step curve makes a small SVG. Applied after smoothing, it drops no
// information a reader could see at the figure's resolution.
func (b Band) Thin(most int) Band {
	if len(b.X) <= most {
		return b
	}
	var out Band
	for _, i := range thinned(len(b.X), most) {
		out.X = append(out.X, b.X[i])
		out.Mean = append(out.Mean, b.Mean[i])
		out.Lo = append(out.Lo, b.Lo[i])
		out.Hi = append(out.Hi, b.Hi[i])
		out.N = append(out.N, b.N[i])
	}
	return out
}

// thinned is the indices a curve of n points keeps to have at most about most:
// every k-th, k the smallest stride that gets there, and the last, so that
// the curve still ends where the run ended.
func thinned(n, most int) []int {
	k := max(1, (n+most-1)/most)
	var idx []int
	for i := 0; i < n; i++ {
		if i%k == 0 || i == n-1 {
			idx = append(idx, i)
		}
	}
	return idx
}
