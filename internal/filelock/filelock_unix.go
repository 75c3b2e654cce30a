//go:build !windows

package filelock

import (
	"os"
	"syscall"
)

// The kinds of lock Try takes.
const (
	Shared    = syscall.LOCK_SH
	Exclusive = syscall.LOCK_EX
)

// Try takes f's lock of the given kind (Shared or Exclusive) without
// waiting; a signal that interrupts the call is retried. It returns
// ErrLocked while another holds a conflicting lock.
func Try(f *os.File, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		if err != syscall.EINTR {
			return err
		}
	}
}
