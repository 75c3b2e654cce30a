package main

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/meazo-go/meazo/internal/outpath"
	"github.com/meazo-go/meazo/model"
	"github.com/meazo-go/meazo/tensor"
	"github.com/meazo-go/meazo/zo"
)

// What the modes share: their batches of random tokens, their timing of
// repeated runs, the memory they report and their CPU profiles.

// bf16Usage documents -bf16 of forward, zostep and fullstep.
const bf16Usage = "random weights rounded to bfloat16 and kept so in memory, as a BF16 checkpoint (the published ones) with model.bf16_weights"

// weightsName names the random weights' storage for the header lines.
func weightsName(bf16 bool) string {
	if bf16 {
		return "bfloat16"
	}
	return "float32"
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

// randomBatch is a b×t batch of tokens below vocab drawn from rng, in
// order, with labels: the last supervised positions of each row are
// labelled with their own token, the others -100.
func randomBatch(rng *rand.Rand, vocab, b, t, supervised int) (model.Input, []int) {
	in := model.Input{B: b, T: t, Tokens: make([]int, b*t)}
	labels := make([]int, b*t)
	for i := range in.Tokens {
		in.Tokens[i] = rng.IntN(vocab)
		labels[i] = -100
		if i%t >= t-supervised {
			labels[i] = in.Tokens[i]
		}
	}
	return in, labels
}

// timings runs f warm times, then reps times more, and returns how long
// each of the latter took. before, if not nil, runs before each run of f
// (untimed), with the run's index (warm-up runs first).
func timings(warm, reps int, before func(run int), f func() error) ([]time.Duration, error) {
	var ts []time.Duration
	for i := range warm + reps {
		if before != nil {
			before(i)
		}
		t0 := time.Now()
		if err := f(); err != nil {
			return nil, err
		}
		if i >= warm {
			ts = append(ts, time.Since(t0))
		}
	}
	return ts, nil
}

// seconds returns the durations in seconds.
func seconds(ds []time.Duration) []float64 {
	s := make([]float64, len(ds))
	for i, d := range ds {
		s[i] = d.Seconds()
	}
	return s
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

// reportDeviceMemory prints the GPU memory a device backend has held at
// most so far (nothing for the CPU backend, whose memory is the RSS).
func reportDeviceMemory(w io.Writer, be tensor.Backend) {
	if dm, ok := be.(tensor.DeviceMemory); ok {
		_, peak := dm.DeviceMemory()
		fmt.Fprintf(w, "#   peak GPU memory held by the backend so far: %.0f MiB (weights, buffers, cache; not the CUDA context)\n", float64(peak)/(1<<20))
	}
}

// peakRSSMiB reads the process's peak resident set size (VmHWM) from /proc
// (Linux; 0 elsewhere).
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

// resetPeak starts the peak-memory measurement: on the CPU the process's
// peak resident set (Linux: /proc/self/clear_refs), after a collection that
// returns the loading's garbage; on a GPU the backend's peak.
func resetPeak(be tensor.Backend) {
	debug.FreeOSMemory()
	os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
	if r, ok := be.(interface{ ResetPeak() }); ok {
		r.ResetPeak()
	}
}

// reportPeak prints the peak resident set size since resetPeak (and a
// GPU backend's peak device memory).
func reportPeak(w io.Writer, be tensor.Backend) {
	if mib := peakRSSMiB(); mib > 0 {
		fmt.Fprintf(w, "peak RSS %.3f GiB\n", mib/1024)
	} else {
		fmt.Fprintln(w, "peak RSS not measured (it is read from /proc, on Linux only)")
	}
	reportDeviceMemory(w, be)
}

// startProfile starts a CPU profile written to path (nothing if path is
// empty); stop ends it and closes the file. A path that is one of inputs
// (the -model config), or lies in a model or run directory, is refused:
// os.Create would truncate it.
func startProfile(path string, inputs ...string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	if err := outpath.CheckFile("-cpuprofile", path, inputs...); err != nil {
		return nil, err
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

// stepRun takes steps ZO steps of eng on obj, each on a new batch that next
// draws (on the host, untimed), and prints their time per step, the loss
// of the first and last, and the device memory after: that a long run keeps
// its speed and memory. A non-finite loss stops it with an error.
func stepRun(stdout io.Writer, be tensor.Backend, shape string, steps int, eng *zo.Engine, obj zo.Objective, next func()) error {
	var spent time.Duration
	var first, last float64
	for i := range steps {
		next()
		t0 := time.Now()
		st, err := eng.Step(obj)
		if err != nil {
			return fmt.Errorf("step %d of %d: %w", i+1, steps, err)
		}
		spent += time.Since(t0)
		if math.IsNaN(st.Loss) || math.IsInf(st.Loss, 0) {
			return fmt.Errorf("step %d of %d: loss %v", i+1, steps, st.Loss)
		}
		if i == 0 {
			first = st.Loss
		}
		last = st.Loss
	}
	fmt.Fprintf(stdout, "%-8s %d MEAZO steps on new random batches: %.3f s/step (%.1f s in all); loss %.4f at the first, %.4f at the last\n",
		shape, steps, spent.Seconds()/float64(steps), spent.Seconds(), first, last)
	reportDeviceMemory(stdout, be)
	return nil
}
