package diskspace

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

func TestSize(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, n int) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, make([]byte, n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.safetensors", 1000)
	write("best/b.json", 24)
	write("empty", 0)
	if err := os.Symlink(filepath.Join(dir, "a.safetensors"), filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	got, err := Size(dir)
	if err != nil || got != 1024 {
		t.Errorf("Size = %d, %v; want 1024 (the symbolic link not followed)", got, err)
	}
	if _, err := Size(filepath.Join(dir, "missing")); err == nil {
		t.Error("Size of a missing directory: no error")
	}
}

// TestFreeAsDf checks Free against df's available bytes of the same
// directory (the same statfs fields: f_bavail × f_frsize), allowing for
// other writers between the two reads.
func TestFreeAsDf(t *testing.T) {
	dir := t.TempDir()
	got, ok := Free(dir)
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		if ok {
			t.Errorf("Free on %s: %d, ok; want not known", runtime.GOOS, got)
		}
		return
	}
	if !ok {
		t.Fatalf("Free(%s): not known", dir)
	}
	out, err := exec.Command("df", "-k", dir).Output()
	if err != nil {
		t.Skipf("no df to compare with: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	f := strings.Fields(lines[len(lines)-1])
	if len(f) < 4 {
		t.Fatalf("df -k %s: unexpected output %q", dir, out)
	}
	kb, err := strconv.ParseUint(f[3], 10, 64) // Filesystem 1K-blocks Used Available ...
	if err != nil {
		t.Fatalf("df -k %s: available %q: %v", dir, f[3], err)
	}
	want, slack := kb<<10, uint64(256<<20)
	if got+slack < want || got > want+slack {
		t.Errorf("Free(%s) = %d, df says %d available", dir, got, want)
	}
}

// TestNearest: a path that exists is itself; one not made yet is its
// nearest parent that exists.
func TestNearest(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ path, want string }{
		{dir, dir},
		{filepath.Join(dir, "a", "b", "c"), dir},
		{"/", "/"},
	} {
		if got := Nearest(c.path); got != c.want {
			t.Errorf("Nearest(%q) = %q, want %q", c.path, got, c.want)
		}
	}
}
