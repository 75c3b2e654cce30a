//go:build goexperiment.simd && amd64 && linux

package cpu

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// threadCPU is the calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID, read
// with clock_gettime: Linux only, as the measurement below is).
func threadCPU() time.Duration {
	var ts syscall.Timespec
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 3 /* CLOCK_THREAD_CPUTIME_ID */, uintptr(unsafe.Pointer(&ts)), 0)
	return time.Duration(ts.Nano())
}

// TestKernCPUTime is a measurement, not a check (it runs only with
// MEAZO_KERN_CPUTIME=1): the micro kernels' GFLOP per second of thread CPU
// time on one thread, 64 rows (4, 6, 8 or 12 rows a tile) swept past each of
// eight panels in turn with kc = 512, as the GEMM sweeps a block of rows past
// a panel (the panel's slice and the rows' in L2: the cache-resident rate of
// the kernel, which the GEMM's memory traffic can only lower), against the 8-
// and 16-lane FMA peak loops measured the same way; best of 7. Only the
// kernels the CPU has run (AVX2 everywhere it runs; AVX-512 where reported).
// Rows outer and panels inner, as it went before, sweeps eight panel slices
// (512 KiB in float32) per tile: on a 512 KiB L2 (Zen 3) the float32 panels
// came from L3 and read 53-80 % of the peak where bfloat16's read 89-95 %.
// CPU time rather than wall time, so that on a shared machine the time the
// thread waits for a core is not counted (other jobs still share the
// caches). The bfloat16 kernels read the same panels rounded to bfloat16.
func TestKernCPUTime(t *testing.T) {
	if os.Getenv("MEAZO_KERN_CPUTIME") != "1" {
		t.Skip("a measurement: set MEAZO_KERN_CPUTIME=1 and run with -v")
	}
	if !cpuAVX2 {
		t.Skip("the CPU has no AVX2")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	best := func(f func() float64) float64 {
		b := 0.0
		for range 7 {
			b = max(b, f())
		}
		return b
	}
	const it = 10_000_000
	p8 := best(func() float64 {
		s := threadCPU()
		fmaLoop8(it)
		return it * 10 * 16 / (threadCPU() - s).Seconds() / 1e9
	})
	p16 := 0.0 // without AVX-512 the 16-lane kernels are left out
	if cpuAVX512 {
		p16 = best(func() float64 {
			s := threadCPU()
			fmaLoop16(it)
			return it * 10 * 32 / (threadCPU() - s).Seconds() / 1e9
		})
	}
	t.Logf("peak 8-lane %.1f, 16-lane %.1f GFLOP/cpu-s (1 thread)", p8, p16)
	r := rand.New(rand.NewPCG(1, 1))
	const kc, ldc, ntiles = 512, 256, 8
	lda := 2048
	if v := os.Getenv("MEAZO_KERN_LDA"); v != "" {
		fmt.Sscan(v, &lda)
	}
	a := randMat(r, 64*lda)
	b := randMat(r, ntiles*kc*nr)
	b16 := make([]uint16, len(b))
	for i, v := range b {
		b16[i] = f32ToBF16(v)
	}
	c := make([]float32, 64*ldc)
	// Each kernel as a call on the tile at row i of panel p.
	type tileFunc func(i, p int)
	tall := func(f func(a *float32, lda int, b, c *float32, ldc, kc int, acc bool)) tileFunc {
		return func(i, p int) { f(&a[i*lda], lda, &b[p*kc*nr], &c[i*ldc+p*nr], ldc, kc, true) }
	}
	tall16 := func(f func(a *float32, lda int, b *uint16, c *float32, ldc, kc int, acc bool)) tileFunc {
		return func(i, p int) { f(&a[i*lda], lda, &b16[p*kc*nr], &c[i*ldc+p*nr], ldc, kc, true) }
	}
	four := func(f microKernel) tileFunc {
		return func(i, p int) { f(&a[i*lda], lda, mr, &b[p*kc*nr], &c[i*ldc+p*nr], ldc, kc, true) }
	}
	four16 := func(f microKernelBF16) tileFunc {
		return func(i, p int) { f(&a[i*lda], lda, mr, &b16[p*kc*nr], &c[i*ldc+p*nr], ldc, kc, true) }
	}
	for _, k := range []struct {
		name string
		rows int
		f    tileFunc
		peak float64
	}{
		{"avx2-go", 4, four(kernAVX2), p8}, {"avx2-asm", 4, four(kernAVX2asm), p8}, {"avx2-x6", 6, tall(kernAVX2x6), p8},
		{"avx2-bf16-go", 4, four16(kernAVX2BF16), p8}, {"avx2-bf16-asm", 4, four16(kernAVX2BF16asm), p8},
		{"avx2-bf16-x6", 6, tall16(kernAVX2x6BF16), p8},
		{"avx512-go", 4, four(kernAVX512), p16}, {"avx512-asm", 4, four(kernAVX512asm), p16},
		{"avx512-x8", 8, tall(kernAVX512x8), p16}, {"avx512-x12", 12, tall(kernAVX512x12), p16},
		{"avx512-bf16-go", 4, four16(kernAVX512BF16), p16}, {"avx512-bf16-asm", 4, four16(kernAVX512BF16asm), p16},
		{"avx512-bf16-x8", 8, tall16(kernAVX512x8BF16), p16}, {"avx512-bf16-x12", 12, tall16(kernAVX512x12BF16), p16},
	} {
		if k.peak == 0 {
			continue
		}
		g := best(func() float64 {
			s := threadCPU()
			n := 0
			for range 100 {
				for p := range ntiles {
					for i := 0; i+k.rows <= 64; i += k.rows {
						k.f(i, p)
						n++
					}
				}
			}
			return float64(n) * 2 * float64(k.rows) * 32 * kc / (threadCPU() - s).Seconds() / 1e9
		})
		t.Logf("%-15s %6.1f GFLOP/cpu-s = %3.0f%% of its peak", k.name, g, 100*g/k.peak)
	}
}
