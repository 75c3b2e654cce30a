package main

import (
	"math"
	"sort"
)

// RateStats is one learning rate of one method with the runs at it (one per
// seed), as the paper's learning-rate selection sees it.
type RateStats struct {
	LR   float64
	Runs []Run
	// Score is the selection criterion: the mean over seeds of the best
	// validation loss, +Inf when any seed diverged or has no validation loss.
	Score float64
	// MeanBest/StdBest and MeanLast/StdLast are over the seeds that did not
	// diverge (what the robustness figure draws); Diverged counts the others.
	MeanBest, StdBest, MeanLast, StdLast float64
	Diverged                             int
}

// rateStats groups one method's runs by learning rate, in increasing order.
func rateStats(runs []Run) []RateStats {
	byLR := map[float64][]Run{}
	for _, r := range runs {
		byLR[r.LR] = append(byLR[r.LR], r)
	}
	var out []RateStats
	for lr, rs := range byLR {
		sort.Slice(rs, func(i, j int) bool { return rs[i].Seed < rs[j].Seed })
		st := RateStats{LR: lr, Runs: rs}
		var best, last []float64
		var sum float64
		for _, r := range rs {
			b := orNaN(r.BestValLoss)
			if r.Diverged || math.IsNaN(b) {
				sum = math.Inf(1)
			} else {
				sum += b
			}
			if r.Diverged {
				st.Diverged++
				continue
			}
			best = append(best, b)
			last = append(last, orNaN(r.LastValLoss))
		}
		st.Score = sum / float64(len(rs))
		st.MeanBest, st.StdBest, _ = meanStd(best)
		st.MeanLast, st.StdLast, _ = meanStd(last)
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].LR < out[j].LR })
	return out
}

// etaStar returns the index of the rate with the lowest score (the paper's
// η*: lowest mean best validation loss over seeds, diverged counting as +∞),
// the smaller rate on a tie, or -1 when every rate has a diverged seed.
func etaStar(rates []RateStats) int {
	best := -1
	for i, r := range rates {
		if math.IsInf(r.Score, 1) || math.IsNaN(r.Score) {
			continue
		}
		if best < 0 || r.Score < rates[best].Score {
			best = i
		}
	}
	return best
}
