package main

import (
	"sync"
	"time"
)

// readBandwidth measures how fast threads goroutines read memory, in GB/s:
// each sums its share of a 256 MiB array (far larger than any cache) with
// the widest loads the CPU has (sumLoads), best of three. A GEMM of few rows
// (decoding) reads each weight once per call, so this, not the FMA peak,
// bounds it.
func readBandwidth(threads int) float64 {
	const n = 64 << 20 // floats
	s := make([]float32, n)
	for i := range s {
		s[i] = 1
	}
	sum, _ := sumLoads()
	best := 0.0
	var sink [64]float32
	for range 3 {
		var wg sync.WaitGroup
		start := time.Now()
		for t := range threads {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sink[t%64] = sum(s[t*n/threads : (t+1)*n/threads])
			}()
		}
		wg.Wait()
		best = max(best, 4*n/time.Since(start).Seconds()/1e9)
	}
	_ = sink
	return best
}

// sumScalar adds s with eight independent scalar accumulators (the loads a
// CPU without AVX, or a build without GOEXPERIMENT=simd, has), in groups of
// 128 as the vector sums do; the tail past the last group is not added.
func sumScalar(s []float32) float32 {
	var a [8]float32
	for i := 0; i+128 <= len(s); i += 128 {
		for j := 0; j < 128; j += 8 {
			a[0] += s[i+j]
			a[1] += s[i+j+1]
			a[2] += s[i+j+2]
			a[3] += s[i+j+3]
			a[4] += s[i+j+4]
			a[5] += s[i+j+5]
			a[6] += s[i+j+6]
			a[7] += s[i+j+7]
		}
	}
	return a[0] + a[1] + a[2] + a[3] + a[4] + a[5] + a[6] + a[7]
}
