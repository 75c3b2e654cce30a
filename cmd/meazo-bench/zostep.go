package main

import (
	"cmp"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/meazo-go/meazo/internal/cli"
	"github.com/meazo-go/meazo/lora"
	"github.com/meazo-go/meazo/model"
	"github.com/meazo-go/meazo/tensor/backends"
	"github.com/meazo-go/meazo/train"
	"github.com/meazo-go/meazo/zo"
)

func init() {
	register("zostep", cli.Help{
		Summary:  "one ZO step (LoRA, MEAZO) vs two plain forwards; grouped with and without prefix caching",
		Synopsis: "[-model NAME] [-shapes BxT,...] [-q LIST] [-targets LIST] [-top N] [-grouped] [-backend B] [flags]",
		Does: `Times one MEAZO step with LoRA (r=16 on q_proj and v_proj, or -targets; of every layer, or -top N of them)
on random weights, against two plain forwards with the adapter over the same rows, at each q; -grouped adds
grouped (per-layer) estimation with and without prefix caching: what a step costs beyond inference.`,
		Reads: randomWeights,
		Prints: `a header (model, weights, threads, backend), then per shape a line each for two plain forwards and
each step: median seconds, the ratio, layers evaluated, the host's share; -steps: time per step and losses.`,
		Example: "meazo-bench zostep -model llama1b -shapes 8x80 -q 1,4 -grouped",
	}, runZOStep)
}

// zoStepBench is zostep's settings (its flags).
type zoStepBench struct {
	name, shapes, qs, backend, profile string
	targets                            []string // LoRA targets (-targets)
	layers                             []int    // LoRA layers (-top: the last N; nil: all)
	grouped, bf16                      bool
	reps, threads, steps               int
	cfg                                *model.Config // -model's, resolved before a backend is opened
}

func parseZOStep(args []string) (*zoStepBench, error) {
	var zb zoStepBench
	fs := modes.Flags("zostep")
	fs.StringVar(&zb.name, "model", "llama1b", modelUsage)
	fs.StringVar(&zb.shapes, "shapes", "8x80", "comma-separated BxT batches (SST-2-like 8x80, SQuAD-like 8x300); the last 3 tokens of each row are supervised")
	fs.StringVar(&zb.qs, "q", "1,4", "comma-separated numbers of directions")
	fs.BoolVar(&zb.grouped, "grouped", false, "also time grouped (per-layer) estimation with and without prefix caching at q=1")
	fs.IntVar(&zb.reps, "reps", 2, "timed repetitions after one warm-up; the median is reported")
	fs.IntVar(&zb.threads, "threads", runtime.GOMAXPROCS(0), "CPU worker threads")
	fs.StringVar(&zb.backend, "backend", "auto", backends.Usage)
	fs.StringVar(&zb.profile, "cpuprofile", "", "write a CPU profile of the whole run to this file")
	fs.BoolVar(&zb.bf16, "bf16", false, bf16Usage)
	cli.Alias(fs, "bf16-weights", "bf16") // meazo-train's and meazo-eval task's spelling
	fs.IntVar(&zb.steps, "steps", 0, "then a run of this many MEAZO steps (q=1) at the first shape, each on a new random batch: its time per step and losses")
	targets := fs.String("targets", "q_proj,v_proj", "comma-separated LoRA target projections, or all-linear")
	top := fs.Int("top", 0, "LoRA on the last N decoder layers only (adapter.layers; 0: every layer)")
	if err := cli.Parse(fs, args); err != nil {
		return nil, cli.Usage(err)
	}
	if err := checkThreads(zb.threads); err != nil {
		return nil, err
	}
	if err := cli.NoArgs(fs); err != nil {
		return nil, err
	}
	if err := backends.CheckName(zb.backend); err != nil {
		return nil, cli.Usage(fmt.Errorf("-backend: %w", err))
	}
	zb.targets = strings.Split(*targets, ",")
	if zb.reps < 1 {
		return nil, cli.Usage(fmt.Errorf("-reps: must be >= 1, got %d", zb.reps))
	}
	if zb.steps < 0 {
		return nil, cli.Usage(fmt.Errorf("-steps: must be >= 0, got %d", zb.steps))
	}
	for _, s := range strings.Split(zb.shapes, ",") {
		if _, _, err := parseShape(s); err != nil {
			return nil, cli.Usage(fmt.Errorf("-shapes: %w", err))
		}
	}
	for _, qv := range strings.Split(zb.qs, ",") {
		if q, err := strconv.Atoi(strings.TrimSpace(qv)); err != nil || q < 1 {
			return nil, cli.Usage(fmt.Errorf("-q: bad value %q, want whole numbers of at least 1 such as 1,4", qv))
		}
	}
	var err error
	if zb.cfg, err = benchConfig(zb.name); err != nil {
		return nil, err
	}
	if _, err := lora.TargetNames(zb.cfg, zb.targets); err != nil {
		return nil, cli.Usage(fmt.Errorf("-targets: %w", err))
	}
	if *top < 0 || *top > zb.cfg.NumLayers {
		return nil, cli.Usage(fmt.Errorf("-top: want 0 to the model's %d layers, got %d", zb.cfg.NumLayers, *top))
	}
	for l := zb.cfg.NumLayers - *top; *top > 0 && l < zb.cfg.NumLayers; l++ {
		zb.layers = append(zb.layers, l)
	}
	return &zb, nil
}

func runZOStep(args []string, stdout io.Writer) error {
	zb, err := parseZOStep(args)
	if err != nil {
		return err
	}
	be, err := backends.Open(zb.backend, zb.threads, stdout)
	if err != nil {
		return err
	}
	defer be.Close()
	stop, err := startProfile(zb.profile, zb.name)
	if err != nil {
		return err
	}
	defer stop()
	m, err := model.NewRandomWith(zb.cfg, 1, 0.02, model.LoadOptions{Backend: be, BF16Weights: zb.bf16})
	if err != nil {
		return err
	}
	names, _ := lora.TargetNames(zb.cfg, zb.targets)
	of := "every layer"
	if zb.layers != nil {
		of = fmt.Sprintf("layers %d to %d", zb.layers[0], zb.layers[len(zb.layers)-1])
	}
	fmt.Fprintf(stdout, "# %s, %s weights, LoRA r=16 on %s of %s, MEAZO, %d CPU threads, %s\n", zb.name, weightsName(zb.bf16), strings.Join(names, "/"), of, zb.threads, be.Describe())
	fmt.Fprintf(stdout, "# host: the share of a step spent outside the model's evaluation of its variants (noise, perturbation, update)\n")
	fmt.Fprintf(stdout, "%-8s %-22s %10s %14s %8s %7s %9s\n", "shape", "what", "seconds", "vs 2 forwards", "layers", "host", "host ms")
	rng := rand.New(rand.NewPCG(3, 4))
	for _, s := range strings.Split(zb.shapes, ",") {
		if err := zb.shape(stdout, m, rng, s); err != nil {
			return err
		}
	}
	if zb.steps > 0 {
		return zb.run(stdout, m, rng)
	}
	return nil
}

// run takes -steps MEAZO steps (q = 1) of a fresh adapter at the first
// -shapes shape, each on a new batch of random tokens.
func (zb *zoStepBench) run(stdout io.Writer, m *model.Model, rng *rand.Rand) error {
	s := strings.Split(zb.shapes, ",")[0]
	b, t, err := parseShape(s)
	if err != nil {
		return err
	}
	a, err := lora.New(m, lora.Options{Seed: 1, Targets: zb.targets, Layers: zb.layers})
	if err != nil {
		return err
	}
	obj := train.NewObjective(m, a, true)
	eng, err := zo.New(a.Params(), zo.NewMEAZO(1e-4), zo.Config{Eps: 1e-6, Q: 1, Seed: 1})
	if err != nil {
		return err
	}
	return stepRun(stdout, m.Backend, s, zb.steps, eng, obj, func() { obj.SetBatch(randomBatch(rng, m.VocabSize, b, t, 3)) })
}

// zoShape is one batch shape's measurement: the model, the batch, and the
// time of its two plain forwards, which the steps are compared with.
type zoShape struct {
	m      *model.Model
	name   string
	in     model.Input
	labels []int
	two    float64
}

// shape times two plain forwards of one BxT batch of random tokens (the
// last 3 of each row supervised), then a ZO step for every -q, and with
// -grouped the grouped steps with and without prefix caching.
func (zb *zoStepBench) shape(stdout io.Writer, m *model.Model, rng *rand.Rand, s string) error {
	b, t, err := parseShape(s)
	if err != nil {
		return err
	}
	sh := &zoShape{m: m, name: s}
	sh.in, sh.labels = randomBatch(rng, m.VocabSize, b, t, 3)
	a, err := lora.New(m, lora.Options{Seed: 1, Targets: zb.targets, Layers: zb.layers})
	if err != nil {
		return err
	}
	a.Attach(m)
	if sh.two, _, err = zb.median(nil, func() error {
		for range 2 {
			if _, err := m.Forward(sh.in, model.Options{Labels: sh.labels}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return err
	}
	m.Adapter = nil
	fmt.Fprintf(stdout, "%-8s %-22s %10.3f %14s %8d %7s\n", s, "2 plain forwards", sh.two, "1.00", 2*m.NumLayers, "")
	for _, qv := range strings.Split(zb.qs, ",") {
		var q int
		if _, err := fmt.Sscan(qv, &q); err != nil || q < 1 {
			return cli.Usage(fmt.Errorf("-q: bad value %q", qv))
		}
		if err := zb.step(stdout, sh, fmt.Sprintf("ZO step q=%d", q), q, false, true); err != nil {
			return err
		}
	}
	if !zb.grouped {
		return nil
	}
	if err := zb.step(stdout, sh, "grouped q=1, cache", 1, true, true); err != nil {
		return err
	}
	return zb.step(stdout, sh, "grouped q=1, no cache", 1, true, false)
}

// step times one MEAZO step of a fresh LoRA adapter with q directions
// (grouped by layer, with or without prefix caching) and prints its line.
func (zb *zoStepBench) step(stdout io.Writer, sh *zoShape, label string, q int, groupByLayer, cache bool) error {
	a, err := lora.New(sh.m, lora.Options{Seed: 1, Targets: zb.targets, Layers: zb.layers, GroupByLayer: groupByLayer})
	if err != nil {
		return err
	}
	obj := train.NewObjective(sh.m, a, cache)
	obj.SetBatch(sh.in, sh.labels)
	mode := zo.Joint
	if groupByLayer {
		mode = zo.Grouped
	}
	eng, err := zo.New(a.Params(), zo.NewMEAZO(1e-4), zo.Config{Eps: 1e-6, Q: q, Seed: 1, Mode: mode})
	if err != nil {
		return err
	}
	timed := &timedObjective{Objective: obj}
	sec, host, err := zb.median(timed, func() error { _, err := eng.Step(timed); return err })
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%-8s %-22s %10.3f %14.2f %8d %6.1f%% %9.1f\n", sh.name, label, sec, sec/sh.two, obj.LayerEvals(), 100*host, 1000*host*sec)
	reportDeviceMemory(stdout, sh.m.Backend)
	return nil
}

// median runs f once to warm up, then -reps times, and returns the median
// repetition's time (the upper middle one for an even count) and the share
// of that repetition's time not spent in obj.Evaluate (0 without obj).
func (zb *zoStepBench) median(obj *timedObjective, f func() error) (sec, host float64, err error) {
	var spent []time.Duration // per run, warm-up first
	ts, err := timings(1, zb.reps, func(int) {
		if obj != nil {
			obj.spent = 0
		}
	}, func() error {
		err := f()
		if obj != nil {
			spent = append(spent, obj.spent)
		}
		return err
	})
	if err != nil {
		return 0, 0, err
	}
	order := make([]int, len(ts))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(ts[a], ts[b]) })
	i := order[len(order)/2]
	sec = ts[i].Seconds()
	if obj != nil {
		host = 1 - spent[1+i].Seconds()/sec
	}
	return sec, host, nil
}
