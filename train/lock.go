package train

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/meazo-go/meazo/internal/filelock"
	"github.com/meazo-go/meazo/internal/inputfile"
	"github.com/meazo-go/meazo/rundir"
)

// Lock is a held run-directory lock.
type Lock struct {
	f    *os.File
	path string
	// prior is the file as the lock found it (an earlier process's owner
	// line and modification time), for PutBack; kept, once Keep is called.
	prior *lockPrior
	kept  bool
}

type lockPrior struct {
	text []byte
	mod  time.Time
}

// LockDir takes the exclusive lock of dir (created if missing) for this
// process, or returns an error naming the process that holds it. The file
// names this process at once, while it holds the lock (LockHolder's
// messages and meazo-sweep's status read it), so that no one is told to
// wait for, or stop, a process that is gone; a start refused before it
// changed anything puts the earlier owner line back (PutBack).
func LockDir(dir string) (*Lock, error) {
	path := filepath.Join(dir, rundir.LockFile)
	f, err := openLocked(path, dir)
	if err != nil {
		return nil, err
	}
	l := &Lock{f: f, path: path}
	if fi, err := f.Stat(); err == nil && fi.Size() <= maxLockText {
		if text, err := io.ReadAll(f); err == nil {
			l.prior = &lockPrior{text: text, mod: fi.ModTime()}
		}
	}
	host, _ := os.Hostname()
	info := fmt.Sprintf("pid %d on host %s, started %s\n", os.Getpid(), host, time.Now().UTC().Format(time.RFC3339))
	if err := l.write([]byte(info)); err != nil {
		l.PutBack()
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return l, nil
}

// maxLockText is the most of a lock file's text that LockDir keeps to put
// back: an owner line is under a hundred bytes.
const maxLockText = 64 << 10

// write replaces the lock file's text.
func (l *Lock) write(text []byte) error {
	err := l.f.Truncate(0)
	if err == nil {
		_, err = l.f.WriteAt(text, 0)
	}
	return err
}

// Keep makes this process's owner line the file's for good: the run goes
// ahead (a resume accepted, about to change the run), and PutBack no longer
// undoes it. Safe on nil.
func (l *Lock) Keep() {
	if l != nil {
		l.prior, l.kept = nil, true
	}
}

// PutBack restores, while the lock is still held, the text and modification
// time the lock file had before LockDir (a new file: empty), unless Keep
// was called: a resume refused (or a start that failed) before it changed
// anything leaves run.lock as it found it. Safe on nil. Call it before the
// file may be removed (removeFailedStart): it names the file by its path.
func (l *Lock) PutBack() {
	if l == nil || l.f == nil || l.prior == nil {
		return
	}
	if l.write(l.prior.text) == nil {
		os.Chtimes(l.path, time.Time{}, l.prior.mod) // the zero time: the access time as it is
	}
	l.prior = nil
}

// openLocked opens (or creates) the lock file path, and dir if missing, and
// locks it. A start that failed removes the run.lock it made, holding the
// lock, and the directory if it made it (removeFailedStart): a process that
// was waiting on that file then holds a lock on a file no longer there (the
// inode it locked is not the one at path), so it makes the directory and
// opens the path again, as many times as it takes, until the file it locked
// is the one at path.
func openLocked(path, dir string) (*os.File, error) {
	for {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			// Named as the run directory: "mkdir runs: permission denied"
			// alone does not say which setting chose the place.
			return nil, fmt.Errorf("cannot create the run directory %s: %w", dir, err)
		}
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			// The first file a run writes there: a read-only or another
			// user's directory fails here, which the run directory names.
			return nil, fmt.Errorf("cannot write in the run directory %s: %w", dir, err)
		}
		if lockOpened != nil {
			lockOpened(path)
		}
		if err := filelock.Wait(f, lockRetry, 5*time.Millisecond, nil); err != nil {
			f.Close()
			if errors.Is(err, filelock.ErrLocked) {
				return nil, fmt.Errorf("run directory %s is in use by %s; wait for it to end (or stop it) before starting or resuming a run there", dir, lockHolder(path))
			}
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		held, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		now, err := os.Stat(path)
		if err == nil && os.SameFile(held, now) {
			return f, nil
		}
		f.Close() // removed (or replaced) while this process waited: again
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
	}
}

// lockOpened, if set, is called each time openLocked has opened the lock
// file, before it waits for the lock: for tests of a waiter whose file is
// removed while it waits.
var lockOpened func(path string)

// LockHolder says whether a process holds dir's run lock now and, if so,
// who (the lock file's "pid … on host …, started …"): whether a run is
// training there. It takes a shared lock for an instant and creates nothing;
// a directory without a lock file has never been run. meazo-sweep asks it
// before it starts a run, so that it never starts a second meazo-train on a
// running one.
func LockHolder(dir string) (holder string, held bool, err error) {
	path := filepath.Join(dir, rundir.LockFile)
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() {
		// A named pipe, say, in a directory handed over: opening it would
		// block the study's command, and no meazo-train locks one (a resume
		// refuses it: checkRunEntries).
		return "", false, nil
	}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, os.ErrPermission) {
		return "", false, nil // never run, or not ours to test: read the directory as it is
	}
	if err != nil {
		return "", false, fmt.Errorf("lock %s: %w", path, err)
	}
	defer f.Close() // releases the shared lock, if taken
	switch err := filelock.Try(f, filelock.Shared); {
	case err == nil:
		return "", false, nil
	case errors.Is(err, filelock.ErrLocked):
		return lockHolder(path), true, nil
	case errors.Is(err, errors.ErrUnsupported), errors.Is(err, syscall.ENOLCK):
		// A file system without locks (a copy of a study on Lustre without
		// flock, NFS without a lock manager): nothing can hold one there.
		// (ErrUnsupported is ENOSYS or EOPNOTSUPP; on Windows
		// ERROR_NOT_SUPPORTED.)
		return "", false, nil
	default:
		return "", false, fmt.Errorf("lock %s: %w", path, err)
	}
}

// lockHolder is the holder a lock file names, for messages.
func lockHolder(path string) string {
	if b, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(b))) > 0 {
		return strings.TrimSpace(string(b))
	}
	return "another process"
}

// lockRetry is how long LockDir keeps trying a lock that is held: long
// enough to outlast LockHolder's instant on the lock, which must not make a
// run that starts at that moment fail as if the directory were in use.
const lockRetry = 200 * time.Millisecond

// Unlock releases the lock (closing the file releases it). Safe on nil.
func (l *Lock) Unlock() {
	if l != nil && l.f != nil {
		l.f.Close()
		l.f = nil
	}
}

// checkRunDir checks that dir is an existing run directory (for --resume).
func checkRunDir(dir string) error {
	// A run stopped before it wrote anything leaves no directory, or one
	// without config.yaml: it has nothing to resume, and a new start takes
	// the directory.
	st, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("resume %s: no such directory (a run stopped before it wrote anything has nothing to resume: start it again with --config)", dir)
	}
	if err != nil {
		return fmt.Errorf("resume: %w", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("resume %s: not a directory", dir)
	}
	// A run's best/, last/ or checkpoint/ (whose config.yaml is the
	// checkpoint's) given for the run.
	if base, parent := filepath.Base(filepath.Clean(dir)), filepath.Dir(filepath.Clean(dir)); base == rundir.BestDir || base == rundir.LastDir || base == rundir.CheckpointDir {
		if _, err := os.Stat(filepath.Join(parent, rundir.ConfigFile)); err == nil {
			return fmt.Errorf("resume %s: what a run saved, not its run directory: resume the run, --resume %s", dir, parent)
		}
	}
	if err := checkRunEntries(dir); err != nil {
		return err
	}
	_, errConfig := os.Stat(filepath.Join(dir, rundir.ConfigFile))
	_, errCheckpoint := os.Stat(filepath.Join(dir, rundir.CheckpointDir, rundir.ConfigFile))
	if errConfig != nil && errCheckpoint != nil { // with a checkpoint, resume puts config.yaml back (resumeConfig)
		return fmt.Errorf("resume %s: not a run directory (no %s; a run stopped before it wrote one has nothing to resume: start it again with --config)", dir, rundir.ConfigFile)
	}
	return nil
}

// checkRunEntries refuses a run directory to resume whose own entries
// (rundir.Entries: the logs, run.lock, the checkpoints, best/ and last/)
// are links (a log or run.lock: hard links too) or not what the run made them (a named pipe, a file where a
// directory belongs). A resume writes these in place: it truncates
// metrics.jsonl and run.lock and appends to them, and it would do so to
// whatever a link points to, outside the run (a copy made with cp -s, or a
// directory handed over with metrics.jsonl linked to someone's file);
// reading a named pipe would block it for good.
func checkRunEntries(dir string) error {
	for _, name := range rundir.Entries() {
		p := filepath.Join(dir, name)
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("resume %s: %w", dir, err)
		}
		wantDir := slices.Contains(rundir.DirEntries(), name)
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			return fmt.Errorf("resume %s: %s is a link (to %s); a resume writes the run's files in place and would write through it: replace it with a copy of what it points to", dir, p, target)
		case wantDir && !fi.IsDir():
			return fmt.Errorf("resume %s: %s is not a directory (the run makes it one)", dir, p)
		case !wantDir && !fi.Mode().IsRegular():
			return fmt.Errorf("resume %s: %s is %s, not a regular file (the run makes it one)", dir, p, inputfile.Kind(fi.Mode()))
		case slices.Contains(inPlaceFiles, name) && linkCount(fi) > 1:
			return fmt.Errorf("resume %s: %s has %d hard links: another directory shares it (a copy made with cp -l or cp -al, rsync --link-dest); "+
				"a resume writes it in place and would change the other's too: give it a file of its own (cp %s %s.own && mv %s.own %s)",
				dir, p, linkCount(fi), p, p, p, p)
		}
	}
	return nil
}

// inPlaceFiles are the run's files that a resume truncates and appends to
// (or, run.lock, rewrites) in place, not by a rename: a hard link to one (a
// copy of the run made with cp -al) is another run's file too. Everything
// else is replaced whole, which leaves another directory's link alone (a
// full-parameter run links best/ and last/ to its checkpoint itself).
var inPlaceFiles = []string{rundir.MetricsFile, rundir.TimingFile, rundir.ChangesFile, rundir.LockFile}
