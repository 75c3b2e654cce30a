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
	"strings"
	"syscall"

	"github.com/meazo-go/meazo/internal/atomicfile"
	"github.com/meazo-go/meazo/internal/stopsig"
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
		if _, err := train.WriteDemo(abs, demoSteps); err != nil {
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
	// logFrom is the size of the run's log when this attempt started:
	// what it wrote follows (the log is appended to across attempts).
	logFrom int64
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
	x, err := st.newLocalExecutor(mode, log)
	if err != nil {
		return err
	}
	for {
		if ctx.Err() == nil && !x.interrupted {
			again, err := x.startReady()
			if err != nil {
				return err
			}
			if again {
				continue
			}
		}
		if len(x.running) == 0 {
			break
		}
		select {
		case d := <-x.results:
			if err := x.reap(d); err != nil {
				return err
			}
		case <-ctx.Done():
			x.interrupt()
			ctx = context.Background() // wait for the runs to end
		}
	}
	return x.finish()
}

// localExecutor is RunLocal's state: the runs it started and those still
// running, its free slots, what it last read of each sweep, and how the
// runs it saw end ended. RunLocal drives it with three moves: startReady
// (refresh the sweeps that may have changed, then start what is ready),
// reap (one run ended) and interrupt (a signal); finish reports.
type localExecutor struct {
	st      *Study
	mode    Mode
	log     io.Writer
	trainer string // meazo-train, absolute

	sweeps  []*SweepPlan
	sweepOf map[*SweepPlan]int // a sweep's index in sweeps

	free      []int                // slots; a slot is a GPU when gpus is set
	running   map[string]*exec.Cmd // run directory -> its meazo-train
	attempted map[string]bool      // runs this session started
	elsewhere map[string]bool      // runs another process was training when seen
	results   chan done            // runs that ended, from their waiting goroutines

	// A sweep's directories are read again only when something may have
	// changed them: one of its runs ended here, or another process is
	// training one of them. Reading every sweep after every run would read
	// a paper study's 5,130 run directories 5,130 times.
	ready [][]RunSpec // per sweep, as last read: runs to start
	stale []bool      // per sweep: read it again before starting its runs

	// fineChecked: a sweep's stage 1 runs matched the study's settings when
	// its stage 2 was first ready; fineRefused: they did not, and its stage
	// 2 is not started (the error, for finish).
	fineChecked []bool
	fineRefused []error

	interrupted bool           // a signal, or a run that exited interrupted: nothing new starts
	failed      []string       // runs whose meazo-train failed
	progress    *studyProgress // how many runs have a result, for each run's line
	killedRuns  []string       // killed by a signal after a checkpoint: they wait for resume
}

// newLocalExecutor finds meazo-train and sets up the slots; every sweep is
// to be read.
func (st *Study) newLocalExecutor(mode Mode, log io.Writer) (*localExecutor, error) {
	trainer, err := st.FindTrainer()
	if err != nil {
		return nil, err
	}
	x := &localExecutor{
		st: st, mode: mode, log: log, trainer: trainer,
		sweeps: st.Sweeps(), sweepOf: map[*SweepPlan]int{},
		free:    make([]int, st.Executor.Parallel),
		running: map[string]*exec.Cmd{}, attempted: map[string]bool{}, elsewhere: map[string]bool{},
		results: make(chan done), progress: newStudyProgress(len(st.Sweeps())),
	}
	for i := range x.free {
		x.free[i] = i
	}
	x.ready, x.stale = make([][]RunSpec, len(x.sweeps)), make([]bool, len(x.sweeps))
	x.fineChecked, x.fineRefused = make([]bool, len(x.sweeps)), make([]error, len(x.sweeps))
	for i, sp := range x.sweeps {
		x.sweepOf[sp] = i
		x.stale[i] = true
	}
	return x, nil
}

// startReady starts the runs that are ready, stage 1 before stage 2, while
// slots are free. It says whether to look again at once: a run read earlier
// was taken by another process since, and its sweep may have more to start
// now (its stage 2, if the other process finished its stage 1).
func (x *localExecutor) startReady() (again bool, err error) {
	next, err := x.refresh()
	if err != nil {
		return false, err
	}
	reread := false // a run read earlier was taken by another process since
	for len(x.free) > 0 && len(next) > 0 {
		r := next[0]
		next = next[1:]
		// Read as it is now, not as when its sweep was last read:
		// another process may have taken it since.
		s, err := ReadState(r.Dir)
		if err != nil {
			return false, err
		}
		if !x.mode.startable(s) {
			x.stale[x.sweepOf[r.Sweep]] = true // read it again before the next start
			reread = true
			if s.Status == StatusRunning {
				x.runsElsewhere(r, s)
			}
			continue
		}
		if err := x.start(r); err != nil {
			return false, err
		}
	}
	return reread && len(x.free) > 0, nil
}

// refresh reads the stale sweeps again and returns the runs to start, in
// the order of their stages.
func (x *localExecutor) refresh() ([]RunSpec, error) {
	var next []RunSpec
	for i, sp := range x.sweeps {
		if x.stale[i] {
			ss, err := sp.State()
			if err != nil {
				return nil, err
			}
			x.progress.update(i, sp, ss)
			x.ready[i], x.stale[i] = nil, false
			for _, r := range ss.Runs() {
				s := ss.States[r.Dir]
				if s.Status == StatusRunning && x.running[r.Dir] == nil {
					x.stale[i] = true // it ends without telling us
					x.runsElsewhere(r, s)
				}
				if r.Stage == 2 && !x.fineReady(i, sp, ss) {
					continue
				}
				if x.running[r.Dir] == nil && !x.attempted[r.Dir] && x.mode.startable(s) {
					x.ready[i] = append(x.ready[i], r)
				}
			}
		}
		for _, r := range x.ready[i] {
			if !x.attempted[r.Dir] {
				next = append(next, r)
			}
		}
	}
	sort.SliceStable(next, func(i, j int) bool { return next[i].Stage < next[j].Stage })
	return next, nil
}

// runsElsewhere logs, once per run, that another process is training it.
func (x *localExecutor) runsElsewhere(r RunSpec, s RunState) {
	if !x.elsewhere[r.Dir] {
		x.elsewhere[r.Dir] = true
		fmt.Fprintf(x.log, "meazo-sweep: %s is running in another process (%s): not starting a second meazo-train on it\n", r.Dir, s.Detail)
	}
}

// start starts r's meazo-train on the first free slot, its output appended
// to the run's log file; a goroutine waits for it and sends its exit status
// to results.
func (x *localExecutor) start(r RunSpec) error {
	slot := x.free[0]
	x.free = x.free[1:]
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
	var logFrom int64
	if st, err := lf.Stat(); err == nil {
		logFrom = st.Size()
	}
	args := r.TrainArgs()
	cmd := exec.Command(x.trainer, args...)
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.SysProcAttr = stopsig.ChildAttr() // signals come from meazo-sweep, once
	if len(x.st.Executor.GPUs) > 0 {
		cmd.Env = append(os.Environ(), "CUDA_VISIBLE_DEVICES="+strconv.Itoa(x.st.Executor.GPUs[slot]))
	}
	fmt.Fprintf(x.log, "meazo-sweep: start %s (stage %d%s)\n", r.Dir, r.Stage, map[bool]string{true: ", resume", false: ""}[args[0] == "--resume"])
	if err := cmd.Start(); err != nil {
		lf.Close()
		return fmt.Errorf("start %s: %w", x.trainer, err)
	}
	x.running[r.Dir] = cmd
	x.attempted[r.Dir] = true
	go func() {
		code, err := exitStatus(cmd.Wait())
		lf.Close()
		x.results <- done{r, code, slot, err, logFrom}
	}()
	return nil
}

// exitStatus splits what cmd.Wait returned into the process's exit status
// (128 + the signal that killed it, as a shell says) and an error that is
// not its exit status (the wait itself failed).
func exitStatus(err error) (int, error) {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return 0, err
	}
	code := ee.ExitCode()
	if code < 0 {
		code = 128 + int(ee.Sys().(syscall.WaitStatus).Signal())
	}
	return code, nil
}

// reap records a run that ended: its slot is free again, its sweep is to be
// read again, and its exit status says how it ended (written to its
// directory, and logged).
func (x *localExecutor) reap(d done) error {
	delete(x.running, d.spec.Dir)
	x.stale[x.sweepOf[d.spec.Sweep]] = true
	x.free = append(x.free, d.slot)
	if d.err != nil {
		return fmt.Errorf("%s: %w", d.spec.Dir, d.err)
	}
	if d.code != 0 && d.code != train.ExitInterrupted && takenElsewhere(d.spec.Dir) {
		// Another meazo-sweep started it at the same moment, and
		// its meazo-train won the run.lock: the run is that
		// process's, and this one's exit status is no failure.
		fmt.Fprintf(x.log, "meazo-sweep: %s was started at the same moment by another process, whose it is\n", d.spec.Dir)
		return nil
	}
	if err := writeExit(d.spec.Dir, d.code); err != nil {
		return err
	}
	killed := killedAfterCheckpoint(d.spec.Dir, d.code)
	switch {
	case d.code == train.ExitInterrupted:
		x.interrupted = true
		if hasCheckpoint(d.spec.Dir) {
			fmt.Fprintf(x.log, "meazo-sweep: %s interrupted (checkpointed; meazo-sweep resume continues it)\n", d.spec.Dir)
		} else { // stopped while it loaded the model or data
			fmt.Fprintf(x.log, "meazo-sweep: %s interrupted before its first checkpoint (meazo-sweep resume starts it again)\n", d.spec.Dir)
		}
	case killed != "": // a crash (an out-of-memory kill): its sweep waits, the others go on
		x.killedRuns = append(x.killedRuns, d.spec.Dir)
		fmt.Fprintf(x.log, "meazo-sweep: %s: %s\n", d.spec.Dir, killed)
	case d.code != 0:
		x.failed = append(x.failed, d.spec.Dir)
		log := filepath.Join(d.spec.Dir, LogFile)
		fmt.Fprintf(x.log, "meazo-sweep: %s FAILED (exit status %d; see %s)%s\n", d.spec.Dir, d.code, log, indented(lastError(log, d.logFrom)))
	default:
		s, _ := ReadState(d.spec.Dir)
		if s.Status == StatusDone || s.Status == StatusDiverged {
			x.progress.result(x.sweepOf[d.spec.Sweep], d.spec.Dir)
		}
		fmt.Fprintf(x.log, "meazo-sweep: %s %s (%s)\n", d.spec.Dir, s.Status, x.progress)
	}
	return nil
}

// interrupt, on the first signal, forwards SIGTERM to every running run
// (each checkpoints and stops) and starts nothing new.
func (x *localExecutor) interrupt() {
	if x.interrupted {
		return
	}
	x.interrupted = true
	fmt.Fprintf(x.log, "meazo-sweep: stopping: each running run (%d) checkpoints and stops; nothing new starts\n", len(x.running))
	for _, c := range x.running {
		c.Process.Signal(syscall.SIGTERM)
	}
}

// finish, once no run is running, writes sweep.json for every complete
// sweep and returns how the session ended: ErrInterrupted, the failed runs,
// or the runs that wait for meazo-sweep resume.
func (x *localExecutor) finish() error {
	if err := x.st.finishSweeps(x.log); err != nil {
		return err
	}
	if len(x.attempted) == 0 && len(x.elsewhere) == 0 && !x.interrupted {
		// A study run again once it is done (or all it can do is done):
		// say so, not only the η* lines, which read as if it had run.
		what := x.progress.String()
		if !x.progress.complete() {
			what += "; meazo-sweep resume retries failed runs and continues stopped ones, meazo-sweep status lists them"
		}
		fmt.Fprintf(x.log, "meazo-sweep: nothing new to run (%s)\n", what)
	}
	if len(x.elsewhere) > 0 {
		were := " were"
		if len(x.elsewhere) == 1 {
			were = " was"
		}
		fmt.Fprintf(x.log, "meazo-sweep: %s running in another process; once they end, meazo-sweep run goes on with their sweeps (stage 2, sweep.json)\n", Plural(len(x.elsewhere), "run")+were)
	}
	stopped, err := x.st.stoppedRuns(x.attempted, x.log)
	if err != nil {
		return err
	}
	stopped = append(stopped, x.killedRuns...)
	if x.interrupted {
		return ErrInterrupted
	}
	if len(x.failed) > 0 {
		return fmt.Errorf("%s failed (meazo-sweep resume retries them): %s", Plural(len(x.failed), "run"), runList(x.failed))
	}
	for _, err := range x.fineRefused {
		if err != nil {
			return fmt.Errorf("stage 2 not started: %w", err)
		}
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
	return fmt.Sprintf("%s stopped before they finished (interrupted, or unfinished after a crash): meazo-sweep resume continues them: %s", Plural(len(e.dirs), "run"), runList(e.dirs))
}

// runListMax is how many runs an error names before "and N more".
const runListMax = 3

// runList names runs in a one-line error: the first few, then how many
// more (a study of thousands of runs may fail them all alike, each named in
// the log already).
func runList(dirs []string) string {
	if len(dirs) <= runListMax {
		return strings.Join(dirs, ", ")
	}
	return fmt.Sprintf("%s and %d more (meazo-sweep status lists them)", strings.Join(dirs[:runListMax], ", "), len(dirs)-runListMax)
}

func (e *stoppedError) Is(target error) bool { return target == ErrInterrupted }

// finishSweeps writes sweep.json for every complete sweep and reports η*.
// A sweep.json it cannot write does not hold back the others' but is the
// session's error: a study that reports success must have its sweep.json.
func (st *Study) finishSweeps(log io.Writer) error {
	var unwritten []error
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
		// Checked again here, not only before the first run: another
		// study started at the same moment on the same out (whose runs
		// Prepare could not see yet) may have run some of them with its
		// settings, and η* must not be chosen from a mix.
		if _, pending := st.demoPending(sp.Config()); !pending && exists(sp.Config()) {
			if err := st.checkRunsMatch(sp, ss); err != nil {
				fmt.Fprintf(log, "meazo-sweep: %s: sweep.json not written: %v\n", sp.Name, err)
				unwritten = append(unwritten, fmt.Errorf("sweep %s: %w", sp.Name, err))
				continue
			}
		}
		sw, err := sp.WriteSweepJSON(ss)
		if err != nil {
			fmt.Fprintf(log, "meazo-sweep: %s: %v\n", sp.Name, err)
			unwritten = append(unwritten, fmt.Errorf("sweep %s: %w", sp.Name, err))
			continue
		}
		fmt.Fprintf(log, "meazo-sweep: %s: η* = %s (coarse η* %s), written to %s\n", sp.Name, LRString(sw.EtaStar),
			LRString(ss.CoarseEta), filepath.Join(sp.Dir, SweepFile))
	}
	if len(unwritten) > 0 {
		return fmt.Errorf("%d sweep.json not written (first: %w)", len(unwritten), unwritten[0])
	}
	return nil
}
