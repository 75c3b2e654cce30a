package main

import (
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"strings"
	"time"

	"github.com/meazo-go/meazo/internal/cli"
	"github.com/meazo-go/meazo/lora"
	"github.com/meazo-go/meazo/model"
	"github.com/meazo-go/meazo/prompttune"
	"github.com/meazo-go/meazo/tensor/backends"
	"github.com/meazo-go/meazo/train"
	"github.com/meazo-go/meazo/zo"
)

func init() {
	register("zomem", cli.Help{
		Summary:  "the peak memory of an adapter's ZO step (LoRA or prompt tuning, any optimizer, joint or grouped) or of the plain forward",
		Synopsis: "[-model NAME] [-shape BxT] [-what forward|step] [-adapter lora|prompt] [-opt O] [-q Q] [-grouped] [flags]",
		Does: `Takes ZO steps of a fresh adapter (LoRA r=16 on q_proj and v_proj, or -targets; or -virtual prompt-tuning
tokens) on random weights, or plain forwards of the same batch (loss only, as a step's are, no adapter),
and reports the peak memory since the model was made: what training costs beyond inference. Run each
-what, -adapter and -opt in its own process: a peak is the process's.`,
		Reads: randomWeights,
		Prints: `a header (model, weights, shape, threads, backend), then for step: the adapter, the optimizer, the time
per step, the last losses and the optimizer's state; for forward: the forward's time, then, after its peak,
a forward over the 2q·B rows a joint step evaluates at once; each followed by its peak memory.`,
		Example: "meazo-bench zomem -model qwen06b -shape 16x64 -what step -adapter lora -opt zo-adam",
	}, runZOMem)
}

// zoMemBench is zomem's settings (its flags).
type zoMemBench struct {
	name, what, adapter, opt, backend string
	b, t, q, steps, virtual, threads  int
	grouped, bf16                     bool
	targets                           []string
	cfg                               *model.Config // -model's, resolved before a backend is opened
}

func parseZOMem(args []string) (*zoMemBench, error) {
	var zm zoMemBench
	fs := modes.Flags("zomem")
	fs.StringVar(&zm.name, "model", "qwen06b", modelUsage)
	shape := fs.String("shape", "16x64", "BxT batch (SST-2-like 16x64); the last 3 tokens of each row are supervised")
	fs.StringVar(&zm.what, "what", "step", "step: ZO steps of the adapter; forward: plain forwards of the batch (no adapter), then one over the 2q·B rows of a joint step")
	fs.StringVar(&zm.adapter, "adapter", "lora", "lora (r=16 on -targets of every layer) or prompt (-virtual tokens)")
	fs.StringVar(&zm.opt, "opt", "meazo", "meazo, zo-sgd, zo-adam, radazo or fzoo")
	fs.IntVar(&zm.q, "q", 1, "directions per step (fzoo needs at least 2)")
	fs.BoolVar(&zm.grouped, "grouped", false, "LoRA only: one parameter group per layer, grouped estimation with prefix caching")
	fs.IntVar(&zm.virtual, "virtual", 20, "prompt tuning's virtual tokens")
	fs.IntVar(&zm.steps, "steps", 2, "steps (or forwards) taken: the first may not allocate all a run does (the noise the next step draws ahead)")
	fs.IntVar(&zm.threads, "threads", runtime.GOMAXPROCS(0), "CPU worker threads")
	fs.StringVar(&zm.backend, "backend", "auto", backends.Usage)
	fs.BoolVar(&zm.bf16, "bf16", false, bf16Usage)
	cli.Alias(fs, "bf16-weights", "bf16") // meazo-train's and meazo-eval task's spelling
	targets := fs.String("targets", "q_proj,v_proj", "comma-separated LoRA target projections, or all-linear")
	if err := cli.Parse(fs, args); err != nil {
		return nil, cli.Usage(err)
	}
	if err := checkThreads(zm.threads); err != nil {
		return nil, err
	}
	if err := cli.NoArgs(fs); err != nil {
		return nil, err
	}
	if err := backends.CheckName(zm.backend); err != nil {
		return nil, cli.Usage(fmt.Errorf("-backend: %w", err))
	}
	var err error
	if zm.b, zm.t, err = parseShape(*shape); err != nil {
		return nil, cli.Usage(fmt.Errorf("-shape: %w", err))
	}
	switch {
	case zm.what != "step" && zm.what != "forward":
		return nil, cli.Usage(fmt.Errorf("-what %q: want step or forward", zm.what))
	case zm.adapter != "lora" && zm.adapter != "prompt":
		return nil, cli.Usage(fmt.Errorf("-adapter %q: want lora or prompt", zm.adapter))
	case zm.grouped && zm.adapter != "lora":
		return nil, cli.Usage(fmt.Errorf("-grouped: one group per layer is LoRA's (a prompt is one group)"))
	case zm.q < 1:
		return nil, cli.Usage(fmt.Errorf("-q: must be >= 1, got %d", zm.q))
	case zm.steps < 1:
		return nil, cli.Usage(fmt.Errorf("-steps: must be >= 1, got %d", zm.steps))
	case zm.virtual < 1:
		return nil, cli.Usage(fmt.Errorf("-virtual: must be >= 1, got %d", zm.virtual))
	}
	if _, err := benchOptimizer(zm.opt); err != nil { // before the model is made
		return nil, err
	}
	if zm.cfg, err = benchConfig(zm.name); err != nil {
		return nil, err
	}
	zm.targets = strings.Split(*targets, ",")
	if _, err := lora.TargetNames(zm.cfg, zm.targets); err != nil {
		return nil, cli.Usage(fmt.Errorf("-targets: %w", err))
	}
	return &zm, nil
}

func runZOMem(args []string, stdout io.Writer) error {
	zm, err := parseZOMem(args)
	if err != nil {
		return err
	}
	be, err := backends.Open(zm.backend, zm.threads, stdout)
	if err != nil {
		return err
	}
	defer be.Close()
	m, err := model.NewRandomWith(zm.cfg, 1, 0.02, model.LoadOptions{Backend: be, BF16Weights: zm.bf16})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "# %s, %s weights, %dx%d, %d CPU threads, %s\n", zm.name, weightsName(zm.bf16), zm.b, zm.t, zm.threads, be.Describe())
	// What follows is measured from here, as fullstep's: the model's
	// making (random weights drawn on the host) is not.
	resetPeak(be)
	if zm.what == "forward" {
		return zm.forwards(stdout, m)
	}
	return zm.step(stdout, m)
}

// batch is the B×T batch of random tokens, the last 3 of each row
// supervised, b rows of it (the same rows first whatever b).
func (zm *zoMemBench) batch(vocab, b int) (model.Input, []int) {
	return randomBatch(rand.New(rand.NewPCG(3, 4)), vocab, b, zm.t, 3)
}

// forwards runs -steps plain forwards of the batch (loss only, no adapter:
// inference's memory) and reports their peak, then one forward over the
// 2q·B rows a joint step evaluates at once and the peak again: what a
// step's batched evaluation of its variants would take with one set of
// weights, to tell the step's rows from the rest of its memory.
func (zm *zoMemBench) forwards(stdout io.Writer, m *model.Model) error {
	in, labels := zm.batch(m.VocabSize, zm.b)
	t0 := time.Now()
	for range zm.steps {
		if _, err := m.Forward(in, model.Options{Labels: labels}); err != nil {
			return fmt.Errorf("forward of %dx%d: %w", zm.b, zm.t, err)
		}
	}
	fmt.Fprintf(stdout, "plain forward of %dx%d, loss only: %.3f s each (%d)\n", zm.b, zm.t, time.Since(t0).Seconds()/float64(zm.steps), zm.steps)
	reportPeak(stdout, m.Backend)
	wide, wlabels := zm.batch(m.VocabSize, 2*zm.q*zm.b)
	t0 = time.Now()
	if _, err := m.Forward(wide, model.Options{Labels: wlabels}); err != nil {
		return fmt.Errorf("forward of %dx%d: %w", 2*zm.q*zm.b, zm.t, err)
	}
	fmt.Fprintf(stdout, "then a forward of %dx%d (the rows of a joint step at q=%d, one set of weights): %.3f s\n", 2*zm.q*zm.b, zm.t, zm.q, time.Since(t0).Seconds())
	reportPeak(stdout, m.Backend)
	return nil
}

// newAdapter makes the fresh adapter a step trains (LoRA's or prompt
// tuning's; seeded, so every process trains the same) and its objective on
// the batch, with prefix caching (a grouped step's; the others' variants
// all start at layer 0).
func (zm *zoMemBench) newAdapter(m *model.Model) (params [][]float32, what string, obj *train.Objective, err error) {
	if zm.adapter == "prompt" {
		p, err := prompttune.Random(m, zm.virtual, 1)
		if err != nil {
			return nil, "", nil, err
		}
		return p.Params(), fmt.Sprintf("prompt tuning, %d virtual tokens", zm.virtual), train.NewObjective(m, nil, true), nil
	}
	a, err := lora.New(m, lora.Options{Seed: 1, Targets: zm.targets, GroupByLayer: zm.grouped})
	if err != nil {
		return nil, "", nil, err
	}
	names, _ := lora.TargetNames(zm.cfg, zm.targets)
	return a.Params(), fmt.Sprintf("LoRA r=16 on %s of every layer", strings.Join(names, "/")), train.NewObjective(m, a, true), nil
}

// step takes -steps ZO steps of a fresh adapter on the batch and reports
// their time, the last step's losses, the optimizer's state and the peak
// memory.
func (zm *zoMemBench) step(stdout io.Writer, m *model.Model) error {
	params, what, obj, err := zm.newAdapter(m)
	if err != nil {
		return err
	}
	obj.SetBatch(zm.batch(m.VocabSize, zm.b))
	opt, err := benchOptimizer(zm.opt)
	if err != nil {
		return err
	}
	mode, estimation := zo.Joint, "joint"
	if zm.grouped {
		mode, estimation = zo.Grouped, fmt.Sprintf("grouped (%d groups, one per layer) with prefix caching", len(params))
	}
	eng, err := zo.New(params, opt, zo.Config{Eps: 1e-3, Q: zm.q, Seed: 1, Mode: mode})
	if err != nil {
		return err
	}
	count := 0
	for _, p := range params {
		count += len(p)
	}
	var last *zo.Stats
	t0 := time.Now()
	for i := range zm.steps {
		if last, err = eng.Step(obj); err != nil {
			return fmt.Errorf("step %d of %d: %w", i+1, zm.steps, err)
		}
	}
	fmt.Fprintf(stdout, "%s, %d parameters; %s step, q=%d, %s: %.3f s each (%d)\n",
		what, count, zm.opt, zm.q, estimation, time.Since(t0).Seconds()/float64(zm.steps), zm.steps)
	fmt.Fprintf(stdout, "losses %.4f (%d variants), optimizer state %d bytes\n", last.Losses, len(last.Losses), opt.StateBytes())
	reportPeak(stdout, m.Backend)
	return nil
}
