package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"

	"github.com/meazo-go/meazo/internal/atomicfile"
	"github.com/meazo-go/meazo/internal/stopsig"
	"github.com/meazo-go/meazo/rundir"
	"github.com/meazo-go/meazo/tensor/backends"
	"github.com/meazo-go/meazo/train"
)

// demoMarker marks a directory made by the demo (its root and each run
// directory): only such directories are ever cleaned, and only of the files
// the demo and the trainer make. meazo-train starts a new run in a
// directory holding it (package train's checkNewRunDir).
const demoMarker = rundir.DemoMarker

// demoRoot lists what the demo writes at the root of --demo-dir.
var demoRoot = []string{demoMarker, "model", "data", "demo.yaml", "plots", "run-meazo", "run-zo-sgd", "run-zo-adam"}

// runFiles lists what a run and the demo write in a run directory
// (docs/RUNDIR.md).
var runFiles = append([]string{demoMarker}, rundir.Entries()...)

// foreign returns the first entry of dir not in known ("" if none; dir may not exist).
func foreign(dir string, known []string) (string, error) {
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

// runFolders are the folders a run writes in its directory and what each
// holds: the adapter files, and in a checkpoint its state, a config copy
// and best/.
var runFolders = func() map[string][]string {
	ck := append([]string{rundir.StateFile, rundir.OptimizerFile, rundir.ManifestFile, rundir.ConfigFile, rundir.BestDir}, rundir.AdapterFiles...)
	return map[string][]string{
		rundir.BestDir: rundir.AdapterFiles, rundir.LastDir: rundir.AdapterFiles,
		rundir.CheckpointDir: ck, rundir.CheckpointTmpDir: ck, rundir.CheckpointOldDir: ck,
	}
}()

// foreignInRun returns the first thing in a demo run directory that neither
// the demo nor the trainer writes there, looking into its folders too: a
// file of a user's in best/ or checkpoint/ would go with the folder. A link
// is never the trainer's; nor is a file where a folder belongs.
func foreignInRun(dir string) (string, error) {
	var walk func(dir string, known []string, folders map[string][]string) (string, error)
	walk = func(dir string, known []string, folders map[string][]string) (string, error) {
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
				if slices.Contains(sub, rundir.BestDir) {
					inner[rundir.BestDir] = rundir.AdapterFiles
				}
				if f, err := walk(path, sub, inner); err != nil || f != "" {
					return f, err
				}
			case e.Type().IsRegular() && (slices.Contains(known, e.Name()) && !isFolder || leftover):
			default:
				return path, nil
			}
		}
		return "", nil
	}
	return walk(dir, runFiles, runFolders)
}

// claimDemoDir checks that dir is empty, missing, or made by the demo, and marks it.
func claimDemoDir(dir string) error {
	if _, err := os.Stat(filepath.Join(dir, demoMarker)); err != nil {
		ents, rerr := os.ReadDir(dir)
		if rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			return rerr
		}
		if len(ents) > 0 {
			return fmt.Errorf("demo: %s is not empty and was not made by the demo (no %s in it); choose another --demo-dir", dir, demoMarker)
		}
	} else if f, err := foreign(dir, demoRoot); err != nil || f != "" {
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
	return atomicfile.WriteFile(filepath.Join(dir, demoMarker), []byte("made by meazo-train --demo\n"))
}

// cleanDemoRun empties a run directory of an earlier demo, removing only
// what the trainer and the demo write there; a directory the demo did not
// make, or one holding anything else, is refused and left as it is.
func cleanDemoRun(dir string) error {
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if _, err := os.Stat(filepath.Join(dir, demoMarker)); err != nil {
		return fmt.Errorf("demo: %s exists and was not made by the demo (no %s in it); move it away or choose another --demo-dir", dir, demoMarker)
	}
	if f, err := foreignInRun(dir); err != nil || f != "" {
		if err != nil {
			return err
		}
		return fmt.Errorf("demo: %s holds %s, which the demo did not make; move it away or choose another --demo-dir", dir, f)
	}
	lock, err := train.LockDir(dir) // not while a run is using it
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	defer lock.Unlock()
	for _, name := range runFiles {
		if name == rundir.LockFile || name == demoMarker {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	return nil
}

// demo runs the built-in demo: the same tiny task trained with MEAZO,
// ZO-SGD and ZO-Adam, one run directory each (plot them with meazo-plot all;
// make demo does). Each run is its own process, so that each summary's peak
// RSS is that run's own.
func demo(opts train.Options, dir string, steps int) error {
	// Signals are the runs' to act on (runForwardingSignals); one before
	// a run starts stops the demo there.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, stopsig.Stop(syscall.SIGHUP)...)
	defer signal.Stop(sigs)
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	// The backend, chosen once here (and why, for auto) rather than in
	// each run's log, before anything is written (a backend that cannot
	// open leaves nothing behind): the runs are told which it is.
	backend, err := demoBackend(opts.Overrides)
	if err != nil {
		return err
	}
	if err := claimDemoDir(abs); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "Running the built-in demo in %s.\n"+
		"It trains LoRA on a TINY model and a synthetic sentiment task, all made on the spot, with MEAZO,\n"+
		"ZO-SGD and ZO-Adam. The model is random but for a sentiment direction planted in its word embeddings;\n"+
		"training has to learn to read it from the sentence into the answer (README.md, \"The demo\").\n\n", abs)
	path, err := train.WriteDemo(abs, steps)
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	var runs []string
	for _, opt := range train.DemoOptimizers {
		out := filepath.Join(abs, "run-"+opt)
		if err := cleanDemoRun(out); err != nil {
			return err
		}
		if err := os.MkdirAll(out, 0o755); err != nil {
			return err
		}
		if err := atomicfile.WriteFile(filepath.Join(out, demoMarker), []byte("made by meazo-train --demo\n")); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "== %s -> %s\n", opt, out)
		args := []string{"--config", path, "--set", "optimizer.name=" + opt, "--set", "optimizer.lr=" + train.DemoLR[opt]}
		for _, o := range opts.Overrides {
			args = append(args, "--set", o)
		}
		args = append(args, "--set", "model.backend="+backend)
		args = append(args, "--set", "output.dir="+out) // last: nothing overrides where the demo writes
		cmd := exec.Command(self, args...)
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		select {
		case <-sigs:
			return fmt.Errorf("%w: before the %s run (the demo run again starts over)", errDemoInterrupted, opt)
		default:
		}
		signaled, err := runForwardingSignals(cmd, sigs)
		if err != nil {
			var ee *exec.ExitError
			if errors.As(err, &ee) && ee.ExitCode() == train.ExitInterrupted {
				return fmt.Errorf("%w: the %s run stopped at a checkpoint (meazo-train --resume %s continues it; the demo run again starts over)", errDemoInterrupted, opt, out)
			}
			return fmt.Errorf("demo run %s: %w", opt, err)
		}
		if signaled { // as the run ended: the next one does not start
			return fmt.Errorf("%w: after the %s run (the demo run again starts over)", errDemoInterrupted, opt)
		}
		runs = append(runs, out)
	}
	return demoTable(os.Stdout, runs)
}

// demoBackend opens the backend the command line asks for (auto unless
// --backend or --set model.backend says otherwise) once, writing the choice
// and, for auto, its reason, and returns its name for the demo's runs: a
// backend that cannot open fails the demo before it writes anything.
func demoBackend(overrides []string) (string, error) {
	name := "auto"
	for _, o := range overrides {
		if k, v, _ := strings.Cut(o, "="); strings.TrimSpace(k) == "model.backend" {
			name = strings.TrimSpace(v)
		}
	}
	b, err := backends.Choose(name, 0, os.Stderr)
	if err != nil {
		return "", fmt.Errorf("demo: model.backend: %w", err)
	}
	return b, nil
}

// errDemoInterrupted says a signal stopped the demo; meazo-train exits 3.
var errDemoInterrupted = errors.New("demo interrupted")

// runForwardingSignals runs one demo run as its own process group and
// passes it the SIGINT, SIGTERM and SIGUSR1 that come on sigs, so that it stops as a run does
// (checkpoint, exit 3), once per signal: a Ctrl-C in the terminal reaches it
// once, through this process, and a SIGTERM sent to this process only
// (docker stop) reaches it too. A SIGHUP (the terminal closed) reaches it as
// SIGTERM, and the run gets a SIGTERM if this process dies (SIGKILL): it is
// in a process group of its own, which the terminal's signals miss. It says
// whether a signal came, also one that came as the run ended.
func runForwardingSignals(cmd *exec.Cmd, sigs <-chan os.Signal) (signaled bool, err error) {
	// The parent-death signal follows the thread that started the run:
	// that thread stays this goroutine's until the run ends.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cmd.SysProcAttr = demoRunAttr()
	if err := cmd.Start(); err != nil {
		return false, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for {
		select {
		case s := <-sigs:
			signaled = true
			if s == syscall.SIGHUP {
				s = syscall.SIGTERM
			}
			cmd.Process.Signal(s)
		case err := <-done:
			select {
			case <-sigs:
				signaled = true
			default:
			}
			return signaled, err
		}
	}
}

// demoTable prints one line per demo run from its summary.json: the test
// accuracy of the base model and of the best adapter, the best validation
// loss and the time per step.
func demoTable(w io.Writer, runs []string) error {
	fmt.Fprintf(w, "\n%-9s %8s %9s %9s %14s %8s\n", "optimizer", "lr", "base acc", "test acc", "best val loss", "s/step")
	for _, dir := range runs {
		s, err := rundir.ReadSummary(dir)
		if err != nil {
			return err
		}
		acc := func(which string) string {
			if m, ok := s.Test[which]; ok {
				if a, ok := m["accuracy"]; ok {
					return fmt.Sprintf("%.1f %%", 100*a)
				}
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
		fmt.Fprintf(w, "%-9s %8g %9s %9s %14s %8.3f\n", s.Optimizer, s.LR, acc("base"), acc("best"), best, s.SecondsPerStep)
	}
	fmt.Fprintf(w, "test acc: the adapter with the best validation loss, on the test split; base: no adapter; chance is 50 %%.\n")
	return nil
}
