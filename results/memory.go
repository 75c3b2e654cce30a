package results

import (
	"fmt"
	"strings"

	"github.com/meazo-go/meazo/internal/bytesize"
	"github.com/meazo-go/meazo/sweep"
)

// MemoryTable is a markdown table, one row per method: the optimizer state
// (the paper's claim: MEAZO keeps ZO-SGD's memory, ZO-Adam adds 2·d floats)
// and the measured peak resident memory of the whole process. Runs of one
// method that differ (another adapter size) show the range. Failed runs
// (no result, no numbers) are left out.
func MemoryTable(runs []sweep.Run) (string, error) {
	runs = finished(runs)
	if len(runs) == 0 {
		return "", fmt.Errorf("memory table: no run with a result")
	}
	setting, err := sweep.Setting(runs)
	if err != nil {
		return "", err
	}
	ms, groups := sweep.ByMethod(runs)
	gpu := false // runs on a GPU backend also report its peak memory
	for _, r := range runs {
		gpu = gpu || r.PeakDeviceBytes > 0
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Memory per optimizer, %s\n\n", setting)
	b.WriteString("| optimizer | runs | trainable params d | optimizer state | state bytes per param | peak RSS (max over runs) |")
	rule := "|---|---:|---:|---:|---:|---:|"
	if gpu {
		b.WriteString(" peak GPU memory (max over runs) |")
		rule += "---:|"
	}
	b.WriteString("\n" + rule + "\n")
	for _, m := range ms {
		rs := groups[m]
		params, state, rss, dev := int64(rs[0].TrainableParams), rs[0].StateBytes, int64(0), int64(0)
		var stateMin, stateMax, paramsMin, paramsMax = state, state, params, params
		for _, r := range rs {
			stateMin, stateMax = min(stateMin, r.StateBytes), max(stateMax, r.StateBytes)
			paramsMin, paramsMax = min(paramsMin, int64(r.TrainableParams)), max(paramsMax, int64(r.TrainableParams))
			rss, dev = max(rss, r.PeakRSSBytes), max(dev, r.PeakDeviceBytes)
		}
		perParam := "–"
		if paramsMin == paramsMax && params > 0 {
			perParam = fmt.Sprintf("%.3g", float64(stateMax)/float64(params))
		}
		rssStr := "–" // not measured: runs outside Linux write 0
		if rss > 0 {
			rssStr = bytesize.String(rss)
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s |", m, len(rs),
			span(paramsMin, paramsMax, func(n int64) string { return fmt.Sprint(n) }),
			span(stateMin, stateMax, bytesize.String), perParam, rssStr)
		if gpu {
			devStr := "–" // these runs were on the CPU
			if dev > 0 {
				devStr = bytesize.String(dev)
			}
			fmt.Fprintf(&b, " %s |", devStr)
		}
		b.WriteString("\n")
	}
	b.WriteString("\nOptimizer state: the bytes the optimizer keeps between steps (summary.json optimizer_state_bytes); " +
		"peak RSS: the process's maximum resident set size (peak_rss_bytes), model and activations included.\n")
	if gpu {
		b.WriteString("Peak GPU memory: the most the GPU backend held at once (peak_device_bytes: weights, activations, its cache).\n")
	}
	return b.String(), nil
}

func span(lo, hi int64, f func(int64) string) string {
	if lo == hi {
		return f(lo)
	}
	return f(lo) + " – " + f(hi)
}
