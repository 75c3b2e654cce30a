package sweep

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/meazo-go/meazo/internal/atomicfile"
	"github.com/meazo-go/meazo/rundir"
	"github.com/meazo-go/meazo/train"
)

// Files meazo-sweep keeps in a run directory beside meazo-train's.
const (
	ExitFile = "meazo-sweep.exit" // meazo-train's exit status, written when it ends
	JobFile  = "meazo-sweep.job"  // the Slurm job (array task) the run was submitted as
	LogFile  = "meazo-sweep.log"  // local executor: meazo-train's output
)

// Status of a run directory, read from the directory only.
const (
	StatusNew         = "new"                    // never started
	StatusQueued      = "queued"                 // submitted to Slurm, not ended
	StatusRunning     = "running"                // a meazo-train holds its run.lock: training now
	StatusDone        = rundir.StatusDone        // finished (summary.json)
	StatusDiverged    = rundir.StatusDiverged    // a result: +∞ in the selection
	StatusInterrupted = rundir.StatusInterrupted // stopped by a signal after a checkpoint: resumes
	StatusFailed      = "failed"                 // meazo-train exited with an error
	StatusUnfinished  = "unfinished"             // a checkpoint, but it ended without a word (killed)
)

// RunState is a run directory's status and, for a result, its summary.
type RunState struct {
	Status string
	Run    Run
	Detail string // why it failed, which job, …
}

// Settled says whether the run has ended for good, so that the selection can
// go on (a failed run makes its rate ineligible). A running run is not
// settled, whatever its directory holds from before; nor is one stopped
// before it finished, by a signal (interrupted) or a crash that left its
// checkpoint (unfinished): its sweep waits for meazo-sweep resume, so that
// η* is never chosen from the part of a run a reboot left.
func (s RunState) Settled() bool {
	switch s.Status {
	case StatusDone, StatusDiverged, StatusFailed:
		return true
	}
	return false
}

// ReadState reads a run directory's status. The lock comes first: a run
// being resumed still has the summary, exit status and checkpoint of the
// session before, and a run just started has no file that says so yet.
func ReadState(dir string) (RunState, error) {
	stateReads.Add(1)
	if holder, held, err := train.LockHolder(dir); err != nil {
		return RunState{}, err
	} else if held {
		return RunState{Status: StatusRunning, Detail: holder}, nil
	}
	if exists(filepath.Join(dir, rundir.SummaryFile)) {
		r, err := LoadSummary(dir)
		if err != nil {
			// One damaged file must not stop a study's every command. The
			// run is not settled (its sweep waits: η* is never chosen
			// without it), and resume runs it again: from its checkpoint,
			// meazo-train rewrites the summary.
			return RunState{Status: StatusUnfinished, Detail: fmt.Sprintf("%v (meazo-sweep resume runs it again)", err)}, nil
		}
		switch {
		case r.Diverged:
			return RunState{Status: StatusDiverged, Run: r}, nil
		case r.Finished():
			return RunState{Status: StatusDone, Run: r}, nil
		case r.Status == rundir.StatusInterrupted && (exists(filepath.Join(dir, ExitFile)) || !exists(filepath.Join(dir, JobFile))):
			return RunState{Status: StatusInterrupted, Run: r, Detail: r.Message}, nil
		}
		// Otherwise interrupted by its time limit and requeued: the task
		// script removed its exit status and kept its job file, so it reads
		// as queued (below) until the task runs again.
	}
	if b, err := os.ReadFile(filepath.Join(dir, ExitFile)); err == nil {
		word, why, _ := strings.Cut(strings.TrimSpace(string(b)), " ")
		code, err := strconv.Atoi(word)
		if err != nil {
			return RunState{}, fmt.Errorf("%s: not an exit status: %q", filepath.Join(dir, ExitFile), b)
		}
		if code == 3 && why != "" {
			return RunState{Status: StatusInterrupted, Detail: why}, nil
		}
		if code == 3 && !hasCheckpoint(dir) {
			return RunState{Status: StatusInterrupted, Detail: "exit status 3, before its first checkpoint: meazo-sweep resume starts it again"}, nil
		}
		if code == 3 {
			return RunState{Status: StatusInterrupted, Detail: "exit status 3"}, nil
		}
		if killed := killedAfterCheckpoint(dir, code); killed != "" {
			return RunState{Status: StatusInterrupted, Detail: killed}, nil
		}
		if code == 0 {
			return RunState{Status: StatusFailed, Detail: "meazo-train exited 0 but summary.json does not say the run finished"}, nil
		}
		return RunState{Status: StatusFailed, Detail: fmt.Sprintf("meazo-train exit status %d", code)}, nil
	}
	if b, err := os.ReadFile(filepath.Join(dir, JobFile)); err == nil {
		return RunState{Status: StatusQueued, Detail: "Slurm job " + strings.TrimSpace(string(b))}, nil
	}
	if hasCheckpoint(dir) {
		return RunState{Status: StatusUnfinished}, nil
	}
	return RunState{Status: StatusNew}, nil
}

// killedAfterCheckpoint describes a meazo-train that a signal killed (exit
// status 128+n, as bash and the local executor record it: an out-of-memory
// killer's SIGKILL is 137) after it wrote a checkpoint: a crash, not a
// failure of the run, which resume continues ("" otherwise). Settled as
// failed, its sweep would choose η* without it.
func killedAfterCheckpoint(dir string, code int) string {
	if code <= 128 || code > 128+64 || !hasCheckpoint(dir) {
		return ""
	}
	name := map[int]string{1: "SIGHUP", 2: "SIGINT", 6: "SIGABRT", 9: "SIGKILL", 11: "SIGSEGV", 15: "SIGTERM"}[code-128]
	if name == "" {
		name = fmt.Sprintf("signal %d", code-128)
	}
	return fmt.Sprintf("meazo-train killed by %s (exit status %d) after a checkpoint: meazo-sweep resume continues it", name, code)
}

// stateReads counts ReadState's calls, for the test that a local study reads
// each run directory a bounded number of times, not once per finished run.
var stateReads atomic.Int64

// ScriptResume is ScriptStatus's word for a run that meazo-train --resume continues.
const ScriptResume = "resume"

// ScriptStatus is ReadState in the four words scripts/sweep.sh acts on:
// StatusDone and StatusDiverged (a result: skip it), ScriptResume (no result
// but a checkpoint: meazo-train --resume), StatusNew (start it). A run that
// failed or was interrupted resumes from its checkpoint, as meazo-sweep
// resumes it (RunSpec.TrainArgs).
func ScriptStatus(dir string) (string, error) {
	s, err := ReadState(dir)
	switch {
	case err != nil:
		return "", err
	case s.Status == StatusDone || s.Status == StatusDiverged:
		return s.Status, nil
	case hasCheckpoint(dir):
		return ScriptResume, nil
	}
	return StatusNew, nil
}

func hasCheckpoint(dir string) bool {
	return exists(filepath.Join(dir, rundir.CheckpointDir, rundir.StateFile)) || exists(filepath.Join(dir, rundir.CheckpointOldDir, rundir.StateFile))
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// Config is the sweep's meazo-train config: the experiment's, with
// {optimizer} replaced by the sweep's optimizer.
func (sp *SweepPlan) Config() string {
	return strings.ReplaceAll(sp.Exp.Config, "{optimizer}", sp.Optimizer)
}

// SweepPlan is one experiment × optimizer (× variant, when the experiment
// has variants).
type SweepPlan struct {
	Name      string // <experiment>_<optimizer>[_<variant>]
	Dir       string
	Exp       *Experiment
	Optimizer string
	Variant   *Variant // nil: the experiment has none
	study     *Study
}

// VariantTitle is how tables and figures name the sweep's variant; "" for none.
func (sp *SweepPlan) VariantTitle() string {
	if sp.Variant == nil {
		return ""
	}
	return sp.Variant.Title()
}

// RunSpec is one run of a sweep.
type RunSpec struct {
	Sweep *SweepPlan
	LR    string // RateName's spelling: meazo-train's --set optimizer.lr
	Seed  uint64
	Stage int // 1 coarse, 2 fine
	Dir   string
}

// Sweeps lists the study's sweeps in file order.
func (st *Study) Sweeps() []*SweepPlan {
	var out []*SweepPlan
	for i := range st.Experiments {
		e := &st.Experiments[i]
		for _, o := range e.Optimizers {
			name := e.Name + "_" + o
			if len(e.Variants) == 0 {
				out = append(out, &SweepPlan{Name: name, Dir: filepath.Join(st.Out, name), Exp: e, Optimizer: o, study: st})
			}
			for j := range e.Variants {
				v := &e.Variants[j]
				vname := name + "_" + v.Name
				out = append(out, &SweepPlan{Name: vname, Dir: filepath.Join(st.Out, vname), Exp: e, Optimizer: o, Variant: v, study: st})
			}
		}
	}
	return out
}

// runs is rates (RateName's spelling) × the seeds, in the run directories
// the sweep directory already has for them (runDirIndex).
func (sp *SweepPlan) runs(rates []string, stage int) []RunSpec {
	ix := indexRunDirs(sp.Dir)
	var out []RunSpec
	for _, lr := range rates {
		for _, s := range sp.Exp.Seeds {
			out = append(out, RunSpec{Sweep: sp, LR: lr, Seed: s, Stage: stage, Dir: filepath.Join(sp.Dir, ix.name(lr, s))})
		}
	}
	return out
}

// Stage1 is the coarse grid × seeds.
func (sp *SweepPlan) Stage1() []RunSpec {
	var rates []string
	for _, r := range sp.Exp.Coarse {
		rates = append(rates, RateName(r))
	}
	return sp.runs(rates, 1)
}

// runDirName names the run directory of a rate, spelled so, and a seed.
func runDirName(rate string, seed uint64) string {
	return "lr=" + rate + "_seed=" + strconv.FormatUint(seed, 10)
}

// parseRunDirName reads a run directory's name: its rate as spelled there,
// and its seed.
func parseRunDirName(name string) (spelling string, rate float64, seed uint64, ok bool) {
	rest, ok := strings.CutPrefix(name, "lr=")
	i := strings.LastIndex(rest, "_seed=")
	if !ok || i < 0 {
		return "", 0, 0, false
	}
	spelling = rest[:i]
	rate, err := strconv.ParseFloat(spelling, 64)
	if err != nil || !(rate > 0) || math.IsInf(rate, 0) {
		return "", 0, 0, false
	}
	text := rest[i+len("_seed="):]
	seed, err = strconv.ParseUint(text, 10, 64)
	// Only the seed's own spelling (seed=00 is not the run of seed 0).
	return spelling, rate, seed, err == nil && text == strconv.FormatUint(seed, 10)
}

// runDirIndex is the run directories a sweep directory already holds, so
// that a rate's runs are found whatever its spelling there: meazo-sweep
// named the coarse rates from 0.01 up as LRString does (lr=0.01_seed=0)
// before RateName (lr=1e-2_seed=0), and scripts/sweep.sh as the user wrote
// them. A run keeps the directory it has; a new seed of a rate takes the
// spelling the rate already has, so that a sweep never holds two
// directories for one run nor two spellings of one rate that it made.
// RateName's spelling wins where a sweep has two. scripts/sweep.sh's
// run_dir follows the same rules.
type runDirIndex struct {
	runs  map[runKey]string // rate (RateName) × seed → its directory's name
	rates map[string]string // rate (RateName) → its spelling in the directory names
}

type runKey struct {
	rate string
	seed uint64
}

// indexRunDirs reads a sweep directory's run directories. One it cannot
// read (missing: nothing has run yet) gives RateName's names; reading the
// runs then reports the error.
func indexRunDirs(sweepDir string) runDirIndex {
	ix := runDirIndex{runs: map[runKey]string{}, rates: map[string]string{}}
	entries, _ := os.ReadDir(sweepDir)
	for _, e := range entries {
		spelling, v, seed, ok := parseRunDirName(e.Name())
		if !ok {
			continue
		}
		if fi, err := os.Stat(filepath.Join(sweepDir, e.Name())); err != nil || !fi.IsDir() {
			continue // a directory or a link to one (a run kept on another disk)
		}
		rate := RateName(v)
		k := runKey{rate, seed}
		if _, dup := ix.runs[k]; !dup || spelling == rate {
			ix.runs[k] = e.Name()
		}
		if _, dup := ix.rates[rate]; !dup || spelling == rate {
			ix.rates[rate] = spelling
		}
	}
	return ix
}

// name is the directory name of rate (RateName's spelling) × seed.
func (ix runDirIndex) name(rate string, seed uint64) string {
	if n, ok := ix.runs[runKey{rate, seed}]; ok {
		return n
	}
	if spelling, ok := ix.rates[rate]; ok {
		return runDirName(spelling, seed)
	}
	return runDirName(rate, seed)
}

// Uncounted lists the run directories in the sweep's directory that its
// plan does not count (named as runs, but at a rate or seed its grid has no
// more: a fine grid around an earlier η*, a seed or rate the study since
// left out), once the plan is known whole (stage 2 known, or none to come).
// They are in no table or figure; a report says so, so that nothing is
// counted or dropped without a word.
func (sp *SweepPlan) Uncounted(ss *StageState) []string {
	if !ss.Stage2Known && *sp.Exp.Fine {
		return nil
	}
	planned := map[string]bool{}
	for _, r := range ss.Runs() {
		planned[filepath.Base(r.Dir)] = true
	}
	var out []string
	entries, _ := os.ReadDir(sp.Dir)
	for _, e := range entries {
		if _, _, _, ok := parseRunDirName(e.Name()); ok && !planned[e.Name()] {
			out = append(out, filepath.Join(sp.Dir, e.Name()))
		}
	}
	return out
}

// StageState is what the run directories say about a sweep.
type StageState struct {
	Stage1, Stage2 []RunSpec
	States         map[string]RunState // by run directory
	CoarseEta      float64             // 0 until stage 1 is settled
	Stage2Known    bool                // stage 1 settled: Stage2 is the fine grid (maybe empty)
	Note           string              // why there is no stage 2
}

// State reads the sweep's runs and, once stage 1 is settled, the fine grid.
func (sp *SweepPlan) State() (*StageState, error) {
	ss := &StageState{Stage1: sp.Stage1(), States: map[string]RunState{}}
	read := func(runs []RunSpec) (bool, error) {
		settled := true
		for _, r := range runs {
			s, err := ReadState(r.Dir)
			if err != nil {
				return false, err
			}
			ss.States[r.Dir] = s
			settled = settled && s.Settled()
		}
		return settled, nil
	}
	settled, err := read(ss.Stage1)
	if err != nil || !settled {
		return ss, err
	}
	ss.Stage2Known = true
	sw, err := Summarize(sp.Dir, sp.Results(ss.Stage1, ss.States), sp.Exp.Seeds, sp.Exp.Coarse)
	if err != nil {
		ss.Note = "no stage 2: " + err.Error()
		return ss, nil
	}
	ss.CoarseEta = sw.EtaStar
	if !*sp.Exp.Fine {
		return ss, nil
	}
	fine, err := FineGrid(sp.Exp.Coarse, sw.EtaStar)
	if err != nil {
		return ss, err
	}
	ss.Stage2 = sp.runs(fine, 2)
	_, err = read(ss.Stage2)
	return ss, err
}

// Results turns runs into what the selection reads: a run without a result
// (failed, or not settled) is a Run marked Failed at its rate and seed.
func (sp *SweepPlan) Results(runs []RunSpec, states map[string]RunState) []Run {
	var out []Run
	for _, r := range runs {
		s := states[r.Dir]
		lr, _ := strconv.ParseFloat(r.LR, 64)
		if (s.Status == StatusDone || s.Status == StatusDiverged) && (!SameRate(s.Run.LR, lr) || s.Run.Seed != r.Seed) {
			// A result at another rate or seed than its directory's (a
			// resume's --set optimizer.lr): counted where its summary says,
			// it would be a seed too many at that rate and leave its own
			// rate eligible with a seed too few. It is no result of the plan.
			s = RunState{Status: StatusFailed, Detail: fmt.Sprintf("summary.json says lr %s, seed %d, not the plan's lr %s, seed %d (changed by a resume's --set?): remove the run directory to run it again",
				LRString(s.Run.LR), s.Run.Seed, LRString(lr), r.Seed)}
		}
		if s.Status == StatusDone || s.Status == StatusDiverged {
			run := s.Run
			run.Variant = sp.VariantTitle()
			out = append(out, run)
			continue
		}
		out = append(out, Run{Dir: r.Dir, Failed: true, Pending: s.Status != StatusFailed, Variant: sp.VariantTitle(), Summary: Summary{Optimizer: sp.Optimizer, LR: lr, Seed: r.Seed,
			Message: s.Status + " " + s.Detail}})
	}
	return out
}

// Runs is every run of both stages (stage 2 as far as it is known).
func (ss *StageState) Runs() []RunSpec {
	return append(append([]RunSpec{}, ss.Stage1...), ss.Stage2...)
}

// Complete says whether every run of both stages is settled.
func (ss *StageState) Complete() bool {
	if !ss.Stage2Known {
		return false
	}
	for _, r := range ss.Stage2 {
		if !ss.States[r.Dir].Settled() {
			return false
		}
	}
	return true
}

// WriteSweepJSON selects η* over both stages and writes DIR/sweep.json.
func (sp *SweepPlan) WriteSweepJSON(ss *StageState) (*Sweep, error) {
	sw, err := Summarize(sp.Dir, sp.Results(ss.Runs(), ss.States), sp.Exp.Seeds, sp.Exp.Coarse)
	if err != nil {
		return nil, err
	}
	return sw, sw.WriteFile(filepath.Join(sp.Dir, SweepFile))
}

// TrainArgs are meazo-train's arguments for a run: --resume when its
// directory holds a checkpoint, else a fresh start with the study's, the
// experiment's and the sweep's settings (the sweep's last, so they win).
func (r RunSpec) TrainArgs() []string {
	if hasCheckpoint(r.Dir) {
		return []string{"--resume", r.Dir}
	}
	return r.FreshArgs()
}

// FreshArgs starts the run from scratch.
func (r RunSpec) FreshArgs() []string {
	args := []string{"--config", r.Sweep.Config()}
	for _, s := range r.sets() {
		args = append(args, "--set", s)
	}
	return append(args, "--out", r.Dir)
}

// sets are a fresh start's --set overrides: the study's, the experiment's,
// the variant's, then the sweep's own (last, so they win).
func (r RunSpec) sets() []string {
	sets := append(append([]string{}, r.Sweep.study.Set...), r.Sweep.Exp.Set...)
	if v := r.Sweep.Variant; v != nil {
		sets = append(sets, v.Set...)
	}
	return append(sets, "optimizer.name="+r.Sweep.Optimizer, "optimizer.lr="+r.LR, "train.seed="+strconv.FormatUint(r.Seed, 10))
}

// writeExit records meazo-train's exit status in the run directory.
func writeExit(dir string, code int) error {
	return writeExitWhy(dir, code, "")
}

// writeExitWhy writes an exit status with the reason meazo-sweep gave it
// itself ("3 Slurm job 58_2 ended …"): ReadState shows the reason.
func writeExitWhy(dir string, code int, why string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	line := strconv.Itoa(code)
	if why != "" {
		line += " " + why
	}
	return atomicfile.WriteFile(filepath.Join(dir, ExitFile), []byte(line+"\n"))
}

// clearMarks removes meazo-sweep's own marks before a (re)start.
func clearMarks(dir string) error {
	for _, f := range []string{ExitFile, JobFile} {
		if err := os.Remove(filepath.Join(dir, f)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}
