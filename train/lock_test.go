package train

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/meazo-go/meazo/internal/filelock"
	"github.com/meazo-go/meazo/rundir"
)

// TestLockHolder: LockHolder sees a held lock and its holder, sees no lock
// in a directory never run or whose run has ended, and creates nothing.
func TestLockHolder(t *testing.T) {
	for _, tc := range []struct {
		name   string
		setup  func(t *testing.T, dir string) // prepares dir; its cleanup releases
		held   bool
		holder string // contained in the holder
	}{
		{"no directory", func(t *testing.T, dir string) {}, false, ""},
		{"never run", func(t *testing.T, dir string) { os.MkdirAll(dir, 0o755) }, false, ""},
		{"held", func(t *testing.T, dir string) {
			l, err := LockDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(l.Unlock)
		}, true, fmt.Sprintf("pid %d on host", os.Getpid())},
		{"ended", func(t *testing.T, dir string) {
			l, err := LockDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			l.Unlock()
		}, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			tc.setup(t, dir)
			_, existed := os.Stat(filepath.Join(dir, rundir.LockFile))
			holder, held, err := LockHolder(dir)
			if err != nil || held != tc.held || !strings.Contains(holder, tc.holder) {
				t.Fatalf("LockHolder = %q, %v, %v; want held %v by %q", holder, held, err, tc.held, tc.holder)
			}
			if _, err := os.Stat(filepath.Join(dir, rundir.LockFile)); (err == nil) != (existed == nil) {
				t.Errorf("LockHolder created or removed the lock file")
			}
		})
	}
}

// TestLockHolderOfAPipe: a run.lock that is a named pipe is no lock, and
// LockHolder says so at once (opening it for reading blocked meazo-sweep's
// every command on the study).
func TestLockHolderOfAPipe(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, rundir.LockFile), 0o644); err != nil {
		t.Skipf("no FIFOs here: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		holder, held, err := LockHolder(dir)
		if err == nil && (held || holder != "") {
			err = fmt.Errorf("held %v by %q", held, holder)
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Error(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("LockHolder blocked on the pipe")
	}
}

// TestLockDirOutlastsProbe: a run that starts while LockHolder holds its
// instant's shared lock is not refused.
func TestLockDirOutlastsProbe(t *testing.T) {
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, rundir.LockFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := filelock.Try(f, syscall.LOCK_SH); err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(lockRetry / 4)
		f.Close()
	}()
	l, err := LockDir(dir)
	if err != nil {
		t.Fatalf("LockDir during a probe: %v", err)
	}
	l.Unlock()
}
