package train

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/meazo-go/meazo/internal/atomicfile"
	"github.com/meazo-go/meazo/internal/inputfile"
	"github.com/meazo-go/meazo/rundir"
)

type manifestEntry struct {
	Path   string `json:"path"` // relative to the checkpoint directory, slash-separated
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

type manifest struct {
	Version int             `json:"version"`
	Files   []manifestEntry `json:"files"`
}

// corrupted is the error of every failed check of a checkpoint.
func corrupted(format string, args ...any) error {
	return fmt.Errorf("checkpoint corrupted: "+format, args...)
}

// checkpointFiles lists the regular files under dir (relative, sorted),
// leaving out the manifest itself.
func checkpointFiles(dir string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return nil
		case !d.Type().IsRegular():
			return corrupted("%s is not a regular file", p)
		case rel == rundir.ManifestFile:
			return nil
		}
		out = append(out, filepath.ToSlash(rel))
		return nil
	})
	slices.Sort(out)
	return out, err
}

// hashFile returns the SHA-256 (hex) of the first n bytes of path (n < 0:
// all of it) and the number of bytes hashed.
func hashFile(path string, n int64) (string, int64, error) {
	f, err := inputfile.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	var r io.Reader = f
	if n >= 0 {
		r = io.LimitReader(f, n)
	}
	h := sha256.New()
	got, err := io.Copy(h, r)
	if err != nil {
		return "", got, fmt.Errorf("read %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), got, nil
}

// logHash is the SHA-256 of an append-only log's first n bytes, kept
// running: a checkpoint hashes only what was appended since the last one.
// (Hashing the whole log at every checkpoint made the run's cost grow with
// the square of its length.)
type logHash struct {
	h hash.Hash // nil: nothing hashed yet
	n int64
}

// upTo hashes path's bytes from where the last call ended to size (from the
// start when size is less than that) and returns the hex SHA-256 of its
// first size bytes. The log's first n bytes must be those hashed before:
// the run only appends to it, and resume checks it first (checkLogs).
func (l *logHash) upTo(path string, size int64) (string, error) {
	if l.h == nil || size < l.n {
		l.h, l.n = sha256.New(), 0
	}
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if _, err := f.Seek(l.n, io.SeekStart); err != nil {
		l.h = nil
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	got, err := io.Copy(l.h, io.LimitReader(f, size-l.n))
	if err == nil && got != size-l.n {
		err = fmt.Errorf("%d bytes, not %d", l.n+got, size)
	}
	if err != nil {
		l.h = nil
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	l.n = size
	return hex.EncodeToString(l.h.Sum(nil)), nil
}

// writeManifest lists every file of the checkpoint directory dir in its
// manifest.json (written last, atomically).
func writeManifest(dir string) error {
	files, err := checkpointFiles(dir)
	if err != nil {
		return err
	}
	m := manifest{Version: 1, Files: []manifestEntry{}}
	for _, rel := range files {
		sum, size, err := hashFile(filepath.Join(dir, filepath.FromSlash(rel)), -1)
		if err != nil {
			return err
		}
		m.Files = append(m.Files, manifestEntry{Path: rel, Size: size, SHA256: sum})
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(dir, rundir.ManifestFile), b)
}

// verifyManifest checks that the checkpoint directory dir holds exactly the
// files its manifest lists, with their sizes and checksums.
func verifyManifest(dir string) error {
	mpath := filepath.Join(dir, rundir.ManifestFile)
	b, err := os.ReadFile(mpath)
	if errors.Is(err, os.ErrNotExist) {
		return corrupted("%s is missing (every checkpoint lists its files there; this one is incomplete or was written by an older version)", mpath)
	} else if err != nil {
		return corrupted("%s: %v", mpath, err)
	}
	var m manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return corrupted("%s: %v", mpath, err)
	}
	if m.Version != 1 {
		return corrupted("%s: version %d, want 1", mpath, m.Version)
	}
	files, err := checkpointFiles(dir)
	if err != nil {
		return err
	}
	listed := map[string]bool{}
	for _, e := range m.Files {
		if e.Path == "" || !filepath.IsLocal(filepath.FromSlash(e.Path)) || listed[e.Path] {
			return corrupted("%s: bad or repeated entry %q", mpath, e.Path)
		}
		listed[e.Path] = true
		p := filepath.Join(dir, filepath.FromSlash(e.Path))
		if !slices.Contains(files, e.Path) {
			return corrupted("%s is missing (listed in %s)", p, rundir.ManifestFile)
		}
		// Size first: a truncated or padded file is named without hashing it.
		st, err := os.Stat(p)
		if err != nil {
			return corrupted("%s: %v", p, err)
		}
		if st.Size() != e.Size {
			return corrupted("%s is %d bytes, the manifest says %d", p, st.Size(), e.Size)
		}
		sum, _, err := hashFile(p, -1)
		if err != nil {
			return corrupted("%v", err)
		}
		if sum != e.SHA256 {
			return corrupted("%s does not match its SHA-256 in %s (the file was changed or damaged)", p, rundir.ManifestFile)
		}
	}
	for _, f := range files {
		if !listed[f] {
			return corrupted("%s is not listed in %s (extra state)", filepath.Join(dir, filepath.FromSlash(f)), rundir.ManifestFile)
		}
	}
	return nil
}
