package main

import (
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/meazo-go/meazo/internal/cli"
	"github.com/meazo-go/meazo/internal/stats"
	"github.com/meazo-go/meazo/tensor"
	"github.com/meazo-go/meazo/tensor/cpu"
)

func init() {
	register("gemm", "GEMM GFLOP/s on the model shapes, vs OpenBLAS (-tags openblas) and the FMA peak", runGEMM)
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
}

func runGEMM(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("gemm", flag.ContinueOnError)
	models := fs.String("models", "llama1b,qwen06b", "comma-separated models: llama1b, qwen06b")
	rows := fs.String("m", "8,128,1024", "comma-separated row counts M")
	reps := fs.Int("reps", 7, "timed repetitions per shape (ours and BLAS interleaved); medians are reported")
	threads := fs.Int("threads", runtime.GOMAXPROCS(0), "worker threads, for ours and for BLAS")
	lmHead := fs.Bool("lmhead", false, "include the lm_head shapes (0.5-0.6 GiB of weights each, slow at large M)")
	bf16 := fs.Bool("bf16", false, "also time the bf16-weight variant (PackBF16)")
	cputime := fs.Bool("cputime", false, "time by process CPU time / threads instead of wall time (a shared machine: waiting for a core is not counted; Linux)")
	env, err := tensor.EnvOptions(tensor.Options{})
	if err != nil {
		return err
	}
	path := fs.String("path", env.GEMMPath, "GEMM path: avx512, avx2, neon (arm64), portable (default: fastest available, or $MEAZO_GEMM)")
	tile := fs.Int("tile", env.GEMMTile, "tallest tile in rows: 4, 8 or 12 on avx512, 4 or 6 on avx2 (default: calibrated, or $MEAZO_GEMM_TILE; same bits for every height)")
	if err := cli.Parse(fs, args); err != nil {
		return cli.Usage(err)
	}
	if *path != "" {
		if err := cpu.SetGEMMPath(*path); err != nil {
			return fmt.Errorf("-path: %w", err)
		}
	}
	if *tile != 0 {
		if err := cpu.SetGEMMTile(*tile); err != nil {
			return fmt.Errorf("-tile: %w", err)
		}
	}
	var ms []int
	for f := range strings.SplitSeq(*rows, ",") {
		m, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || m <= 0 {
			return fmt.Errorf("-m: bad row count %q", f)
		}
		ms = append(ms, m)
	}
	if *reps < 1 {
		return fmt.Errorf("-reps: must be >= 1, got %d", *reps)
	}
	wk := cpu.Workers(*threads)
	cpuClock, clockThreads = *cputime, *threads

	peak, peakWhat := fmaPeak(*threads, cpu.GEMMPath())
	clock := "wall time"
	if *cputime {
		clock = "process CPU time / threads"
	}
	fmt.Fprintf(stdout, "path %s, tile %s, %d threads, %d reps (medians and the best; ours and %s interleaved), timed by %s\n",
		cpu.GEMMPath(), cpu.GEMMTile(), *threads, *reps, orNone(blasName), clock)
	if peak > 0 {
		fmt.Fprintf(stdout, "FMA peak of path %s (%s, %d goroutines): %.1f GFLOP/s; %%peak uses the best of this\n"+
			"and a re-measurement just before each row (a shared machine lowers a peak measurement, never raises it)\n",
			cpu.GEMMPath(), peakWhat, *threads, peak)
	} else {
		fmt.Fprintf(stdout, "FMA peak: %s\n", peakWhat)
	}
	// The roofline: a call reads its K×N float32 weights (4 bytes each) at
	// least once from memory and does 2·M flops per weight, so it cannot
	// run faster than bandwidth·M/2; for few rows that, not the FMA peak,
	// is the limit (the weights of one model layer do not stay in cache
	// between calls of a real forward; the benchmark's repeated calls may
	// find them in L3, which can put a small shape above its roof).
	bw := readBandwidth(*threads)
	_, loads := sumLoads()
	fmt.Fprintf(stdout, "memory read bandwidth (%d goroutines, 256 MiB, %s, best of 3): %.1f GB/s; roof = min(peak, bandwidth·M/2)\n\n",
		*threads, loads, bw)
	// best: the fastest repetition, against the peak (itself a best of
	// nine): on a shared machine the fairest pair, since other jobs only
	// ever slow a measurement down.
	head := fmt.Sprintf("%-18s %6s %6s %6s  %9s %7s %7s %9s %7s", "shape", "M", "K", "N", "ours", "%peak", "%roof", "best", "%peak")
	if haveBLAS {
		head += fmt.Sprintf("  %9s %9s", "blas", "ours/blas")
	}
	if *bf16 {
		head += fmt.Sprintf("  %9s", "ours-bf16")
	}
	fmt.Fprintln(stdout, head)

	r := rand.New(rand.NewPCG(1, 2))
	for model := range strings.SplitSeq(*models, ",") {
		ls, ok := modelLinears[model]
		if !ok {
			return fmt.Errorf("-models: unknown model %q (have llama1b, qwen06b)", model)
		}
		for _, l := range ls {
			if l.name == "lm_head" && !*lmHead {
				continue
			}
			w := randMat(r, l.n*l.k)
			pw := cpu.Pack(wk, w, l.n, l.k)
			var pw16 *cpu.Packed
			if *bf16 {
				pw16 = cpu.PackBF16(w, l.n, l.k)
			}
			if !haveBLAS {
				w = nil // let the GC have it
			}
			for _, m := range ms {
				x := randMat(r, m*l.k)
				y := make([]float32, m*l.n)
				ours := func() { cpu.MatMulPacked(wk, y, x, m, pw) }
				blas := func() { blasSgemmNT(y, x, w, m, l.n, l.k, *threads) }
				ours16 := func() { cpu.MatMulPacked(wk, y, x, m, pw16) }
				ours() // warm up
				if haveBLAS {
					blas()
				}
				if *bf16 {
					ours16()
				}
				var to, tb, t16 []float64
				for range *reps {
					to = append(to, timeIt(ours))
					if haveBLAS {
						tb = append(tb, timeIt(blas))
					}
					if *bf16 {
						t16 = append(t16, timeIt(ours16))
					}
				}
				if p, _ := fmaPeak(*threads, cpu.GEMMPath()); p > peak {
					peak = p
				}
				flop := 2 * float64(m) * float64(l.n) * float64(l.k)
				g := flop / stats.Median(to) / 1e9
				roof := peak
				if bw > 0 && peak > 0 {
					roof = min(peak, bw*float64(m)/2)
				}
				gBest := flop / slices.Min(to) / 1e9
				line := fmt.Sprintf("%-18s %6d %6d %6d  %9.1f %7s %7s %9.1f %7s", model+"/"+l.name, m, l.k, l.n, g, pctStr(g, peak), pctStr(g, roof), gBest, pctStr(gBest, peak))
				if haveBLAS {
					gb := flop / stats.Median(tb) / 1e9
					line += fmt.Sprintf("  %9.1f %8.2fx", gb, g/gb)
				}
				if *bf16 {
					line += fmt.Sprintf("  %9.1f", flop/stats.Median(t16)/1e9)
				}
				fmt.Fprintln(stdout, line)
			}
		}
	}
	return nil
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
