//go:build !windows

package stopsig

import (
	"os"
	"syscall"
)

var (
	stop  = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGUSR1}
	names = map[os.Signal]string{syscall.SIGINT: "SIGINT", syscall.SIGTERM: "SIGTERM", syscall.SIGUSR1: "SIGUSR1"}
)

// ChildAttr starts a run in a process group of its own: a terminal's
// Ctrl-C then reaches only the parent, which forwards it once.
func ChildAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
