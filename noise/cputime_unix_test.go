//go:build unix

package noise

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time (user and system) the process has used so far:
// on a machine other jobs share, a benchmark's time per value that does
// not count the time it waited for a core.
func cpuTime() (time.Duration, bool) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
