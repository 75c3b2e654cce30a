// Command meazo-train runs zeroth-order fine-tuning as a YAML config says:
//
//	meazo-train --config configs/llama1b_squad_lora_meazo.yaml [--set optimizer.lr=2e-4] [--seed 1] [--out runs/x]
//	meazo-train --resume runs/x [--set train.steps=N]  # continue an interrupted run bit-identically
//	meazo-train --demo [--demo-dir demo-run]          # the built-in demo: a tiny model made on the spot, no downloads
//	meazo-train --check --config C.yaml [--set ...]  # try the run's start and two steps, writing nothing
//	meazo-train --config-doc > docs/CONFIG.md
//
// With none of --config, --resume or --demo it prints its usage and exits 2.
// Everything a run produces lands in its run directory (docs/RUNDIR.md).
//
// SIGINT, SIGTERM or SIGUSR1 end a run cleanly: the step in progress (or
// the batch in progress of a validation or the test evaluation) finishes, a
// checkpoint is written, summary.json says "status":
// "interrupted" with the signal, and meazo-train exits with status 3
// (train.ExitInterrupted); --resume continues bit-identically. A second
// SIGINT exits at once (status 130; the last checkpoint is kept). A stop
// while the run starts (before its first step) exits 3 with nothing new
// written: start a new run again, resume a resumed one again. A --check
// stopped by one of them writes nothing, as ever, and exits 1 (it is not
// done: run it again).
// Exit statuses: 0 done or diverged (--check: passed), 1 error (--check:
// the run would be refused, or the check was stopped), 2 bad command line,
// 3 interrupted.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/meazo-go/meazo/internal/buildinfo"
	"github.com/meazo-go/meazo/internal/cli"
	"github.com/meazo-go/meazo/tensor/backends"
	"github.com/meazo-go/meazo/train"
)

// setFlags collects repeated --set key=value. It takes any text: one that
// is not key=value is refused after parsing (checkSets), in the form of
// every --set message (train.OverrideError), not the flag package's.
type setFlags []string

func (s *setFlags) String() string { return strings.Join(*s, " ") }
func (s *setFlags) Set(v string) error {
	*s = append(*s, v)
	return nil
}

// checkSets refuses a --set that is not key=value.
func checkSets(sets setFlags) error {
	for _, s := range sets {
		if _, _, err := train.SplitOverride(s); err != nil {
			return fmt.Errorf("%w (see -h)", err)
		}
	}
	return nil
}

// cmdline is a parsed command line.
type cmdline struct {
	configDoc bool
	version   bool
	check     bool
	demo      bool
	demoDir   string
	demoSteps int
	opts      train.Options
}

// errUsage asks for the usage text and exit status 2; errHelp (-h) for the
// usage text and exit status 0, as every other command's -h.
var (
	errUsage = errors.New("usage")
	errHelp  = errors.New("help")
)

const usageHead = `usage:
  meazo-train --config C.yaml [--set key=value]... [--seed N] [--out DIR]   train as the config says
  meazo-train --resume RUN_DIR [--set key=value]...                          continue a run from its last checkpoint
  meazo-train --check --config C.yaml [--set key=value]...                   try a new run's start, write nothing: inputs, memory,
                                                                             step 0's validation, a test sample, two steps, timed,
                                                                             what the run takes
  meazo-train --demo [--demo-dir demo-run] [--demo-steps N] [--set k=v]...  the built-in demo (tiny random model, no downloads;
                                                                             --set applies to each of its three runs)
  meazo-train --config-doc                                                   print docs/CONFIG.md
  meazo-train --version                                                      which build this is
SIGINT, SIGTERM or SIGUSR1 finish the current step (or evaluation batch), write a checkpoint and record the stop in summary.json
("status": "interrupted"), then exit 3; a --check stopped by one writes nothing and exits 1. Exit status: 0 done
(or diverged: a result; --check: passed), 1 error (--check: the run would be refused, or the check was stopped),
2 bad command line, 3 interrupted (continue with --resume).

`

// parseCmdline reads the flags; a careless invocation (an empty value, a
// flag that belongs to another mode, no mode at all) is an error, never the demo.
func parseCmdline(args []string, stderr io.Writer) (*cmdline, error) {
	fs := flag.NewFlagSet("meazo-train", flag.ContinueOnError)
	// While the flags parse, the flag package's own output (an error's
	// message and the usage after it) is dropped: main says a bad flag
	// once, with "(see -h)"; -h prints the usage below.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	usage := func() {
		fs.SetOutput(stderr)
		fmt.Fprint(stderr, usageHead)
		fs.PrintDefaults()
	}
	c, f := defineFlags(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usage()
			return nil, errHelp
		}
		return nil, fmt.Errorf("%w (see -h)", err)
	}
	if fs.NArg() == 1 && fs.Arg(0) == "help" { // as the other commands take it
		usage()
		return nil, errHelp
	}
	if fs.NArg() > 0 {
		if ext := filepath.Ext(fs.Arg(0)); (ext == ".yaml" || ext == ".yml") && fs.Lookup("config").Value.String() == "" {
			return nil, fmt.Errorf("unexpected argument %q (flags only: the config is --config %s; see -h)", fs.Arg(0), fs.Arg(0))
		}
		return nil, fmt.Errorf("unexpected argument %q (flags only; see -h)", fs.Arg(0))
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for _, name := range []string{"config", "resume", "out", "seed", "demo-dir", "backend", "threads"} {
		if given[name] && strings.TrimSpace(fs.Lookup(name).Value.String()) == "" {
			return nil, fmt.Errorf("--%s is given an empty value (an unset shell variable?)", name)
		}
	}
	if c.configDoc || c.version {
		if c.check {
			return nil, fmt.Errorf("--check tries a new run's start (with --config); --config-doc and --version print and exit")
		}
		return c, nil
	}
	if err := backends.CheckName(*f.backend); err != nil {
		return nil, fmt.Errorf("--backend: %w", err)
	}
	if c.demoSteps < 0 {
		return nil, fmt.Errorf("--demo-steps must be at least 0, got %d", c.demoSteps)
	}
	f.given = given
	if err := checkSets(f.sets); err != nil {
		return nil, err
	}
	if err := checkModes(given, c, f.sets); err != nil {
		if errors.Is(err, errUsage) {
			usage()
		}
		return nil, err
	}
	opts, err := f.options()
	if err != nil {
		return nil, err
	}
	c.opts = opts
	return c, nil
}

// flagValues are the flags that become train.Options.
type flagValues struct {
	config, seed, out, backend, resume, threads *string
	bf16                                        *bool
	sets                                        setFlags
	given                                       map[string]bool // the flags on the command line
}

// defineFlags defines meazo-train's flags on fs: the modes' into the
// cmdline, the run's into flagValues.
func defineFlags(fs *flag.FlagSet) (*cmdline, *flagValues) {
	c, f := &cmdline{}, &flagValues{}
	f.config = fs.String("config", "", "the experiment's YAML `FILE` (see docs/CONFIG.md)")
	fs.Var(&f.sets, "set", "override a config key (`key=value`), e.g. --set optimizer.lr=2e-4 (repeatable; on --resume: recorded in changes.jsonl)")
	f.seed = fs.String("seed", "", "shorthand for --set train.seed=`N`")
	f.out = fs.String("out", "", "shorthand for --set output.dir=`DIR`")
	f.backend = fs.String("backend", "", "shorthand for --set model.backend=`NAME`: auto, cpu or cuda")
	f.threads = fs.String("threads", "", "shorthand for --set train.threads=`N`: CPU worker threads (0: all cores), as meazo-eval task's --threads")
	f.bf16 = fs.Bool("bf16-weights", false, "shorthand for --set model.bf16_weights=true: keep a BF16 checkpoint's matrices in bfloat16 in memory, as meazo-eval task's --bf16-weights")
	f.resume = fs.String("resume", "", "continue the run in `RUN_DIR` from its last checkpoint")
	fs.BoolVar(&c.demo, "demo", false, "run the built-in demo: a tiny random model and a synthetic task made on the spot, three optimizers")
	fs.StringVar(&c.demoDir, "demo-dir", "demo-run", "the directory (`DIR`) where --demo writes its model, data and runs")
	fs.IntVar(&c.demoSteps, "demo-steps", train.DemoSteps, "the number of steps (`N`) of each run of --demo")
	fs.BoolVar(&c.check, "check", false, "with --config: do what the run's start does (every input, the model, the data, the memory checks), then step 0's validation, a sample of the test evaluation and two steps, timed; print what the whole run would take (time, memory, a full-parameter run's disk) and exit, writing nothing (stdout: the same as one JSON line, for scripts)")
	fs.BoolVar(&c.configDoc, "config-doc", false, "print the documentation of every config key (docs/CONFIG.md) and exit")
	fs.BoolVar(&c.version, "version", false, "print which build this is (version or commit, Go toolchain and experiments) and exit")
	return c, f
}

// checkModes refuses flags given together that do not go together (given:
// the flags on the command line): exactly one of --config, --resume and
// --demo, each with only its own flags; errUsage for none of them.
func checkModes(given map[string]bool, c *cmdline, sets setFlags) error {
	modes := 0
	for _, m := range []string{"config", "resume", "demo"} {
		if given[m] {
			modes++
		}
	}
	switch {
	case modes == 0 && (given["out"] || given["seed"] || given["set"] || given["threads"] || given["bf16-weights"]):
		return fmt.Errorf("--out, --seed, --threads, --bf16-weights and --set need --config (a new run) or --resume (a run to continue); nothing was run")
	case given["check"] && given["demo"]:
		return fmt.Errorf("--check tries a new run's start from --config; it does not take --demo (to check a run of the demo's config: --check --config %s)", filepath.Join(c.demoDir, "demo.yaml"))
	case given["check"] && !given["config"]:
		return fmt.Errorf("--check tries a new run's start: it takes --config (a --resume needs no check: it checks everything before it changes anything)")
	case !given["demo"] && (given["demo-dir"] || given["demo-steps"]):
		return fmt.Errorf("--demo-dir and --demo-steps belong to --demo")
	case modes == 0:
		return errUsage
	case given["demo"] && modes > 1:
		return fmt.Errorf("--demo runs the built-in demo; it does not take --config or --resume")
	case given["demo"] && given["out"]:
		return fmt.Errorf("--demo writes into --demo-dir (now %s), not --out", c.demoDir)
	case given["resume"] && given["config"]:
		return fmt.Errorf("--resume continues a run with its own recorded config; --config is not allowed (change a setting with --set key=value)")
	case given["resume"] && (given["out"] || given["seed"]):
		return fmt.Errorf("--resume continues the run in its own directory with its own seed; --out and --seed are not allowed")
	}
	if given["demo"] {
		if err := demoSets(sets, c.demoDir); err != nil {
			return err
		}
	}
	return shorthandConflict(given, sets)
}

// demoSets refuses the --set keys that --demo decides itself.
func demoSets(sets setFlags, demoDir string) error {
	for _, s := range sets {
		switch k, _, _ := train.SplitOverride(s); k {
		case "output.dir":
			return &train.OverrideError{Key: k, Err: fmt.Errorf("--demo writes into --demo-dir (now %s)", demoDir)}
		case "optimizer.name":
			// It would apply to all three runs, each still in its run-meazo,
			// run-zo-sgd or run-zo-adam directory.
			return &train.OverrideError{Key: k, Err: errors.New("--demo runs MEAZO, ZO-SGD and ZO-Adam, one each " +
				"(train another optimizer with --config DEMO_DIR/demo.yaml --set optimizer.name=NAME)")}
		}
	}
	return nil
}

// options are the train.Options the flags ask for: the shorthands become
// --set lines after the others.
func (f *flagValues) options() (train.Options, error) {
	sets := f.sets
	if *f.seed != "" {
		n, err := strconv.ParseUint(*f.seed, 10, 64)
		if err != nil {
			return train.Options{}, fmt.Errorf("--seed %s: want a whole number from 0 to %d", *f.seed, uint64(math.MaxUint64))
		}
		sets = append(sets, "train.seed="+strconv.FormatUint(n, 10)) // decimal: YAML would read 010 as 8
	}
	if *f.out != "" {
		sets = append(sets, "output.dir="+*f.out)
	}
	if *f.backend != "" {
		sets = append(sets, "model.backend="+*f.backend)
	}
	if *f.threads != "" {
		n, err := strconv.Atoi(strings.TrimSpace(*f.threads))
		if err != nil || n < 0 {
			return train.Options{}, fmt.Errorf("--threads %s: want a whole number, 0 (all cores) or more", *f.threads)
		}
		sets = append(sets, "train.threads="+strconv.Itoa(n))
	}
	if f.given["bf16-weights"] {
		sets = append(sets, "model.bf16_weights="+strconv.FormatBool(*f.bf16))
	}
	return train.Options{ConfigPath: *f.config, Overrides: sets, Resume: *f.resume}, nil
}

// shorthands are the flags that stand for a --set of one key.
var shorthands = []struct{ flag, key string }{
	{"seed", "train.seed"}, {"out", "output.dir"}, {"backend", "model.backend"},
	{"threads", "train.threads"}, {"bf16-weights", "model.bf16_weights"},
}

// shorthandConflict refuses a shorthand flag given together with a --set of
// its key (--seed 1 --set train.seed=2): one of the two values would be
// silently dropped, and the run would not be the one its command line reads as.
func shorthandConflict(given map[string]bool, sets []string) error {
	for _, sh := range shorthands {
		if !given[sh.flag] {
			continue
		}
		for _, s := range sets {
			if k, _, _ := train.SplitOverride(s); k == sh.key {
				return &train.OverrideError{Key: k, Err: fmt.Errorf("--%s sets it too: give one of them", sh.flag)}
			}
		}
	}
	return nil
}

func main() {
	c, err := parseCmdline(os.Args[1:], os.Stderr)
	if errors.Is(err, errHelp) {
		os.Exit(0)
	}
	if errors.Is(err, errUsage) {
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "meazo-train: %v\n", err)
		os.Exit(2)
	}
	if c.configDoc {
		fmt.Print(train.ConfigDoc())
		return
	}
	if c.version {
		fmt.Println(buildinfo.String("meazo-train"))
		return
	}
	if !c.demo {
		// At once: a signal while the run starts stops it cleanly too.
		c.opts.Stop = stopOnSignals(c.check)
	}
	cli.LowGC()
	c.opts.Log, c.opts.Terminal = os.Stderr, isTerminal(os.Stderr)
	if c.demo {
		if err := demo(c.opts, c.demoDir, c.demoSteps); err != nil {
			fail(err)
		}
		return
	}
	if c.check {
		rep, err := train.Check(c.opts)
		if err != nil {
			fail(err)
		}
		// The report for scripts (meazo-sweep check), on stdout: the
		// lines above went to stderr.
		b, _ := json.Marshal(rep)
		fmt.Println(string(b))
		return
	}
	report(train.Run(c.opts))
}

func report(s *train.Summary, err error) {
	if err != nil {
		fail(err)
	}
	// A diverged or interrupted run has printed its summary's message.
	if s.Diverged {
		return
	}
	if s.Interrupted() {
		os.Exit(train.ExitInterrupted)
	}
	gpu := ""
	if s.PeakDeviceBytes > 0 {
		gpu = fmt.Sprintf("; peak GPU memory %.2f GiB", float64(s.PeakDeviceBytes)/(1<<30))
	}
	fmt.Fprintf(os.Stderr, "%s%s\n\n", doneLine(s), gpu)
}

// doneLine is a finished run's last line but its GPU memory: the steps, the
// best validation loss and its step, with that validation's metric where the
// run logged one (eval.validation_metrics), and the test results.
func doneLine(s *train.Summary) string {
	steps := "steps"
	if s.StepsDone == 1 {
		steps = "step"
	}
	metric := ""
	if len(s.BestValMetrics) > 0 {
		metric = " (" + train.FormatMetrics(s.BestValMetrics) + ")"
	}
	return fmt.Sprintf("done: %d %s, best validation loss %s at step %d%s; test %s", s.StepsDone, steps, fmtPtr(s.BestValLoss), s.BestStep, metric, train.FormatTest(s.Test))
}

func fmtPtr(p *float64) string {
	if p == nil {
		return "n/a"
	}
	return fmt.Sprintf("%.4f", *p)
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "meazo-train: %v\n", err)
	if errors.Is(err, train.ErrStoppedStarting) || errors.Is(err, errDemoInterrupted) {
		os.Exit(train.ExitInterrupted)
	}
	// A --set the run refuses (its value, or what it makes of the config)
	// is a bad command line, as -h says, however late it is found.
	var oe *train.OverrideError
	if errors.As(err, &oe) {
		os.Exit(2)
	}
	os.Exit(1)
}

// isTerminal reports whether f is a character device (a terminal).
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
