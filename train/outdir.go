package train

// The run directory's rules, for a new run and for a resumed one: what a
// run may find there and remove (a crash's leftovers), what it refuses to
// overwrite (another run, a user's files), and when a finished run may be
// resumed. The directory's locking is lock.go's; cleaning up after a start
// that failed, failedstart.go's.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/meazo-go/meazo/internal/atomicfile"
	"github.com/meazo-go/meazo/rundir"
)

// atomicRootFiles are the files a run writes atomically at the root of its
// directory: a crash during one of those writes leaves a temporary file
// (atomicfile.IsLeftover) that the next start or resume removes.
var atomicRootFiles = append([]string{rundir.ConfigFile, rundir.SummaryFile, rundir.DemoMarker}, rundir.PredictionsFiles()...)

// refuseFinished refuses to resume a run that is done (summary.json) unless
// a --set gives it something to do: more steps (train.steps above those
// done), or a test evaluation that differs (its data, its settings, its
// backend). With nothing to run, the test evaluation would run again as it
// ran and replace the summary's figures (its peak memory among them) with
// those of an evaluation-only process.
func refuseFinished(dir string, changes []ConfigChange) error {
	s, err := rundir.ReadSummary(dir)
	if err != nil || s.Status != rundir.StatusDone {
		return nil
	}
	for _, c := range changes {
		if n, ok := c.New.(int); c.Key == "train.steps" && ok && n > s.StepsDone || slices.Contains(testKeys, c.Key) {
			return nil
		}
	}
	return fmt.Errorf("run %s is finished (%d of %d steps): nothing to resume. To train it further, add --set train.steps=N (N > %d); "+
		"to test it on other data, --set task.test=FILE, or score its best/ with meazo-eval task", dir, s.StepsDone, s.Steps, s.StepsDone)
}

// testKeys are the resumable keys that change a finished run's test
// evaluation.
var testKeys = []string{"task.test", "task.max_test", "task.strict", "model.backend", "model.bf16_weights",
	"eval.batch_size", "eval.max_new_tokens", "eval.base", "eval.skip", "eval.merge", "eval.rouge_stem", "eval.predictions"}

// removeLeftovers removes the temporary files that writes interrupted by a
// crash left in the run directory, best/ and last/, and nothing else
// (checkpoint.tmp/ goes whole when the next checkpoint starts); a
// full-parameter run's best/ and last/, swapped in whole, get back the
// previous one if a crash came between the renames (recoverSwap).
func removeLeftovers(dir string) error {
	if err := atomicfile.RemoveLeftovers(dir, atomicRootFiles...); err != nil {
		return fmt.Errorf("run directory %s: %w", dir, err)
	}
	for _, sub := range []string{rundir.BestDir, rundir.LastDir} {
		if err := recoverSwap(filepath.Join(dir, sub)); err != nil {
			return fmt.Errorf("run directory %s: %w", dir, err)
		}
		if err := atomicfile.RemoveLeftovers(filepath.Join(dir, sub), rundir.AdapterFiles...); err != nil {
			return fmt.Errorf("run directory %s: %w", dir, err)
		}
	}
	return nil
}

// isRootLeftover says whether name is what a crash during an atomic write
// at the run directory's root left.
func isRootLeftover(name string) bool {
	return slices.ContainsFunc(atomicRootFiles, func(t string) bool { return atomicfile.IsLeftover(name, t) })
}

// restartable are the entries a start of meazo-train leaves in its run
// directory before its first checkpoint (written right after the step-0
// validation): a directory holding only these (and meazo-sweep's files,
// "meazo-sweep.*" and their temporary files, and the demo's marker, written
// before its runs start) is a run that never got that far, and is started
// over. Only with run.lock, which a start writes first: without it, a
// config.yaml or best/ there is a user's (an experiment's config kept in
// its output directory), not a start's. A link is never a start's.
var restartable = []string{rundir.ConfigFile, rundir.MetricsFile, rundir.TimingFile, rundir.LockFile,
	rundir.CheckpointTmpDir, rundir.BestDir, rundir.DemoMarker}

// checkNewRunDir refuses a directory a new run would overwrite or delete
// things in: a run that has a checkpoint (continue it with --resume), or
// anything else that a start of meazo-train does not leave there: a
// finished run's summary and adapters, or a user's files.
func checkNewRunDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if target, lerr := os.Readlink(dir); lerr == nil { // it would fail as "file exists"
			return fmt.Errorf("output.dir %s is a link to %s, which does not exist: create that directory, or choose another output.dir", dir, target)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("output.dir: %w", err)
	}
	started := slices.ContainsFunc(entries, func(e fs.DirEntry) bool { return e.Name() == rundir.LockFile && e.Type().IsRegular() })
	var other []string
	for _, e := range entries {
		switch n := e.Name(); {
		case n == rundir.SummaryFile && started:
			if s, err := rundir.ReadSummary(dir); err == nil && s.WeightsKept != "" {
				return fmt.Errorf("run directory %s holds a finished run (%s, %d steps; its weights pruned: output.keep_weights %s): choose another output.dir", dir, s.Status, s.StepsDone, s.WeightsKept)
			}
			other = append(other, n)
		case n == rundir.CheckpointDir || n == rundir.CheckpointOldDir:
			if s, err := rundir.ReadSummary(dir); err == nil && s.Status == rundir.StatusDone {
				return fmt.Errorf("run directory %s holds a finished run (%d steps): choose another output.dir (--resume %s --set train.steps=N trains it further)", dir, s.StepsDone, dir)
			}
			return fmt.Errorf("run directory %s already holds a run: continue it with --resume %s, or choose another output.dir", dir, dir)
		case strings.HasPrefix(strings.TrimPrefix(n, "."), "meazo-sweep.") || n == rundir.DemoMarker:
		case n == rundir.LockFile && e.Type().IsRegular(): // a link: LockDir would write its pid into what it points to
		case slices.Contains(restartable, n) && started && e.Type()&fs.ModeSymlink == 0:
		case isRootLeftover(n):
		default:
			other = append(other, n)
		}
	}
	if len(other) > 0 {
		if len(other) > 4 {
			other = append(other[:4], fmt.Sprintf("and %d more", len(other)-4))
		}
		return fmt.Errorf("output.dir %s is not empty (it holds %s): a new run there could overwrite or delete them; choose another output.dir",
			dir, strings.Join(other, ", "))
	}
	return nil
}
