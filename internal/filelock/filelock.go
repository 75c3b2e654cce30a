// Package filelock takes advisory locks on open files that the operating
// system drops when their process ends, however it ends, so a crash never
// leaves a stale one: meazo-train's run.lock and meazo-sweep's submission
// lock use it. On Linux and macOS the lock is flock(2) (filelock_unix.go);
// on Windows it is LockFileEx (filelock_windows.go).
package filelock

import (
	"errors"
	"os"
	"syscall"
	"time"
)

// ErrLocked is Try's and Wait's error while another process holds a lock
// that conflicts with the one asked for (on Windows as on Linux: the
// Windows code maps ERROR_LOCK_VIOLATION to it).
var ErrLocked error = syscall.EWOULDBLOCK

// Wait takes f's exclusive lock, trying again every poll while another holds
// it, for up to d; then it returns ErrLocked. onWait, if not nil, is called
// once, when it first has to wait.
func Wait(f *os.File, d, poll time.Duration, onWait func()) error {
	deadline := time.Now().Add(d)
	for {
		err := Try(f, Exclusive)
		if !errors.Is(err, ErrLocked) || time.Now().After(deadline) {
			return err
		}
		if onWait != nil {
			onWait()
			onWait = nil
		}
		time.Sleep(poll)
	}
}
