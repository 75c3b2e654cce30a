//go:build unix

package train

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestResumeRefusesLinksAndPipes: a run directory handed over for --resume
// whose own files are links (to a file outside the run: a copy made with
// cp -s, or one crafted to point at someone's file; hard links of the files
// written in place, as a copy made with cp -al has) or named pipes is
// refused before anything is written: the file a link points to keeps its
// bytes (a resume truncated metrics.jsonl through the link and appended its
// lines there; run.lock got the pid), and no read blocks on a pipe (the
// checkpoint's manifest.json blocked the resume for good).
func TestResumeRefusesLinksAndPipes(t *testing.T) {
	dir, cfg := demoConfig(t, 8)
	base := filepath.Join(dir, "base")
	if _, err := Run(Options{ConfigPath: cfg, Overrides: append(trustSet, "output.dir="+base), StopAfter: 4, Log: io.Discard}); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(dir, "outside")
	copyDir(t, base, outside)
	link := func(name string) func(d string) error {
		return func(d string) error {
			os.RemoveAll(filepath.Join(d, name))
			return os.Symlink(filepath.Join(outside, name), filepath.Join(d, name))
		}
	}
	hardLink := func(name string) func(d string) error {
		return func(d string) error {
			os.Remove(filepath.Join(d, name))
			return os.Link(filepath.Join(outside, name), filepath.Join(d, name))
		}
	}
	fifo := func(name string) func(d string) error {
		return func(d string) error {
			os.Remove(filepath.Join(d, name))
			return syscall.Mkfifo(filepath.Join(d, name), 0o644)
		}
	}
	for _, tc := range []struct {
		name   string
		damage func(d string) error
		want   []string
	}{
		{"metrics.jsonl a link", link("metrics.jsonl"), []string{"metrics.jsonl is a link", "outside"}},
		{"run.lock a link", link("run.lock"), []string{"run.lock is a link"}},
		{"best a link", link("best"), []string{"best is a link"}},
		{"checkpoint a link", link("checkpoint"), []string{"checkpoint is a link"}},
		// A copy made with cp -al: the logs and run.lock, written in place, are shared.
		{"metrics.jsonl a hard link", hardLink("metrics.jsonl"), []string{"metrics.jsonl has 2 hard links", "cp -al", "give it a file of its own"}},
		{"timing.jsonl a hard link", hardLink("timing.jsonl"), []string{"timing.jsonl has 2 hard links"}},
		{"run.lock a hard link", hardLink("run.lock"), []string{"run.lock has 2 hard links"}},
		{"metrics.jsonl a pipe", fifo("metrics.jsonl"), []string{"metrics.jsonl is a named pipe"}},
		{"changes.jsonl a pipe", fifo("changes.jsonl"), []string{"changes.jsonl is a named pipe"}},
		{"manifest a pipe", fifo("checkpoint/manifest.json"), []string{"manifest.json", "named pipe"}},
		{"best a file", func(d string) error {
			os.RemoveAll(filepath.Join(d, "best"))
			return os.WriteFile(filepath.Join(d, "best"), nil, 0o644)
		}, []string{"best is not a directory"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-"))
			copyDir(t, base, d)
			if err := tc.damage(d); err != nil {
				t.Fatal(err)
			}
			before := readTree(t, outside)
			done := make(chan error, 1)
			go func() { _, err := Run(Options{Resume: d, Log: io.Discard}); done <- err }()
			select {
			case err := <-done:
				for _, w := range tc.want {
					if err == nil || !strings.Contains(err.Error(), w) {
						t.Fatalf("error %v; want one containing %q", err, w)
					}
				}
			case <-time.After(60 * time.Second):
				t.Fatal("the resume blocked")
			}
			after := readTree(t, outside)
			for name, content := range before {
				if after[name] != content {
					t.Errorf("%s outside the run directory changed", name)
				}
			}
		})
	}
}

// TestNewRunRefusesLockLink: an output.dir whose run.lock is a link is not
// a start's leftover: a new run there is refused, and the file the link
// points to keeps its bytes (LockDir wrote its pid into it).
func TestNewRunRefusesLockLink(t *testing.T) {
	dir, cfg := demoConfig(t, 2)
	notes := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(notes, []byte("precious notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	os.Mkdir(out, 0o755)
	if err := os.Symlink(notes, filepath.Join(out, "run.lock")); err != nil {
		t.Fatal(err)
	}
	_, err := Run(Options{ConfigPath: cfg, Overrides: append(trustSet, "output.dir="+out), Log: io.Discard})
	if err == nil || !strings.Contains(err.Error(), "run.lock") {
		t.Errorf("error %v; want one naming run.lock", err)
	}
	if b, _ := os.ReadFile(notes); string(b) != "precious notes\n" {
		t.Errorf("the file run.lock links to now holds %q", b)
	}
}
