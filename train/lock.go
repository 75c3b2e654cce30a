package train

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/meazo-go/meazo/rundir"
)

// Lock is a held run-directory lock.
type Lock struct{ f *os.File }

// LockDir takes the exclusive lock of dir (created if missing) for this
// process, or returns an error naming the process that holds it.
func LockDir(dir string) (*Lock, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, rundir.LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := flock(f); err != nil {
		holder := "another process"
		if b, rerr := os.ReadFile(path); rerr == nil && len(strings.TrimSpace(string(b))) > 0 {
			holder = strings.TrimSpace(string(b))
		}
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("run directory %s is in use by %s; wait for it to end (or stop it) before starting or resuming a run there", dir, holder)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	host, _ := os.Hostname()
	info := fmt.Sprintf("pid %d on host %s, started %s\n", os.Getpid(), host, time.Now().UTC().Format(time.RFC3339))
	if err := f.Truncate(0); err == nil {
		_, err = f.WriteAt([]byte(info), 0)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return &Lock{f: f}, nil
}

// flock takes f's exclusive lock without waiting; a signal that interrupts
// the call is retried.
func flock(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err != syscall.EINTR {
			return err
		}
	}
}

// Unlock releases the lock (closing the file releases it). Safe on nil.
func (l *Lock) Unlock() {
	if l != nil && l.f != nil {
		l.f.Close()
		l.f = nil
	}
}

// checkRunDir checks that dir is an existing run directory (for --resume).
func checkRunDir(dir string) error {
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("resume: %w", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("resume %s: not a directory", dir)
	}
	if _, err := os.Stat(filepath.Join(dir, rundir.ConfigFile)); err != nil {
		return fmt.Errorf("resume %s: not a run directory (no %s)", dir, rundir.ConfigFile)
	}
	return nil
}
