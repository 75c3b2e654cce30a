// Package stats holds the few summary statistics the module reports: a mean
// and standard deviation (over seeds), a median (of timed repetitions) and
// quantiles. Each is one function here, so that two figures called "median"
// mean the same thing.
package stats

import (
	"math"
	"slices"
)

// MeanStd returns the mean of xs and their standard deviation about it, the
// sum of squared deviations divided by n − ddof: ddof 0 is the population's,
// 1 the sample's (Bessel's correction). The mean is NaN for no values, the
// deviation NaN for n ≤ ddof.
func MeanStd(xs []float64, ddof int) (mean, std float64) {
	n := len(xs)
	if n == 0 {
		return math.NaN(), math.NaN()
	}
	var sum float64
	for _, x := range xs {
		sum += x
	}
	mean = sum / float64(n)
	if n <= ddof {
		return mean, math.NaN()
	}
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(ss / float64(n-ddof))
}

// Median returns the middle value of xs, the mean of the two middle ones
// for an even count; NaN for no values. xs is not changed.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// Quantiles returns, for each p in ps (0 ≤ p ≤ 1), the value of xs at rank
// p·(n−1) rounded to the nearest (halves away from 0): always one of the
// values, so that p = 0.5 of an even count is the upper of the two middle
// ones, where Median averages them. NaN for no values. xs is not changed.
func Quantiles(xs []float64, ps ...float64) []float64 {
	q := make([]float64, len(ps))
	if len(xs) == 0 {
		for i := range q {
			q[i] = math.NaN()
		}
		return q
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	for i, p := range ps {
		q[i] = s[int(math.Round(p*float64(len(s)-1)))]
	}
	return q
}
