//go:build unix

package inputfile

import (
	"bufio"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
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

// TestReadFileRefusesHugeFiles: a file above MaxReadFile (a sparse one of
// 1 GiB + 1 byte at the real limit, taking no disk) is refused naming it
// and its size, without being read; one at the limit is read.
func TestReadFileRefusesHugeFiles(t *testing.T) {
	dir := t.TempDir()
	huge := filepath.Join(dir, "config.json")
	f, err := os.Create(huge)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(MaxReadFile + 1); err != nil {
		f.Close()
		t.Skipf("no sparse file here: %v", err)
	}
	f.Close()
	_, err = ReadFile(huge)
	if want := "read " + huge + ": 1073741825 bytes, more than the 1024 MiB a file read whole may have"; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("a file of 1 GiB + 1: %v, want %s…", err, want)
	}
	defer func(m int64) { MaxReadFile = m }(MaxReadFile)
	MaxReadFile = 2
	small := filepath.Join(dir, "small.json")
	if err := os.WriteFile(small, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadFile(small); err != nil || string(b) != "{}" {
		t.Errorf("a file at the limit: %q, %v", b, err)
	}
}

// TestReadLine: lines up to the bound come back whole, '\n' included (the
// last without one, with io.EOF); a longer one is ErrLongLine, also one
// longer than bufio's buffer.
func TestReadLine(t *testing.T) {
	for _, c := range []struct {
		in    string
		max   int
		lines []string
		err   error
	}{
		{"ab\ncd", 3, []string{"ab\n", "cd"}, io.EOF},
		{"abc\n", 3, nil, ErrLongLine},
		{"abc\n", 4, []string{"abc\n", ""}, io.EOF},
		{strings.Repeat("x", 40000) + "\n", 40001, []string{strings.Repeat("x", 40000) + "\n", ""}, io.EOF},
		{strings.Repeat("x", 40000) + "\n", 39999, nil, ErrLongLine},
	} {
		br := bufio.NewReaderSize(strings.NewReader(c.in), 16)
		var got []string
		var err error
		for err == nil {
			var line []byte
			if line, err = ReadLine(br, c.max); err == nil || err == io.EOF {
				got = append(got, string(line))
			}
		}
		if err != c.err || !slices.Equal(got, c.lines) {
			t.Errorf("ReadLine(%.10q…, %d): lines %.3q, %v; want %.3q, %v", c.in, c.max, got, err, c.lines, c.err)
		}
	}
}
