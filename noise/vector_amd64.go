//go:build amd64 && !purego

package noise

import "math"

// The amd64 kernels are plain Go assembly: they need no GOEXPERIMENT, so
// every amd64 build draws noise at the same speed. Which of them the CPU
// can run is read with CPUID at start-up (cpu_amd64.s): AVX-512 needs the
// F, CD, BW, DQ and VL subsets and the OS saving the opmask and all 32 zmm
// registers; AVX2 needs AVX2 and the OS saving ymm registers. Neither uses
// fused multiply-add (the contract forbids it) or a legacy SSE instruction
// (TestKernelsUseNoLegacySSE), and each ends with VZEROUPPER.

// The instruction sets of the kernels (vecKernels.isa).
const (
	isaAVX512 = iota
	isaAVX2
)

// vectorPaths lists the kernels this CPU supports, fastest first.
func vectorPaths() []*vecKernels {
	var ps []*vecKernels
	if cpuAVX512 {
		ps = append(ps, &vecKernels{
			name:  "avx512",
			isa:   isaAVX512,
			words: [4]func(*float32, *uint64, int){Normal: normalsWordsAVX512, Ternary: ternaryWordsAVX512},
			lanes: []int{0, 4, 1, 5, 2, 6, 3, 7},
		})
	}
	if cpuAVX2 {
		ps = append(ps, &vecKernels{
			name:  "avx2",
			isa:   isaAVX2,
			words: [4]func(*float32, *uint64, int){Normal: normalsWordsAVX2, Ternary: ternaryWordsAVX2},
			lanes: []int{0, 2, 1, 3},
		})
	}
	return ps
}

// values runs k's kernel of dist (vecKernels says what it computes).
func (k *vecKernels) values(dst *float32, skip, n int, a *kernelArgs, dist Dist) {
	switch {
	case k.isa == isaAVX512 && (dist == Normal || dist == Sphere):
		normalsAVX512(dst, skip, n, a)
	case k.isa == isaAVX512 && dist == Rademacher:
		rademacherAVX512(dst, skip, n, a)
	case k.isa == isaAVX512:
		ternaryAVX512(dst, skip, n, a)
	case dist == Normal || dist == Sphere:
		normalsAVX2(dst, skip, n, a)
	case dist == Rademacher:
		rademacherAVX2(dst, skip, n, a)
	default:
		ternaryAVX2(dst, skip, n, a)
	}
}

// panel runs k's panel kernel (panel.go) if it has one for dist, and
// reports whether it did.
func (k *vecKernels) panel(dst *float32, rows *[64]uint32, n int, a *kernelArgs, dist Dist) bool {
	switch {
	case dist != Normal && dist != Sphere:
		return false
	case k.isa == isaAVX512:
		normalsPanelAVX512(dst, rows, n, a)
	default:
		normalsPanelAVX2(dst, rows, n, a)
	}
	return true
}

// bits runs k's kernel of the raw Philox words.
func (k *vecKernels) bits(dst *uint32, skip, n int, a *kernelArgs) {
	if k.isa == isaAVX512 {
		bitsAVX512(dst, skip, n, a)
	} else {
		bitsAVX2(dst, skip, n, a)
	}
}

//go:generate go run ./internal/asmgen

var cpuAVX512, cpuAVX2 = detectCPU()

// detectCPU reports whether the CPU and OS support the AVX-512 and the AVX2
// kernels.
func detectCPU() (avx512, avx2 bool) {
	maxLeaf, _, _, _ := cpuid(0, 0)
	if maxLeaf < 7 {
		return false, false
	}
	_, _, ecx1, _ := cpuid(1, 0)
	const osxsave, avx = 1 << 27, 1 << 28
	if ecx1&osxsave == 0 || ecx1&avx == 0 {
		return false, false
	}
	xcr0, _ := xgetbv()
	const ymmState = 1<<1 | 1<<2        // SSE and AVX state
	const zmmState = 1<<5 | 1<<6 | 1<<7 // opmask, upper halves of zmm0-15, zmm16-31
	_, ebx7, _, _ := cpuid(7, 0)
	const avx2Bit = 1 << 5
	const avx512Bits = 1<<16 | 1<<17 | 1<<28 | 1<<30 | 1<<31 // F, DQ, CD, BW, VL
	avx2 = xcr0&ymmState == ymmState && ebx7&avx2Bit != 0
	avx512 = avx2 && xcr0&zmmState == zmmState && ebx7&avx512Bits == avx512Bits
	return avx512, avx2
}

// cpuid executes CPUID with EAX = leaf and ECX = sub.
func cpuid(leaf, sub uint32) (eax, ebx, ecx, edx uint32)

// xgetbv returns extended control register 0 (which register states the
// OS saves); only valid when CPUID reports OSXSAVE.
func xgetbv() (eax, edx uint32)

// The kernels (vecKernels says what they compute): AVX-512 in
// kernels_avx512_amd64.s, AVX2 in kernels_avx2_amd64.s, both written by
// internal/asmgen.

//go:noescape
func normalsAVX512(dst *float32, skip, n int, a *kernelArgs)

//go:noescape
func rademacherAVX512(dst *float32, skip, n int, a *kernelArgs)

//go:noescape
func ternaryAVX512(dst *float32, skip, n int, a *kernelArgs)

//go:noescape
func bitsAVX512(dst *uint32, skip, n int, a *kernelArgs)

//go:noescape
func normalsAVX2(dst *float32, skip, n int, a *kernelArgs)

//go:noescape
func rademacherAVX2(dst *float32, skip, n int, a *kernelArgs)

//go:noescape
func ternaryAVX2(dst *float32, skip, n int, a *kernelArgs)

//go:noescape
func bitsAVX2(dst *uint32, skip, n int, a *kernelArgs)

// normalsPanelAVX512 and normalsPanelAVX2 are the normals of 32 rows in a
// panel's layout (panel.go).
//
//go:noescape
func normalsPanelAVX512(dst *float32, rows *[64]uint32, n int, a *kernelArgs)

//go:noescape
func normalsPanelAVX2(dst *float32, rows *[64]uint32, n int, a *kernelArgs)

// The transforms on given words, for the tests (vecKernels.words).

//go:noescape
func normalsWordsAVX512(dst *float32, words *uint64, groups int)

//go:noescape
func ternaryWordsAVX512(dst *float32, words *uint64, groups int)

//go:noescape
func normalsWordsAVX2(dst *float32, words *uint64, groups int)

//go:noescape
func ternaryWordsAVX2(dst *float32, words *uint64, groups int)

func f32(x float32) uint32 { return math.Float32bits(x) }

// splat returns the table of v, each value repeated 8 times.
func splat(v ...uint32) (out [numConst][8]uint32) {
	if len(v) != len(out) {
		panic("noise: vconst's size is not its number of values")
	}
	for i, x := range v {
		for j := range out[i] {
			out[i][j] = x
		}
	}
	return out
}
