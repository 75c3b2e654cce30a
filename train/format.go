package train

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// FormatMetrics renders test metrics as "name value" pairs in name order,
// e.g. "accuracy 0.840" or "exact_match 41.20, f1 55.07": accuracy is a
// fraction (three decimals), the others are 0-100 scores (two decimals).
func FormatMetrics(m map[string]float64) string {
	var b strings.Builder
	for i, k := range slices.Sorted(maps.Keys(m)) {
		if i > 0 {
			b.WriteString(", ")
		}
		if k == "accuracy" {
			fmt.Fprintf(&b, "%s %.3f", k, m[k])
		} else {
			fmt.Fprintf(&b, "%s %.2f", k, m[k])
		}
	}
	return b.String()
}

// FormatTest renders a summary's test results, one "adapter: metrics" per
// evaluated adapter (best, last, base), e.g. "best: accuracy 0.840; base: accuracy 0.370".
func FormatTest(test map[string]map[string]float64) string {
	if len(test) == 0 {
		return "not evaluated"
	}
	var parts []string
	for _, k := range []string{"best", "last", "base"} {
		if m, ok := test[k]; ok {
			parts = append(parts, k+": "+FormatMetrics(m))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(test)) {
		if k != "best" && k != "last" && k != "base" {
			parts = append(parts, k+": "+FormatMetrics(test[k]))
		}
	}
	return strings.Join(parts, "; ")
}
