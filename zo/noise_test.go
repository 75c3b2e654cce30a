package zo

import (
	"fmt"
	"math"
	"runtime"
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

// TestNormalReference checks the reference normals of the noise contract (docs/ALGORITHMS.md) (run seed 42,
// step 3, direction 0), through the group stream and with 42 as the key.
func TestNormalReference(t *testing.T) {
	tests := []struct {
		name string
		seed uint64
		want []float32
	}{
		{"group 0 stream of run seed 42", StreamSeed(42, 0),
			[]float32{0.60350460, -1.3668854, 1.1087419, -0.45288399, 1.5191921, 0.075946189}},
		{"key-only 42", 42,
			[]float32{-2.3877788, 0.84906018, -0.65700454, -0.46577072, 0.85278624, 0.75664866}},
	}
	for _, tt := range tests {
		got := make([]float32, 64) // long enough for the vector path (32 at a time), where there is one
		Fill(got, Normal, Stream{Seed: tt.seed, Step: 3, Dir: 0}, 1)
		for i := range tt.want {
			if math.Abs(float64(got[i]-tt.want[i])) > 1e-6*math.Max(1, math.Abs(float64(tt.want[i]))) {
				t.Errorf("%s: element %d = %.8g, want %.8g", tt.name, i, got[i], tt.want[i])
			}
		}
	}
	if StreamSeed(42, 0) != 42^0x9E3779B97F4A7C15 {
		t.Errorf("StreamSeed(42, 0) = %x", StreamSeed(42, 0))
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
			s.fillRange(part, 4097, dist, 1)
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
