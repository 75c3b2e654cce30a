package train

import (
	"os"
	"path/filepath"

	"github.com/meazo-go/meazo/rundir"
)

// startMade is what a new run's start made in its run directory before it
// could fail: whether the directory and its run.lock were there before.
type startMade struct {
	dir, lock bool
}

// removeFailedStart takes back what a new run's start wrote when the start
// fails before its first step (a file that does not parse, a backend that
// cannot open, a stop while loading): config.yaml and the logs, the
// run.lock it made (removed while still held: a process waiting for it
// opens the path again, see openLocked) and the directory if it made it and
// nothing else is left there. Nothing was trained, so nothing is lost; what
// it leaves is what was there before it (the demo's marker, meazo-sweep's
// files). A resumed run's files are never touched.
func (r *run) removeFailedStart() {
	if r.opts.Resume != "" || r.lock == nil {
		return
	}
	for _, name := range []string{rundir.ConfigFile, rundir.MetricsFile, rundir.TimingFile} {
		os.Remove(filepath.Join(r.dir, name))
	}
	if r.made.lock {
		os.Remove(filepath.Join(r.dir, rundir.LockFile))
	}
	if r.made.dir {
		os.Remove(r.dir) // fails, as it should, if anything else is there
	}
}
