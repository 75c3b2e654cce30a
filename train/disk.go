package train

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/meazo-go/meazo/fullparam"
	"github.com/meazo-go/meazo/internal/bytesize"
	"github.com/meazo-go/meazo/internal/diskspace"
	"github.com/meazo-go/meazo/rundir"
)

// diskFree is diskspace.Free (a var for tests).
var diskFree = diskspace.Free

// CheckpointsOnDisk is how many checkpoints a run may hold on disk at once:
// the last one, the next written beside it (checkpoint.tmp/) before it
// replaces it, and an earlier one whose files best/ keeps. The run's disk
// warning, the check's and meazo-sweep check's count by it.
const CheckpointsOnDisk = 3

// checkDisk warns, once the run has a checkpoint to measure, when its file
// system cannot take the checkpoints to come: a full-parameter checkpoint
// is a whole model, and one that does not fit stops the run, maybe hours
// in. Nothing is said where the free space cannot be read. The checkpoint
// on disk may be step 0's, made before the optimizer had moments: those to
// come hold them too.
func (r *run) checkDisk() {
	dir := filepath.Join(r.dir, rundir.CheckpointDir)
	size, err := diskspace.Size(dir)
	if err != nil || size == 0 {
		return
	}
	if _, err := os.Stat(filepath.Join(dir, fullparam.StateFile)); err != nil {
		size += r.tr.stateBytes() // a model's moments (0 for an adapter's)
	}
	if free, ok := diskFree(r.dir); ok {
		if s := diskWarning(r.dir, r.lastCheckpointStep(), size, free); s != "" {
			r.note(s)
		}
	}
}

// diskWarning is checkDisk's line for a checkpoint of size bytes (of step)
// and free bytes on the run directory's file system, or "" where they fit.
// Beyond the checkpoint on disk, the run may need two more: the next one is
// written beside it (checkpoint.tmp/) before it replaces it, and best/
// keeps the files of its step's checkpoint (a full-parameter run's are
// links to them) when later ones replace it.
func diskWarning(dir string, step int, size int64, free uint64) string {
	need := (CheckpointsOnDisk - 1) * size // beside the one on disk
	if free >= uint64(need) {
		return ""
	}
	return fmt.Sprintf("warning: the disk of %s has %s free, and a checkpoint takes %s (step %d's): "+
		"the checkpoints to come need up to %s more (each is written beside the last before it replaces it, and best/ keeps "+
		"an earlier one's files); one that does not fit stops the run, whose --resume goes on from the checkpoint before it. "+
		"Free space there, or start again with output.dir on a larger disk",
		dir, bytesize.String(int64(min(free, 1<<62))), bytesize.String(size), step, bytesize.String(need))
}
