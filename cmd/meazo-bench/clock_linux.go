package main

import (
	"syscall"
	"unsafe"
)

// processCPUSeconds reads CLOCK_PROCESS_CPUTIME_ID (all threads, ns resolution).
func processCPUSeconds() (float64, bool) {
	var ts syscall.Timespec
	const clockProcessCPUTimeID = 2
	if _, _, e := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockProcessCPUTimeID, uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		return 0, false
	}
	return float64(ts.Nano()) / 1e9, true
}
