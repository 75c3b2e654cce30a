package sweep

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"

	"github.com/meazo-go/meazo/internal/atomicfile"
	"github.com/meazo-go/meazo/rundir"
	"github.com/meazo-go/meazo/train"
)

// Mode says which runs an invocation starts.
type Mode int

const (
	// ModeRun starts runs never started (status new).
	ModeRun Mode = iota
	// ModeResume also retries failed runs, continues interrupted or
	// unfinished ones (from their checkpoints) and starts again the queued
	// ones (a Slurm submission's job file without an exit status).
	ModeResume
)

// startable says whether a run in this state is started in this mode.
func (m Mode) startable(s RunState) bool {
	switch s.Status {
	case StatusNew:
		return true
	case StatusFailed, StatusUnfinished, StatusInterrupted, StatusQueued:
		return m == ModeResume
	}
	return false
}

// Prepare writes what the study needs before any run (the demo's model and
// data when the study names a demo directory that does not hold them yet),
// then checks every sweep's config (CheckConfigs): a mistake there stops
// the study before a run starts or a job is submitted.
func (st *Study) Prepare(log io.Writer) error {
	if st.Demo != "" && !exists(filepath.Join(st.Demo, "demo.yaml")) {
		// One writer at a time: two meazo-sweep started at once on a new
		// study would otherwise refuse each other's half-written directory
		// or plant the demo's sentiment direction twice. demo.yaml is
		// written last: once it exists, the demo is whole.
		unlock, err := lockFile(filepath.Join(st.Out, DemoLock), "writing the study's demo", log)
		if err != nil {
			return err
		}
		defer unlock()
		if exists(filepath.Join(st.Demo, "demo.yaml")) {
			return st.CheckConfigs()
		}
		abs, err := filepath.Abs(st.Demo)
		if err != nil {
			return err
		}
		if err := st.checkDemoDir(); err != nil {
			return err
		}
		if err := os.MkdirAll(abs, 0o755); err != nil {
			return err
		}
		if err := atomicfile.WriteFile(filepath.Join(abs, rundir.DemoMarker), []byte("made by meazo-sweep for the study's demo\n")); err != nil {
			return err
		}
		fmt.Fprintf(log, "meazo-sweep: writing the built-in demo's model and data into %s\n", st.Demo)
		if _, err := train.WriteDemo(abs, 150); err != nil {
			return err
		}
	}
	return st.CheckConfigs()
}

// checkDemoDir refuses a demo directory still to be written that is neither
// empty nor the demo's (marked, as meazo-train --demo marks its own): the
// demo's model/ and data/ would replace a user's.
func (st *Study) checkDemoDir() error {
	if ents, err := os.ReadDir(st.Demo); err == nil && len(ents) > 0 && !exists(filepath.Join(st.Demo, rundir.DemoMarker)) {
		return fmt.Errorf("demo: %s is not empty and was not made by the demo (no %s in it): the demo's model and data would replace what is there; choose another directory", st.Demo, rundir.DemoMarker)
	}
	return nil
}

// FindTrainer locates meazo-train: executor.trainer, $MEAZO_TRAIN, next to
// this executable, or on PATH. The result is absolute.
func (st *Study) FindTrainer() (string, error) {
	for _, c := range []struct{ what, path string }{{"executor.trainer", st.Executor.Trainer}, {"$MEAZO_TRAIN", os.Getenv("MEAZO_TRAIN")}} {
		if c.path == "" {
			continue
		}
		p, err := exec.LookPath(c.path)
		if err != nil {
			return "", fmt.Errorf("%s %s: %w", c.what, c.path, err)
		}
		return filepath.Abs(p)
	}
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), "meazo-train")
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	p, err := exec.LookPath("meazo-train")
	if err != nil {
		return "", errors.New("meazo-train not found next to meazo-sweep nor on PATH: set executor.trainer or MEAZO_TRAIN")
	}
	return filepath.Abs(p)
}

// done is one finished local run.
type done struct {
	spec RunSpec
	code int
	slot int
	err  error
}

// RunLocal runs the study on this machine, executor.parallel runs at a time,
// each its own meazo-train process: stage 1 of every sweep, then each
// sweep's stage 2 as soon as its stage 1 is settled, then sweep.json. A
// failed run is reported and does not stop the others. Cancelling ctx (a
// signal) forwards SIGTERM to the runs, which checkpoint and stop; nothing
// new starts. It returns an error naming the failed runs, if any.
func (st *Study) RunLocal(ctx context.Context, mode Mode, log io.Writer) error {
	if err := st.Prepare(log); err != nil {
		return err
	}
	trainer, err := st.FindTrainer()
	if err != nil {
		return err
	}
	sweeps := st.Sweeps()
	attempted := map[string]bool{}
	running := map[string]*exec.Cmd{}
	elsewhere := map[string]bool{}            // runs another process was training when seen
	free := make([]int, st.Executor.Parallel) // slots; a slot is a GPU when gpus is set
	for i := range free {
		free[i] = i
	}
	results := make(chan done)
	var failed []string
	interrupted := false
	var killedRuns []string // killed by a signal after a checkpoint: they wait for resume
	start := func(r RunSpec) error {
		slot := free[0]
		free = free[1:]
		if err := os.MkdirAll(r.Dir, 0o755); err != nil {
			return err
		}
		if err := clearMarks(r.Dir); err != nil {
			return err
		}
		lf, err := os.OpenFile(filepath.Join(r.Dir, LogFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		args := r.TrainArgs()
		cmd := exec.Command(trainer, args...)
		cmd.Stdout, cmd.Stderr = lf, lf
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // signals come from meazo-sweep, once
		if len(st.Executor.GPUs) > 0 {
			cmd.Env = append(os.Environ(), "CUDA_VISIBLE_DEVICES="+strconv.Itoa(st.Executor.GPUs[slot]))
		}
		fmt.Fprintf(log, "meazo-sweep: start %s (stage %d%s)\n", r.Dir, r.Stage, map[bool]string{true: ", resume", false: ""}[args[0] == "--resume"])
		if err := cmd.Start(); err != nil {
			lf.Close()
			return fmt.Errorf("start %s: %w", trainer, err)
		}
		running[r.Dir] = cmd
		attempted[r.Dir] = true
		go func() {
			err := cmd.Wait()
			lf.Close()
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code, err = ee.ExitCode(), nil
				if code < 0 {
					code = 128 + int(ee.Sys().(syscall.WaitStatus).Signal())
				}
			}
			results <- done{r, code, slot, err}
		}()
		return nil
	}
	// A sweep's directories are read again only when something may have
	// changed them: one of its runs ended here, or another process is
	// training one of them. Reading every sweep after every run would read
	// a paper study's 5,130 run directories 5,130 times.
	ready := make([][]RunSpec, len(sweeps)) // per sweep, as last read: runs to start
	stale := make([]bool, len(sweeps))
	for i := range stale {
		stale[i] = true
	}
	runsElsewhere := func(r RunSpec, s RunState) {
		if !elsewhere[r.Dir] {
			elsewhere[r.Dir] = true
			fmt.Fprintf(log, "meazo-sweep: %s is running in another process (%s): not starting a second meazo-train on it\n", r.Dir, s.Detail)
		}
	}
	sweepOf := map[*SweepPlan]int{}
	for i, sp := range sweeps {
		sweepOf[sp] = i
	}
	for {
		if ctx.Err() == nil && !interrupted {
			var next []RunSpec
			for i, sp := range sweeps {
				if stale[i] {
					ss, err := sp.State()
					if err != nil {
						return err
					}
					ready[i], stale[i] = nil, false
					for _, r := range ss.Runs() {
						s := ss.States[r.Dir]
						if s.Status == StatusRunning && running[r.Dir] == nil {
							stale[i] = true // it ends without telling us
							runsElsewhere(r, s)
						}
						if running[r.Dir] == nil && !attempted[r.Dir] && mode.startable(s) {
							ready[i] = append(ready[i], r)
						}
					}
				}
				for _, r := range ready[i] {
					if !attempted[r.Dir] {
						next = append(next, r)
					}
				}
			}
			sort.SliceStable(next, func(i, j int) bool { return next[i].Stage < next[j].Stage })
			reread := false // a run read earlier was taken by another process since
			for len(free) > 0 && len(next) > 0 {
				r := next[0]
				next = next[1:]
				// Read as it is now, not as when its sweep was last read:
				// another process may have taken it since.
				s, err := ReadState(r.Dir)
				if err != nil {
					return err
				}
				if !mode.startable(s) {
					stale[sweepOf[r.Sweep]] = true // read it again before the next start
					reread = true
					if s.Status == StatusRunning {
						runsElsewhere(r, s)
					}
					continue
				}
				if err := start(r); err != nil {
					return err
				}
			}
			if reread && len(free) > 0 {
				// Its sweep may have more to start now (its stage 2, if
				// the other process finished its stage 1): read it again.
				continue
			}
		}
		if len(running) == 0 {
			break
		}
		select {
		case d := <-results:
			delete(running, d.spec.Dir)
			stale[sweepOf[d.spec.Sweep]] = true
			free = append(free, d.slot)
			if d.err != nil {
				return fmt.Errorf("%s: %w", d.spec.Dir, d.err)
			}
			if d.code != 0 && d.code != train.ExitInterrupted && takenElsewhere(d.spec.Dir) {
				// Another meazo-sweep started it at the same moment, and
				// its meazo-train won the run.lock: the run is that
				// process's, and this one's exit status is no failure.
				fmt.Fprintf(log, "meazo-sweep: %s was started at the same moment by another process, whose it is\n", d.spec.Dir)
				continue
			}
			if err := writeExit(d.spec.Dir, d.code); err != nil {
				return err
			}
			killed := killedAfterCheckpoint(d.spec.Dir, d.code)
			switch {
			case d.code == train.ExitInterrupted:
				interrupted = true
				fmt.Fprintf(log, "meazo-sweep: %s interrupted (checkpointed; meazo-sweep resume continues it)\n", d.spec.Dir)
			case killed != "": // a crash (an out-of-memory kill): its sweep waits, the others go on
				killedRuns = append(killedRuns, d.spec.Dir)
				fmt.Fprintf(log, "meazo-sweep: %s: %s\n", d.spec.Dir, killed)
			case d.code != 0:
				failed = append(failed, d.spec.Dir)
				fmt.Fprintf(log, "meazo-sweep: %s FAILED (exit status %d; see %s)\n", d.spec.Dir, d.code, filepath.Join(d.spec.Dir, LogFile))
			default:
				s, _ := ReadState(d.spec.Dir)
				fmt.Fprintf(log, "meazo-sweep: %s %s\n", d.spec.Dir, s.Status)
			}
		case <-ctx.Done():
			if !interrupted {
				interrupted = true
				fmt.Fprintf(log, "meazo-sweep: stopping: the %d running runs checkpoint and stop; nothing new starts\n", len(running))
				for _, c := range running {
					c.Process.Signal(syscall.SIGTERM)
				}
			}
			ctx = context.Background() // wait for the runs to end
		}
	}
	if err := st.finishSweeps(log); err != nil {
		return err
	}
	if len(elsewhere) > 0 {
		fmt.Fprintf(log, "meazo-sweep: %d runs were running in another process; once they end, meazo-sweep run goes on with their sweeps (stage 2, sweep.json)\n", len(elsewhere))
	}
	stopped, err := st.stoppedRuns(attempted, log)
	if err != nil {
		return err
	}
	stopped = append(stopped, killedRuns...)
	if interrupted {
		return ErrInterrupted
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d runs failed (meazo-sweep resume retries them): %v", len(failed), failed)
	}
	if len(stopped) > 0 {
		return &stoppedError{stopped}
	}
	return nil
}

// takenElsewhere says whether a run this process started, whose
// meazo-train failed, belongs to another process: another meazo-train
// holds its run.lock, or has finished it (meazo-train refuses a run
// directory another one holds, and exits 1).
func takenElsewhere(dir string) bool {
	s, err := ReadState(dir)
	return err == nil && (s.Status == StatusRunning || s.Status == StatusDone || s.Status == StatusDiverged)
}

// stoppedRuns lists, and logs, the runs an earlier session left stopped
// (interrupted, or unfinished after a crash) that this one did not start
// (skip): their sweeps wait for meazo-sweep resume.
func (st *Study) stoppedRuns(skip map[string]bool, log io.Writer) ([]string, error) {
	var stopped []string
	for _, sp := range st.Sweeps() {
		ss, err := sp.State()
		if err != nil {
			return nil, err
		}
		for _, r := range ss.Runs() {
			if s := ss.States[r.Dir]; !skip[r.Dir] && (s.Status == StatusInterrupted || s.Status == StatusUnfinished) {
				stopped = append(stopped, r.Dir)
				fmt.Fprintf(log, "meazo-sweep: %s is %s: its sweep waits for it (meazo-sweep resume continues it)\n", r.Dir, s.Status)
			}
		}
	}
	return stopped, nil
}

// ErrInterrupted says the study stopped on a signal; resume continues it.
var ErrInterrupted = errors.New("interrupted: meazo-sweep resume continues the study")

// stoppedError names the runs an earlier session left stopped before they
// finished; it is an ErrInterrupted (exit status 3: resume continues them).
type stoppedError struct{ dirs []string }

func (e *stoppedError) Error() string {
	return fmt.Sprintf("%d runs stopped before they finished (interrupted, or unfinished after a crash): meazo-sweep resume continues them: %v", len(e.dirs), e.dirs)
}

func (e *stoppedError) Is(target error) bool { return target == ErrInterrupted }

// finishSweeps writes sweep.json for every complete sweep and reports η*.
func (st *Study) finishSweeps(log io.Writer) error {
	for _, sp := range st.Sweeps() {
		ss, err := sp.State()
		if err != nil {
			return err
		}
		if ss.Note != "" {
			fmt.Fprintf(log, "meazo-sweep: %s: %s\n", sp.Name, ss.Note)
		}
		if !ss.Complete() || ss.Note != "" {
			continue
		}
		sw, err := sp.WriteSweepJSON(ss)
		if err != nil {
			fmt.Fprintf(log, "meazo-sweep: %s: %v\n", sp.Name, err)
			continue
		}
		fmt.Fprintf(log, "meazo-sweep: %s: η* = %s (coarse η* %s), written to %s\n", sp.Name, LRString(sw.EtaStar),
			LRString(ss.CoarseEta), filepath.Join(sp.Dir, SweepFile))
	}
	return nil
}
