package main

import (
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"strings"
	"time"

	"github.com/meazo-go/meazo/internal/bytesize"
	"github.com/meazo-go/meazo/internal/cli"
	"github.com/meazo-go/meazo/internal/stats"
	"github.com/meazo-go/meazo/internal/sysmem"
	"github.com/meazo-go/meazo/model"
	"github.com/meazo-go/meazo/tensor"
	"github.com/meazo-go/meazo/tensor/backends"
	"github.com/meazo-go/meazo/tensor/cpu"
)

func init() {
	register("forward", cli.Help{
		Summary:  "full-model forward time, tokens/s, GFLOP/s and peak RSS on random weights",
		Synopsis: "[-model NAME] [-shapes BxT,...] [-backend B] [flags]",
		Does: `Times a model's full forward, per batch shape, on random weights of its real shapes: what a run's evaluations
cost on this machine, and how far from the FMA peak (PyTorch's forward: scripts/bench_forward.sh).`,
		Reads: randomWeights,
		Prints: `a header (model, threads, backend, the FMA peak), then a line per BxT shape: median seconds, tokens/s, GFLOP/s,
% of peak and peak RSS MiB; -generate adds ms per decode step, -ops the time per op class.`,
		Example: "meazo-bench forward -model qwen06b -shapes 8x128,8x256",
	}, runForward)
}

// forwardBench is forward's settings (its flags).
type forwardBench struct {
	name, shapes, backend, profile string
	reps, threads, generate        int
	logits, ops, bf16, lossAll     bool
	cfg                            *model.Config // -model's, resolved before a backend is opened
}

func parseForward(args []string) (*forwardBench, error) {
	var fb forwardBench
	fs := modes.Flags("forward")
	fs.StringVar(&fb.name, "model", "llama1b", modelUsage)
	fs.StringVar(&fb.shapes, "shapes", "1x128,8x128,8x256", "comma-separated BxT batch shapes")
	fs.IntVar(&fb.reps, "reps", 3, "timed repetitions per shape after one warm-up; the median is reported")
	fs.IntVar(&fb.threads, "threads", runtime.GOMAXPROCS(0), "CPU worker threads")
	fs.StringVar(&fb.backend, "backend", "auto", backends.Usage)
	fs.StringVar(&fb.profile, "cpuprofile", "", "write a CPU profile of the timed forwards to this file")
	fs.IntVar(&fb.generate, "generate", 0, "also time greedy generation of this many new tokens per row after each BxT prompt (KV cache), reporting ms per decode step")
	fs.BoolVar(&fb.logits, "logits", true, "compute logits at every position and return them to the host (as a plain HF forward does); false: the LM head runs only where a loss needs it")
	fs.BoolVar(&fb.ops, "ops", false, "also report the time per backend op class (MatMul, Attention, RMSNorm, ...) per forward; the CPU backend only, whose calls return when their work is done")
	fs.BoolVar(&fb.bf16, "bf16", false, bf16Usage)
	cli.Alias(fs, "bf16-weights", "bf16") // meazo-train's and meazo-eval task's spelling
	fs.BoolVar(&fb.lossAll, "loss-all", false, "supervise every position instead: the LM head at every position and the loss on the backend, so only the losses come back (HF's model(input_ids, labels=input_ids).loss); on a GPU this times the forward without a host copy of the logits (implies -logits=false)")
	if err := cli.Parse(fs, args); err != nil {
		return nil, cli.Usage(err)
	}
	if err := checkThreads(fb.threads); err != nil {
		return nil, err
	}
	if err := cli.NoArgs(fs); err != nil {
		return nil, err
	}
	if err := backends.CheckName(fb.backend); err != nil {
		return nil, cli.Usage(fmt.Errorf("-backend: %w", err))
	}
	if fb.lossAll {
		fb.logits = false
	}
	if fb.reps < 1 {
		return nil, cli.Usage(fmt.Errorf("-reps: must be >= 1, got %d", fb.reps))
	}
	for _, s := range strings.Split(fb.shapes, ",") {
		if _, _, err := parseShape(s); err != nil {
			return nil, cli.Usage(fmt.Errorf("-shapes: %w", err))
		}
	}
	var err error
	if fb.cfg, err = benchConfig(fb.name); err != nil {
		return nil, err
	}
	return &fb, nil
}

func runForward(args []string, stdout io.Writer) error {
	fb, err := parseForward(args)
	if err != nil {
		return err
	}
	be, err := backends.Open(fb.backend, fb.threads, stdout)
	if err != nil {
		return err
	}
	defer be.Close()
	var timer *opTimer
	if fb.ops {
		if be.Name() != "cpu" {
			return fmt.Errorf("-ops: backend %s queues its work and returns before it is done, so per-call times would be launch times; profile it with its own tools (ncu)", be.Name())
		}
		timer = newOpTimer(be)
		be = timer
	}
	m, peak, err := fb.setup(stdout, be)
	if err != nil {
		return err
	}
	stop, err := startProfile(fb.profile, fb.name)
	if err != nil {
		return err
	}
	defer stop()
	r := rand.New(rand.NewPCG(1, 2))
	for _, s := range strings.Split(fb.shapes, ",") {
		if err := fb.shape(stdout, m, timer, r, s, peak); err != nil {
			return err
		}
	}
	return nil
}

// setup builds the model's random weights on be and prints the header: the
// model, the FMA peak of the GEMM path (the CPU backend), the table's head.
// The forward is ~95 % GEMM, so GFLOP/s against that peak says how far the
// whole pass is from the machine's arithmetic limit.
func (fb *forwardBench) setup(stdout io.Writer, be tensor.Backend) (*model.Model, float64, error) {
	cfg := fb.cfg
	start := time.Now()
	m, err := model.NewRandomWith(cfg, 1, 0.02, model.LoadOptions{Backend: be, BF16Weights: fb.bf16})
	if err != nil {
		return nil, 0, err
	}
	runtime.GC()
	fmt.Fprintf(stdout, "# %s: %d layers, hidden %d, vocab %d; random %s weights built and packed in %.1fs; %d CPU threads; %s\n",
		fb.name, cfg.NumLayers, cfg.HiddenSize, cfg.VocabSize, weightsName(fb.bf16), time.Since(start).Seconds(), fb.threads, be.Describe())
	peak, peakWhat := 0.0, "n/a for backend "+be.Name()
	if be.Name() == "cpu" {
		peak, peakWhat = fmaPeak(fb.threads, cpu.GEMMPath())
	}
	if peak > 0 {
		fmt.Fprintf(stdout, "# FMA peak of GEMM path %s (%s, %d goroutines, best of 9): %.1f GFLOP/s\n", cpu.GEMMPath(), peakWhat, fb.threads, peak)
	} else {
		fmt.Fprintf(stdout, "# FMA peak: %s\n", peakWhat)
	}
	fmt.Fprintf(stdout, "%-8s %10s %12s %10s %7s %12s\n", "shape", "seconds", "tokens/s", "GFLOP/s", "%peak", "peak RSS MiB")
	return m, peak, nil
}

// shape times the forward of one BxT batch of random tokens (the median of
// the timed repetitions after a warm-up) and prints its line, the op
// classes' times with -ops, and the generation's with -generate.
func (fb *forwardBench) shape(stdout io.Writer, m *model.Model, timer *opTimer, r *rand.Rand, s string, peak float64) error {
	b, t, err := parseShape(s)
	if err != nil {
		return err
	}
	// A training-shaped loss without -logits: the last token of each row
	// supervised, or every one.
	supervised := 1
	if fb.lossAll {
		supervised = t
	}
	if err := checkForwardMemory(&m.Config, b, t, fb.logits, sysmem.Total()); err != nil {
		return fmt.Errorf("-shapes %s: %w", s, err)
	}
	in, labels := randomBatch(r, m.VocabSize, b, t, supervised)
	opts := model.Options{Logits: fb.logits}
	if !fb.logits {
		opts.Labels = labels
	}
	times, err := timings(1, fb.reps, func(run int) {
		// Free the previous forward's output before the next one, as
		// PyTorch's reference counting does (untimed).
		runtime.GC()
		if run == 1 && timer != nil {
			timer.reset() // the first run warms up
		}
	}, func() error {
		_, err := m.Forward(in, opts)
		return err
	})
	if err != nil {
		return err
	}
	sec := stats.Quantiles(seconds(times), 0.5)[0] // the median run (the upper middle one for an even count)
	headRows := b                                  // the LM head's rows: one per row for a last-token loss,
	switch {
	case fb.logits:
		headRows = b * t // every position,
	case fb.lossAll:
		headRows = b * (t - 1) // every position that predicts a label (labels are shifted, as in HF)
	}
	g := forwardFLOPs(&m.Config, b, t, headRows) / sec / 1e9
	fmt.Fprintf(stdout, "%-8s %10.3f %12.1f %10.1f %7s %12.0f\n", s, sec, float64(b*t)/sec, g, pctStr(g, peak), peakRSSMiB())
	reportDeviceMemory(stdout, m.Backend)
	if timer != nil {
		var timed time.Duration
		for _, d := range times {
			timed += d
		}
		timer.report(stdout, timed, fb.reps)
	}
	if fb.generate > 0 {
		return timeGenerate(stdout, m, in, fb.generate)
	}
	return nil
}

// timeGenerate times greedy generation of n tokens per row after the prompt
// in, and reports the prompt's time (up to the first logits) and the time
// per decode step (one new token per row).
func timeGenerate(stdout io.Writer, m *model.Model, in model.Input, n int) error {
	runtime.GC()
	var steps int
	t0 := time.Now()
	var first time.Time
	_, err := m.Generate(in, model.GenerateOptions{
		MaxNewTokens: n,
		StopIDs:      []int{}, // never stop early: time exactly n steps
		OnStep: func(step int, _ []float32) {
			if step == 0 {
				first = time.Now() // the prompt has been processed
			}
			steps = step + 1
		},
	})
	if err != nil {
		return err
	}
	total := time.Since(t0).Seconds()
	decode := time.Since(first).Seconds()
	fmt.Fprintf(stdout, "  generate %d tokens/row: prompt %.3fs, %.1f ms per decode step (%d rows), %.1f new tokens/s\n",
		n, total-decode, 1000*decode/float64(max(steps-1, 1)), in.B, float64(in.B*(steps-1))/decode)
	return nil
}

// forwardFLOPs counts the multiply-adds (×2) of the matrix products of one
// forward: every projection, the attention products as computed (all T×T
// scores, masked or not), and the LM head at headRows rows.
func forwardFLOPs(c *model.Config, b, t, headRows int) float64 {
	n := float64(b * t)
	d, hd := float64(c.HiddenSize), float64(c.HeadDim)
	q, kv := float64(c.NumHeads)*hd, float64(c.NumKVHeads)*hd
	perLayer := 2*n*d*(q+2*kv) + 2*n*q*d + 3*2*n*d*float64(c.IntermediateSize)
	perLayer += 2 * 2 * float64(b) * float64(c.NumHeads) * float64(t) * float64(t) * hd
	head := 2 * float64(headRows) * d * float64(c.VocabSize)
	return float64(c.NumLayers)*perLayer + head
}

// checkForwardMemory refuses a batch whose forward needs more than the
// machine's memory (total bytes; 0: unknown, nothing checked), rather than
// dying of it: at least its hidden states (about 8 of the width and 3 of
// the MLP's a token, in float32) and, with logits, those of every
// position.
func checkForwardMemory(c *model.Config, b, t int, logits bool, total uint64) error {
	perToken := float64(8*c.HiddenSize + 3*c.IntermediateSize)
	if logits {
		perToken += float64(c.VocabSize)
	}
	need := 4 * perToken * float64(b) * float64(t)
	if total > 0 && need > float64(total) {
		return fmt.Errorf("a forward of %d×%d takes at least %s, more than this machine's %s", b, t,
			bytesize.String(int64(min(need, 1<<62))), bytesize.String(int64(min(total, 1<<62))))
	}
	return nil
}
