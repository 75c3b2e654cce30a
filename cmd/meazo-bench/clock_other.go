//go:build !linux

package main

// processCPUSeconds: CPU time is read on Linux only; elsewhere -cputime
// falls back to wall time.
func processCPUSeconds() (float64, bool) { return 0, false }
