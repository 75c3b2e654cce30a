package main

import "time"

// The clock the gemm mode times with: wall time, or (-cputime) the process's
// CPU time divided by the number of threads, so that on a shared machine the
// time a thread waits for a core is not counted. CPU time also leaves out a
// thread's idle wait at the end of a call, so it overstates a call whose
// threads finish unevenly; wall time on a quiet machine is the real figure.
var (
	cpuClock     bool
	clockThreads = 1
	wallStart    = time.Now()
)

// now returns the current reading of the clock in seconds.
func now() float64 {
	if cpuClock {
		if s, ok := processCPUSeconds(); ok {
			return s / float64(clockThreads)
		}
	}
	return time.Since(wallStart).Seconds()
}
