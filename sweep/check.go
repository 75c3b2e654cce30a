package sweep

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/meazo-go/meazo/rundir"
	"github.com/meazo-go/meazo/train"
)

// CheckConfigs loads every sweep's meazo-train config as its first run will
// be given it (the study's and the experiment's set lines, the sweep's
// optimizer, a rate, a seed, the run directory), so that a mistake in a
// config file or a set line stops the study before anything starts or is
// submitted, instead of failing each of its runs (thousands, on a cluster).
// On a local executor it also checks, as meazo-train's own preflight does,
// that the files the config names (model, data, adapter.init) are there
// (train.Preflight); under Slurm the jobs may see other files, and those
// are the runs' to check.
// A sweep that will start no run afresh (every run is done, or resumes from
// its checkpoint with its own config.yaml, and its stage 2 is known) is
// not checked: its config may have moved or changed since. A config of the
// study's demo directory that Prepare has not written yet is checked as the
// built-in demo writes it, in a temporary directory (meazo-sweep plan writes
// nothing in the study). And where a sweep's config is there to read, a
// run directory started with other settings than the study would give it
// now is refused (checkRunsMatch).
func (st *Study) CheckConfigs() error {
	var demo string // the temporary demo, once written
	defer func() {
		if demo != "" {
			os.RemoveAll(demo)
		}
	}()
	for _, sp := range st.Sweeps() {
		runs := sp.Stage1()
		if len(runs) == 0 {
			continue
		}
		ss, err := sp.State()
		if err != nil {
			return err
		}
		if _, pending := st.demoPending(sp.Config()); !pending && exists(sp.Config()) {
			if err := st.checkRunsMatch(sp, ss); err != nil {
				return err
			}
		}
		if !startsAfresh(sp, ss) {
			continue
		}
		path := sp.Config()
		if rel, ok := st.demoPending(path); ok {
			if err := st.checkDemoDir(); err != nil {
				return err
			}
			if demo == "" {
				if demo, err = os.MkdirTemp("", "meazo-sweep-demo"); err != nil {
					return err
				}
				if _, err := train.WriteDemo(demo, demoSteps); err != nil {
					return err
				}
			}
			path = filepath.Join(demo, rel)
		}
		if _, err := os.Stat(path); err != nil {
			return fmt.Errorf("%s: %s.config: %w (sweep %s)", st.where(st.expKey(sp)+".config"), st.expKey(sp), err, sp.Name)
		}
		cfg, err := train.Load(path, append(runs[0].sets(), "output.dir="+runs[0].Dir))
		if err != nil {
			return fmt.Errorf("%s: %s (sweep %s): %w", st.where(st.setKey(sp, err)), st.expKey(sp), sp.Name, err)
		}
		// On this machine a model or a data file that is not there fails
		// every run of the sweep at once, alike: say it once, before any
		// starts (a Slurm job may see other files than the login node).
		if st.Executor.Kind == "local" {
			if err := train.Preflight(cfg); err != nil {
				return fmt.Errorf("%s: %s (sweep %s): no run started, as every run of the sweep would fail: %s",
					st.where(st.expKey(sp)+".config"), st.expKey(sp), sp.Name, oneLine(err.Error()))
			}
		}
	}
	return nil
}

// CheckRunsMatch refuses a study with a run directory started with other
// settings than the study gives it now (checkRunsMatch), in every sweep
// whose config is there to read: meazo-plot study reports no result as the
// study's that is not.
func (st *Study) CheckRunsMatch() error {
	for _, sp := range st.Sweeps() {
		if _, pending := st.demoPending(sp.Config()); pending || !exists(sp.Config()) {
			continue
		}
		ss, err := sp.State()
		if err != nil {
			return err
		}
		if err := st.checkRunsMatch(sp, ss); err != nil {
			return err
		}
	}
	return nil
}

// runMatchIgnores are the settings a run may have been started with
// otherwise without a different result: where it is, what it keeps of its
// weights at the end, its worker count and its progress lines.
var runMatchIgnores = []string{"output.dir", "output.keep_weights", "train.threads", "train.log_every"}

// checkRunsMatch refuses a sweep whose run directories were started with
// settings other than the study gives them now (an experiment's config or
// set lines, or the study's, edited after its runs; another study pointed
// at the same out): their results would be counted as this study's, with
// nothing to say they are not. A setting the run changed since (a resume's
// --set, an early stop: changes.jsonl) is compared as it started.
func (st *Study) checkRunsMatch(sp *SweepPlan, ss *StageState) error {
	for _, r := range ss.Runs() {
		if !exists(filepath.Join(r.Dir, rundir.ConfigFile)) {
			continue // never started, or stopped before it wrote one: it starts afresh
		}
		want, err := train.Load(sp.Config(), append(r.sets(), "output.dir="+r.Dir))
		if err != nil {
			return fmt.Errorf("%s: %s (sweep %s): %w", st.where(st.setKey(sp, err)), st.expKey(sp), sp.Name, err)
		}
		got, err := train.StartedConfig(r.Dir)
		if err != nil {
			continue // not a config meazo-train wrote whole: the run's own resume says what is wrong
		}
		if d := train.ConfigDiff(got, want, runMatchIgnores...); len(d) > 0 {
			return fmt.Errorf("study %s: sweep %s: the run %s was started with other settings than the study gives it now (%s; run -> study), "+
				"so its result is not this study's: remove the run's directory to run it with the study's settings (or the sweep's, %s, for all of them), or put the study's files back as they were",
				st.path, sp.Name, r.Dir, train.DescribeChanges(d), sp.Dir)
		}
	}
	return nil
}

// fineReady says whether sweep i's stage 2 may start: its fine grid was
// chosen from stage 1 runs started with the study's settings. Prepare
// checked them before the first run, but another study started on the
// same out at the same moment (whose runs Prepare could not see yet) may
// have run some of stage 1 with its own, and the fine grid must not be
// chosen from a mix. Checked once per sweep; a refusal is logged once and
// reported by finish.
func (x *localExecutor) fineReady(i int, sp *SweepPlan, ss *StageState) bool {
	if x.fineChecked[i] {
		return x.fineRefused[i] == nil
	}
	x.fineChecked[i] = true
	if _, pending := x.st.demoPending(sp.Config()); pending || !exists(sp.Config()) {
		return true
	}
	if err := x.st.checkRunsMatch(sp, ss); err != nil {
		fmt.Fprintf(x.log, "meazo-sweep: %s: stage 2 not started: %v\n", sp.Name, err)
		x.fineRefused[i] = fmt.Errorf("sweep %s: %w", sp.Name, err)
		return false
	}
	return true
}

// expKey names the sweep's experiment as the study file's keys do,
// experiments.<index>, for messages that point at the file.
func (st *Study) expKey(sp *SweepPlan) string {
	for i := range st.Experiments {
		if &st.Experiments[i] == sp.Exp {
			return fmt.Sprintf("experiments.%d", i)
		}
	}
	return "experiments." + sp.Exp.Name
}

// setKey is the study file's key of the set line that err (meazo-train's
// error loading the sweep's config with its set lines, "--set KEY: …")
// is about: the variant's, the experiment's or the study's that gives KEY
// (the last, as the last wins), else the experiment's key.
func (st *Study) setKey(sp *SweepPlan, err error) string {
	exp := st.expKey(sp)
	rest, ok := strings.CutPrefix(err.Error(), "--set ")
	if !ok {
		return exp
	}
	key, _, _ := strings.Cut(rest, ":")
	gives := func(sets []string) int {
		for i := len(sets) - 1; i >= 0; i-- {
			if k, _, _ := strings.Cut(sets[i], "="); strings.TrimSpace(k) == key {
				return i
			}
		}
		return -1
	}
	if v := sp.Variant; v != nil {
		for j := range sp.Exp.Variants {
			if &sp.Exp.Variants[j] == v {
				if i := gives(v.Set); i >= 0 {
					return fmt.Sprintf("%s.variants.%d.set.%d", exp, j, i)
				}
			}
		}
	}
	if i := gives(sp.Exp.Set); i >= 0 {
		return fmt.Sprintf("%s.set.%d", exp, i)
	}
	if i := gives(st.Set); i >= 0 {
		return fmt.Sprintf("set.%d", i)
	}
	return exp
}

// oneLine joins a message of several lines into one (an error of
// meazo-sweep is one line).
func oneLine(msg string) string {
	var b strings.Builder
	for _, l := range strings.Split(msg, "\n") {
		if l = strings.TrimSpace(l); l == "" {
			continue
		}
		if b.Len() > 0 {
			if strings.HasSuffix(b.String(), ":") {
				b.WriteString(" ")
			} else {
				b.WriteString("; ")
			}
		}
		b.WriteString(l)
	}
	return b.String()
}

// startsAfresh reports whether the sweep will start a run from its config:
// a run with neither a result nor a checkpoint, or a stage 2 still to come.
func startsAfresh(sp *SweepPlan, ss *StageState) bool {
	if !ss.Stage2Known && *sp.Exp.Fine {
		return true
	}
	for _, r := range ss.Runs() {
		switch ss.States[r.Dir].Status {
		case StatusDone, StatusDiverged, StatusRunning:
		default:
			if !hasCheckpoint(r.Dir) {
				return true
			}
		}
	}
	return false
}

// demoSteps is the train.steps of the built-in demo's demo.yaml as a
// study writes it (Prepare), and as plan and check read it before then; a
// study's set gives its runs their own.
const demoSteps = 150

// demoPending reports whether path is a file of the study's demo directory
// that Prepare has not written yet, and its path in that directory.
func (st *Study) demoPending(path string) (string, bool) {
	if st.Demo == "" || exists(filepath.Join(st.Demo, "demo.yaml")) {
		return "", false
	}
	rel, err := filepath.Rel(st.Demo, path)
	return rel, err == nil && filepath.IsLocal(rel)
}
