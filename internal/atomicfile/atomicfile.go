// Package atomicfile writes files so that a reader never sees a half-written
// one: the data goes to a temporary file in the same directory, is synced,
// and is renamed over the destination.
package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
)

// WriteFile writes data to path atomically, with mode 0644.
func WriteFile(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // no-op after a successful rename
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err == nil {
		err = SyncDir(filepath.Dir(path))
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// SyncDir flushes dir's entries (a rename, a new or removed name in it) to
// the disk: a file's own sync makes its data durable, not the name it was
// renamed to, which a power loss can undo on a file system that does not
// order its metadata. Where a directory cannot be synced (Windows, whose
// renames are durable without it; file systems that refuse it: EINVAL, or
// no such call), it does nothing.
func SyncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if errors.Is(err, syscall.EINVAL) || errors.Is(err, errors.ErrUnsupported) {
		err = nil
	}
	return errors.Join(err, d.Close())
}

// IsLeftover says whether name is a temporary file that an interrupted
// atomic write of target left behind (killed before its rename): "." +
// target + ".tmp", then os.CreateTemp's random digits, with or without a
// "-" before them (WriteFile's pattern and safetensors.WriteFile's).
func IsLeftover(name, target string) bool {
	rest, ok := strings.CutPrefix(name, "."+target+".tmp")
	if !ok {
		return false
	}
	rest = strings.TrimPrefix(rest, "-")
	return rest != "" && strings.Trim(rest, "0123456789") == ""
}

// RemoveLeftovers removes from dir the temporary files that interrupted
// atomic writes of the targets left (IsLeftover), and nothing else. A
// missing dir has none.
func RemoveLeftovers(dir string, targets ...string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		for _, t := range targets {
			if IsLeftover(e.Name(), t) {
				if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
					return err
				}
				break
			}
		}
	}
	return nil
}
