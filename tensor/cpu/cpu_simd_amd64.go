//go:build goexperiment.simd && amd64

package cpu

import "simd/archsimd"

// CPU features the SIMD kernels need, read once at start-up.
var (
	cpuAVX512 = archsimd.X86.AVX512() // F+CD+BW+DQ+VL
	cpuAVX2   = archsimd.X86.AVX2() && archsimd.X86.FMA()
)
