//go:build unix

package inputfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestRefusesWhatIsNotAFile: a FIFO, a device and a directory are refused
// at once, naming the path; a regular file and a link to one are read; a
// missing file gives os.Open's own error.
func TestRefusesWhatIsNotAFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "weights.safetensors")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("no FIFOs here: %v", err)
	}
	file := filepath.Join(dir, "config.json")
	if err := os.WriteFile(file, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(file, link); err != nil {
		t.Fatal(err)
	}
	fifoLink := filepath.Join(dir, "fifo-link")
	if err := os.Symlink(fifo, fifoLink); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, want string }{
		{fifo, "a named pipe (FIFO), not a regular file"},
		{fifoLink, "a named pipe (FIFO), not a regular file"},
		{"/dev/zero", "a device, not a regular file"},
		{dir, "a directory, not a regular file"},
	} {
		done := make(chan error, 2)
		go func() {
			_, err := ReadFile(c.path)
			done <- err
			f, err := Open(c.path)
			if f != nil {
				f.Close()
			}
			done <- err
		}()
		for range 2 {
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), c.path) || !strings.Contains(err.Error(), c.want) {
					t.Errorf("%s: %v, want an error naming it and saying %q", c.path, err, c.want)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("%s: blocked", c.path)
			}
		}
	}
	for _, p := range []string{file, link} {
		if b, err := ReadFile(p); err != nil || string(b) != "{}" {
			t.Errorf("%s: %q, %v", p, b, err)
		}
	}
	if _, err := Open(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing file: %v", err)
	}
}
