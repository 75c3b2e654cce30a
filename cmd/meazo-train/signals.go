package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/meazo-go/meazo/internal/stopsig"
)

// stopOnSignals catches SIGINT, SIGTERM and SIGUSR1 (stopsig.Stop: no
// SIGUSR1 on Windows) and returns the poll function for
// train.Options.Stop: it answers the first signal's name once one has
// arrived. A second SIGINT (an impatient Ctrl-C) exits at once.
func stopOnSignals() func() string {
	ch := make(chan os.Signal, 4)
	signal.Notify(ch, stopsig.Stop()...)
	first := make(chan string, 1)
	go func() {
		got := false
		for sig := range ch {
			name := stopsig.Name(sig)
			if !got {
				got = true
				fmt.Fprintf(os.Stderr, "\nmeazo-train: %s: stopping after the current step or evaluation batch (checkpoint, then exit %d)\n", name, 3)
				first <- name
				continue
			}
			if sig == syscall.SIGINT {
				fmt.Fprintf(os.Stderr, "meazo-train: second SIGINT: exiting now; the last checkpoint is kept\n")
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
