package main

import (
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/meazo-go/meazo/internal/cli"
	"github.com/meazo-go/meazo/model"
	"github.com/meazo-go/meazo/tensor"
	"github.com/meazo-go/meazo/tensor/backends"
	"github.com/meazo-go/meazo/tensor/cpu"
)

func init() {
	register("forward", "full-model forward time, tokens/s, GFLOP/s and peak RSS on random weights", runForward)
}

// bf16Usage documents -bf16 of forward and zostep.
const bf16Usage = "random weights rounded to bfloat16 and kept so in memory, as a BF16 checkpoint (the published ones) with model.bf16_weights"

// weightsName names the random weights' storage for the header lines.
func weightsName(bf16 bool) string {
	if bf16 {
		return "bfloat16"
	}
	return "float32"
}

func runForward(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("forward", flag.ContinueOnError)
	name := fs.String("model", "llama1b", "llama1b or qwen06b (published configs, random weights), or a path to a config.json")
	shapes := fs.String("shapes", "1x128,8x128,8x256", "comma-separated BxT batch shapes")
	reps := fs.Int("reps", 3, "timed repetitions per shape after one warm-up; the median is reported")
	threads := fs.Int("threads", runtime.GOMAXPROCS(0), "CPU worker threads")
	backend := fs.String("backend", "cpu", backends.Usage)
	profile := fs.String("cpuprofile", "", "write a CPU profile of the timed forwards to this file")
	generate := fs.Int("generate", 0, "also time greedy generation of this many new tokens per row after each BxT prompt (KV cache), reporting ms per decode step")
	logits := fs.Bool("logits", true, "compute logits at every position and return them to the host (as a plain HF forward does); false: the LM head runs only where a loss needs it")
	ops := fs.Bool("ops", false, "also report the time per backend op class (MatMul, Attention, RMSNorm, ...) per forward; the CPU backend only, whose calls return when their work is done")
	bf16 := fs.Bool("bf16", false, bf16Usage)
	lossAll := fs.Bool("loss-all", false, "supervise every position instead: the LM head at every position and the loss on the backend, so only the losses come back (HF's model(input_ids, labels=input_ids).loss); on a GPU this times the forward without a host copy of the logits (implies -logits=false)")
	if err := cli.Parse(fs, args); err != nil {
		return cli.Usage(err)
	}
	if *lossAll {
		*logits = false
	}
	if *reps < 1 {
		return fmt.Errorf("-reps: must be >= 1, got %d", *reps)
	}
	be, err := backends.Open(*backend, *threads, stdout)
	if err != nil {
		return err
	}
	defer be.Close()
	var timer *opTimer
	if *ops {
		if be.Name() != "cpu" {
			return fmt.Errorf("-ops: backend %s queues its work and returns before it is done, so per-call times would be launch times; profile it with its own tools (ncu)", be.Name())
		}
		timer = newOpTimer(be)
		be = timer
	}
	cfg, err := benchConfig(*name)
	if err != nil {
		return err
	}
	start := time.Now()
	m, err := model.NewRandomWith(cfg, 1, 0.02, model.LoadOptions{Backend: be, BF16Weights: *bf16})
	if err != nil {
		return err
	}
	runtime.GC()
	fmt.Fprintf(stdout, "# %s: %d layers, hidden %d, vocab %d; random %s weights built and packed in %.1fs; %d CPU threads; %s\n",
		*name, cfg.NumLayers, cfg.HiddenSize, cfg.VocabSize, weightsName(*bf16), time.Since(start).Seconds(), *threads, be.Describe())
	// The FMA peak of the GEMM path in use (the CPU backend only): the forward
	// is ~95 % GEMM, so GFLOP/s against it says how far the whole pass is
	// from the machine's arithmetic limit.
	peak, peakWhat := 0.0, "n/a for backend "+be.Name()
	if be.Name() == "cpu" {
		peak, peakWhat = fmaPeak(*threads, cpu.GEMMPath())
	}
	if peak > 0 {
		fmt.Fprintf(stdout, "# FMA peak of GEMM path %s (%s, %d goroutines, best of 9): %.1f GFLOP/s\n", cpu.GEMMPath(), peakWhat, *threads, peak)
	} else {
		fmt.Fprintf(stdout, "# FMA peak: %s\n", peakWhat)
	}
	fmt.Fprintf(stdout, "%-8s %10s %12s %10s %7s %12s\n", "shape", "seconds", "tokens/s", "GFLOP/s", "%peak", "peak RSS MiB")
	stop, err := startProfile(*profile)
	if err != nil {
		return err
	}
	defer stop()
	r := rand.New(rand.NewPCG(1, 2))
	for _, s := range strings.Split(*shapes, ",") {
		b, t, err := parseShape(s)
		if err != nil {
			return err
		}
		in := model.Input{B: b, T: t, Tokens: make([]int, b*t)}
		for i := range in.Tokens {
			in.Tokens[i] = r.IntN(cfg.VocabSize)
		}
		opts := model.Options{Logits: *logits}
		if !*logits { // a training-shaped loss: the last token of each row supervised, or every one
			opts.Labels = make([]int, b*t)
			for i := range opts.Labels {
				opts.Labels[i] = -100
				if *lossAll || i%t == t-1 {
					opts.Labels[i] = in.Tokens[i]
				}
			}
		}
		var times []float64
		var timed time.Duration
		for rep := 0; rep <= *reps; rep++ {
			// Free the previous forward's output before the next one, as
			// PyTorch's reference counting does (untimed).
			runtime.GC()
			if rep == 1 && timer != nil {
				timer.reset() // the first run warms up
			}
			t0 := time.Now()
			if _, err := m.Forward(in, opts); err != nil {
				return err
			}
			if rep > 0 { // the first run warms up
				times = append(times, time.Since(t0).Seconds())
				timed += time.Since(t0)
			}
		}
		slices.Sort(times)
		sec := times[len(times)/2]
		headRows := b // the LM head's rows: one per row for a last-token loss,
		switch {
		case *logits:
			headRows = b * t // every position,
		case *lossAll:
			headRows = b * (t - 1) // every position that predicts a label (labels are shifted, as in HF)
		}
		flops := forwardFLOPs(cfg, b, t, headRows)
		g := flops / sec / 1e9
		fmt.Fprintf(stdout, "%-8s %10.3f %12.1f %10.1f %7s %12.0f\n", s, sec, float64(b*t)/sec, g, pctStr(g, peak), peakRSSMiB())
		reportDeviceMemory(stdout, be)
		if timer != nil {
			timer.report(stdout, timed, *reps)
		}
		if *generate > 0 {
			if err := timeGenerate(stdout, m, in, *generate); err != nil {
				return err
			}
		}
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

func parseShape(s string) (b, t int, err error) {
	parts := strings.Split(strings.TrimSpace(s), "x")
	if len(parts) == 2 {
		b, err1 := strconv.Atoi(parts[0])
		t, err2 := strconv.Atoi(parts[1])
		if err1 == nil && err2 == nil && b > 0 && t > 0 {
			return b, t, nil
		}
	}
	return 0, 0, fmt.Errorf("bad shape %q, want BxT such as 8x128", s)
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

// reportDeviceMemory prints the GPU memory a device backend has held at
// most so far (nothing for the CPU backend, whose memory is the RSS).
func reportDeviceMemory(w io.Writer, be tensor.Backend) {
	if dm, ok := be.(tensor.DeviceMemory); ok {
		_, peak := dm.DeviceMemory()
		fmt.Fprintf(w, "#   peak GPU memory held by the backend so far: %.0f MiB (weights, buffers, cache; not the CUDA context)\n", float64(peak)/(1<<20))
	}
}

// peakRSSMiB reads the process's peak resident set size (VmHWM) from /proc.
func peakRSSMiB() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return 0
}

// startProfile starts a CPU profile written to path (nothing if path is
// empty); stop ends it and closes the file.
func startProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpu profile %s: %w", path, err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
