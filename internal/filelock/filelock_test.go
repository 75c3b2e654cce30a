package filelock

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestConflicts takes a lock on one handle of a file and then another on a
// second handle (a second process's, as far as the lock goes): only two
// shared locks go together, and closing the first handle frees the file.
func TestConflicts(t *testing.T) {
	for _, tc := range []struct {
		name          string
		first, second int
		conflict      bool
	}{
		{"shared, shared", Shared, Shared, false},
		{"shared, exclusive", Shared, Exclusive, true},
		{"exclusive, shared", Exclusive, Shared, true},
		{"exclusive, exclusive", Exclusive, Exclusive, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "lock")
			a, b := open(t, path), open(t, path)
			if err := Try(a, tc.first); err != nil {
				t.Fatal(err)
			}
			err := Try(b, tc.second)
			if tc.conflict != errors.Is(err, ErrLocked) || !tc.conflict && err != nil {
				t.Fatalf("second lock: %v, want a conflict %v", err, tc.conflict)
			}
			a.Close()
			if err := Try(b, tc.second); err != nil {
				t.Errorf("second lock after the first handle closed: %v", err)
			}
		})
	}
}

// TestWait: Wait gives up with ErrLocked after its time, having said once
// that it waits, and takes a lock freed while it waits.
func TestWait(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	a, b := open(t, path), open(t, path)
	if err := Try(a, Exclusive); err != nil {
		t.Fatal(err)
	}
	waits := 0
	if err := Wait(b, 20*time.Millisecond, time.Millisecond, func() { waits++ }); !errors.Is(err, ErrLocked) || waits != 1 {
		t.Fatalf("Wait on a held lock: %v after %d calls of onWait, want ErrLocked after 1", err, waits)
	}
	go func() {
		time.Sleep(20 * time.Millisecond)
		a.Close()
	}()
	if err := Wait(b, 10*time.Second, time.Millisecond, nil); err != nil {
		t.Errorf("Wait on a lock freed while it waits: %v", err)
	}
}

// TestLockedFileReadable: while one handle holds the exclusive lock and
// writes the file, another reads it (meazo-train's run.lock names its
// holder for the process refused the lock; on Windows, whose locks are
// mandatory, this holds because the lock covers a byte past the content).
func TestLockedFileReadable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	a := open(t, path)
	if err := Try(a, Exclusive); err != nil {
		t.Fatal(err)
	}
	if _, err := a.WriteAt([]byte("pid 1\n"), 0); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "pid 1\n" {
		t.Errorf("reading the locked file: %q, %v", b, err)
	}
}

func open(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}
