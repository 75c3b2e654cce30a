//go:build goexperiment.simd && amd64

package main

import "simd/archsimd"

// sumLoads is the bandwidth probe's summing loop and what it loads, chosen
// by CPUID as the GEMM chooses its path: 16-lane loads with AVX-512, 8-lane
// with AVX2 (AMD Zen 1-3, Intel Haswell to Skylake clients: no AVX-512),
// scalar loads on older CPUs. A 16-lane loop on a CPU without AVX-512 dies
// with SIGILL, and so does the 8-lane one without AVX2, although its
// additions and loads are AVX: Go zeroes an 8-lane vector with VPXOR ymm,
// an AVX2 instruction (found by scripts/test_cpus.sh under -cpu SandyBridge).
func sumLoads() (func([]float32) float32, string) {
	switch {
	case archsimd.X86.AVX512():
		return sum16, "16-lane AVX-512 loads"
	case archsimd.X86.AVX2():
		return sum8, "8-lane AVX2 loads"
	}
	return sumScalar, "scalar loads (no AVX2 on this CPU)"
}

// sum16 adds s with eight independent 16-lane accumulators, so that loads,
// not additions, limit it. It needs AVX-512 (F).
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
	archsimd.ClearAVXUpperBits()
	return lanesSum(out[:])
}

func load16(s []float32, i int) archsimd.Float32x16 {
	return archsimd.LoadFloat32x16((*[16]float32)(s[i : i+16]))
}

// sum8 is sum16 with 8-lane accumulators. It needs AVX2 (see sumLoads).
func sum8(s []float32) float32 {
	var a0, a1, a2, a3, a4, a5, a6, a7 archsimd.Float32x8
	for i := 0; i+64 <= len(s); i += 64 {
		a0 = a0.Add(load8(s, i))
		a1 = a1.Add(load8(s, i+8))
		a2 = a2.Add(load8(s, i+16))
		a3 = a3.Add(load8(s, i+24))
		a4 = a4.Add(load8(s, i+32))
		a5 = a5.Add(load8(s, i+40))
		a6 = a6.Add(load8(s, i+48))
		a7 = a7.Add(load8(s, i+56))
	}
	var out [8]float32
	a0.Add(a1).Add(a2).Add(a3).Add(a4).Add(a5).Add(a6).Add(a7).Store(&out)
	archsimd.ClearAVXUpperBits()
	return lanesSum(out[:])
}

func load8(s []float32, i int) archsimd.Float32x8 {
	return archsimd.LoadFloat32x8((*[8]float32)(s[i : i+8]))
}

// lanesSum adds a vector's lanes, so that the sum is the array's (checked
// by the test, which would catch a lane or a group left out).
func lanesSum(out []float32) float32 {
	var t float32
	for _, x := range out {
		t += x
	}
	return t
}
