//go:build goexperiment.simd && amd64

package main

import (
	"simd/archsimd"
	"sync"
	"time"
)

// readBandwidth measures how fast threads goroutines read memory, in GB/s:
// each sums its share of a 256 MiB array (far larger than any cache) with
// 16-lane loads, best of three. A GEMM of few rows (decoding) reads each
// weight once per call, so this, not the FMA peak, bounds it.
func readBandwidth(threads int) float64 {
	const n = 64 << 20 // floats
	s := make([]float32, n)
	for i := range s {
		s[i] = 1
	}
	best := 0.0
	var sink [64]float32
	for range 3 {
		var wg sync.WaitGroup
		start := time.Now()
		for t := range threads {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sink[t%64] = sum16(s[t*n/threads : (t+1)*n/threads])
			}()
		}
		wg.Wait()
		best = max(best, 4*n/time.Since(start).Seconds()/1e9)
	}
	_ = sink
	return best
}

// sum16 adds s with eight independent 16-lane accumulators, so that loads,
// not additions, limit it.
func sum16(s []float32) float32 {
	var a0, a1, a2, a3, a4, a5, a6, a7 archsimd.Float32x16
	for i := 0; i+128 <= len(s); i += 128 {
		a0 = a0.Add(load16(s, i))
		a1 = a1.Add(load16(s, i+16))
		a2 = a2.Add(load16(s, i+32))
		a3 = a3.Add(load16(s, i+48))
		a4 = a4.Add(load16(s, i+64))
		a5 = a5.Add(load16(s, i+80))
		a6 = a6.Add(load16(s, i+96))
		a7 = a7.Add(load16(s, i+112))
	}
	var out [16]float32
	a0.Add(a1).Add(a2).Add(a3).Add(a4).Add(a5).Add(a6).Add(a7).Store(&out)
	return out[0]
}

func load16(s []float32, i int) archsimd.Float32x16 {
	return archsimd.LoadFloat32x16((*[16]float32)(s[i : i+16]))
}
