// Package filelock takes flock(2) locks on open files. The kernel drops such
// a lock when its process ends, however it ends, so a crash never leaves a
// stale one: meazo-train's run.lock and meazo-sweep's submission lock use it.
package filelock

import (
	"errors"
	"os"
	"syscall"
	"time"
)

// Try takes f's lock of the given kind (syscall.LOCK_EX or LOCK_SH) without
// waiting; a signal that interrupts the call is retried. It returns
// syscall.EWOULDBLOCK while another holds the lock.
func Try(f *os.File, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		if err != syscall.EINTR {
			return err
		}
	}
}

// Wait takes f's exclusive lock, trying again every poll while another holds
// it, for up to d; then it returns syscall.EWOULDBLOCK. onWait, if not nil,
// is called once, when it first has to wait.
func Wait(f *os.File, d, poll time.Duration, onWait func()) error {
	deadline := time.Now().Add(d)
	for {
		err := Try(f, syscall.LOCK_EX)
		if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline) {
			return err
		}
		if onWait != nil {
			onWait()
			onWait = nil
		}
		time.Sleep(poll)
	}
}
