package stopsig

import (
	"os"
	"syscall"
)

// Windows has no SIGUSR1 (nor Slurm). Go delivers a console's Ctrl-C and
// Ctrl-Break as SIGINT, and its closing, a log-off or a shutdown as
// SIGTERM. This file is compiled (CI vets GOOS=windows) but has not been
// run: the project is tested on Linux only.
var (
	stop  = []os.Signal{syscall.SIGINT, syscall.SIGTERM}
	names = map[os.Signal]string{syscall.SIGINT: "SIGINT", syscall.SIGTERM: "SIGTERM"}
)

// ChildAttr is nil: a run stays in its parent's console group. Windows
// sends a console's Ctrl-C to every process attached to it, and a parent
// cannot forward one (os.Process.Signal supports only Kill there), so each
// run must take the Ctrl-C itself.
func ChildAttr() *syscall.SysProcAttr { return nil }
