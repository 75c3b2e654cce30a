//go:build goexperiment.simd && amd64

package zo

import (
	"math"
	"math/rand/v2"
	"regexp"
	"simd/archsimd"
	"testing"

	"github.com/meazo-go/meazo/internal/asmcheck"
)

func needAVX512(t *testing.T) {
	if !haveAVX512 {
		t.Skip("no AVX-512 on this CPU: the scalar path is the only one")
	}
}

// TestFillAVX512MatchesScalar: the vector path gives the scalar path's
// float32 bits for every element of every distribution, over ranges that
// start and end off the 32-element groups, below and above block 2³² (both
// counter words), for several streams and a sphere norm.
func TestFillAVX512MatchesScalar(t *testing.T) {
	needAVX512(t)
	defer func() { haveAVX512 = true }()
	streams := []Stream{
		{Seed: StreamSeed(42, 0), Step: 3},
		{Seed: 0, Step: 0, Dir: 0},
		{Seed: ^uint64(0), Step: ^uint32(0), Dir: ^uint32(0)},
		{Seed: 0x0123456789abcdef, Step: 9999, Dir: 3},
	}
	ranges := [][2]int{{0, 4096}, {3, 1000}, {1 << 22, 77}, {1<<34 - 1001, 2000}, {1 << 42, 4099}}
	for _, s := range streams {
		for _, r := range ranges {
			for _, dist := range []Dist{Normal, Sphere, Rademacher, Ternary} {
				lo, n := r[0], r[1]
				got, want := make([]float32, n), make([]float32, n)
				haveAVX512 = true
				s.fillRange(got, lo, dist, 1234.5678)
				haveAVX512 = false
				s.fillRange(want, lo, dist, 1234.5678)
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%+v %v element %d: vector %v, scalar %v", s, dist, lo+i, got[i], want[i])
					}
				}
			}
		}
	}
}

// TestLogSincosAVX512MatchMath: the float64 radius and angle functions agree
// bit for bit with math.Sqrt(-2·math.Log(u)) and math.Sincos(2π·u) on random
// words, the ends of the unit interval and the words nearest every multiple
// of π/4 (where sincos changes octant).
func TestLogSincosAVX512MatchMath(t *testing.T) {
	needAVX512(t)
	words := []uint64{0, 1, 2, 3, 1 << 31, 1<<31 - 1, 1<<32 - 1, 1<<32 - 2, 0xB504F333, 0xB504F334}
	for k := 1; k < 8; k++ { // unit(x)·2π = k·π/4
		c := uint64(float64(k)/8*(1<<32) - 0.5)
		for d := uint64(0); d < 5; d++ {
			words = append(words, c-2+d)
		}
	}
	r := rand.New(rand.NewPCG(7, 8))
	for range 1 << 18 {
		words = append(words, uint64(r.Uint32()))
	}
	for len(words)%8 != 0 {
		words = append(words, 0)
	}
	for i := 0; i < len(words); i += 8 {
		x := archsimd.LoadUint64x8((*[8]uint64)(words[i : i+8]))
		u := unit8(x)
		var rad, sin, cos [8]float64
		sqrtMinus2Log8(u).Store(&rad)
		sv, cv := sincos8(archsimd.BroadcastFloat64x8(2 * math.Pi).Mul(u))
		sv.Store(&sin)
		cv.Store(&cos)
		for l, w := range words[i : i+8] {
			uu := unitInterval(uint32(w))
			ws, wc := math.Sincos(2 * math.Pi * uu)
			if want := math.Sqrt(-2 * math.Log(uu)); math.Float64bits(rad[l]) != math.Float64bits(want) {
				t.Fatalf("word %#x: radius %v, math gives %v", w, rad[l], want)
			}
			if math.Float64bits(sin[l]) != math.Float64bits(ws) || math.Float64bits(cos[l]) != math.Float64bits(wc) {
				t.Fatalf("word %#x: sincos (%v, %v), math gives (%v, %v)", w, sin[l], cos[l], ws, wc)
			}
		}
	}
}

// TestVectorNoiseHasNoLegacySSE reads the vector path's machine code (the
// compiler's listing) for legacy SSE instructions among AVX-512 ones: on
// Intel cores each costs a microcode assist of hundreds of cycles, which
// made the noise ten times slower there (see noise_simd_amd64.go), and no
// test on an AMD machine would notice it by speed.
func TestVectorNoiseHasNoLegacySSE(t *testing.T) {
	asmcheck.NoLegacySSE(t, ".", regexp.MustCompile(`zo\.(Stream\.(fillVector|normals32|discrete32|philox8)|interleave|unit8|sqrtMinus2Log8|sincos8)$`),
		regexp.MustCompile(`zo\.Stream\.(fillVector|normals32|discrete32)$`), 2) // called by scalar code (fillRange, and fillVector's loop)
}
