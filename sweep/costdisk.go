package sweep

import (
	"fmt"

	"github.com/meazo-go/meazo/internal/bytesize"
	"github.com/meazo-go/meazo/internal/diskspace"
	"github.com/meazo-go/meazo/rundir"
	"github.com/meazo-go/meazo/train"
)

// diskFree is diskspace.Free (a var for tests).
var diskFree = diskspace.Free

// diskNeed is what the full-parameter runs check counts need of the study's
// disk, whose checkpoint is a whole model (an adapter's is small): what
// each keeps once it has finished, by its output.keep_weights (all: its
// checkpoint/ and best/, an earlier step's files where the best validation
// loss was not the last step's: up to two checkpoints; best: one; none:
// nothing), and while it runs up to three (its checkpoint, the next one
// written beside it, best/'s).
type diskNeed struct {
	kept    int64 // the runs left, once finished
	running int64 // the most one running run holds
}

// keptCheckpoints is how many checkpoints' worth a finished run keeps, by
// its output.keep_weights.
var keptCheckpoints = map[string]int64{rundir.KeepAll: 2, rundir.KeepBest: 1, rundir.KeepNone: 0}

// add counts runs runs of report rep that keep keep (output.keep_weights).
func (d *diskNeed) add(rep *train.CheckReport, runs int, keep string) {
	if rep.CheckpointBytes <= 0 {
		return
	}
	d.kept += int64(runs) * keptCheckpoints[keep] * rep.CheckpointBytes
	d.running = max(d.running, train.CheckpointsOnDisk*rep.CheckpointBytes)
}

// line is the study's disk line for runs side by side at once, against
// the free space of out's file system ("" where no full-parameter run is
// counted or the free space cannot be read).
func (d diskNeed) line(out string, side int) string {
	if d.running == 0 {
		return ""
	}
	free, ok := diskFree(diskspace.Nearest(out))
	if !ok {
		return ""
	}
	need := d.kept + int64(side)*d.running
	line := fmt.Sprintf("disk: the full-parameter runs left keep up to %s once finished (output.keep_weights), and %s at a time up to %s each while they run: up to %s; the disk of %s has %s free",
		bytesize.String(d.kept), counted(side, "run"), bytesize.String(d.running), bytesize.String(need), out, bytesize.String(int64(min(free, 1<<62))))
	if free < uint64(need) {
		line = "warning: " + line + ": a run that cannot write its checkpoint stops (set output.keep_weights best or none in the study's set, as configs/studies/full.yaml does, or free space)"
	}
	return line
}
