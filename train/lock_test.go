package train

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
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

// TestLockDirOutlastsProbe: a run that starts while LockHolder holds its
// instant's shared lock is not refused.
func TestLockDirOutlastsProbe(t *testing.T) {
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, rundir.LockFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := filelock.Try(f, filelock.Shared); err != nil {
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

// TestLockDirCannotCreate: a run directory that cannot be made (here: under
// a regular file) is an error naming it, not the bare mkdir's.
func TestLockDirCannotCreate(t *testing.T) {
	file := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(file, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(file, "run")
	l, err := LockDir(dir)
	if err == nil {
		l.Unlock()
		t.Fatal("LockDir under a regular file succeeded")
	}
	if want := "cannot create the run directory " + dir + ": mkdir " + file + ": not a directory"; err.Error() != want {
		t.Errorf("got %q, want %q", err, want)
	}
	if b, _ := os.ReadFile(file); string(b) != "mine" {
		t.Errorf("the file in the way was changed: %q", b)
	}
	// A directory there that takes no run.lock (read-only; here: a
	// directory in its place, as root writes anywhere) is named likewise.
	dir = t.TempDir()
	os.Mkdir(filepath.Join(dir, "run.lock"), 0o755)
	if l, err = LockDir(dir); err == nil {
		l.Unlock()
		t.Fatal("LockDir with a directory as its run.lock succeeded")
	}
	if want := "cannot write in the run directory " + dir + ": open " + filepath.Join(dir, "run.lock") + ": is a directory"; err.Error() != want {
		t.Errorf("got %q, want %q", err, want)
	}
}
