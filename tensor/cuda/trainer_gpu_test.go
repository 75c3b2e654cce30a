package cuda

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/meazo-go/meazo/noise"
	"github.com/meazo-go/meazo/tensor"
	"github.com/meazo-go/meazo/tensor/backendtest"
)

// The Trainer's checks on a GPU (they skip without one; scripts/gpu/
// session.sh's part full runs them): what the emulator showed of the
// kernels' logic, now with the GPU's own arithmetic and cuBLAS.

// TestGPUTrainer runs the Trainer conformance on the GPU: the perturbed
// matrices a product reads, rows, vectors and updates bit for bit the
// host's; products within the float32 tolerance of MatMul on the perturbed
// matrix (a segment's rows sit at an offset in x and y, and cuBLAS may
// choose another kernel for other shapes or alignments).
func TestGPUTrainer(t *testing.T) {
	backendtest.Trainer(t, openOrSkip(t), backendtest.Float32)
}

// TestGPUNoise: the GPU's noise is package noise's, bit for bit, over 2²⁴
// elements of every distribution (across block 2³²), and the normal
// transform on every radius (2²⁴ values of the first word) and every
// angle (2²⁶ values of the second), in batches.
func TestGPUNoise(t *testing.T) {
	b := openOrSkip(t)
	s := noise.Stream{Seed: noise.StreamSeed(42, 3), Step: 7, Dir: 2}
	const n = 1 << 24
	e0 := int64(4<<32 - n/2)
	for _, dist := range []noise.Dist{noise.Normal, noise.Sphere, noise.Rademacher, noise.Ternary} {
		want := make([]float32, n)
		s.FillRange(want, int(e0), dist, 4096.5)
		if got := fillDevice(b, s, dist, 4096.5, e0, n, false); firstDiff(got, want) >= 0 {
			i := firstDiff(got, want)
			t.Fatalf("%v: element %d is %g, package noise's %g", dist, e0+int64(i), got[i], want[i])
		}
	}
	rng := rand.New(rand.NewPCG(8, 9))
	const batch = 1 << 22 // pairs
	radii, angles := 0, 0
	for lo := 0; lo < 1<<24+1<<26; lo += batch {
		words := make([]uint32, 2*batch)
		for i := range batch {
			v := uint32(lo + i)
			if v < 1<<24 { // every radius: a>>8 = v, the low byte and the angle random
				words[2*i], words[2*i+1] = v<<8|rng.Uint32()&0xFF, rng.Uint32()
				radii++
			} else { // every angle: b>>6 = v − 2²⁴, the low 6 bits and the radius random
				words[2*i], words[2*i+1] = rng.Uint32(), (v-1<<24)<<6|rng.Uint32()&63
				angles++
			}
		}
		checkNormalWords(t, b, words)
	}
	t.Logf("the normal transform on %d radii and %d angles: package noise's bits", radii, angles)
}

// TestGPUFullParameter: full-parameter steps on the GPU against the CPU
// (TestEmulatedFullParameter's check): losses within the conformance
// tolerance, weights and optimizer state bit for bit after the CPU's
// updates.
func TestGPUFullParameter(t *testing.T) {
	b := openOrSkip(t)
	for _, c := range fullParamCases {
		t.Run(c.name, func(t *testing.T) { fullParameterSteps(t, b, c) })
	}
}

// TestGPUBlockedProduct: a perturbed product formed a block of W's rows at
// a time (perturbChunk) against the whole matrix at once, on shapes of the
// 0.6-8B models' projections and an LM head. cuBLAS may choose other
// kernels for the blocks' shapes: the test logs whether the bits are the
// same, and holds the difference to the float32 op tolerance.
func TestGPUBlockedProduct(t *testing.T) {
	b := openOrSkip(t)
	for _, sh := range []struct{ rows, n, k, chunk int }{
		{1024, 3072, 1024, 1 << 20}, {2400, 4096, 4096, 1 << 23}, {1024, 32768, 1024, 1 << 23}, {64, 12288, 4096, 1 << 22},
	} {
		rng := rand.New(rand.NewPCG(uint64(sh.n), uint64(sh.k)))
		w := make([]float32, sh.n*sh.k)
		for i := range w {
			w[i] = float32(rng.NormFloat64() * 0.02)
		}
		x := make([]float32, sh.rows*sh.k)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		p := &tensor.Perturbation{Noise: tensor.Noise{Stream: noise.Stream{Seed: 3, Step: 1}, Norm: 1, Offset: 12345}, Scale: 1e-3}
		segs := []tensor.Segment{{Rows: sh.rows / 2, P: p}, {Rows: sh.rows - sh.rows/2, P: &tensor.Perturbation{Noise: p.Noise, Scale: -1e-3}}}
		wb, xb := b.Pack(w, sh.n, sh.k, false), b.FromHost(x)
		var ys [2][]float32
		for i, chunk := range []int{sh.n * sh.k, sh.chunk} {
			b.perturbChunk = chunk
			y := b.Alloc(sh.rows * sh.n)
			b.MatMulPerturbed(y, xb, wb, segs, false)
			ys[i] = b.ToHost(y)
			b.Free(y)
		}
		b.perturbChunk = 0
		b.Free(xb)
		b.FreeWeight(wb)
		// The difference relative to the largest output.
		differ, delta, scale := 0, 0.0, 0.0
		for i := range ys[0] {
			if math.Float32bits(ys[0][i]) != math.Float32bits(ys[1][i]) {
				differ++
			}
			delta = max(delta, math.Abs(float64(ys[1][i]-ys[0][i])))
			scale = max(scale, math.Abs(float64(ys[0][i])))
		}
		worst := delta / scale
		t.Logf("%d rows × %d×%d in blocks of %d rows: %d of %d elements differ from the whole matrix's, by at most %.3g of the largest",
			sh.rows, sh.n, sh.k, sh.chunk/sh.k, differ, len(ys[0]), worst)
		if worst > backendtest.Float32.Op {
			t.Errorf("%d rows × %d×%d: blocks differ from the whole matrix by %.3g relative", sh.rows, sh.n, sh.k, worst)
		}
	}
}
