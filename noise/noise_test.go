package noise

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"testing"
)

func TestPhiloxKnownAnswers(t *testing.T) {
	tests := []struct {
		ctr  [4]uint32
		key  [2]uint32
		want [4]uint32
	}{
		{[4]uint32{}, [2]uint32{}, [4]uint32{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
		{[4]uint32{^uint32(0), ^uint32(0), ^uint32(0), ^uint32(0)}, [2]uint32{^uint32(0), ^uint32(0)},
			[4]uint32{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
		{[4]uint32{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, [2]uint32{0xa4093822, 0x299f31d0},
			[4]uint32{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
	}
	for _, tt := range tests {
		if got := Philox4x32(tt.ctr, tt.key); got != tt.want {
			t.Errorf("Philox4x32(%08x, %08x) = %08x, want %08x", tt.ctr, tt.key, got, tt.want)
		}
	}
}

// TestNormalReference checks the first normals of two streams (step 3,
// direction 0) against scripts/noise_reference.py, an independent NumPy
// implementation of the contract written from docs/ALGORITHMS.md: the bits
// must be equal.
func TestNormalReference(t *testing.T) {
	tests := []struct {
		name string
		seed uint64
		want []uint32 // float32 bits
	}{
		{"group 0 stream of run seed 42", StreamSeed(42, 0),
			[]uint32{0x3f1a7f44, 0xbfaef61a, 0x3f8deb40, 0xbee7e06c, 0x3fc274e2, 0x3d9b899a}},
		{"key-only 42", 42,
			[]uint32{0xc018d15e, 0x3f595c03, 0xbf283172, 0xbeee797e, 0x3f5a5032, 0x3f41b3b9}},
	}
	for _, tt := range tests {
		got := make([]float32, 256) // long enough for the vector path, where there is one
		Fill(got, Normal, Stream{Seed: tt.seed, Step: 3, Dir: 0}, 1)
		for i, w := range tt.want {
			if math.Float32bits(got[i]) != w {
				t.Errorf("%s: element %d = %.8g (%08x), want %.8g (%08x)", tt.name, i, got[i], math.Float32bits(got[i]), math.Float32frombits(w), w)
			}
		}
	}
	if StreamSeed(42, 0) != 42^0x9E3779B97F4A7C15 {
		t.Errorf("StreamSeed(42, 0) = %x", StreamSeed(42, 0))
	}
}

// TestNormalReferenceSamples checks blocks of random keys, steps,
// directions and block indices (scripts/noise_reference.py --check 12).
func TestNormalReferenceSamples(t *testing.T) {
	samples := []struct {
		key       uint64
		step, dir uint32
		block     uint64
		want      [4]uint32
	}{
		{0xe84795980703b0e4, 3049970018, 2903480230, 737205542905, [4]uint32{0xbff3878c, 0xc01dcc4a, 0x3e6591eb, 0xc016acd3}},
		{0x6a7129b9f4bca02e, 2763634455, 1813601490, 1024069512266, [4]uint32{0xbea10897, 0x40139d14, 0x3eb8edd6, 0xbe52a938}},
		{0x9d05bbdb9def3a74, 1523173340, 2175624526, 404638360762, [4]uint32{0x3fa892bf, 0xbf132e85, 0x3fa5aac6, 0xbebf6d68}},
		{0xdc0f85d7ede748f1, 3558882907, 3282380027, 264341932382, [4]uint32{0x3fe9e3ec, 0xbf57d6a5, 0xbfd70fde, 0x3f99ed3e}},
		{0x76fae661debf95ba, 3089211993, 372795272, 603013289471, [4]uint32{0xbed3db91, 0x3f33caed, 0x3f199358, 0x3f9962b9}},
		{0xfd27d4bed19b4509, 504258071, 4080546890, 29700374658, [4]uint32{0xbf24f725, 0x3f6cf279, 0xbf302f2e, 0xbf7a6084}},
		{0xef747e1410909771, 2032533517, 1864523257, 862029658300, [4]uint32{0x3f9d016d, 0xbff1edb3, 0xbe62403b, 0xbf06eec4}},
		{0xf214b135c6abf499, 4065699724, 3506240775, 61632153289, [4]uint32{0x3fd6dc41, 0xbe444079, 0x3ec993c1, 0xbfe5ef28}},
		{0xccf6e88efdf843fb, 1197311222, 311698181, 138372655501, [4]uint32{0x3f5e2bf2, 0xbfc181af, 0x3ec2d4e7, 0x3edfd3df}},
		{0x02102b331cd8d1bc, 174814742, 2534082747, 34860693158, [4]uint32{0xbe527f4e, 0xbf82dd0c, 0x3f0f65ce, 0xbf38835e}},
		{0xfed2f4f73fa1b733, 2655826164, 1263499021, 519136646774, [4]uint32{0xbc97845d, 0x3f64802f, 0x3fb04422, 0xbfa7dfa3}},
		{0xf0a6dcf36a53546e, 856013432, 2015887360, 818551618455, [4]uint32{0x3f715e84, 0x3e57ee77, 0xbf7676e4, 0x3ed14b88}},
	}
	for _, tt := range samples {
		s := Stream{Seed: tt.key, Step: tt.step, Dir: tt.dir}
		got := make([]float32, 4)
		s.FillRange(got, int(4*tt.block), Normal, 1)
		for m, w := range tt.want {
			if math.Float32bits(got[m]) != w {
				t.Errorf("key %x step %d dir %d block %d: element %d = %08x, want %08x", tt.key, tt.step, tt.dir, tt.block, m, math.Float32bits(got[m]), w)
			}
		}
	}
}

// TestFillWorkerInvariance: the same vector for any worker count and at
// GOMAXPROCS 1 and 8, for every distribution, across several chunks and a
// ragged tail; a sub-range generated alone equals the slice of the whole.
func TestFillWorkerInvariance(t *testing.T) {
	const n = 3*ChunkSize + 13
	s := Stream{Seed: StreamSeed(7, 2), Step: 11, Dir: 1}
	for _, dist := range []Dist{Normal, Sphere, Rademacher, Ternary} {
		ref := make([]float32, n)
		Fill(ref, dist, s, 1)
		for _, procs := range []int{1, 8} {
			old := runtime.GOMAXPROCS(procs)
			for _, workers := range []int{0, 2, 3, 8} {
				got := make([]float32, n)
				Fill(got, dist, s, workers)
				if i := firstDiff(ref, got); i >= 0 {
					t.Errorf("%v GOMAXPROCS=%d workers=%d: element %d = %v, want %v", dist, procs, workers, i, got[i], ref[i])
				}
			}
			runtime.GOMAXPROCS(old)
		}
		if dist != Sphere {
			part := make([]float32, 10)
			s.FillRange(part, 4097, dist, 1)
			if i := firstDiff(ref[4097:4107], part); i >= 0 {
				t.Errorf("%v: unaligned range differs at %d", dist, i)
			}
		}
	}
}

func firstDiff(a, b []float32) int {
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return i
		}
	}
	return -1
}

// TestDistMoments sanity-checks each distribution's support and moments.
func TestDistMoments(t *testing.T) {
	const n = 1 << 16
	z := make([]float32, n)
	for _, dist := range []Dist{Normal, Sphere, Rademacher, Ternary} {
		Fill(z, dist, Stream{Seed: 5}, 0)
		var s1, s2 float64
		for _, v := range z {
			s1 += float64(v)
			s2 += float64(v) * float64(v)
			if (dist == Rademacher && v != 1 && v != -1) || (dist == Ternary && v != 1 && v != 0 && v != -1) {
				t.Fatalf("%v: value %v outside support", dist, v)
			}
		}
		mean, second := s1/n, s2/n
		want := map[Dist]float64{Normal: 1, Sphere: 1.0 / n, Rademacher: 1, Ternary: 2.0 / 3}[dist]
		if math.Abs(second-want) > 0.02*want || math.Abs(mean) > 0.02*math.Sqrt(want) {
			t.Errorf("%v: mean %.4g, E[z²] %.4g, want 0 and %.4g", dist, mean, second, want)
		}
	}
}

func TestParseDist(t *testing.T) {
	for _, d := range []Dist{Normal, Sphere, Rademacher, Ternary} {
		if got, err := ParseDist(d.String()); err != nil || got != d {
			t.Errorf("ParseDist(%q) = %v, %v", d.String(), got, err)
		}
	}
	if _, err := ParseDist("gauss"); err == nil {
		t.Error("ParseDist(gauss) succeeded")
	}
}

func BenchmarkFill(b *testing.B) {
	const d = 2_300_000
	z := make([]float32, d)
	for _, dist := range []Dist{Normal, Rademacher} {
		for _, workers := range []int{1, 2} {
			b.Run(fmt.Sprintf("%v/workers=%d", dist, workers), func(b *testing.B) {
				for i := 0; b.Loop(); i++ {
					Fill(z, dist, Stream{Seed: 1, Step: uint32(i)}, workers)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/d, "ns/param")
			})
		}
	}
}

// TestNormalDistribution: a million normals pass a Kolmogorov–Smirnov test
// against the standard normal CDF at the 1 % level, and their moments are
// the normal's (variance 1, kurtosis 3) within sampling error.
func TestNormalDistribution(t *testing.T) {
	const n = 1 << 20
	z := make([]float32, n)
	Fill(z, Normal, Stream{Seed: StreamSeed(3, 1), Step: 9}, 0)
	sorted := make([]float64, n)
	var s2, s4 float64
	for i, v := range z {
		x := float64(v)
		sorted[i] = x
		s2 += x * x
		s4 += x * x * x * x
	}
	slices.Sort(sorted)
	var d float64
	for i, x := range sorted {
		cdf := 0.5 * math.Erfc(-x/math.Sqrt2)
		d = max(d, math.Abs(cdf-float64(i)/n), math.Abs(cdf-float64(i+1)/n))
	}
	if crit := 1.63 / math.Sqrt(n); d > crit {
		t.Errorf("Kolmogorov–Smirnov distance %.5f > %.5f (1 %% level)", d, crit)
	}
	variance, kurt := s2/n, s4/n/((s2/n)*(s2/n))
	if math.Abs(variance-1) > 5*math.Sqrt(2.0/n) || math.Abs(kurt-3) > 5*math.Sqrt(96.0/n) {
		t.Errorf("variance %.5f, kurtosis %.4f; want 1 and 3", variance, kurt)
	}
	if lo, hi := sorted[0], sorted[n-1]; lo < -5.78 || hi > 5.78 {
		t.Errorf("normals span [%g, %g], beyond the transform's ±5.77", lo, hi)
	}
}
