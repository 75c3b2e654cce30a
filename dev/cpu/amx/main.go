//go:build amxdev && amd64 && linux

// Command amx is an experiment, not part of the product: a float32-accurate
// GEMM on AMX's bfloat16 tiles (Intel Sapphire Rapids and later), each
// float32 split into three bfloat16 pieces (hi + mid + lo holds its 24 bits)
// and the product formed from the six piece products that matter
// (hi·hi, hi·mid, mid·hi, mid·mid, hi·lo, lo·hi) as one bfloat16 GEMM of
// depth 6K, smallest terms first. It times the tile kernel against the CPU
// backend's float32 GEMM (tensor/cpu) on the step's projection shapes and
// measures both against a float64 reference.
//
// It builds only with the amxdev tag (nothing in the product builds it),
// on Linux on amd64, and runs only where Linux grants the tile data state
// (elsewhere arch_prctl fails and it says so):
//
//	GOEXPERIMENT=simd go run -tags amxdev ./dev/cpu/amx [-threads 2] [-reps 5] [-mc 16] [-kc 16] [-group 8] [-next]
package main

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"sort"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/meazo-go/meazo/tensor/cpu"
)

func tdpOnly(n int, cfg *[64]byte)

//go:noescape
func loadsOnly(a unsafe.Pointer, steps, n int)

// tileConfigure loads the tile configuration into this thread's tile unit
// (LDTILECFG, costly: once per thread, which must stay locked to its OS
// thread); tileRelease returns the unit to its initial state.
//
//go:noescape
func tileConfigure(cfg *[64]byte)

func tileRelease()

//go:noescape
func tileGEMM(a, b, c unsafe.Pointer, steps int, cfg *[64]byte, ldc int, acc bool)

//go:noescape
func tileGEMM2(a, b, c unsafe.Pointer, steps int, cfg *[64]byte, ldc int, acc bool)

// kernel is the tile kernel the runs use (-kernel).
var kernel = tileGEMM

// requestAMX asks Linux for the tile data state (arch_prctl
// ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA): without it a tile instruction
// faults.
func requestAMX() error {
	const archReqXCompPerm, xfeatXTileData = 0x1023, 18
	if _, _, e := syscall.RawSyscall(syscall.SYS_ARCH_PRCTL, archReqXCompPerm, xfeatXTileData, 0); e != 0 {
		return fmt.Errorf("arch_prctl(ARCH_REQ_XCOMP_PERM, XTILEDATA): %v", e)
	}
	return nil
}

// tileConfig is palette 1 with tiles 0–7 all 16 rows of 64 bytes.
func tileConfig() *[64]byte {
	var c [64]byte
	c[0] = 1
	for t := range 8 {
		c[16+2*t] = 64
		c[48+t] = 16
	}
	return &c
}

// bf16 rounds x to bfloat16 (nearest, ties to even; no NaN here).
func bf16(x float32) uint16 {
	b := math.Float32bits(x)
	return uint16((b + 0x7FFF + (b>>16)&1) >> 16)
}

func widen(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// split is x's three bfloat16 pieces: x = hi + mid + lo to float32's bits
// (each remainder exact in float32).
func split(x float32) [3]uint16 {
	hi := bf16(x)
	r := x - widen(hi)
	mid := bf16(r)
	lo := bf16(r - widen(mid))
	return [3]uint16{hi, mid, lo}
}

// terms are the piece products, A's piece and B's, smallest first: the
// K-segments of the depth-6K product.
var terms = [6][2]int{{2, 0}, {0, 2}, {1, 1}, {1, 0}, {0, 1}, {0, 0}}

// packA lays out a (m×k, row-major) for the kernel: per 32-row block, per
// step of 32 along the depth 6k, two 16×32 tiles.
func packA(a []float32, m, k int) []uint16 {
	pieces := make([][3]uint16, len(a))
	for i, x := range a {
		pieces[i] = split(x)
	}
	K := 6 * k
	out := make([]uint16, m*K+1024) // a step past the end: tileGEMM2 reads it
	steps := K / 32
	for rb := 0; rb < m/32; rb++ {
		for s := range steps {
			for half := range 2 {
				tile := out[((rb*steps+s)*2+half)*512:]
				for r := range 16 {
					row := rb*32 + half*16 + r
					for j := range 32 {
						kk := s*32 + j
						t, kin := kk/k, kk%k
						tile[r*32+j] = pieces[row*k+kin][terms[t][0]]
					}
				}
			}
		}
	}
	return out
}

// packB lays out Wᵀ (w: n×k, row-major, as a checkpoint stores a
// projection) for the kernel: per 32-column block, per step, two VNNI tiles
// (16 pairs of depth × 16 columns).
func packB(w []float32, n, k int) []uint16 {
	pieces := make([][3]uint16, len(w))
	for i, x := range w {
		pieces[i] = split(x)
	}
	K := 6 * k
	out := make([]uint16, n*K+1024) // a step past the end: tileGEMM2 reads it
	steps := K / 32
	for cb := 0; cb < n/32; cb++ {
		for s := range steps {
			for half := range 2 {
				tile := out[((cb*steps+s)*2+half)*512:]
				for p := range 16 {
					for c := range 16 {
						col := cb*32 + half*16 + c
						for e := range 2 {
							kk := s*32 + 2*p + e
							t, kin := kk/k, kk%k
							tile[p*32+2*c+e] = pieces[col*k+kin][terms[t][1]]
						}
					}
				}
			}
		}
	}
	return out
}

// amxGEMM is y = x·Wᵀ (m×n) from the packed operands, the column blocks
// shared among threads. Blocked for the caches when kc > 0: a panel of mc
// row blocks (A: mc·kc·2 KiB, in L2) against each column block's kc-step
// chunk (B: kc·2 KiB, in L1 while the panel's row blocks pass), the
// accumulators loaded and stored again per chunk, a thread's column
// blocks taken group at a time (so that their accumulators stay in L2);
// kc = 0: each 32×32 block
// over the whole depth in one call (A and B streamed from L3).
func amxGEMM(y []float32, pa, pb []uint16, m, n, k, threads int, cfg *[64]byte, mc, kc, group int) {
	steps := 6 * k / 32
	var wg sync.WaitGroup
	nb, mb := n/32, m/32
	call := func(rb, cb, s0, ns int) {
		kernel(unsafe.Pointer(&pa[(rb*steps+s0)*1024]), unsafe.Pointer(&pb[(cb*steps+s0)*1024]),
			unsafe.Pointer(&y[rb*32*n+cb*32]), ns, cfg, 4*n, s0 > 0)
	}
	for t := range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			tileConfigure(cfg)
			defer tileRelease()
			if kc == 0 {
				for cb := t; cb < nb; cb += threads {
					for rb := range mb {
						call(rb, cb, 0, steps)
					}
				}
				return
			}
			mine := make([]int, 0, nb)
			for cb := t; cb < nb; cb += threads {
				mine = append(mine, cb)
			}
			for rb0 := 0; rb0 < mb; rb0 += mc {
				for g0 := 0; g0 < len(mine); g0 += group {
					for s0 := 0; s0 < steps; s0 += kc {
						ns := min(kc, steps-s0)
						for _, cb := range mine[g0:min(g0+group, len(mine))] {
							for rb := rb0; rb < min(rb0+mc, mb); rb++ {
								call(rb, cb, s0, ns)
							}
						}
					}
				}
			}
		}()
	}
	wg.Wait()
}

// errorsAgainst is the rms and the largest of |y − ref| / rms(ref).
func errorsAgainst(y []float32, ref []float64) (rms, max float64) {
	var ss, rs float64
	for i, r := range ref {
		d := float64(y[i]) - r
		ss += d * d
		rs += r * r
		max = math.Max(max, math.Abs(d))
	}
	scale := math.Sqrt(rs / float64(len(ref)))
	return math.Sqrt(ss/float64(len(ref))) / scale, max / scale
}

// peak times the kernel on operands that stay in L1 (8 steps: 16 KiB of A
// and of B), each thread on its own: the tile unit's rate without memory.
func peak(threads int, cfg *[64]byte) {
	const steps, calls = 8, 200000
	var wg sync.WaitGroup
	st := time.Now()
	for range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			tileConfigure(cfg)
			defer tileRelease()
			a, b, c := make([]uint16, (steps+1)*1024), make([]uint16, (steps+1)*1024), make([]float32, 32*32)
			for range calls {
				kernel(unsafe.Pointer(&a[0]), unsafe.Pointer(&b[0]), unsafe.Pointer(&c[0]), steps, cfg, 128, true)
			}
		}()
	}
	wg.Wait()
	d := time.Since(st)
	flop := float64(threads) * calls * steps * 4 * 16 * 16 * 32 * 2
	st = time.Now()
	const rounds = 2000000
	for range threads {
		wg.Add(1)
		go func() { defer wg.Done(); tdpOnly(rounds, cfg) }()
	}
	wg.Wait()
	d2 := time.Since(st)
	{
		runtime.LockOSThread()
		tileConfigure(cfg)
		buf := make([]uint16, 8*1024+32)
		off := (64 - int(uintptr(unsafe.Pointer(&buf[0]))%64)) % 64 / 2
		const n = 200000
		st := time.Now()
		loadsOnly(unsafe.Pointer(&buf[off]), 8, n)
		d := time.Since(st)
		tileRelease()
		runtime.UnlockOSThread()
		fmt.Printf("# tile loads alone from L1 (64-byte aligned), 1 thread: %.1f ns a 1 KiB tile\n", float64(d.Nanoseconds())/(n*8*4))
	}
	fmt.Printf("# products alone (no loads), %d threads: %.0f bfloat16 GFLOP/s\n", threads, float64(threads)*rounds*4*16*16*32*2/d2.Seconds()/1e9)
	fmt.Printf("# tile kernel in L1, %d threads: %.0f bfloat16 GFLOP/s (%.0f a thread)\n", threads, flop/d.Seconds()/1e9, flop/d.Seconds()/1e9/float64(threads))
}

func median(ts []time.Duration) time.Duration {
	s := slices.Clone(ts)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

func main() {
	threads := flag.Int("threads", 2, "threads")
	reps := flag.Int("reps", 5, "timed repetitions of each product")
	mc := flag.Int("mc", 16, "row blocks (of 32) in a panel")
	kc := flag.Int("kc", 16, "steps (of depth 32) in a chunk; 0: no blocking")
	group := flag.Int("group", 1<<20, "a thread's column blocks per group (blocked runs)")
	next := flag.Bool("next", true, "the kernel that loads the next step's tiles early (tileGEMM2)")
	flag.Parse()
	if err := requestAMX(); err != nil {
		fmt.Fprintln(os.Stderr, "amx:", err)
		os.Exit(1)
	}
	cfg := tileConfig()
	if *next {
		kernel = tileGEMM2
	}
	peak(*threads, cfg)
	wk := cpu.Workers(*threads)
	rng := rand.New(rand.NewPCG(1, 2))
	fmt.Printf("# mc %d row blocks, kc %d steps, groups of %d column blocks\n", *mc, *kc, *group)
	fmt.Printf("# %d threads; GFLOP/s as float32 products (2mnk); errors relative to the float64 reference's rms\n", *threads)
	fmt.Println("shape m×k×n | tensor/cpu float32: ms, GFLOP/s, rms err, max err | AMX bf16×6: ms, GFLOP/s (bf16 rate ×6), rms err, max err | pack A ms")
	for _, sh := range [][3]int{{1024, 1024, 2048}, {1024, 1024, 3072}, {1024, 3072, 1024}, {512, 1024, 3072}, {2048, 2048, 8192}} {
		m, k, n := sh[0], sh[1], sh[2]
		x := make([]float32, m*k)
		w := make([]float32, n*k)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		for i := range w {
			w[i] = float32(rng.NormFloat64() * 0.02)
		}
		ref := make([]float64, m*n)
		if m*n*k <= 1<<32 {
			for i := range m {
				for j := range n {
					var s float64
					for l := range k {
						s += float64(x[i*k+l]) * float64(w[j*k+l])
					}
					ref[i*n+j] = s
				}
			}
		}
		pw := cpu.Pack(wk, w, n, k)
		y1 := make([]float32, m*n)
		var t1 []time.Duration
		for range *reps + 1 {
			st := time.Now()
			cpu.MatMulPacked(wk, y1, x, m, pw)
			t1 = append(t1, time.Since(st))
		}
		pb := packB(w, n, k)
		st := time.Now()
		pa := packA(x, m, k)
		packTime := time.Since(st)
		y2 := make([]float32, m*n)
		var t2 []time.Duration
		for range *reps + 1 {
			st := time.Now()
			amxGEMM(y2, pa, pb, m, n, k, *threads, cfg, *mc, *kc, *group)
			t2 = append(t2, time.Since(st))
		}
		flop := 2 * float64(m) * float64(n) * float64(k)
		d1, d2 := median(t1[1:]), median(t2[1:])
		r1, x1, r2, x2 := math.NaN(), math.NaN(), math.NaN(), math.NaN()
		if m*n*k <= 1<<32 {
			r1, x1 = errorsAgainst(y1, ref)
			r2, x2 = errorsAgainst(y2, ref)
		}
		fmt.Printf("%d×%d×%d | %.2f, %.0f, %.2g, %.2g | %.2f, %.0f (%.0f), %.2g, %.2g | %.1f\n", m, k, n,
			d1.Seconds()*1e3, flop/d1.Seconds()/1e9, r1, x1,
			d2.Seconds()*1e3, flop/d2.Seconds()/1e9, 6*flop/d2.Seconds()/1e9, r2, x2, packTime.Seconds()*1e3)
	}
}
