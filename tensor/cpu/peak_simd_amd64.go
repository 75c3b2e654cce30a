//go:build goexperiment.simd && amd64

package cpu

import "simd/archsimd"

// PeakLoop returns the float32 FMA peak loop of the vector width a GEMM path
// uses (the AVX-512 loop for "avx512", the 8-lane loop for "avx2"), for
// measuring what fraction of the machine's limit a kernel reaches. loop(n)
// runs n iterations of chains independent FMA chains of lanes lanes (10:
// enough to hide the FMA latency of two pipes), 2·lanes·chains FLOP each.
// Chain i starts at i+1 and becomes c·m + a each iteration (m = 0.999999, a
// = 1e-7); loop returns the sum of the chains' first lanes. ok is false for
// a path without such a loop (portable, or a CPU without the instructions).
func PeakLoop(path string) (loop func(n int) float32, lanes, chains int, ok bool) {
	switch path {
	case "avx512":
		if archsimd.X86.AVX512() {
			return fmaLoop16, 16, 10, true
		}
	case "avx2":
		if archsimd.X86.AVX2() && archsimd.X86.FMA() {
			return fmaLoop8, 8, 10, true
		}
	}
	return nil, 0, 0, false
}

func fmaLoop16(n int) float32 {
	m := archsimd.BroadcastFloat32x16(0.999999)
	a := archsimd.BroadcastFloat32x16(1e-7)
	// Distinct starting values: identical chains would be merged by the compiler.
	b := func(v float32) archsimd.Float32x16 { return archsimd.BroadcastFloat32x16(v) }
	c0, c1, c2, c3, c4 := b(1), b(2), b(3), b(4), b(5)
	c5, c6, c7, c8, c9 := b(6), b(7), b(8), b(9), b(10)
	for range n {
		c0, c1, c2, c3, c4 = c0.MulAdd(m, a), c1.MulAdd(m, a), c2.MulAdd(m, a), c3.MulAdd(m, a), c4.MulAdd(m, a)
		c5, c6, c7, c8, c9 = c5.MulAdd(m, a), c6.MulAdd(m, a), c7.MulAdd(m, a), c8.MulAdd(m, a), c9.MulAdd(m, a)
	}
	var out [16]float32
	c0.Add(c1).Add(c2).Add(c3).Add(c4).Add(c5).Add(c6).Add(c7).Add(c8).Add(c9).Store(&out)
	return out[0]
}

func fmaLoop8(n int) float32 {
	m := archsimd.BroadcastFloat32x8(0.999999)
	a := archsimd.BroadcastFloat32x8(1e-7)
	b := func(v float32) archsimd.Float32x8 { return archsimd.BroadcastFloat32x8(v) }
	c0, c1, c2, c3, c4 := b(1), b(2), b(3), b(4), b(5)
	c5, c6, c7, c8, c9 := b(6), b(7), b(8), b(9), b(10)
	for range n {
		c0, c1, c2, c3, c4 = c0.MulAdd(m, a), c1.MulAdd(m, a), c2.MulAdd(m, a), c3.MulAdd(m, a), c4.MulAdd(m, a)
		c5, c6, c7, c8, c9 = c5.MulAdd(m, a), c6.MulAdd(m, a), c7.MulAdd(m, a), c8.MulAdd(m, a), c9.MulAdd(m, a)
	}
	var out [8]float32
	c0.Add(c1).Add(c2).Add(c3).Add(c4).Add(c5).Add(c6).Add(c7).Add(c8).Add(c9).Store(&out)
	return out[0]
}
