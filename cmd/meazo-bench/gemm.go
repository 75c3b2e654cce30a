package main

import (
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/meazo-go/meazo/internal/cli"
	"github.com/meazo-go/meazo/internal/stats"
	"github.com/meazo-go/meazo/noise"
	"github.com/meazo-go/meazo/tensor"
	"github.com/meazo-go/meazo/tensor/cpu"
)

func init() {
	register("gemm", cli.Help{
		Summary:  "GEMM GFLOP/s on the model shapes, vs OpenBLAS (-tags openblas) and the FMA peak",
		Synopsis: "[-models LIST] [-m LIST] [-path P] [-tile T] [flags]",
		Does: `Times the CPU backend's matrix products on the models' layer shapes (M rows × each weight matrix), against
OpenBLAS in the same run when built with -tags openblas, the machine's FMA peak and its memory bandwidth:
which GEMM path and tile run fastest here (scripts/bench_gemm.sh).`,
		Reads: "nothing: random matrices of the shapes of -models.",
		Prints: `the path, tile, threads and clock; the FMA peak and the memory bandwidth; then a line per shape
(M, K, N): our median GFLOP/s with its % of the peak and of the roof, the best repetition, and
OpenBLAS's with the ratio where built with it; with -pair, full-parameter ZO's product of the same rows
(the first half reading W + εZ, the second W − εZ, the noise drawn as it runs) and its time over ours.`,
		Example: "meazo-bench gemm -models llama1b -m 8,128",
	}, runGEMM)
}

// linear is one nn.Linear shape of a target model (K in, N out).
type linear struct {
	name string
	k, n int
}

var modelLinears = map[string][]linear{
	"llama1b": {
		{"q_o", 2048, 2048}, {"k_v", 2048, 512}, {"gate_up", 2048, 8192}, {"down", 8192, 2048}, {"lm_head", 2048, 128256},
	},
	"qwen06b": {
		{"q", 1024, 2048}, {"k_v", 1024, 1024}, {"o", 2048, 1024}, {"gate_up", 1024, 3072}, {"down", 3072, 1024}, {"lm_head", 1024, 151936},
	},
	// ViT-B/16: query, key, value and the attention output are 768 wide; a
	// batch of b images is M = 197·b rows (788 at the step's batch 4).
	"vitb16": {
		{"qkvo", 768, 768}, {"fc1", 768, 3072}, {"fc2", 3072, 768},
	},
}

// gemmBench is gemm's settings (its flags), and the limits its rows are
// measured against.
type gemmBench struct {
	models          string
	ms              []int
	reps, threads   int
	lmHead, bf16    bool
	pair            bool
	wk              cpu.Workers
	peak, bandwidth float64 // the FMA peak (the best seen so far) and the memory read bandwidth
}

func parseGEMM(args []string) (*gemmBench, error) {
	gb := gemmBench{}
	fs := modes.Flags("gemm")
	fs.StringVar(&gb.models, "models", "llama1b,qwen06b", "comma-separated models: llama1b, qwen06b, vitb16 (ViT-B/16; its step's batch of 4 images is -m 788)")
	rows := fs.String("m", "8,128,1024", "comma-separated row counts M")
	fs.IntVar(&gb.reps, "reps", 7, "timed repetitions per shape (ours and BLAS interleaved); medians are reported")
	fs.IntVar(&gb.threads, "threads", runtime.GOMAXPROCS(0), "worker threads, for ours and for BLAS")
	fs.BoolVar(&gb.lmHead, "lmhead", false, "include the lm_head shapes (0.5-0.6 GiB of weights each, slow at large M)")
	fs.BoolVar(&gb.bf16, "bf16", false, "also time the bf16-weight variant (PackBF16)")
	fs.BoolVar(&gb.pair, "pair", false, "also time full-parameter ZO's product of the same rows: half W + εZ, half W − εZ (MatMulPackedPerturbed)")
	cputime := fs.Bool("cputime", false, "time by process CPU time / threads instead of wall time (a shared machine: waiting for a core is not counted; Linux)")
	env, err := tensor.EnvOptions(tensor.Options{})
	if err != nil {
		return nil, err
	}
	path := fs.String("path", env.GEMMPath, "GEMM path: avx512, avx2, neon (arm64), portable (default: fastest available, or $MEAZO_GEMM)")
	tile := fs.Int("tile", env.GEMMTile, "tallest tile in rows: 4, 8 or 12 on avx512, 4 or 6 on avx2 (default: calibrated, or $MEAZO_GEMM_TILE; same bits for every height)")
	if err := cli.Parse(fs, args); err != nil {
		return nil, cli.Usage(err)
	}
	if err := checkThreads(gb.threads); err != nil {
		return nil, err
	}
	if err := cli.NoArgs(fs); err != nil {
		return nil, err
	}
	if *path != "" {
		if err := cpu.SetGEMMPath(*path); err != nil {
			return nil, cli.Usage(fmt.Errorf("-path: %w", err))
		}
	}
	if *tile != 0 {
		if err := cpu.SetGEMMTile(*tile); err != nil {
			return nil, cli.Usage(fmt.Errorf("-tile: %w", err))
		}
	}
	for f := range strings.SplitSeq(*rows, ",") {
		m, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || m <= 0 {
			return nil, cli.Usage(fmt.Errorf("-m: bad row count %q", f))
		}
		gb.ms = append(gb.ms, m)
	}
	if gb.reps < 1 {
		return nil, cli.Usage(fmt.Errorf("-reps: must be >= 1, got %d", gb.reps))
	}
	gb.wk = cpu.Workers(gb.threads)
	cpuClock, clockThreads = *cputime, gb.threads
	return &gb, nil
}

func runGEMM(args []string, stdout io.Writer) error {
	gb, err := parseGEMM(args)
	if err != nil {
		return err
	}
	gb.header(stdout)
	r := rand.New(rand.NewPCG(1, 2))
	for model := range strings.SplitSeq(gb.models, ",") {
		ls, ok := modelLinears[model]
		if !ok {
			return cli.Usage(fmt.Errorf("-models: unknown model %q (have llama1b, qwen06b)", model))
		}
		for _, l := range ls {
			if l.name == "lm_head" && !gb.lmHead {
				continue
			}
			gb.linear(stdout, r, model, l)
		}
	}
	return nil
}

// header measures the FMA peak and the memory bandwidth, and prints them
// and the table's head.
func (gb *gemmBench) header(stdout io.Writer) {
	peak, peakWhat := fmaPeak(gb.threads, cpu.GEMMPath())
	gb.peak = peak
	clock := "wall time"
	if cpuClock {
		clock = "process CPU time / threads"
	}
	fmt.Fprintf(stdout, "path %s, tile %s, %d threads, %d reps (medians and the best; ours and %s interleaved), timed by %s\n",
		cpu.GEMMPath(), cpu.GEMMTile(), gb.threads, gb.reps, orNone(blasName), clock)
	if peak > 0 {
		fmt.Fprintf(stdout, "FMA peak of path %s (%s, %d goroutines): %.1f GFLOP/s; %%peak uses the best of this\n"+
			"and a re-measurement just before each row (a shared machine lowers a peak measurement, never raises it)\n",
			cpu.GEMMPath(), peakWhat, gb.threads, peak)
	} else {
		fmt.Fprintf(stdout, "FMA peak: %s\n", peakWhat)
	}
	// The roofline: a call reads its K×N float32 weights (4 bytes each) at
	// least once from memory and does 2·M flops per weight, so it cannot
	// run faster than bandwidth·M/2; for few rows that, not the FMA peak,
	// is the limit (the weights of one model layer do not stay in cache
	// between calls of a real forward; the benchmark's repeated calls may
	// find them in L3, which can put a small shape above its roof).
	gb.bandwidth = readBandwidth(gb.threads)
	_, loads := sumLoads()
	fmt.Fprintf(stdout, "memory read bandwidth (%d goroutines, 256 MiB, %s, best of 3): %.1f GB/s; roof = min(peak, bandwidth·M/2)\n\n",
		gb.threads, loads, gb.bandwidth)
	// best: the fastest repetition, against the peak (itself a best of
	// nine): on a shared machine the fairest pair, since other jobs only
	// ever slow a measurement down.
	head := fmt.Sprintf("%-18s %6s %6s %6s  %9s %7s %7s %9s %7s", "shape", "M", "K", "N", "ours", "%peak", "%roof", "best", "%peak")
	if haveBLAS {
		head += fmt.Sprintf("  %9s %9s", "blas", "ours/blas")
	}
	if gb.bf16 {
		head += fmt.Sprintf("  %9s", "ours-bf16")
	}
	if gb.pair {
		head += fmt.Sprintf("  %9s %9s", "pair", "pair/ours")
	}
	fmt.Fprintln(stdout, head)
}

// linear packs one random weight matrix of shape l and prints a line for
// each row count.
func (gb *gemmBench) linear(stdout io.Writer, r *rand.Rand, model string, l linear) {
	w := randMat(r, l.n*l.k)
	pw := cpu.Pack(gb.wk, w, l.n, l.k)
	var pw16 *cpu.Packed
	if gb.bf16 {
		pw16 = cpu.PackBF16(w, l.n, l.k)
	}
	if !haveBLAS {
		w = nil // let the GC have it
	}
	for _, m := range gb.ms {
		x := randMat(r, m*l.k)
		y := make([]float32, m*l.n)
		ours := func() { cpu.MatMulPacked(gb.wk, y, x, m, pw) }
		blas := func() { blasSgemmNT(y, x, w, m, l.n, l.k, gb.threads) }
		ours16 := func() { cpu.MatMulPacked(gb.wk, y, x, m, pw16) }
		segs := pairSegments(m)
		pair := func() { cpu.MatMulPackedPerturbed(gb.wk, y, x, m, pw, segs) }
		ts := gb.times(ours, blas, ours16, pair)
		if p, _ := fmaPeak(gb.threads, cpu.GEMMPath()); p > gb.peak {
			gb.peak = p
		}
		fmt.Fprintln(stdout, gb.line(model+"/"+l.name, m, l, ts))
	}
}

// pairSegments are the segments of a full-parameter step's product of m
// rows: the + variant of a direction, then its − variant.
func pairSegments(m int) []tensor.Segment {
	z := tensor.Noise{Stream: noise.Stream{Seed: noise.StreamSeed(1, 0), Step: 2}, Dist: noise.Normal, Norm: 1}
	return []tensor.Segment{{Rows: m / 2, P: &tensor.Perturbation{Noise: z, Scale: 1e-3}},
		{Rows: m - m/2, P: &tensor.Perturbation{Noise: z, Scale: -1e-3}}}
}

// shapeTimes are a shape's repetitions of each product, in seconds.
type shapeTimes struct{ ours, blas, ours16, pair []float64 }

// times warms up the products, then times each reps times, interleaved:
// ours, BLAS's (if linked), ours on bf16 weights (with -bf16) and the
// full-parameter pair (with -pair).
func (gb *gemmBench) times(ours, blas, ours16, pair func()) shapeTimes {
	var ts shapeTimes
	runs := []struct {
		on bool
		f  func()
		to *[]float64
	}{{true, ours, &ts.ours}, {haveBLAS, blas, &ts.blas}, {gb.bf16, ours16, &ts.ours16}, {gb.pair, pair, &ts.pair}}
	for _, r := range runs { // warm up
		if r.on {
			r.f()
		}
	}
	for range gb.reps {
		for _, r := range runs {
			if r.on {
				*r.to = append(*r.to, timeIt(r.f))
			}
		}
	}
	return ts
}

// line is one shape's row of the table: GFLOP/s of the median and the best
// repetition, against the peak and the roof, BLAS's, bf16's and the pair's
// medians.
func (gb *gemmBench) line(name string, m int, l linear, ts shapeTimes) string {
	flop := 2 * float64(m) * float64(l.n) * float64(l.k)
	g := flop / stats.Median(ts.ours) / 1e9
	roof := gb.peak
	if gb.bandwidth > 0 && gb.peak > 0 {
		roof = min(gb.peak, gb.bandwidth*float64(m)/2)
	}
	gBest := flop / slices.Min(ts.ours) / 1e9
	line := fmt.Sprintf("%-18s %6d %6d %6d  %9.1f %7s %7s %9.1f %7s", name, m, l.k, l.n, g, pctStr(g, gb.peak), pctStr(g, roof), gBest, pctStr(gBest, gb.peak))
	if haveBLAS {
		gBLAS := flop / stats.Median(ts.blas) / 1e9
		line += fmt.Sprintf("  %9.1f %8.2fx", gBLAS, g/gBLAS)
	}
	if gb.bf16 {
		line += fmt.Sprintf("  %9.1f", flop/stats.Median(ts.ours16)/1e9)
	}
	if gb.pair {
		ratios := make([]float64, len(ts.pair))
		for i, t := range ts.pair {
			ratios[i] = t / ts.ours[i] // of a repetition's two products, run one after the other
		}
		line += fmt.Sprintf("  %9.1f %8.3fx", flop/stats.Median(ts.pair)/1e9, stats.Median(ratios))
	}
	return line
}

func timeIt(f func()) float64 {
	start := now()
	f()
	return now() - start
}

// pctStr formats g as a percentage of peak, "n/a" without a peak.
func pctStr(g, peak float64) string {
	if peak == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.0f%%", 100*g/peak)
}

func orNone(s string) string {
	if s == "" {
		return "no BLAS (build with -tags openblas)"
	}
	return s
}

func randMat(r *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(r.NormFloat64())
	}
	return s
}
