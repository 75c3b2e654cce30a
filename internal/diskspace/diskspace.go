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
	"path/filepath"
)

// Free returns the bytes an unprivileged process may still write on the
// file system that holds dir, and whether it could be read.
func Free(dir string) (uint64, bool) { return free(dir) }

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
