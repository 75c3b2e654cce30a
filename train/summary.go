package train

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/meazo-go/meazo/internal/atomicfile"
	"github.com/meazo-go/meazo/internal/bytesize"
	"github.com/meazo-go/meazo/rundir"
	"github.com/meazo-go/meazo/tensor"
)

// Summary is summary.json (docs/RUNDIR.md); package rundir owns the format.
type Summary = rundir.Summary

// newSummary is the summary of the run as configured, before it ends.
func (r *run) newSummary() Summary {
	cfg := r.cfg
	return Summary{Model: cfg.ModelName(), Task: cfg.Task.Name, Adapter: cfg.Adapter.Kind, Grouped: cfg.Adapter.Grouped,
		Optimizer: cfg.Optimizer.Name, LR: cfg.Optimizer.LR, Seed: cfg.Train.Seed, Steps: cfg.Train.Steps,
		TrainableParams: int(r.tr.count()), Test: map[string]map[string]float64{}}
}

func (r *run) fillSummary() {
	r.summary.BestValLoss, r.summary.BestStep, r.summary.LastValLoss = finite(r.state.BestValLoss), r.state.BestStep, finite(r.state.LastValLoss)
	r.summary.BestValMetrics, r.summary.LastValMetrics = r.state.BestValMetrics, r.state.LastValMetrics
	if r.summary.BestValMetrics != nil || r.summary.LastValMetrics != nil {
		r.summary.ValMetricExamples = r.modality.metricExamples()
	}
	r.summary.StateBytes = r.engine.Optimizer().StateBytes() + r.tr.stateBytes()
	r.summary.PeakRSSBytes = peakRSS()
	r.summary.PeakDeviceBytes, _ = r.peakDevice()
	r.summary.Steps = r.cfg.Train.Steps // as the run ends (an early stop lowers it)
	r.summary.Changes = readChanges(r.dir)
	r.summary.Backend = r.backend.Name() + ": " + r.backend.Describe()
	r.summary.Program = r.program()
	if r.state.Step > 0 {
		r.summary.SecondsPerStep = r.state.Seconds / float64(r.state.Step)
	}
}

func (r *run) writeSummary() error {
	b, err := json.MarshalIndent(r.summary, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(r.dir, rundir.SummaryFile), b)
}

// finite returns &x, or nil for NaN and ±Inf (JSON has no such numbers).
func finite(x float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return &x
}

// peakMemory is the run's peak memory so far, as the progress line shows
// it: the process's resident set (summary.json's peak_rss_bytes) and, where
// the model computes on a GPU, the device memory the backend allocated.
func (r *run) peakMemory() string {
	var parts []string
	if rss := peakRSS(); rss > 0 {
		parts = append(parts, "peak RSS "+bytesize.String(rss))
	}
	if peak, ok := r.peakDevice(); ok {
		parts = append(parts, "device "+bytesize.String(peak))
	}
	return strings.Join(parts, ", ")
}

// peakDevice is the device memory the backend has allocated at its peak,
// and whether it computes on a device that counts it (a GPU).
func (r *run) peakDevice() (int64, bool) {
	dm, ok := r.backend.(tensor.DeviceMemory)
	if !ok {
		return 0, false
	}
	_, peak := dm.DeviceMemory()
	return int64(min(peak, 1<<62)), true
}

// peakRSS is the process's peak resident set size in bytes (VmHWM; 0 where
// /proc cannot be read: outside Linux).
func peakRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		var kb int64
		if _, err := fmt.Sscanf(line, "VmHWM: %d kB", &kb); err == nil {
			return kb * 1024
		}
	}
	return 0
}
