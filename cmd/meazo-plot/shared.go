package main

import (
	"github.com/meazo-go/meazo/rundir"
	"github.com/meazo-go/meazo/sweep"
)

// The run-directory format lives in package rundir; the run loading and the
// learning-rate selection rule in package sweep, shared with meazo-sweep (one rule, docs/SWEEPS.md).
type (
	Summary   = sweep.Summary
	Run       = sweep.Run
	Method    = sweep.Method
	RateStats = sweep.RateStats
	Sweep     = sweep.Sweep
	SweepRate = sweep.SweepRate
	SweepSeed = sweep.SweepSeed

	// TrainPoint and ValPoint are the metrics.jsonl lines the plots use.
	TrainPoint = rundir.TrainPoint
	ValPoint   = rundir.ValPoint
)

var (
	loadSummary = sweep.LoadSummary
	loadMetrics = rundir.ReadMetrics
	meanStd     = sweep.MeanStd
	indexRate   = sweep.IndexRate
	orNaN       = sweep.OrNaN
	rateStats   = sweep.RateStatsOf
	etaStar     = sweep.EtaStar
	byMethod    = sweep.ByMethod
	lrString    = sweep.LRString
	fineGrid    = sweep.FineGrid
)

func parseRates(flagName, list string) ([]float64, error) {
	return sweep.ParseRates("--"+flagName, list)
}

func ptr(v float64) *float64 { return &v }
