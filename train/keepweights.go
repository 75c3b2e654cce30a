package train

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/meazo-go/meazo/rundir"
)

// A finished run keeps the weights output.keep_weights asks for: a
// full-parameter run's checkpoint/, best/ and last/ are each a whole model
// (best/ and last/ linked to a checkpoint's files while they share its step),
// so that a study of them, hundreds of runs, keeps only best/ or nothing.

// keptDirs are the weight directories a finished run keeps under keep.
func keptDirs(keep string) []string {
	switch keep {
	case rundir.KeepBest:
		return []string{rundir.BestDir}
	case rundir.KeepNone:
		return nil
	}
	return []string{rundir.CheckpointDir, rundir.BestDir, rundir.LastDir}
}

// pruneWeights removes the weight directories output.keep_weights does not
// keep, once summary.json has recorded the result (and what it keeps). The
// checkpoint is first renamed to checkpoint.tmp/, a name never read as a
// checkpoint, so that a crash while it goes leaves no half of one to resume
// from (only that directory, to remove by hand); best/ and last/ lose the
// files that describe them first. A directory that cannot be removed costs
// disk space, not the result: a warning says so.
func (r *run) pruneWeights() {
	keep := r.cfg.Output.KeepWeights
	if keep == rundir.KeepAll || keep == "" {
		return
	}
	os.RemoveAll(filepath.Join(r.dir, rundir.CheckpointOldDir)) // none at the end of a run; a crash's, if any
	var removed []string
	for _, name := range []string{rundir.CheckpointDir, rundir.LastDir, rundir.BestDir} {
		dir := filepath.Join(r.dir, name)
		if slices.Contains(keptDirs(keep), name) {
			continue
		}
		if _, err := os.Lstat(dir); err != nil {
			continue
		}
		if name == rundir.CheckpointDir {
			tmp := filepath.Join(r.dir, rundir.CheckpointTmpDir)
			err := os.RemoveAll(tmp)
			if err == nil {
				err = os.Rename(dir, tmp)
			}
			if err != nil {
				fmt.Fprintf(r.out, "warning: output.keep_weights %s: %s is left: %v\n", keep, dir, err)
				continue
			}
			dir = tmp
		} else {
			// best/ and last/ keep their names while they go: their
			// descriptions first, so that a crash leaves no directory that
			// loads as a model or an adapter.
			os.Remove(filepath.Join(dir, "config.json"))
			os.Remove(filepath.Join(dir, rundir.AdapterFiles[0]))
		}
		if err := os.RemoveAll(dir); err != nil {
			fmt.Fprintf(r.out, "warning: output.keep_weights %s: %s is left: %v\n", keep, dir, err)
			continue
		}
		removed = append(removed, name+"/")
	}
	if len(removed) > 0 {
		fmt.Fprintf(r.out, "removed %s (output.keep_weights: %s)\n", strings.Join(removed, ", "), keep)
	}
}

// divergedKeeps says what a diverged run keeps of its weights.
func (r *run) divergedKeeps() string {
	switch r.cfg.Output.KeepWeights {
	case rundir.KeepBest:
		return fmt.Sprintf("the best %s (step %d) is kept (output.keep_weights: best)", r.weightsNoun(), r.state.BestStep)
	case rundir.KeepNone:
		return "no weights are kept (output.keep_weights: none)"
	}
	ck := r.lastCheckpointStep()
	msg := fmt.Sprintf("the last checkpoint (step %d) and the best %s (step %d) are kept", ck, r.weightsNoun(), r.state.BestStep)
	if r.state.ValidationPending && ck == r.state.Step {
		// A full-parameter run keeps no copy of its weights from before a
		// step: a stop during the validation that found them diverged
		// checkpointed them, and every --resume validates them again.
		msg += fmt.Sprintf("; that checkpoint holds the weights that diverged (a stop during step %d's validation saved them), so a --resume diverges again: start a new run, from the best model with --set model.path=%s",
			ck, filepath.Join(r.dir, rundir.BestDir))
	}
	return msg
}

// weightsNoun is what the run trains: an adapter, or the model's own weights.
func (r *run) weightsNoun() string {
	if r.cfg.Adapter.Kind == "full" {
		return "model"
	}
	return "adapter"
}

// predictionFiles are the paths of the run's predictions files, one per
// test evaluation that wrote one (best, last, base: the weights differ, so
// do the answers).
func (r *run) predictionFiles() []string {
	var out []string
	for _, name := range rundir.PredictionsFiles() {
		if p := filepath.Join(r.dir, name); exists(p) {
			out = append(out, p)
		}
	}
	return out
}

// resultsLine lists a finished run's results: summary.json, the weights it
// keeps and where each test answer is.
func (r *run) resultsLine() string {
	what, flag := "the "+r.weightsNoun(), "--adapter"
	if r.cfg.Adapter.Kind == "full" {
		flag = "--model"
	}
	parts := []string{"summary.json"}
	kept := keptDirs(r.cfg.Output.KeepWeights)
	if slices.Contains(kept, rundir.BestDir) {
		parts = append(parts, fmt.Sprintf("best/ (%s of the lowest validation loss)", what))
	}
	if slices.Contains(kept, rundir.LastDir) {
		parts = append(parts, "last/")
	}
	line := strings.Join(parts, ", ")
	switch {
	case r.cfg.Eval.Predictions && len(r.summary.Test) > 0:
		line += "; each test answer: " + strings.Join(r.predictionFiles(), ", ")
	case slices.Contains(kept, rundir.BestDir):
		line += fmt.Sprintf("; each test answer: meazo-eval task %s %s --predictions FILE", flag, filepath.Join(r.dir, rundir.BestDir))
	}
	return line
}
