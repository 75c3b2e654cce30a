package filelock

import (
	"os"
	"syscall"
	"unsafe"
)

// On Windows a lock is LockFileEx's, called from kernel32.dll directly:
// package syscall does not export it, and golang.org/x/sys/windows would be
// a new direct dependency for one function. Windows releases a process's
// locks when it ends, as Linux does flock's (its documentation says that
// this may take a moment after the process is gone).
//
// Unlike flock, a Windows lock is mandatory: no other handle may read or
// write the bytes it covers. So it covers one byte far past any content
// (lockOffset; locking past the end of a file is allowed and does not grow
// it), as SQLite's locks do, and the holder line meazo-train writes into
// run.lock stays readable to the process that is refused the lock.
//
// This code is compiled (CI vets GOOS=windows) but has not been run: the
// project is tested on Linux only.
var lockFileEx = syscall.NewLazyDLL("kernel32.dll").NewProc("LockFileEx")

// The kinds of lock Try takes: LockFileEx's flags.
const (
	Shared    = 0
	Exclusive = 0x2 // LOCKFILE_EXCLUSIVE_LOCK
)

const (
	lockfileFailImmediately               = 0x1
	lockOffset                            = 1 << 30 // SQLite's PENDING_BYTE
	errorLockViolation      syscall.Errno = 33      // ERROR_LOCK_VIOLATION
)

// Try takes f's lock of the given kind (Shared or Exclusive) without
// waiting. It returns ErrLocked while another holds a conflicting lock.
func Try(f *os.File, how int) error {
	// The file is open for synchronous I/O (os.OpenFile's handles are), so
	// the OVERLAPPED only carries the range's offset and the call returns
	// at once.
	ol := syscall.Overlapped{Offset: lockOffset}
	ok, _, err := lockFileEx.Call(f.Fd(), uintptr(how|lockfileFailImmediately), 0, 1, 0, uintptr(unsafe.Pointer(&ol)))
	switch {
	case ok != 0:
		return nil
	case err == errorLockViolation:
		return ErrLocked
	default:
		return err
	}
}
