package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/meazo-go/meazo/internal/cli"
	"github.com/meazo-go/meazo/internal/shell"
	"github.com/meazo-go/meazo/rundir"
	"github.com/meazo-go/meazo/train"
)

// runSetting is a flag of meazo-eval task that a run's config.yaml sets too.
type runSetting struct {
	flag, key string
	value     func(c *train.Config) string // the run's, written as the flag takes it ("": the run has none)
	prompt    bool                         // it changes what the model is or sees, or how it is scored: a different value on the command line is worth a note
	text      bool                         // a text task's flag only (refused for pets)
	scope     scope                        // when the run's value applies
}

// scope says when a run's setting applies to an evaluation: always (the
// base model, the template's date, the length rule), only on the run's
// task (its labels, instruction, format, generation settings), or only on
// its test file (how many of its examples the run scored).
type scope int

const (
	scopeAny scope = iota
	scopeRunTask
	scopeRunData
)

// effective is what a value of flag f means: --date-string's empty default
// stands for the Llama-3.x template's default date, which a run's
// config.yaml writes out.
func effective(f, v string) string {
	if f == "date-string" && v == "" {
		return train.Defaults().Model.DateString
	}
	return v
}

var runSettings = []runSetting{
	{"model", "model.path", func(c *train.Config) string { return c.Model.Path }, true, false, scopeAny},
	{"task", "task.name", func(c *train.Config) string { return c.Task.Name }, false, false, scopeAny},
	{"data", "task.test", func(c *train.Config) string { return c.Task.Test }, false, false, scopeRunTask},
	{"max-examples", "task.max_test", func(c *train.Config) string { return strconv.Itoa(c.Task.MaxTest) }, false, false, scopeRunData},
	{"labels", "task.labels", func(c *train.Config) string { return labelsFlag(c.Task.Labels) }, true, true, scopeRunTask},
	{"instruction", "task.instruction", func(c *train.Config) string { return c.Task.Instruction }, true, true, scopeRunTask},
	{"format", "task.format", func(c *train.Config) string { return c.Task.Format }, true, true, scopeRunTask},
	{"date-string", "model.date_string", func(c *train.Config) string { return c.Model.DateString }, true, true, scopeAny},
	{"max-length", "task.max_length", func(c *train.Config) string { return strconv.Itoa(c.Task.MaxLength) }, true, true, scopeAny},
	{"max-new-tokens", "eval.max_new_tokens", func(c *train.Config) string { return strconv.Itoa(c.Eval.MaxNewTokens) }, true, true, scopeRunTask},
	{"rouge-stem", "eval.rouge_stem", func(c *train.Config) string { return strconv.FormatBool(c.Eval.RougeStem) }, true, true, scopeRunTask},
	// The run's storage: the same scores either way, but a run that fit its
	// machine in bfloat16 may not fit it in float32 (Ministral-3 14B: 25 GiB
	// of weights, 50 GiB widened).
	{"bf16-weights", "model.bf16_weights", func(c *train.Config) string { return strconv.FormatBool(c.Model.BF16) }, false, true, scopeAny},
	// The run's products: on a GPU, bfloat16 ones give other numbers than
	// float32's (faster), so the scores are the run's only with its setting.
	{"bf16-products", "model.bf16_products", func(c *train.Config) string { return strconv.FormatBool(c.Model.BF16Products) }, true, true, scopeAny},
}

// labelsFlag writes labels as --labels takes them (JSON is YAML): "" for none.
func labelsFlag(l []string) string {
	if len(l) == 0 {
		return ""
	}
	b, _ := json.Marshal(l)
	return string(b)
}

// fromRun scores a run's saved result as the run scored its test split: when
// --adapter (or, without one, --model: a full-parameter run's model) is a
// run's best/, last/ or checkpoint/, every flag of runSettings the command line leaves out
// takes the run's value from its config.yaml (--model only with an adapter:
// the base model the run trained it on; on another --task than the run's,
// only what applies to any task; on another --data, not how many of the
// run's test examples it scored). The log says which were taken, and notes
// a flag given with another value than the run's where that changes the
// prompts or the scoring, and a path taken that is relative (config.yaml
// keeps paths as given, relative to where meazo-train ran). Nothing is
// read when the directory is not a run's.
//
// It returns the run's data files (what --predictions must not replace),
// nil when the directory is not a run's.
func fromRun(fs *flag.FlagSet, adapter, model string, log io.Writer) ([]string, error) {
	saved := adapter
	if saved == "" {
		saved = model
	}
	cfg, run, err := train.RunOf(saved)
	if err != nil || cfg == nil {
		return nil, err
	}
	files := []string{cfg.Task.Train, cfg.Task.Validation, cfg.Task.Test}
	given := cli.Given(fs) // an alias (--max-test, --stem) under its flag's name too
	pets := cfg.Task.Name == "pets"
	sameTask := !given["task"] || fs.Lookup("task").Value.String() == cfg.Task.Name
	sameData := sameTask && (!given["data"] || samePath(fs.Lookup("data").Value.String(), cfg.Task.Test))
	if !sameData && cfg.Task.MaxTest > 0 && !given["max-examples"] {
		fmt.Fprintf(log, "note: the run scored the first %d examples of its own test file (task.max_test); --data is another file: all of it is scored\n", cfg.Task.MaxTest)
	}
	var taken []string
	for _, s := range runSettings {
		v := s.value(cfg)
		switch {
		case s.flag == "data" && !sameTask && !given["data"]:
			fmt.Fprintf(log, "note: the run's test file (task.test) is for its task %s, not --task %s: give --data\n", cfg.Task.Name, fs.Lookup("task").Value.String())
			continue
		case s.flag == "model" && adapter == "", s.text && pets, s.scope == scopeRunTask && !sameTask, s.scope == scopeRunData && !sameData:
			continue
		case given[s.flag]:
			if got := fs.Lookup(s.flag).Value.String(); s.prompt && effective(s.flag, got) != v && !sameLabels(s.flag, got, v) && !(s.flag == "model" && samePath(got, v)) {
				fmt.Fprintf(log, "note: --%s differs from the run's %s (%q in %s); scoring with --%s\n", s.flag, s.key, v, run, s.flag)
			}
			continue
		case v == "" || v == effective(s.flag, fs.Lookup(s.flag).DefValue):
			continue
		}
		if (s.flag == "model" || s.flag == "data") && !filepath.IsAbs(v) {
			v = fromStart(v, s.key, run, cfg, log)
		}
		if err := fs.Set(s.flag, v); err != nil {
			return nil, fmt.Errorf("%s in %s: %w", s.key, run, err)
		}
		if b, ok := fs.Lookup(s.flag).Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			taken = append(taken, fmt.Sprintf("--%s=%s", s.flag, v)) // "--rouge-stem true" would end the flags on a command line
		} else {
			taken = append(taken, fmt.Sprintf("--%s %s", s.flag, shell.Quote(v)))
		}
	}
	if len(taken) > 0 {
		fmt.Fprintf(log, "scoring as the run %s did (its config.yaml): %s\n", run, strings.Join(taken, " "))
	}
	return slices.DeleteFunc(files, func(f string) bool { return f == "" }), nil
}

// fromStart is the run's relative path v (of key) as the run read it:
// joined to the directory the run was started from (train.StartDir) where
// the file is there, else v read from this directory; the log says which
// where it is not plain.
func fromStart(v, key, run string, cfg *train.Config, log io.Writer) string {
	start := train.StartDir(run, cfg)
	if start != "" {
		if _, err := os.Stat(filepath.Join(start, v)); err == nil {
			if wd, err := os.Getwd(); err == nil && samePath(wd, start) {
				return v // here
			}
			fmt.Fprintf(log, "note: the run's %s %s is relative to where the run was started, %s: reading %s\n", key, v, start, filepath.Join(start, v))
			return filepath.Join(start, v)
		}
	}
	fmt.Fprintf(log, "note: the run's %s %s is a relative path, read from this directory (it is not where the run's output.dir says the run was started)\n", key, v)
	return v
}

// samePath reports whether a and b name the same file or directory,
// however written (a path relative to here, an absolute one, a link).
func samePath(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(sa, sb)
}

// sameLabels reports whether two --labels values are the same list written
// two ways ('[a, b]' and '["a","b"]').
func sameLabels(flag, a, b string) bool {
	if flag != "labels" {
		return false
	}
	la, errA := train.ParseLabels(a)
	lb, errB := train.ParseLabels(b)
	return errA == nil && errB == nil && slices.Equal(la, lb)
}

// notARunDir refuses a run directory given where its saved result belongs
// (--adapter RUN, --model RUN): the run's best/ is what a user means, and
// the flag it takes (--adapter for an adapter, --model for a full-parameter
// run's model) is said, rather than a load error about config.json.
func notARunDir(flag, dir string) error {
	if dir == "" || fileExists(filepath.Join(dir, "config.json")) || fileExists(filepath.Join(dir, rundir.AdapterFiles[0])) {
		return nil // a model or an adapter (a run's checkpoint/ holds one, with a config.yaml and a best/)
	}
	if _, err := os.Stat(filepath.Join(dir, rundir.ConfigFile)); err != nil {
		return nil
	}
	best := filepath.Join(dir, rundir.BestDir)
	last := " (or " + filepath.Join(dir, rundir.LastDir) + ")"
	pruned, isPruned := prunedRun(dir)
	switch _, err := os.Stat(filepath.Join(dir, rundir.LastDir)); {
	case err == nil:
	case isPruned:
		last = " (the run " + pruned + ")"
	default:
		last = " (its last/ is saved when the run " + notEnded(dir) + ")"
	}
	switch {
	case isPruned && !fileExists(filepath.Join(best, "config.json")) && !fileExists(filepath.Join(best, rundir.AdapterFiles[0])):
		return fmt.Errorf("%s %s is a run directory: the run %s", flag, dir, pruned)
	case fileExists(filepath.Join(best, "config.json")):
		return fmt.Errorf("%s %s is a run directory: score the model it saved, --model %s%s", flag, dir, best, last)
	case fileExists(filepath.Join(best, rundir.AdapterFiles[0])):
		return fmt.Errorf("%s %s is a run directory: score the adapter it saved, --adapter %s%s", flag, dir, best, last)
	}
	return nil
}

// notARunResult explains a run's best/ or last/ given that is not there
// yet (a run still training, or stopped before its end), rather than "no
// such file or directory": what the run is doing and what to score
// meanwhile. nil for anything else.
func notARunResult(flag, dir string) error {
	name := filepath.Base(filepath.Clean(dir))
	if dir == "" || name != rundir.LastDir && name != rundir.BestDir {
		return nil
	}
	run := filepath.Dir(filepath.Clean(dir))
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) && !prunedDir(run, name) {
		return nil
	}
	if _, err := os.Stat(filepath.Join(run, rundir.ConfigFile)); err != nil {
		return nil
	}
	if _, err := os.Stat(filepath.Join(run, rundir.LockFile)); err != nil {
		return nil // a user's config.yaml beside, not a run
	}
	if pruned, ok := prunedRun(run); ok {
		return fmt.Errorf("%s %s: the run %s %s", flag, dir, run, pruned)
	}
	if name == rundir.BestDir {
		return fmt.Errorf("%s %s: the run %s has saved no best/ yet (it is saved at the run's first validation, step 0's); the run %s",
			flag, dir, run, state(run))
	}
	msg := fmt.Sprintf("%s %s: the run %s has no last/: it is saved when the run %s; ", flag, dir, run, notEnded(run))
	best := filepath.Join(run, rundir.BestDir)
	if _, err := os.Stat(best); err == nil {
		msg += "score its best/ meanwhile, " + flag + " " + best
		if ck := filepath.Join(run, rundir.CheckpointDir); fileExists(filepath.Join(ck, rundir.StateFile)) {
			msg += ", or its latest checkpoint's, " + flag + " " + ck
		}
	} else {
		msg += "it has no best/ either"
	}
	return errors.New(msg)
}

// prunedDir says whether run pruned its directory name (best or last) at
// its end: what is left of it is what a crash during the removal left.
func prunedDir(run, name string) bool {
	s, err := rundir.ReadSummary(run)
	return err == nil && (s.WeightsKept == rundir.KeepNone || s.WeightsKept == rundir.KeepBest && name == rundir.LastDir)
}

// prunedRun says what a finished run whose weights output.keep_weights
// pruned kept, for messages, and whether it is one.
func prunedRun(run string) (string, bool) {
	s, err := rundir.ReadSummary(run)
	if err != nil || s.WeightsKept == "" {
		return "", false
	}
	kept := "only its best/"
	if s.WeightsKept == rundir.KeepNone {
		kept = "none of its weights"
	}
	results := "its test results are in"
	if len(s.Test) == 0 { // diverged, or eval.skip
		results = "it has no test results; its validation losses are in"
	}
	return fmt.Sprintf("is %s and kept %s (output.keep_weights: %s); %s %s",
		s.Status, kept, s.WeightsKept, results, filepath.Join(run, rundir.SummaryFile)), true
}

// notEnded says when a run's last/ comes: at its end, which a run still
// training or one stopped before it has not reached.
func notEnded(run string) string {
	return "ends, and the run " + state(run)
}

// state says what a run without last/ is doing, for messages: training
// (its lock held), or stopped before its end.
func state(run string) string {
	if holder, held, err := train.LockHolder(run); err == nil && held {
		return "is still training (" + holder + ")"
	}
	if s, err := rundir.ReadSummary(run); err == nil && s.Interrupted() {
		return fmt.Sprintf("was interrupted at step %d of %d: continue it with meazo-train --resume %s", s.StepsDone, s.Steps, run)
	}
	return "is not training and has not finished (stopped, or crashed): continue it with meazo-train --resume " + run
}

// fileExists says whether path names a regular file.
func fileExists(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}
