// Package stopsig holds what differs between operating systems in how a
// run is asked to stop: the signals meazo-train and meazo-sweep catch to
// checkpoint and stop, and how a process that forwards them to its runs
// starts one. SIGUSR1 and process groups are Unix's (stopsig_unix.go);
// Windows has neither (stopsig_windows.go).
package stopsig

import "os"

// Name is sig's name as the logs and summary.json write it: "SIGTERM".
func Name(sig os.Signal) string {
	if n, ok := names[sig]; ok {
		return n
	}
	return sig.String()
}

// Stop returns the signals that ask a run to checkpoint and stop: SIGINT
// (Ctrl-C), SIGTERM (kill, scancel, a shutdown) and, where the system has
// it, SIGUSR1 (Slurm's notice that the job's time limit is near), followed
// by extra.
func Stop(extra ...os.Signal) []os.Signal {
	return append(append([]os.Signal(nil), stop...), extra...)
}
