package sweep

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/meazo-go/meazo/internal/bytesize"
	"github.com/meazo-go/meazo/internal/stopsig"
	"github.com/meazo-go/meazo/train"
)

// CheckCost is meazo-sweep check: for every sweep whose name matches one of
// patterns (path.Match; none: every sweep), meazo-train --check (trainer)
// of its first run — the run's start, step 0's validation of a sample, the
// test evaluation of a sample and two steps, timed, on this machine — and
// what the sweep and the study would take: each sweep's runs of stage 1 and
// the most its stage 2 can have (those left, where its run directories hold
// results: a complete sweep is not checked), their run time summed, and
// under Slurm how each run fits the job's time limit. It writes nothing in
// the study (the checks' output.dir is a temporary directory, which they
// leave empty). The checks' own lines go to log when verbose, else only a
// failed check's.
func (st *Study) CheckCost(ctx context.Context, w, log io.Writer, trainer string, patterns []string, verbose bool) error {
	for _, p := range patterns {
		if _, err := path.Match(p, ""); err != nil {
			return fmt.Errorf("-sweep %q: %w", p, err)
		}
	}
	if err := st.CheckConfigs(); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "meazo-sweep-check")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if st.Executor.Kind == "slurm" {
		// Where a job has no time at all, each sweep's line says so.
		if limit, err := parseSlurmTime(st.Executor.Slurm.Time); err == nil && limit > st.Executor.Slurm.SignalSecs {
			if warn := st.earlySignalWarning(); warn != "" {
				fmt.Fprintln(w, warn)
			}
		}
	}
	var sum studyCost
	var disk diskNeed
	matched := 0
	for _, sp := range st.Sweeps() {
		runs := sp.Stage1()
		if len(runs) == 0 || !matchesAny(patterns, sp.Name) {
			continue
		}
		matched++
		left, err := sp.left()
		if err != nil {
			return err
		}
		if left.coarse == 0 && left.fine == 0 {
			fmt.Fprintf(w, "sweep %s: complete, all %d runs have a result: not checked\n", sp.Name, left.coarseAll+left.fineAll)
			sum.complete++
			continue
		}
		fmt.Fprintf(log, "checking sweep %s (%s) …\n", sp.Name, sp.Config())
		rep, err := st.checkRun(ctx, trainer, runs[0], tmp, log, verbose)
		if err != nil {
			return fmt.Errorf("sweep %s: %w", sp.Name, err)
		}
		sum.add(rep, left)
		if rep.CheckpointBytes > 0 {
			keep, err := st.keepWeights(runs[0], tmp)
			if err != nil {
				return fmt.Errorf("sweep %s: %w", sp.Name, err)
			}
			disk.add(rep, left.coarse+left.fine, keep)
		}
		fmt.Fprintln(w, sweepCostLine(sp.Name, rep, left))
		if st.Executor.Kind == "slurm" {
			if line := st.slurmFit(rep); line != "" {
				fmt.Fprintln(w, "  "+line)
			}
		}
	}
	if matched == 0 {
		return fmt.Errorf("no sweep of the study matches -sweep %s; its sweeps: %s", strings.Join(patterns, ", "), st.sweepNames(8))
	}
	fmt.Fprintln(w, sum.String())
	if line := disk.line(st.Out, st.sideBySide()); line != "" {
		fmt.Fprintln(w, line)
	}
	return nil
}

// sweepNames lists the study's sweeps' names, the first n of them and how
// many more.
func (st *Study) sweepNames(n int) string {
	var names []string
	for _, sp := range st.Sweeps() {
		names = append(names, sp.Name)
	}
	if len(names) > n {
		return fmt.Sprintf("%s, … (%d in all: meazo-sweep plan lists them)", strings.Join(names[:n], ", "), len(names))
	}
	return strings.Join(names, ", ")
}

// matchesAny reports whether name matches one of patterns (none: all).
func matchesAny(patterns []string, name string) bool {
	for _, p := range patterns {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return len(patterns) == 0
}

// checkRun runs meazo-train --check for run r, with its output.dir in tmp
// (the run's own directory may hold the run already), and reads its
// report. A config of the study's demo that is not written yet is checked
// as the demo writes it, in tmp.
func (st *Study) checkRun(ctx context.Context, trainer string, r RunSpec, tmp string, log io.Writer, verbose bool) (*train.CheckReport, error) {
	config, err := st.checkConfig(r, tmp)
	if err != nil {
		return nil, err
	}
	args := []string{"--check", "--config", config}
	for _, s := range r.sets() {
		args = append(args, "--set", s)
	}
	args = append(args, "--out", filepath.Join(tmp, r.Sweep.Name))
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, trainer, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// A signal stops the check (ctx): SIGTERM to its process group, which
	// holds what the trainer started too; whatever still holds the pipes
	// after checkStopWait is killed and let go of.
	cmd.SysProcAttr = stopsig.ChildAttr()
	cmd.Cancel = func() error { return stopGroup(cmd.Process) }
	cmd.WaitDelay = checkStopWait
	if x := st.Executor; x.Kind == "local" && len(x.GPUs) > 0 {
		// On a GPU of the study's, as its runs: not on one it leaves to others.
		cmd.Env = append(os.Environ(), "CUDA_VISIBLE_DEVICES="+strconv.Itoa(x.GPUs[0]))
	}
	if verbose {
		cmd.Stderr = io.MultiWriter(&stderr, log)
	}
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("stopped by a signal during the check of %s (nothing was written)", r.Dir)
		}
		if !verbose {
			log.Write(stderr.Bytes())
		}
		switch {
		case bytes.Contains(stderr.Bytes(), []byte("flag provided but not defined: -check")):
			return nil, fmt.Errorf("%s has no --check (%v): an older meazo-train? Build this one (make build) or point executor.trainer or $MEAZO_TRAIN at it", trainer, err)
		case len(bytes.TrimSpace(stderr.Bytes())) == 0:
			return nil, fmt.Errorf("%s --check of %s failed (%v) and printed nothing on stderr", trainer, r.Dir, err)
		}
		return nil, fmt.Errorf("%s --check of %s failed (%v): its lines are above", trainer, r.Dir, err)
	}
	if verbose { // the check's last line names its output.dir and its own command
		fmt.Fprintf(log, "(the output.dir above is the check's temporary one; the run's is %s, and meazo-sweep run starts it)\n", r.Dir)
	}
	var rep train.CheckReport
	if err := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &rep); err != nil {
		return nil, fmt.Errorf("%s --check printed no report (an older meazo-train?): %w", trainer, err)
	}
	return &rep, nil
}

// checkConfig is the config file run r's check reads: the sweep's, or for
// a config of the study's demo that is not written yet, the demo's as it
// writes it, in tmp.
func (st *Study) checkConfig(r RunSpec, tmp string) (string, error) {
	config := r.Sweep.Config()
	if rel, ok := st.demoPending(config); ok {
		demo := filepath.Join(tmp, "demo")
		if !exists(filepath.Join(demo, "demo.yaml")) {
			if _, err := train.WriteDemo(demo, demoSteps); err != nil {
				return "", err
			}
		}
		config = filepath.Join(demo, rel)
	}
	return config, nil
}

// keepWeights is run r's output.keep_weights.
func (st *Study) keepWeights(r RunSpec, tmp string) (string, error) {
	config, err := st.checkConfig(r, tmp)
	if err != nil {
		return "", err
	}
	cfg, err := train.Load(config, append(r.sets(), "output.dir="+r.Dir))
	if err != nil {
		return "", err
	}
	return cfg.Output.KeepWeights, nil
}

// sideBySide is how many runs the executor runs at once: local
// executor.parallel, Slurm's throttle.
func (st *Study) sideBySide() int {
	if st.Executor.Kind == "slurm" {
		return st.Executor.Slurm.Throttle
	}
	return max(st.Executor.Parallel, 1)
}

// checkStopWait is how long a check stopped by a signal has to end before
// it is killed.
const checkStopWait = 10 * time.Second

// runSeconds is a whole run's time by report rep: its start and the rest.
func runSeconds(rep *train.CheckReport) float64 { return rep.StartSeconds + rep.RunSeconds }

// sweepLeft is what a sweep has left to run, by its run directories: its
// runs without a result (not done nor diverged: new, failed, interrupted,
// …) of stage 1 and, once stage 1 has all its results, of stage 2 (the
// fine grid around its η*); before then, the most stage 2 can have
// (fineUpTo). The All counts are the stages' runs, with a result or not.
type sweepLeft struct {
	coarse, coarseAll int
	fine, fineAll     int
	fineUpTo          bool
}

// left reads what sweep sp has left to run.
func (sp *SweepPlan) left() (sweepLeft, error) {
	ss, err := sp.State()
	if err != nil {
		return sweepLeft{}, err
	}
	pending := func(runs []RunSpec) int {
		n := 0
		for _, r := range runs {
			if s := ss.States[r.Dir].Status; s != StatusDone && s != StatusDiverged {
				n++
			}
		}
		return n
	}
	l := sweepLeft{coarse: pending(ss.Stage1), coarseAll: len(ss.Stage1)}
	switch {
	case l.coarse > 0 && *sp.Exp.Fine: // its η*, and so its fine grid, may change yet
		l.fine = maxFine(sp.Exp.Coarse) * len(sp.Exp.Seeds)
		l.fineAll, l.fineUpTo = l.fine, true
	case l.coarse == 0:
		l.fine, l.fineAll = pending(ss.Stage2), len(ss.Stage2)
	}
	return l, nil
}

// stageLeft is a stage's part of a sweep's line: its n runs left of all,
// each of run seconds.
func stageLeft(n, all int, run float64, atLeast bool) string {
	switch n {
	case all:
		return fmt.Sprintf("%s, %s", counted(n, "run"), approx(float64(n)*run, atLeast))
	case 0:
		return fmt.Sprintf("all %d runs have a result", all)
	}
	return fmt.Sprintf("%d of %d runs left, %s", n, all, approx(float64(n)*run, atLeast))
}

// sweepCostLine is a sweep's line: one run's time (rep) and the runs left
// of its stages.
func sweepCostLine(name string, rep *train.CheckReport, left sweepLeft) string {
	run := runSeconds(rep)
	line := fmt.Sprintf("sweep %s: a run %s (its start %s, %d steps of %s, a validation %s); stage 1: %s",
		name, approx(run, rep.RunAtLeast), train.FormatDuration(rep.StartSeconds), rep.Steps, train.FormatDuration(rep.StepSeconds),
		train.FormatDuration(rep.ValidationSeconds), stageLeft(left.coarse, left.coarseAll, run, rep.RunAtLeast))
	switch {
	case left.fineUpTo:
		line += fmt.Sprintf("; stage 2: up to %d runs, %s", left.fine, approx(float64(left.fine)*run, rep.RunAtLeast))
	case left.fineAll > 0:
		line += "; stage 2: " + stageLeft(left.fine, left.fineAll, run, rep.RunAtLeast)
	}
	line += "; peak RSS " + bytesize.String(rep.PeakRSSBytes)
	if rep.PeakDeviceBytes > 0 {
		line += ", device " + bytesize.String(rep.PeakDeviceBytes)
	}
	if rep.CheckpointBytes > 0 {
		line += ", a checkpoint about " + bytesize.String(rep.CheckpointBytes)
	}
	return line
}

// slurmFit says how a run of report rep fits the Slurm executor's job time
// limit: a job must hold the run's start and a whole validation (a job
// stopped during one runs it again from its start: the run would never get
// past it), and a longer run takes several jobs, each requeued when the
// last is stopped, each paying the start again. "" where one job holds it.
func (st *Study) slurmFit(rep *train.CheckReport) string {
	s := st.Executor.Slurm
	limit, err := parseSlurmTime(s.Time)
	if err != nil {
		return ""
	}
	timeLimit := fmt.Sprintf("executor.slurm.time %s (%s)", s.Time, train.FormatDuration(float64(limit)))
	usable := float64(limit - s.SignalSecs)
	need := rep.StartSeconds + rep.ValidationSeconds + rep.StepSeconds
	switch {
	case usable <= 0:
		return fmt.Sprintf("warning: %s is not longer than signal_seconds %d: each job is told to stop as it starts, so no run "+
			"would ever get past its start: raise executor.slurm.time (or lower signal_seconds)", timeLimit, s.SignalSecs)
	case need >= usable:
		return fmt.Sprintf("warning: a job of %s, less signal_seconds %d, has %s: less than the run's start (%s), "+
			"a validation (%s) and a step (%s); a job stopped during a validation runs it again from its start, so the run would never get past it: raise executor.slurm.time",
			timeLimit, s.SignalSecs, train.FormatDuration(usable), train.FormatDuration(rep.StartSeconds), train.FormatDuration(rep.ValidationSeconds), train.FormatDuration(rep.StepSeconds))
	case runSeconds(rep) > usable:
		// Each job has usable - start for the run's own work.
		jobs := int(math.Ceil(rep.RunSeconds / (usable - rep.StartSeconds)))
		how := "about"
		if rep.RunAtLeast {
			how = "at least"
		}
		return fmt.Sprintf("each run takes %s %d jobs of %s (requeued when one is stopped, each starting again: %s; a run %s in all)",
			how, jobs, timeLimit, train.FormatDuration(rep.StartSeconds), approx(runSeconds(rep)+float64(jobs-1)*rep.StartSeconds, rep.RunAtLeast))
	}
	return ""
}

// studyCost sums the sweeps' costs: the runs they have left.
type studyCost struct {
	sweeps, coarse, fine int
	coarseSecs, fineSecs float64
	atLeast              bool
	fineUpTo             bool // a sweep's stage 2 is not known yet: fine is the most
	someDone             bool // a run checked has a result: the counts are what is left
	complete             int  // sweeps matched with every run's result: not checked
}

func (c *studyCost) add(rep *train.CheckReport, left sweepLeft) {
	c.sweeps++
	c.coarse += left.coarse
	c.fine += left.fine
	c.coarseSecs += float64(left.coarse) * runSeconds(rep)
	c.fineSecs += float64(left.fine) * runSeconds(rep)
	c.atLeast = c.atLeast || rep.RunAtLeast
	c.fineUpTo = c.fineUpTo || left.fineUpTo
	c.someDone = c.someDone || left.coarse < left.coarseAll || left.fine < left.fineAll
}

// String is the study's line.
func (c *studyCost) String() string {
	if c.sweeps == 0 {
		return fmt.Sprintf("nothing left to run: the %s %s complete", counted(c.complete, "sweep"), map[bool]string{true: "is", false: "are"}[c.complete == 1])
	}
	in := "in"
	if c.someDone {
		in = "left in"
	}
	s := fmt.Sprintf("the %s checked: %s %s stage 1, %s of run time", counted(c.sweeps, "sweep"), counted(c.coarse, "run"), in, approx(c.coarseSecs, c.atLeast))
	if c.fine > 0 {
		upTo := ""
		if c.fineUpTo {
			upTo = "up to "
		}
		s += fmt.Sprintf(", and %s%d %s stage 2, %s more", upTo, c.fine, in, approx(c.fineSecs, c.atLeast))
	}
	s += " on this machine, one run at a time (runs side by side on other GPUs or nodes divide it)"
	if c.complete > 0 {
		s += fmt.Sprintf("; %s complete, not checked", counted(c.complete, "sweep"))
	}
	return s
}

// approx is secs as "about D", or "at least D" for a lower bound.
func approx(secs float64, atLeast bool) string {
	if atLeast {
		return "at least " + train.FormatDuration(secs)
	}
	return "about " + train.FormatDuration(secs)
}

// counted is n things, in the singular for one.
func counted(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
