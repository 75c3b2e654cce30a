package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/meazo-go/meazo/internal/stopsig"
	"github.com/meazo-go/meazo/train"
)

// stopOnSignals catches SIGINT, SIGTERM and SIGUSR1 (stopsig.Stop: no
// SIGUSR1 on Windows) and returns the poll function for
// train.Options.Stop: it answers the first signal's name once one has
// arrived. A second SIGINT (an impatient Ctrl-C) exits at once. check:
// the process is a --check, which writes nothing and exits 1 when stopped
// (train.Check), and says so.
func stopOnSignals(check bool) func() string {
	then := fmt.Sprintf("stopping after the current step or evaluation batch (checkpoint, then exit %d)", train.ExitInterrupted)
	second := "second SIGINT: exiting now; the last checkpoint is kept"
	if check {
		then = "stopping the check after the current step or evaluation batch (it writes nothing; exit 1)"
		second = "second SIGINT: exiting now (the check writes nothing)"
	}
	ch := make(chan os.Signal, 4)
	signal.Notify(ch, stopsig.Stop()...)
	first := make(chan string, 1)
	go func() {
		got := false
		for sig := range ch {
			name := stopsig.Name(sig)
			if !got {
				got = true
				fmt.Fprintf(os.Stderr, "\nmeazo-train: %s: %s\n", name, then)
				first <- name
				continue
			}
			if sig == syscall.SIGINT {
				fmt.Fprintf(os.Stderr, "meazo-train: %s\n", second)
				os.Exit(130)
			}
		}
	}()
	var reason string
	return func() string {
		if reason == "" {
			select {
			case reason = <-first:
			default:
			}
		}
		return reason
	}
}
