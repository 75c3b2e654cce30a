//go:build unix

package train

import (
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/meazo-go/meazo/rundir"
)

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
