package noise

import (
	"math/bits"
	"unsafe"
)

// The vector paths: assembly kernels (AVX-512 and AVX2 on amd64) that
// compute Philox and the distributions for many blocks at once, with exactly
// the bits of the scalar definitions (philox.go, normal.go, blockValues).
// vector_amd64.go lists the kernels the CPU can run; vecPath is the one in
// use (nil: the scalar path), a variable so that the tests can force each.

// vecKernels is one implementation of the kernels (one instruction set).
// Each kernel writes elements [skip, skip+n) of the run of blocks that
// starts at the block its kernelArgs name into dst[0:n] (0 ≤ skip < 4), and
// nothing else of dst; values (Normal, whose normals Sphere also takes,
// Rademacher, Ternary) and bits (the raw Philox words) call them directly
// (vector_amd64.go), not through function values, so that the arguments
// stay on the caller's stack.
type vecKernels struct {
	name string
	isa  int // which kernels values and bits call

	// For the tests: the Normal and Ternary transforms on given words
	// instead of Philox's, for groups of len(lanes) blocks (a multiple of
	// 32 blocks in all).
	words [4]func(dst *float32, words *uint64, groups int)
	// lanes[l] is the block (within a group of len(lanes)) whose words lie
	// in lane l of each word's vector (internal/asmgen): the words' layout
	// for the tests, and the row of each lane in the panel kernel's groups.
	lanes []int
}

var vecPath = fastestPath()

// fastestPath is the first of the paths this build and CPU support (nil:
// none).
func fastestPath() *vecKernels {
	if ps := vectorPaths(); len(ps) > 0 {
		return ps[0]
	}
	return nil
}

// kernelArgs is what a kernel reads of a stream: the counter of its first
// block and the Philox key schedule, with the first two rounds folded. The
// counter's words 1-3 (the block's high word, the step, the direction) are
// the same for every block of a run, so round 0's product of word 2 and
// round 1's product of word 0 do not depend on the block: precomputed here,
// they leave a kernel one multiplication in each of those rounds. A run
// must not cross a multiple of 2³² blocks (the high word would change).
//
// The layout is the assembly's (noise_amd64.h, TestKernelArgsLayout).
type kernelArgs struct {
	ctr  uint32       // the first block's index mod 2³²
	d0   uint32       // round 0: hi(M0·c0) ^ d0 is word 2
	e1   uint32       // round 1: hi(M1·c2) ^ e1 is word 0
	e2   uint32       // round 1: lo(M0·c0 of round 0) ^ e2 is word 2
	e3   uint32       // round 2: hi(M0·c0) ^ e3 is word 2
	k02  uint32       // round 2's k0
	keys [7][2]uint32 // (k0, k1) of rounds 3..9
}

// Philox4x32-10's multipliers and key increments.
const (
	philoxM0 = 0xD2511F53
	philoxM1 = 0xCD9E8D57
	philoxW0 = 0x9E3779B9
	philoxW1 = 0xBB67AE85
)

// newKernelArgs returns the kernel arguments of the run of s's blocks that
// starts at block b.
func (s Stream) newKernelArgs(b uint64) kernelArgs {
	k0, k1 := uint32(s.Seed), uint32(s.Seed>>32) // round 0's key
	// Round 0: counter (c0, hi, step, dir). Word 0 becomes hi1 ^ hi ^ k0,
	// word 1 lo1, with (hi1, lo1) = M1·step; word 2 is hi0 ^ dir ^ k1.
	hi1, lo1 := bits.Mul32(philoxM1, s.Step)
	w0 := hi1 ^ uint32(b>>32) ^ k0
	a := kernelArgs{ctr: uint32(b), d0: s.Dir ^ k1}
	// Round 1: word 0 is w0, whose product (hi0, lo0) = M0·w0 is fixed;
	// word 1 is lo1; word 3 becomes lo0.
	k0, k1 = k0+philoxW0, k1+philoxW1
	hi0, lo0 := bits.Mul32(philoxM0, w0)
	a.e1 = lo1 ^ k0
	a.e2 = hi0 ^ k1
	// Round 2: word 3 is lo0.
	k0, k1 = k0+philoxW0, k1+philoxW1
	a.e3 = lo0 ^ k1
	a.k02 = k0
	for r := range a.keys {
		k0, k1 = k0+philoxW0, k1+philoxW1
		a.keys[r] = [2]uint32{k0, k1}
	}
	return a
}

// runLen is how many of the n elements from lo lie before the next
// multiple of 2³² blocks (2³⁴ elements).
func runLen(lo, n int) int {
	left := 1<<34 - uint64(lo)%(1<<34)
	if uint64(n) < left {
		return n
	}
	return int(left)
}

// fillValues writes elements [lo, lo+len(dst)) of z under dist into dst
// (Sphere: the normals, before the division by the norm).
func (s Stream) fillValues(dst []float32, lo int, dist Dist) {
	k := vecPath
	if k == nil {
		s.fillScalar(dst, lo, dist)
		return
	}
	for len(dst) > 0 {
		n := runLen(lo, len(dst))
		a := s.newKernelArgs(uint64(lo / 4))
		k.values(unsafe.SliceData(dst), lo%4, n, &a, dist)
		dst, lo = dst[n:], lo+n
	}
}

// FillBits writes the raw Philox words of elements [lo, lo+len(dst)):
// element i is word i mod 4 of block i/4 (what the distributions turn into
// values; stochastic rounding reads them as they are). Where the CPU has
// vector units it runs the kernels too.
func (s Stream) FillBits(dst []uint32, lo int) {
	k := vecPath
	for len(dst) > 0 {
		n := runLen(lo, len(dst))
		if k == nil {
			s.bitsScalar(dst[:n], lo)
		} else {
			a := s.newKernelArgs(uint64(lo / 4))
			k.bits(unsafe.SliceData(dst), lo%4, n, &a)
		}
		dst, lo = dst[n:], lo+n
	}
}

// fillScalar is fillValues block by block in Go: the definition.
func (s Stream) fillScalar(dst []float32, lo int, dist Dist) {
	hi := lo + len(dst)
	for b := lo / 4; 4*b < hi; b++ {
		v := s.blockValues(uint64(b), dist)
		for m := range 4 {
			if i := 4*b + m; i >= lo && i < hi {
				dst[i-lo] = v[m]
			}
		}
	}
}

// bitsScalar is FillBits block by block in Go.
func (s Stream) bitsScalar(dst []uint32, lo int) {
	hi := lo + len(dst)
	for b := lo / 4; 4*b < hi; b++ {
		x := s.block(uint64(b))
		for m := range 4 {
			if i := 4*b + m; i >= lo && i < hi {
				dst[i-lo] = x[m]
			}
		}
	}
}
