// Package bytesize writes byte counts for people: the memory table of a
// study (package results) and meazo-train's memory lines use the same form.
package bytesize

import "fmt"

// String writes a byte count exactly below 1 KiB and in binary units
// above, one decimal (exact for small states: 8 B is the point of MEAZO).
func String(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, u := float64(n)/unit, "KiB"
	for _, next := range []string{"MiB", "GiB", "TiB"} {
		if v < unit-0.05 { // what prints as 1024.0 is the next unit's 1.0
			break
		}
		v, u = v/unit, next
	}
	return fmt.Sprintf("%.1f %s", v, u)
}
