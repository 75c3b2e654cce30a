package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/meazo-go/meazo/noise"
	"github.com/meazo-go/meazo/tensor"
	"github.com/meazo-go/meazo/update"
)

// TestMatMulPackedPerturbedLayouts: every segment layout tensor.Segment
// allows gives each segment's rows what MatMulPacked gives on W as the
// segment's perturbation makes it (noise.Perturbed), bit for bit: a − before
// its +, a + and − with unperturbed rows between, two directions
// interleaved (the mirror formed for one, then the other's), the same
// perturbation twice (not mirrored: formed again), a mirror read twice and
// the + after it, empty segments. backendtest's suite has the + then − of
// each direction only, and no shape whose tasks hold more than one panel:
// here, on one thread, 290 columns make groups of two panels (slices 4096
// deep: K = 4097 is two, the second fetched while the rows sweep the first)
// and 1030 columns groups of eight (1024 deep: K = 1025 is two) and a last
// group of one panel, with K at the noise depth and past it.
func TestMatMulPackedPerturbedLayouts(t *testing.T) {
	pt := func(dir uint32, scale float64) *tensor.Perturbation {
		return &tensor.Perturbation{Noise: tensor.Noise{Stream: noise.Stream{Seed: noise.StreamSeed(5, 3), Step: 9, Dir: dir},
			Dist: noise.Normal, Norm: 1, Offset: 4096}, Scale: scale}
	}
	a, am, b, bm := pt(0, 1e-3), pt(0, -1e-3), pt(1, 1e-3), pt(1, -1e-3)
	layouts := []struct {
		name string
		segs []tensor.Segment
	}{
		{"-a,+a", []tensor.Segment{{Rows: 3, P: am}, {Rows: 5, P: a}}},
		{"+a,none,-a", []tensor.Segment{{Rows: 3, P: a}, {Rows: 2}, {Rows: 4, P: am}}},
		{"+a,+b,-a,-b", []tensor.Segment{{Rows: 3, P: a}, {Rows: 2, P: b}, {Rows: 4, P: am}, {Rows: 1, P: bm}}},
		{"+a,+a", []tensor.Segment{{Rows: 3, P: a}, {Rows: 2, P: a}}},
		{"+a,-a,-a,+a", []tensor.Segment{{Rows: 3, P: a}, {Rows: 2, P: am}, {Rows: 1, P: am}, {Rows: 2, P: a}}},
		{"empty+a,-a,empty", []tensor.Segment{{Rows: 0, P: a}, {Rows: 3, P: am}, {Rows: 0}}},
	}
	// Groups of 2 panels (290 wide, one thread), 8 (1030), 1 (33), and 3
	// and 5 (384 and 640), whose slices are shallower than K.
	shapes := []struct{ n, k int }{{290, noiseDepth}, {290, 4097}, {1030, noiseDepth + 1}, {33, 3}, {384, 3072}, {640, 2048}}
	packings := []bool{false, true}
	if testing.Short() { // under emulation (scripts/test_cpus.sh): two slices of groups of two, then of three, float32
		shapes, packings = []struct{ n, k int }{shapes[1], shapes[4]}, packings[:1]
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, sh := range shapes {
		// bfloat16 values, so that both packings hold the same matrix.
		w := make([]float32, sh.n*sh.k)
		for i := range w {
			w[i] = update.BF16ToFloat32(uint16(math.Float32bits(float32(rng.NormFloat64()*0.05)) >> 16))
		}
		for _, l := range layouts {
			m := 0
			for _, s := range l.segs {
				m += s.Rows
			}
			x := randMat(rng, m*sh.k)
			for _, bf16 := range packings {
				name := fmt.Sprintf("%dx%d/%s/bf16=%v", sh.n, sh.k, l.name, bf16)
				t.Run(name, func(t *testing.T) {
					pw := Pack(1, w, sh.n, sh.k)
					if bf16 {
						pw = PackBF16(w, sh.n, sh.k)
					}
					got := make([]float32, m*sh.n)
					MatMulPackedPerturbed(1, got, x, m, pw, l.segs)
					lo := 0
					for si, s := range l.segs {
						want := make([]float32, s.Rows*sh.n)
						MatMulPacked(1, want, x[lo*sh.k:(lo+s.Rows)*sh.k], s.Rows, Pack(1, perturbedRowMajor(w, s.P), sh.n, sh.k))
						for i, v := range want {
							if g := got[lo*sh.n+i]; math.Float32bits(g) != math.Float32bits(v) {
								t.Fatalf("segment %d, row %d, column %d: %v, the perturbed matrix's MatMul gives %v", si, lo+i/sh.n, i%sh.n, g, v)
							}
						}
						lo += s.Rows
					}
				})
			}
		}
	}
}

// TestMatMulPackedPerturbedThreads: the worker count sets how many panels a
// task forms at once (of 64 panels: 8, 5, 4 and 3 on 2, 3, 4 and 5 workers),
// never the bits.
func TestMatMulPackedPerturbedThreads(t *testing.T) {
	if testing.Short() {
		t.Skip("a 2048×2048 product five times; under emulation the layout test's group of three stands for it")
	}
	const n, k, m = 2048, 2048, 6
	rng := rand.New(rand.NewPCG(5, 6))
	w, x := randMat(rng, n*k), randMat(rng, m*k)
	p := &tensor.Perturbation{Noise: tensor.Noise{Stream: noise.Stream{Seed: 11, Step: 3}, Dist: noise.Normal, Norm: 1}, Scale: 1e-3}
	minus := *p
	minus.Scale = -p.Scale
	segs := []tensor.Segment{{Rows: 2, P: p}, {Rows: 1}, {Rows: 3, P: &minus}}
	pw := Pack(1, w, n, k)
	want := make([]float32, m*n)
	MatMulPackedPerturbed(1, want, x, m, pw, segs)
	for _, th := range []int{2, 3, 4, 5} {
		got := make([]float32, m*n)
		MatMulPackedPerturbed(Workers(th), got, x, m, pw, segs)
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%d workers: row %d, column %d: %v, one worker gives %v", th, i/n, i%n, got[i], want[i])
			}
		}
	}
}

// TestMatMulPackedPerturbedNoStaleMirror: a worker's scratch comes back
// from the pool with the mirror its last task formed; a call on another
// matrix of the same shape, whose first segment has that mirror's noise and
// scale, must form its own. (The race detector's pool drops items at
// random: there the check may pass without reusing the scratch.)
func TestMatMulPackedPerturbedNoStaleMirror(t *testing.T) {
	p := &tensor.Perturbation{Noise: tensor.Noise{Stream: noise.Stream{Seed: 7, Step: 1}, Dist: noise.Normal, Norm: 1}, Scale: 1e-3}
	minus := *p
	minus.Scale = -p.Scale
	rng := rand.New(rand.NewPCG(3, 4))
	const n, k = 20, 40 // one panel: the first slice is the last one formed
	w1, w2, x := randMat(rng, n*k), randMat(rng, n*k), randMat(rng, k)
	y := make([]float32, 2*n)
	MatMulPackedPerturbed(1, y, slices.Concat(x, x), 2, Pack(1, w1, n, k), []tensor.Segment{{Rows: 1, P: p}, {Rows: 1, P: &minus}})
	got, want := make([]float32, n), make([]float32, n)
	MatMulPackedPerturbed(1, got, x, 1, Pack(1, w2, n, k), []tensor.Segment{{Rows: 1, P: &minus}})
	MatMulPacked(1, want, x, 1, Pack(1, perturbedRowMajor(w2, &minus), n, k))
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("column %d: %v, W2 − εZ gives %v (W1's mirror read?)", i, got[i], want[i])
		}
	}
}

// perturbedRowMajor is w (row-major) as p makes it (nil: w).
func perturbedRowMajor(w []float32, p *tensor.Perturbation) []float32 {
	out := make([]float32, len(w))
	if p == nil {
		copy(out, w)
		return out
	}
	p.Stream.FillRange(out, int(p.Offset), p.Dist, p.Norm)
	for i, v := range w {
		out[i] = noise.Perturbed(v, p.Scale, out[i])
	}
	return out
}
