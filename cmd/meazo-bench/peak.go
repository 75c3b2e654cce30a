package main

import (
	"sync"

	"github.com/meazo-go/meazo/tensor/cpu"
)

// fmaPeak measures the float32 FMA throughput, in GFLOP/s, of the vector
// width a GEMM path uses: the AVX-512 loop for "avx512", the AVX2 (8-lane)
// loop for "avx2", the NEON (4-lane) loop for "neon" (cpu.PeakLoop). Each is
// a tight loop of independent FMA chains on each of threads goroutines,
// best of nine short runs (the machine may be shared, and a peak is a best
// case). The portable path has no peak to compare with: it is scalar Go
// without fused multiply-adds (gflops 0), and amd64's loops need
// GOEXPERIMENT=simd.
func fmaPeak(threads int, path string) (gflops float64, what string) {
	loop, lanes, chains, ok := cpu.PeakLoop(path)
	if !ok {
		return 0, "n/a for path " + path + " (no vector FMA loop to compare with in this build: scalar Go, or amd64 without GOEXPERIMENT=simd)"
	}
	switch path {
	case "avx512":
		what = "AVX-512 FMA loop"
	case "avx2":
		what = "AVX2 (8-lane) FMA loop"
	case "neon":
		what = "NEON (4-lane) FMLA loop"
	default:
		what = path + " FMA loop"
	}
	return bestOf(threads, 2*lanes*chains, loop), what
}

const peakIters = 4_000_000

// bestOf runs loop (flops FLOP per iteration) on threads goroutines nine
// times and returns the best GFLOP/s.
func bestOf(threads, flops int, loop func(int) float32) float64 {
	best := 0.0
	for range 9 {
		var wg sync.WaitGroup
		start := now()
		var sink [64]float32
		for t := range threads {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sink[t%64] = loop(peakIters)
			}()
		}
		wg.Wait()
		sec := now() - start
		_ = sink
		best = max(best, float64(threads)*peakIters*float64(flops)/sec/1e9)
	}
	return best
}
