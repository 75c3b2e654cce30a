package main

import (
	"cmp"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"slices"
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
	register("zostep", "one ZO step (LoRA, MEAZO) vs two plain forwards; grouped with and without prefix caching", runZOStep)
}

func runZOStep(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("zostep", flag.ContinueOnError)
	name := fs.String("model", "llama1b", "llama1b or qwen06b (published configs, random weights), or a path to a config.json")
	shapes := fs.String("shapes", "8x80", "comma-separated BxT batches (SST-2-like 8x80, SQuAD-like 8x300); the last 3 tokens of each row are supervised")
	qs := fs.String("q", "1,4", "comma-separated numbers of directions")
	grouped := fs.Bool("grouped", false, "also time grouped (per-layer) estimation with and without prefix caching at q=1")
	reps := fs.Int("reps", 2, "timed repetitions after one warm-up; the median is reported")
	threads := fs.Int("threads", runtime.GOMAXPROCS(0), "CPU worker threads")
	backend := fs.String("backend", "cpu", backends.Usage)
	profile := fs.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	bf16 := fs.Bool("bf16", false, bf16Usage)
	if err := cli.Parse(fs, args); err != nil {
		return cli.Usage(err)
	}
	be, err := backends.Open(*backend, *threads, stdout)
	if err != nil {
		return err
	}
	defer be.Close()
	stop, err := startProfile(*profile)
	if err != nil {
		return err
	}
	defer stop()
	cfg, err := benchConfig(*name)
	if err != nil {
		return err
	}
	m, err := model.NewRandomWith(cfg, 1, 0.02, model.LoadOptions{Backend: be, BF16Weights: *bf16})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "# %s, %s weights, LoRA r=16 on q_proj/v_proj, MEAZO, %d CPU threads, %s\n", *name, weightsName(*bf16), *threads, be.Describe())
	fmt.Fprintf(stdout, "# host: the share of a step spent outside the model's evaluation of its variants (noise, perturbation, update)\n")
	fmt.Fprintf(stdout, "%-8s %-22s %10s %14s %8s %7s %9s\n", "shape", "what", "seconds", "vs 2 forwards", "layers", "host", "host ms")
	// median returns the median time of f over the timed repetitions, and
	// the share of that repetition's time not spent in obj.Evaluate.
	median := func(obj *timedObjective, f func() error) (sec, host float64, err error) {
		type rep struct{ sec, host float64 }
		var ts []rep
		for i := 0; i <= *reps; i++ {
			if obj != nil {
				obj.spent = 0
			}
			t0 := time.Now()
			if err := f(); err != nil {
				return 0, 0, err
			}
			if i > 0 {
				r := rep{sec: time.Since(t0).Seconds()}
				if obj != nil {
					r.host = 1 - obj.spent.Seconds()/r.sec
				}
				ts = append(ts, r)
			}
		}
		slices.SortFunc(ts, func(a, b rep) int { return cmp.Compare(a.sec, b.sec) })
		return ts[len(ts)/2].sec, ts[len(ts)/2].host, nil
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, s := range strings.Split(*shapes, ",") {
		b, t, err := parseShape(s)
		if err != nil {
			return err
		}
		in := model.Input{B: b, T: t, Tokens: make([]int, b*t)}
		labels := make([]int, b*t)
		for i := range in.Tokens {
			in.Tokens[i] = rng.IntN(cfg.VocabSize)
			labels[i] = -100
			if i%t >= t-3 {
				labels[i] = in.Tokens[i]
			}
		}
		a, err := lora.New(m, lora.Options{Seed: 1})
		if err != nil {
			return err
		}
		a.Attach(m)
		two, _, err := median(nil, func() error {
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
		m.Adapter = nil
		fmt.Fprintf(stdout, "%-8s %-22s %10.3f %14s %8d %7s\n", s, "2 plain forwards", two, "1.00", 2*cfg.NumLayers, "")
		step := func(label string, q int, groupByLayer, cache bool) error {
			a, err := lora.New(m, lora.Options{Seed: 1, GroupByLayer: groupByLayer})
			if err != nil {
				return err
			}
			obj := train.NewObjective(m, a, cache)
			obj.SetBatch(in, labels)
			mode := zo.Joint
			if groupByLayer {
				mode = zo.Grouped
			}
			eng, err := zo.New(a.Params(), zo.NewMEAZO(1e-4), zo.Config{Eps: 1e-6, Q: q, Seed: 1, Mode: mode})
			if err != nil {
				return err
			}
			timed := &timedObjective{Objective: obj}
			sec, host, err := median(timed, func() error { _, err := eng.Step(timed); return err })
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "%-8s %-22s %10.3f %14.2f %8d %6.1f%% %9.1f\n", s, label, sec, sec/two, obj.LayerEvals(), 100*host, 1000*host*sec)
			reportDeviceMemory(stdout, be)
			return nil
		}
		for _, qv := range strings.Split(*qs, ",") {
			var q int
			if _, err := fmt.Sscan(qv, &q); err != nil || q < 1 {
				return fmt.Errorf("-q: bad value %q", qv)
			}
			if err := step(fmt.Sprintf("ZO step q=%d", q), q, false, true); err != nil {
				return err
			}
		}
		if *grouped {
			if err := step("grouped q=1, cache", 1, true, true); err != nil {
				return err
			}
			if err := step("grouped q=1, no cache", 1, true, false); err != nil {
				return err
			}
		}
	}
	return nil
}

// timedObjective adds up the time spent in the objective's Evaluate: the
// model's forwards of a step's variants, their upload to the backend and
// the losses' way back (on a GPU Evaluate returns only when the losses are
// on the host, so the time is the device's too).
type timedObjective struct {
	zo.Objective
	spent time.Duration
}

func (o *timedObjective) Evaluate(base [][]float32, variants []zo.Variant) ([]float64, error) {
	defer func(t0 time.Time) { o.spent += time.Since(t0) }(time.Now())
	return o.Objective.Evaluate(base, variants)
}
