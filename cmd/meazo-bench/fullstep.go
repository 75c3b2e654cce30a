package main

import (
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"slices"
	"time"

	"github.com/meazo-go/meazo/fullparam"
	"github.com/meazo-go/meazo/internal/cli"
	"github.com/meazo-go/meazo/internal/stats"
	"github.com/meazo-go/meazo/model"
	"github.com/meazo-go/meazo/noise"
	"github.com/meazo-go/meazo/tensor/backends"
	"github.com/meazo-go/meazo/train"
	"github.com/meazo-go/meazo/zo"
)

func init() {
	register("fullstep", cli.Help{
		Summary: "full-parameter ZO steps (every weight perturbed as it is read and updated in place) vs two plain forwards, " +
			"or the plain forward alone; each with the peak memory of what it timed",
		Synopsis: "[-model NAME] [-shape BxT] [-what step|forward|pair] [-opt O] [-q Q] [flags]",
		Does: `Times full-parameter ZO steps (every weight perturbed as it is read and updated in place, no copy of the
model) on random weights, against two plain forwards over the same rows: what a step costs beyond
inference, in time and in memory (-what pair alternates both in one process for their time ratio).`,
		Reads: randomWeights,
		Prints: `a header (model, weights, threads, backend), then per -what: the step's median time (evaluating the variants,
the update), its losses and optimizer state, or the forwards' times, each with the peak memory it took;
pair: each pair's ratio and their median.`,
		Example: "meazo-bench fullstep -model qwen06b -what pair -reps 6",
	}, runFullStep)
}

// fullBench is one fullstep measurement's setting.
type fullBench struct {
	name                  string
	b, t, q, steps, warm  int
	opt, dist             string
	grouped, bf16, detail bool
}

func runFullStep(args []string, stdout io.Writer) error {
	fs := modes.Flags("fullstep")
	var fb fullBench
	fs.StringVar(&fb.name, "model", "qwen06b", modelUsage)
	shape := fs.String("shape", "16x64", "BxT batch (SST-2-like 16x64); the last 3 tokens of each row are supervised")
	what := fs.String("what", "step", "step: full-parameter ZO steps; forward: the plain forward over the rows a step evaluates at once (2q·B) and two forwards over B rows; "+
		"pair: a step and two forwards alternated in one process, -reps pairs (their time ratio, not memory)")
	fs.IntVar(&fb.q, "q", 1, "directions per step")
	fs.StringVar(&fb.opt, "opt", "meazo", "meazo, zo-sgd, zo-adam, radazo or fzoo")
	fs.StringVar(&fb.dist, "dist", "normal", "noise distribution")
	fs.BoolVar(&fb.grouped, "grouped", false, "one parameter group per layer (grouped estimation with prefix caching)")
	fs.IntVar(&fb.steps, "reps", 2, "timed repetitions after the warm-up ones")
	fs.IntVar(&fb.warm, "warm", 1, "untimed repetitions first")
	threads := fs.Int("threads", runtime.GOMAXPROCS(0), "CPU worker threads")
	backend := fs.String("backend", "auto", backends.Usage)
	fs.BoolVar(&fb.bf16, "bf16", false, bf16Usage)
	cli.Alias(fs, "bf16-weights", "bf16") // meazo-train's and meazo-eval task's spelling
	profile := fs.String("cpuprofile", "", "write a CPU profile of the timed part to this file")
	if err := cli.Parse(fs, args); err != nil {
		return cli.Usage(err)
	}
	if err := checkThreads(*threads); err != nil {
		return err
	}
	if err := cli.NoArgs(fs); err != nil {
		return err
	}
	if err := backends.CheckName(*backend); err != nil {
		return cli.Usage(fmt.Errorf("-backend: %w", err))
	}
	var err error
	if fb.b, fb.t, err = parseShape(*shape); err != nil {
		return cli.Usage(err)
	}
	if fb.steps < 1 {
		return cli.Usage(fmt.Errorf("-reps: must be >= 1, got %d", fb.steps))
	}
	if fb.warm < 0 {
		return cli.Usage(fmt.Errorf("-warm: must be >= 0, got %d", fb.warm))
	}
	if *what != "step" && *what != "forward" && *what != "pair" {
		return cli.Usage(fmt.Errorf("-what %q: want step, forward or pair", *what))
	}
	if fb.q < 1 {
		return cli.Usage(fmt.Errorf("-q: must be >= 1, got %d", fb.q))
	}
	if _, err := benchOptimizer(fb.opt); err != nil { // before the model is made
		return err
	}
	if _, err := noise.ParseDist(fb.dist); err != nil {
		return cli.Usage(fmt.Errorf("-dist: %w", err))
	}
	cfg, err := benchConfig(fb.name)
	if err != nil {
		return err
	}
	be, err := backends.Open(*backend, *threads, stdout)
	if err != nil {
		return err
	}
	defer be.Close()
	m, err := model.NewRandomWith(cfg, 1, 0.02, model.LoadOptions{Backend: be, BF16Weights: fb.bf16, Unstacked: true})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "# %s, %s weights, %s, %d CPU threads, %s\n", fb.name, weightsName(fb.bf16), *shape, *threads, be.Describe())
	// What follows is measured from here: the model's loading (random
	// weights drawn on the host) is not.
	resetPeak(be)
	stop, err := startProfile(*profile, fb.name)
	if err != nil {
		return err
	}
	defer stop()
	switch *what {
	case "forward":
		return fb.forwards(stdout, m)
	case "pair":
		return fb.pair(stdout, m)
	}
	return fb.step(stdout, m)
}

// batch is fb's B×T batch of random tokens, the last 3 of each row supervised.
func (fb *fullBench) batch(vocab, b int) (model.Input, []int) {
	return randomBatch(rand.New(rand.NewPCG(3, 4)), vocab, b, fb.t, 3)
}

// forwards times two plain forwards over B rows (what a MeZO step runs),
// then the plain forward over the 2q·B rows a step evaluates at once, and
// reports the peak memory since the model was loaded.
func (fb *fullBench) forwards(stdout io.Writer, m *model.Model) error {
	in, labels := fb.batch(m.VocabSize, fb.b)
	sec, err := fb.timed(func() error {
		for range 2 {
			if _, err := m.Forward(in, model.Options{Labels: labels}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "2 forwards of %dx%d: %.3f s\n", fb.b, fb.t, sec)
	wide, wlabels := fb.batch(m.VocabSize, 2*fb.q*fb.b)
	sec, err = fb.timed(func() error {
		_, err := m.Forward(wide, model.Options{Labels: wlabels})
		return err
	})
	if err != nil {
		return err
	}
	// What the step's evaluation would take if its variants shared one set
	// of weights: the products' cost of a weight set per variant is the
	// step's evaluation time less this.
	fmt.Fprintf(stdout, "forward of %dx%d (the rows of a step, one set of weights): %.3f s\n", 2*fb.q*fb.b, fb.t, sec)
	reportPeak(stdout, m.Backend)
	return nil
}

// stepper is a full-parameter ZO step set up on fb's batch, ready to run.
type stepper struct {
	p     *fullparam.Params
	opt   zo.Optimizer
	eng   *zo.Engine
	timed *timedObjective
	last  *zo.Stats
}

func (fb *fullBench) newStepper(m *model.Model) (*stepper, error) {
	p, err := fullparam.New(m, fullparam.Options{Grouped: fb.grouped})
	if err != nil {
		return nil, err
	}
	opt, err := benchOptimizer(fb.opt)
	if err != nil {
		return nil, err
	}
	dist, err := noise.ParseDist(fb.dist)
	if err != nil {
		return nil, err
	}
	mode := zo.Joint
	if fb.grouped {
		mode = zo.Grouped
	}
	eng, err := zo.NewStore(p, opt, zo.Config{Eps: 1e-3, Q: fb.q, Dist: dist, Seed: 1, Mode: mode})
	if err != nil {
		return nil, err
	}
	obj := train.NewFullObjective(m, p, true)
	in, labels := fb.batch(m.VocabSize, fb.b)
	obj.SetBatch(in, labels)
	return &stepper{p: p, opt: opt, eng: eng, timed: &timedObjective{Objective: obj}}, nil
}

// run takes one step and returns its time and the part of it spent
// evaluating the variants (the rest is the update).
func (s *stepper) run() (total, eval time.Duration, err error) {
	s.timed.spent = 0
	t0 := time.Now()
	s.last, err = s.eng.Step(s.timed)
	return time.Since(t0), s.timed.spent, err
}

// step times full-parameter ZO steps and reports the peak memory since the
// model was loaded.
func (fb *fullBench) step(stdout io.Writer, m *model.Model) error {
	s, err := fb.newStepper(m)
	if err != nil {
		return err
	}
	var totals, evals []float64
	for i := range fb.warm + fb.steps {
		total, eval, err := s.run()
		if err != nil {
			return err
		}
		if i >= fb.warm {
			totals, evals = append(totals, total.Seconds()), append(evals, eval.Seconds())
		}
	}
	sec, ev := stats.Median(totals), stats.Median(evals)
	fmt.Fprintf(stdout, "full-parameter %s step, q=%d, %s noise, %d parameters: %.3f s (evaluating the variants %.3f s, the rest: update %.3f s; medians of %d)\n",
		fb.opt, fb.q, fb.dist, s.p.Count(), sec, ev, sec-ev, fb.steps)
	fmt.Fprintf(stdout, "losses %v, update norm %.4g, optimizer state %d bytes\n", s.last.Losses, s.last.UpdateNorm, s.p.StateBytes()+s.opt.StateBytes())
	reportPeak(stdout, m.Backend)
	return nil
}

// pair alternates a step and two plain forwards over B rows in one process,
// fb.steps times after fb.warm untimed pairs, and reports each pair's ratio
// and their median: on a machine whose speed drifts (a VM), the two halves
// of a pair run seconds apart, so their ratio drifts far less than that of
// runs minutes apart. The same ratio in the process's CPU time (every
// thread's) leaves out what a VM's other guests take (steal time), which
// wall time counts: it is the work a step adds, where wall time is what a
// user waits. (Peak memory needs the separate -what runs.)
func (fb *fullBench) pair(stdout io.Writer, m *model.Model) error {
	s, err := fb.newStepper(m)
	if err != nil {
		return err
	}
	in, labels := fb.batch(m.VocabSize, fb.b)
	var ratios, cpuRatios []float64
	for i := range fb.warm + fb.steps {
		c0, _ := processCPUSeconds()
		total, eval, err := s.run()
		if err != nil {
			return err
		}
		c1, _ := processCPUSeconds()
		t0 := time.Now()
		for range 2 {
			if _, err := m.Forward(in, model.Options{Labels: labels}); err != nil {
				return err
			}
		}
		fwd := time.Since(t0)
		c2, _ := processCPUSeconds()
		if i < fb.warm {
			continue
		}
		r := total.Seconds() / fwd.Seconds()
		ratios = append(ratios, r)
		fmt.Fprintf(stdout, "pair %d: step %.3f s (evaluating the variants %.3f s, update %.3f s), 2 forwards of %dx%d %.3f s, step / 2 forwards %.3f",
			i-fb.warm+1, total.Seconds(), eval.Seconds(), (total - eval).Seconds(), fb.b, fb.t, fwd.Seconds(), r)
		if c2 > c1 && c1 > c0 {
			cpuRatios = append(cpuRatios, (c1-c0)/(c2-c1))
			fmt.Fprintf(stdout, "; CPU time %.2f s / %.2f s = %.3f", c1-c0, c2-c1, (c1-c0)/(c2-c1))
		}
		fmt.Fprintln(stdout)
	}
	fmt.Fprintf(stdout, "full-parameter %s step / 2 forwards: median %.3f of %d pairs (min %.3f, max %.3f)\n",
		fb.opt, stats.Median(ratios), len(ratios), slices.Min(ratios), slices.Max(ratios))
	if len(cpuRatios) > 0 {
		fmt.Fprintf(stdout, "in CPU time: median %.3f (min %.3f, max %.3f)\n", stats.Median(cpuRatios), slices.Min(cpuRatios), slices.Max(cpuRatios))
	}
	return nil
}

// timed runs f fb.warm times, then fb.steps times, and returns the median
// time of the timed runs.
func (fb *fullBench) timed(f func() error) (float64, error) {
	ts, err := timings(fb.warm, fb.steps, nil, f)
	if err != nil {
		return 0, err
	}
	return stats.Median(seconds(ts)), nil
}

// benchOptimizer is a named optimizer with fullstep's learning rate.
func benchOptimizer(name string) (zo.Optimizer, error) {
	switch name {
	case "meazo":
		return zo.NewMEAZO(1e-5), nil
	case "zo-sgd":
		return zo.NewSGD(1e-7), nil
	case "zo-adam":
		return zo.NewAdam(1e-5), nil
	case "radazo":
		return zo.NewRAdaZO(1e-5), nil
	case "fzoo":
		return zo.NewFZOO(1e-5), nil
	}
	return nil, cli.Usage(train.OptimizerChoice("-opt", name))
}
