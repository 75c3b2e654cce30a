package zo

import (
	"fmt"
	"math"
	"runtime"
	"sync"
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

// block returns the four raw 32-bit words serving elements 4b..4b+3.
func (s Stream) block(b uint64) [4]uint32 {
	return Philox4x32(
		[4]uint32{uint32(b), uint32(b >> 32), s.Step, s.Dir},
		[2]uint32{uint32(s.Seed), uint32(s.Seed >> 32)})
}

// unitInterval maps 32 random bits strictly inside (0, 1).
func unitInterval(x uint32) float64 { return (float64(x) + 0.5) / (1 << 32) }

// normals4 returns the float64 normals of elements 4b..4b+3 (Box-Muller on the
// pairs (x0, x1) and (x2, x3)).
func normals4(x [4]uint32) [4]float64 {
	r0 := math.Sqrt(-2 * math.Log(unitInterval(x[0])))
	s0, c0 := math.Sincos(2 * math.Pi * unitInterval(x[1]))
	r1 := math.Sqrt(-2 * math.Log(unitInterval(x[2])))
	s1, c1 := math.Sincos(2 * math.Pi * unitInterval(x[3]))
	return [4]float64{r0 * c0, r0 * s0, r1 * c1, r1 * s1}
}

// fillRange writes elements [lo, lo+len(dst)) of z into dst. For Sphere, norm
// is the Euclidean norm of the whole group's normal vector (see sphereNorm).
// With AVX-512 it computes 32 elements at a time (normals32, discrete32:
// the same bits, eight times faster for normals); the ragged ends go one
// block at a time.
func (s Stream) fillRange(dst []float32, lo int, dist Dist, norm float64) {
	hi := lo + len(dst)
	// The vector path takes [vlo, vhi): the whole groups of 32 elements
	// from the first block boundary.
	vlo, vhi := lo, lo
	if haveAVX512 {
		vlo = (lo + 3) / 4 * 4
		vhi = vlo + max(hi-vlo, 0)/(4*vecBlocks)*(4*vecBlocks)
		vecNorm := 1.0 // what the vector path divides normals by
		if dist == Sphere {
			vecNorm = norm
		}
		if vhi > vlo {
			s.fillVector(dst[vlo-lo:vhi-lo], uint64(vlo/4), dist, math.Float64bits(vecNorm))
		}
	}
	for b := lo / 4; 4*b < hi; b++ {
		if 4*b >= vlo && 4*b < vhi {
			b = vhi/4 - 1
			continue
		}
		x := s.block(uint64(b))
		var v [4]float64
		switch dist {
		case Normal, Sphere:
			v = normals4(x)
			if dist == Sphere {
				for m := range v {
					v[m] /= norm
				}
			}
		case Rademacher:
			for m := range v {
				v[m] = float64(int(x[m]&1)*2 - 1)
			}
		case Ternary:
			for m := range v {
				v[m] = float64(int(x[m]%3) - 1)
			}
		}
		if i := 4 * b; i >= lo && i+4 <= hi {
			d := dst[i-lo : i-lo+4]
			d[0], d[1], d[2], d[3] = float32(v[0]), float32(v[1]), float32(v[2]), float32(v[3])
			continue
		}
		for m := range 4 {
			if i := 4*b + m; i >= lo && i < hi {
				dst[i-lo] = float32(v[m])
			}
		}
	}
}

// sumSquaresRange returns Σ n_i² (float64 normals) over elements [lo, hi).
func (s Stream) sumSquaresRange(lo, hi int) float64 {
	var sum float64
	for b := lo / 4; 4*b < hi; b++ {
		v := normals4(s.block(uint64(b)))
		for m := range 4 {
			if i := 4*b + m; i >= lo && i < hi {
				sum += v[m] * v[m]
			}
		}
	}
	return sum
}

// sphereNorm is the norm of the first n normals of s: per-chunk partial sums of
// squares added in chunk order, so it does not depend on workers.
func (s Stream) sphereNorm(n, workers int) float64 {
	chunks := numChunks(n)
	part := make([]float64, chunks)
	parallelFor(chunks, workers, func(c int) {
		lo, hi := chunkRange(c, n)
		part[c] = s.sumSquaresRange(lo, hi)
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
		norm = s.sphereNorm(n, workers)
	}
	parallelFor(numChunks(n), workers, func(c int) {
		lo, hi := chunkRange(c, n)
		s.fillRange(dst[lo:hi], lo, dist, norm)
	})
}

func numChunks(n int) int { return (n + ChunkSize - 1) / ChunkSize }

func chunkRange(c, n int) (lo, hi int) {
	lo = c * ChunkSize
	return lo, min(lo+ChunkSize, n)
}

// parallelFor runs f(0..n-1) on up to workers goroutines (0: GOMAXPROCS).
// Tasks must write disjoint outputs; a single task runs inline.
func parallelFor(n, workers int, f func(i int)) {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, n)
	if workers <= 1 {
		for i := range n {
			f(i)
		}
		return
	}
	var wg sync.WaitGroup
	next := make(chan int, n)
	for i := range n {
		next <- i
	}
	close(next)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				f(i)
			}
		}()
	}
	wg.Wait()
}
