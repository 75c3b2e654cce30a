package noise

import (
	"fmt"
	"math"

	"github.com/meazo-go/meazo/internal/parallel"
)

// Dist is the distribution of the perturbation directions z.
type Dist int

const (
	Normal     Dist = iota // standard normal per element (the default)
	Sphere                 // uniform on the unit sphere of the group (estimates scale by the dimension)
	Rademacher             // ±1 with equal probability
	Ternary                // -1, 0, +1, each with probability about 1/3
)

var distNames = [...]string{Normal: "normal", Sphere: "sphere", Rademacher: "rademacher", Ternary: "ternary"}

// String is the distribution's name in configs (optimizer.dist).
func (d Dist) String() string {
	if d < 0 || int(d) >= len(distNames) {
		return fmt.Sprintf("Dist(%d)", int(d))
	}
	return distNames[d]
}

// ParseDist reads a distribution name: normal, sphere, rademacher or ternary.
func ParseDist(s string) (Dist, error) {
	for d, n := range distNames {
		if n == s {
			return Dist(d), nil
		}
	}
	return 0, fmt.Errorf("unknown noise distribution %q (want normal, sphere, rademacher or ternary)", s)
}

// Version names the noise contract these functions implement, for the
// records of a run: a run resumed by a program that draws other values
// continues correctly, but not as the run would have.
const Version = "philox4x32-10, box-muller float32 (noise v2)"

// Stream names one noise vector z: the direction Dir of training step Step in
// the stream keyed by Seed (a group's StreamSeed). Element i is a pure function
// of (Seed, Step, Dir, i).
type Stream struct {
	Seed uint64
	Step uint32
	Dir  uint32
}

// ChunkSize is the number of elements in one unit of parallel work. It is
// fixed (not derived from the worker count) so that every reduction over chunks
// (the sphere norm, update norms) adds the same partial sums in the same order
// whatever the number of goroutines. It is a multiple of 4, so a chunk starts
// on a Philox block boundary.
const ChunkSize = 1 << 14

// NumChunks is the number of chunks of a vector of n elements.
func NumChunks(n int) int { return (n + ChunkSize - 1) / ChunkSize }

// ChunkRange is the element range [lo, hi) of chunk c of a vector of n.
func ChunkRange(c, n int) (lo, hi int) {
	lo = c * ChunkSize
	return lo, min(lo+ChunkSize, n)
}

// block returns the four raw 32-bit words serving elements 4b..4b+3.
func (s Stream) block(b uint64) [4]uint32 {
	return Philox4x32(
		[4]uint32{uint32(b), uint32(b >> 32), s.Step, s.Dir},
		[2]uint32{uint32(s.Seed), uint32(s.Seed >> 32)})
}

// blockValues returns the values of elements 4b..4b+3 under dist (Sphere:
// the normals before the division by the norm).
func (s Stream) blockValues(b uint64, dist Dist) [4]float32 {
	x := s.block(b)
	switch dist {
	case Normal, Sphere:
		return normals4(x)
	case Rademacher:
		var v [4]float32
		for m := range v {
			v[m] = float32(int(x[m]&1)*2 - 1)
		}
		return v
	}
	var v [4]float32
	for m := range v {
		v[m] = float32(int(x[m]%3) - 1)
	}
	return v
}

// FillRange writes elements [lo, lo+len(dst)) of z into dst. For Sphere, norm
// is the Euclidean norm of the whole group's normal vector (SphereNorm), and
// each value is the normal divided by it in float64, rounded to float32; it
// is ignored for the other distributions. Where the CPU has vector units
// (AVX-512 or AVX2, vector.go) the values come from assembly kernels, with
// the same bits; a short or unaligned range costs about one step of them
// (the last step is the smallest of 16, 32, 64, 96, 128 or 160 elements
// that holds the rest).
func (s Stream) FillRange(dst []float32, lo int, dist Dist, norm float64) {
	s.fillValues(dst, lo, dist)
	if dist == Sphere {
		for i, v := range dst {
			dst[i] = float32(float64(v) / norm)
		}
	}
}

// Perturbed is θ + scale·z rounded to float32, the sum in float64: the
// value every implementation of a perturbed point computes (the ZO
// engine's buffers for an adapter; a backend reading a perturbed weight).
func Perturbed(theta float32, scale float64, z float32) float32 {
	return float32(float64(theta) + float64(scale*float64(z))) // unfused (TestNoFusedMultiplyAdd)
}

// SumSquares returns Σ n_i² of the normals of elements [lo, hi), each
// square and the sum in float64, in element order.
func (s Stream) SumSquares(lo, hi int) float64 {
	var buf [ChunkSize]float32
	var sum float64
	for c := lo; c < hi; c += ChunkSize {
		n := buf[:min(ChunkSize, hi-c)]
		s.FillRange(n, c, Normal, 1)
		for _, v := range n {
			sum += float64(float64(v) * float64(v)) // exact, but unfused for TestNoFusedMultiplyAdd
		}
	}
	return sum
}

// SphereNorm is the norm of the first n normals of s: per-chunk partial sums
// of squares added in chunk order, so it does not depend on workers (0:
// GOMAXPROCS).
func (s Stream) SphereNorm(n, workers int) float64 {
	chunks := NumChunks(n)
	part := make([]float64, chunks)
	parallel.For(chunks, workers, func(c int) {
		lo, hi := ChunkRange(c, n)
		part[c] = s.SumSquares(lo, hi)
	})
	var sum float64
	for _, p := range part {
		sum += p
	}
	return math.Sqrt(sum)
}

// Fill writes the whole noise vector z of stream s (length len(dst), the
// group's dimension) into dst using up to workers goroutines (0 means
// GOMAXPROCS). The result does not depend on workers.
func Fill(dst []float32, dist Dist, s Stream, workers int) {
	n := len(dst)
	norm := 1.0
	if dist == Sphere {
		norm = s.SphereNorm(n, workers)
	}
	parallel.For(NumChunks(n), workers, func(c int) {
		lo, hi := ChunkRange(c, n)
		s.FillRange(dst[lo:hi], lo, dist, norm)
	})
}
