package train

// The demo's directory and its runs' results: what meazo-train --demo may
// write and delete, and the table it prints at the end. README.md promises
// that the demo deletes only what it made: a directory it made carries
// rundir.DemoMarker (its root and each run directory), only such
// directories are ever cleaned, and only of the files the demo and the
// trainer make there. A new run starts in a directory holding the marker
// (checkNewRunDir).

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/meazo-go/meazo/internal/atomicfile"
	"github.com/meazo-go/meazo/rundir"
)

// DemoRunDir is the run directory of the demo's run with optimizer opt
// under the demo's directory root.
func DemoRunDir(root, opt string) string {
	return filepath.Join(root, demoRunName(opt))
}

// demoRunName is the name of DemoRunDir.
func demoRunName(opt string) string { return "run-" + opt }

// demoRoot lists what may be at the root of --demo-dir: the demo's marker,
// WriteDemo's files, make demo's plots/ and the run directories; and run/,
// where a run of demo.yaml itself writes (output.dir), which the demo never
// touches.
var demoRoot = func() []string {
	names := []string{rundir.DemoMarker, "model", "data", "demo.yaml", "plots", "run"}
	for _, opt := range DemoOptimizers {
		names = append(names, demoRunName(opt))
	}
	return names
}()

// ClaimDemoDir checks that dir, the demo's directory (--demo-dir), is empty,
// missing, or made by the demo and holding nothing else, and marks it as
// the demo's.
func ClaimDemoDir(dir string) error {
	if _, err := os.Stat(filepath.Join(dir, rundir.DemoMarker)); err != nil {
		ents, rerr := os.ReadDir(dir)
		if rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			return rerr
		}
		if len(ents) > 0 {
			return fmt.Errorf("demo: %s is not empty and was not made by the demo (no %s in it); choose another --demo-dir", dir, rundir.DemoMarker)
		}
	} else if f, err := firstNotIn(dir, demoRoot); err != nil || f != "" {
		if err != nil {
			return err
		}
		return fmt.Errorf("demo: %s holds %s, which the demo did not make; move it away or choose another --demo-dir", dir, f)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// plots/ is make demo's meazo-plot's: one an older meazo-plot made has
	// no marker, and the new one would refuse to replace its figures.
	if st, err := os.Stat(filepath.Join(dir, "plots")); err == nil && st.IsDir() {
		if err := atomicfile.WriteFile(filepath.Join(dir, "plots", rundir.PlotMarker), []byte("made by meazo-plot (make demo)\n")); err != nil {
			return err
		}
	}
	return markDemo(dir)
}

// ClaimDemoRun makes dir ready for one of the demo's runs: it empties a run
// directory of an earlier demo (cleanDemoRun), refusing one the demo did
// not make or one holding anything else, and makes and marks it.
func ClaimDemoRun(dir string) error {
	if err := cleanDemoRun(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return markDemo(dir)
}

// markDemo writes the demo's marker in dir.
func markDemo(dir string) error {
	return atomicfile.WriteFile(filepath.Join(dir, rundir.DemoMarker), []byte("made by meazo-train --demo\n"))
}

// firstNotIn returns the first entry of dir not in known ("" if none; dir
// may not exist).
func firstNotIn(dir string, known []string) (string, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	for _, e := range ents {
		if !slices.Contains(known, e.Name()) {
			return filepath.Join(dir, e.Name()), nil
		}
	}
	return "", nil
}

// cleanDemoRun empties a run directory of an earlier demo, removing only
// what the trainer and the demo write there; a directory the demo did not
// make, or one holding anything else (rundir.FirstForeign), is refused and
// left as it is.
func cleanDemoRun(dir string) error {
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if _, err := os.Stat(filepath.Join(dir, rundir.DemoMarker)); err != nil {
		return fmt.Errorf("demo: %s exists and was not made by the demo (no %s in it); move it away or choose another --demo-dir", dir, rundir.DemoMarker)
	}
	if f, err := rundir.FirstForeign(dir, rundir.DemoMarker); err != nil || f != "" {
		if err != nil {
			return err
		}
		return fmt.Errorf("demo: %s holds %s, which the demo did not make; move it away or choose another --demo-dir", dir, f)
	}
	lock, err := LockDir(dir) // not while a run is using it
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	defer lock.Unlock()
	for _, name := range rundir.Entries() {
		if name == rundir.LockFile {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	return nil
}

// DemoTable prints one line per demo run from its summary.json: the test
// accuracy of the base model and of the best adapter, the best validation
// loss, the validation accuracy at its step (eval.validation_metrics) and
// the time per step.
func DemoTable(w io.Writer, runs []string) error {
	fmt.Fprintf(w, "\n%-9s %8s %9s %9s %14s %8s %8s\n", "optimizer", "lr", "base acc", "test acc", "best val loss", "val acc", "s/step")
	for _, dir := range runs {
		s, err := rundir.ReadSummary(dir)
		if err != nil {
			return err
		}
		acc := func(m map[string]float64) string {
			if a, ok := m["accuracy"]; ok {
				return fmt.Sprintf("%.1f %%", 100*a)
			}
			return "n/a"
		}
		best := "n/a"
		if s.BestValLoss != nil {
			best = fmt.Sprintf("%.4f", *s.BestValLoss)
		}
		if s.Diverged {
			best = "diverged"
		}
		fmt.Fprintf(w, "%-9s %8g %9s %9s %14s %8s %8.3f\n", s.Optimizer, s.LR, acc(s.Test["base"]), acc(s.Test["best"]), best, acc(s.BestValMetrics), s.SecondsPerStep)
	}
	fmt.Fprintf(w, "test acc: the adapter with the best validation loss, on the test split; val acc: its validation accuracy; base: no adapter; chance is 50 %%.\n")
	return nil
}
