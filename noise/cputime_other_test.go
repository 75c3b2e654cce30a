//go:build !unix

package noise

import "time"

// cpuTime: not measured on this system.
func cpuTime() (time.Duration, bool) { return 0, false }
