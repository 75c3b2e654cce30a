// Package diskspace reads how much room a file system has left and how much
// a directory takes, so that a run whose checkpoints will not fit says so
// after its first checkpoint rather than stopping hours later: a
// full-parameter checkpoint is a whole model.
//
// Free is known on Linux and macOS (statfs); elsewhere it reports that it
// does not know, and callers check nothing.
package diskspace

import (
	"io/fs"
	"math"
	"os"
	"path/filepath"
)

// Free returns the bytes an unprivileged process may still write on the
// file system that holds dir, and whether it could be read.
func Free(dir string) (uint64, bool) { return free(dir) }

// Nearest is path, or its nearest parent that exists: where a directory not
// made yet (a new run's, a study's) will be, for Free.
func Nearest(path string) string {
	for d := filepath.Clean(path); ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil || d == filepath.Dir(d) {
			return d
		}
	}
}

// Size returns the bytes of the regular files under dir (links not
// followed; a file linked twice counted twice).
func Size(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		n += info.Size()
		return nil
	})
	return n, err
}

// bytesOf is blocks × unit bytes, at most the largest uint64: the counts are
// what the file system says (a FUSE one's, whatever its daemon answers), and
// a huge one must not wrap around to a few bytes and a false warning.
func bytesOf(blocks, unit uint64) uint64 {
	if unit != 0 && blocks > math.MaxUint64/unit {
		return math.MaxUint64
	}
	return blocks * unit
}
