//go:build goexperiment.simd && amd64

package main

import (
	"simd/archsimd"
	"sync"
)

// fmaPeak measures the float32 FMA throughput, in GFLOP/s, of the vector
// width a GEMM path uses: the AVX-512 loop for "avx512", the AVX2 (8-lane)
// loop for "avx2". Each is a tight loop of independent FMA chains (10
// accumulators, enough to hide the FMA latency) on each of threads
// goroutines, best of nine short runs (the machine may be shared, and a peak
// is a best case). The portable path has no peak to compare with: it is
// scalar Go without fused multiply-adds (gflops 0).
func fmaPeak(threads int, path string) (gflops float64, what string) {
	switch path {
	case "avx512":
		if archsimd.X86.AVX512() {
			return bestOf(threads, 16, fmaLoop16), "AVX-512 FMA loop"
		}
	case "avx2":
		if archsimd.X86.AVX2() && archsimd.X86.FMA() {
			return bestOf(threads, 8, fmaLoop8), "AVX2 (8-lane) FMA loop"
		}
	}
	return 0, "n/a for path " + path + " (scalar Go, no vector FMA loop to compare with)"
}

const peakIters = 4_000_000

// bestOf runs loop (10 FMAs of the given lanes per iteration) on threads
// goroutines nine times and returns the best GFLOP/s.
func bestOf(threads, lanes int, loop func(int) float32) float64 {
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
		best = max(best, float64(threads)*peakIters*10*2*float64(lanes)/sec/1e9)
	}
	return best
}

func fmaLoop16(n int) float32 {
	m := archsimd.BroadcastFloat32x16(0.999999)
	a := archsimd.BroadcastFloat32x16(1e-7)
	// Distinct starting values: identical chains would be merged by the compiler.
	b := func(v float32) archsimd.Float32x16 { return archsimd.BroadcastFloat32x16(v) }
	c0, c1, c2, c3, c4 := b(1), b(2), b(3), b(4), b(5)
	c5, c6, c7, c8, c9 := b(6), b(7), b(8), b(9), b(10)
	for range n {
		c0 = c0.MulAdd(m, a)
		c1 = c1.MulAdd(m, a)
		c2 = c2.MulAdd(m, a)
		c3 = c3.MulAdd(m, a)
		c4 = c4.MulAdd(m, a)
		c5 = c5.MulAdd(m, a)
		c6 = c6.MulAdd(m, a)
		c7 = c7.MulAdd(m, a)
		c8 = c8.MulAdd(m, a)
		c9 = c9.MulAdd(m, a)
	}
	s := c0.Add(c1).Add(c2).Add(c3).Add(c4).Add(c5).Add(c6).Add(c7).Add(c8).Add(c9)
	var out [16]float32
	s.Store(&out)
	return out[0]
}

func fmaLoop8(n int) float32 {
	m := archsimd.BroadcastFloat32x8(0.999999)
	a := archsimd.BroadcastFloat32x8(1e-7)
	// Distinct starting values: identical chains would be merged by the compiler.
	b := func(v float32) archsimd.Float32x8 { return archsimd.BroadcastFloat32x8(v) }
	c0, c1, c2, c3, c4 := b(1), b(2), b(3), b(4), b(5)
	c5, c6, c7, c8, c9 := b(6), b(7), b(8), b(9), b(10)
	for range n {
		c0 = c0.MulAdd(m, a)
		c1 = c1.MulAdd(m, a)
		c2 = c2.MulAdd(m, a)
		c3 = c3.MulAdd(m, a)
		c4 = c4.MulAdd(m, a)
		c5 = c5.MulAdd(m, a)
		c6 = c6.MulAdd(m, a)
		c7 = c7.MulAdd(m, a)
		c8 = c8.MulAdd(m, a)
		c9 = c9.MulAdd(m, a)
	}
	s := c0.Add(c1).Add(c2).Add(c3).Add(c4).Add(c5).Add(c6).Add(c7).Add(c8).Add(c9)
	var out [8]float32
	s.Store(&out)
	return out[0]
}
