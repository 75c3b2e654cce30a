package rundir

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/meazo-go/meazo/internal/atomicfile"
)

// checkpointFiles are what a checkpoint directory (CheckpointDir, and its
// CheckpointTmpDir and CheckpointOldDir while one is swapped in) holds: its
// state, the optimizer's state, its manifest, a copy of ConfigFile, a
// BestDir, the adapter's files, and a cut-short test's answers.
var checkpointFiles = append([]string{StateFile, OptimizerFile, ManifestFile, ConfigFile, BestDir, PartialPredictionsFile}, AdapterFiles...)

// runFolders are the folders a run writes in its directory and what each
// holds: the adapter files, and in a checkpoint checkpointFiles.
var runFolders = map[string][]string{
	BestDir: AdapterFiles, LastDir: AdapterFiles,
	CheckpointDir: checkpointFiles, CheckpointTmpDir: checkpointFiles, CheckpointOldDir: checkpointFiles,
}

// FirstForeign returns the first thing in run directory dir that a run does
// not write there ("" if there is none): meazo-train --demo asks it before
// it empties a run directory of an earlier demo, so as to delete only what
// runs made. It looks into the run's folders too, since a
// user's file in best/ or checkpoint/ would go with the folder. also names
// more entries allowed at the root (another tool's marker, such as
// DemoMarker). The temporary files of interrupted atomic writes
// (atomicfile.IsLeftover) of any of these are the run's; a link is never the
// run's, nor is a file where a folder belongs or a folder where a file does.
func FirstForeign(dir string, also ...string) (string, error) {
	return firstForeign(dir, append(slices.Clone(also), Entries()...), runFolders)
}

// firstForeign returns the first entry of dir, or of its folders (searched
// as folders says what each holds), that is not among known.
func firstForeign(dir string, known []string, folders map[string][]string) (string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	for _, e := range ents {
		path := filepath.Join(dir, e.Name())
		leftover := slices.ContainsFunc(known, func(k string) bool { return atomicfile.IsLeftover(e.Name(), k) })
		switch sub, isFolder := folders[e.Name()]; {
		case e.Type()&fs.ModeSymlink != 0:
			return path, nil
		case isFolder && e.IsDir():
			inner := map[string][]string{}
			if slices.Contains(sub, BestDir) { // a checkpoint's best/
				inner[BestDir] = AdapterFiles
			}
			if f, err := firstForeign(path, sub, inner); err != nil || f != "" {
				return f, err
			}
		case e.Type().IsRegular() && (slices.Contains(known, e.Name()) && !isFolder || leftover):
		default:
			return path, nil
		}
	}
	return "", nil
}
