package train

import (
	"os"
	"path/filepath"

	"github.com/meazo-go/meazo/internal/atomicfile"
	"github.com/meazo-go/meazo/rundir"
)

// startMade is what a new run's start made in its run directory before it
// could fail: the directory and its run.lock (where they were not there
// before), config.yaml and the logs (once it has written them).
type startMade struct {
	dir, lock    bool
	config, logs bool
	// configInput is what config.yaml held before this start replaced it,
	// when it was the --config file (an earlier start's config.yaml given
	// again, as the resume of a run stopped before its first checkpoint
	// suggests): a failed start puts it back, as it found it.
	configInput []byte
}

// removeFailedStart takes back what a new run's start wrote when the start
// fails before its first step (a file that does not parse, a backend that
// cannot open, a stop while loading): config.yaml and the logs, the
// run.lock it made (removed while still held: a process waiting for it
// opens the path again, see openLocked) and the directory if it made it and
// nothing else is left there (config.yaml that was the --config file
// itself gets back what it held). Nothing was trained, so nothing is lost; what
// it leaves is what was there before it (the demo's marker, meazo-sweep's
// files). A resumed run's files are never touched: a resume that fails
// before it changes the run (Lock.Keep) leaves run.lock as it was (PutBack),
// or removes the one it made where there was none.
func (r *run) removeFailedStart() {
	if r.lock == nil {
		return
	}
	if r.opts.Resume != "" {
		if r.made.lock && !r.lock.kept {
			os.Remove(filepath.Join(r.dir, rundir.LockFile))
		}
		return
	}
	// Only what this start wrote: a start refused under the lock (another
	// run got there in between) leaves that run's files alone.
	if r.made.config && r.made.configInput != nil {
		atomicfile.WriteFile(filepath.Join(r.dir, rundir.ConfigFile), r.made.configInput)
	} else if r.made.config {
		os.Remove(filepath.Join(r.dir, rundir.ConfigFile))
	}
	if r.made.logs {
		os.Remove(filepath.Join(r.dir, rundir.MetricsFile))
		os.Remove(filepath.Join(r.dir, rundir.TimingFile))
	}
	if r.made.lock {
		os.Remove(filepath.Join(r.dir, rundir.LockFile))
	}
	if r.made.dir {
		os.Remove(r.dir) // fails, as it should, if anything else is there
	}
}
