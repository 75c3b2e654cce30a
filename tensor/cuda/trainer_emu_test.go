package cuda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/meazo-go/meazo/noise"
	"github.com/meazo-go/meazo/tensor"
	"github.com/meazo-go/meazo/tensor/backendtest"
)

// TestEmulatedTrainer runs the Trainer conformance (perturbed products,
// rows and vectors, and updates, bit for bit against the host's
// definitions) on the emulated backend: with the default blocks of rows
// (every test matrix in one block), and with blocks of one and a few rows
// (perturbChunk small), where the products are formed and multiplied a
// block of W's rows at a time; the second also keeps room for only one
// partial sum of squares on the device, so that each update's are read
// back before the next one's are written. The third has a direction's +
// and − products paired (Options.PairedProducts): one batched call each.
func TestEmulatedTrainer(t *testing.T) {
	for _, c := range []struct {
		chunk  int
		paired bool
	}{{0, false}, {1000, false}, {1000, true}} {
		t.Run(fmt.Sprintf("perturbChunk=%d,paired=%v", c.chunk, c.paired), func(t *testing.T) {
			b := newEmuBackend(t)
			b.perturbChunk, b.paired = c.chunk, c.paired
			if c.chunk > 0 {
				b.squares.limit = 1
			}
			lc := countLaunches(b)
			backendtest.Trainer(t, b, backendtest.Exact)
			if lc.launches["perturb_copy"] == 0 || lc.launches["perturb_rows"] == 0 || lc.launches["zo_update"] == 0 {
				t.Errorf("the Trainer's kernels did not all run: %v", lc.launches)
			}
			if (lc.batched[2] > 0) != c.paired {
				t.Errorf("%d paired products (batched calls of 2) with paired %v", lc.batched[2], c.paired)
			}
			if bufs, weights, _ := b.Live(); bufs != 0 || weights != 0 {
				t.Errorf("%d buffers and %d weights left alive", bufs, weights)
			}
		})
	}
}

// TestPerturbJobs: segments grouped by noise, the + and − of a direction
// formed together, unperturbed rows apart, empty segments dropped.
func TestPerturbJobs(t *testing.T) {
	n0 := tensor.Noise{Stream: noise.Stream{Seed: 1, Dir: 0}, Norm: 1}
	n1 := tensor.Noise{Stream: noise.Stream{Seed: 1, Dir: 1}, Norm: 1}
	p := func(n tensor.Noise, s float64) *tensor.Perturbation { return &tensor.Perturbation{Noise: n, Scale: s} }
	segs := []tensor.Segment{{Rows: 3, P: p(n0, 1)}, {Rows: 2, P: p(n0, -1)}, {Rows: 4}, {Rows: 0, P: p(n1, 1)},
		{Rows: 1, P: p(n1, 1)}, {Rows: 5, P: p(n0, 1)}, {Rows: 2, P: p(n0, 2)}}
	jobs := perturbJobs(segs)
	got := ""
	for _, j := range jobs {
		dir := -1
		if j.noise != nil {
			dir = int(j.noise.Stream.Dir)
		}
		got += fmt.Sprintf("[%d %v %v]", dir, j.scales, j.ranges)
	}
	want := "[-1 [] [[{5 4}]]][0 [1 -1] [[{0 3} {10 5}] [{3 2}]]][0 [2] [[{15 2}]]][1 [1] [[{9 1}]]]"
	if got != want {
		t.Errorf("jobs %s, want %s", got, want)
	}
}

// fillDevice runs noise_fill (values) or noise_bits (words, as float32
// bits) for elements [e0, e0+n) of s and downloads them.
func fillDevice(b *Backend, s noise.Stream, dist noise.Dist, norm float64, e0 int64, n int, bits bool) []float32 {
	buf := b.Alloc(n)
	defer b.Free(buf)
	func() {
		defer b.enter()()
		if bits {
			b.launch("noise_bits", blocks1D(quads(e0, n)), 256, 0, devPtr(dbuf(buf).ptr), i64Arg(n), i64Arg(int64(s.Seed)),
				i32Arg(int32(s.Step)), i32Arg(int32(s.Dir)), i64Arg(e0))
			return
		}
		b.launch("noise_fill", blocks1D(quads(e0, n)), 256, 0, devPtr(dbuf(buf).ptr), i64Arg(n), i64Arg(int64(s.Seed)),
			i32Arg(int32(s.Step)), i32Arg(int32(s.Dir)), i32Arg(int32(dist)), f64Arg(norm), i64Arg(e0))
	}()
	return b.ToHost(buf)
}

// TestEmulatedNoise: the device's noise (kernels/noise.cuh) is package
// noise's, bit for bit: every distribution's values and the raw words over
// ragged ranges, one across block 2³² (both counter words).
func TestEmulatedNoise(t *testing.T) {
	b := newEmuBackend(t)
	s := noise.Stream{Seed: noise.StreamSeed(42, 3), Step: 7, Dir: 2}
	for _, r := range []struct {
		e0 int64
		n  int
	}{{0, 1000}, {3, 1}, {1234567, 4097}, {4<<32 - 6, 21}} {
		for _, dist := range []noise.Dist{noise.Normal, noise.Sphere, noise.Rademacher, noise.Ternary} {
			want := make([]float32, r.n)
			s.FillRange(want, int(r.e0), dist, 3.5)
			got := fillDevice(b, s, dist, 3.5, r.e0, r.n, false)
			if i := firstDiff(got, want); i >= 0 {
				t.Fatalf("%v, elements [%d, %d): element %d is %g, package noise's %g", dist, r.e0, r.e0+int64(r.n), r.e0+int64(i), got[i], want[i])
			}
		}
		words := make([]uint32, r.n)
		s.FillBits(words, int(r.e0))
		got := fillDevice(b, s, 0, 1, r.e0, r.n, true)
		for i, w := range words {
			if math.Float32bits(got[i]) != w {
				t.Fatalf("word of element %d is %#x, package noise's %#x", r.e0+int64(i), math.Float32bits(got[i]), w)
			}
		}
	}
}

// firstDiff is the first index where a and b differ in bits, or −1.
func firstDiff(a, b []float32) int {
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return i
		}
	}
	return -1
}

// normalWordsDevice runs noise_normal_words on the word pairs of words.
func normalWordsDevice(b *Backend, words []uint32) []float32 {
	w := b.FromHost(unsafe.Slice((*float32)(unsafe.Pointer(&words[0])), len(words)))
	out := b.Alloc(len(words))
	defer b.Free(w, out)
	func() {
		defer b.enter()()
		b.launch("noise_normal_words", blocks1D(len(words)/2), 256, 0, devPtr(dbuf(out).ptr), devPtr(dbuf(w).ptr), i64Arg(len(words)/2))
	}()
	return b.ToHost(out)
}

// TestEmulatedNormalTransform: the Box–Muller transform of given words on
// the device is package noise's, on the transform's edges (every quadrant,
// the mirror angle's threshold, the smallest and largest radii) and a
// sample of random words. TestGPUNormalTransformExhaustive runs every
// radius and every angle on a GPU.
func TestEmulatedNormalTransform(t *testing.T) {
	b := newEmuBackend(t)
	var words []uint32
	for _, f := range []uint32{0, 1, 1<<23 - 1, 1 << 23, 1<<23 + 1, 1<<24 - 1} {
		for q := range uint32(4) {
			for _, a := range []uint32{0, 0xFF, 0xFFFFFF00, 0xFFFFFFFF, 0x80000000} {
				words = append(words, a, q<<30|f<<6|q)
			}
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 1 << 12 {
		words = append(words, rng.Uint32(), rng.Uint32())
	}
	checkNormalWords(t, b, words)
}

// checkNormalWords holds noise_normal_words to package noise on words.
func checkNormalWords(t *testing.T, b *Backend, words []uint32) {
	t.Helper()
	got := normalWordsDevice(b, words)
	want := hostNormalWords(words)
	if i := firstDiff(got, want); i >= 0 {
		t.Fatalf("the normal of words (%#x, %#x) is %g on the device, %g in package noise", words[i&^1], words[i|1], got[i], want[i])
	}
}

// TestEmulatedFullParameter: full-parameter ZO steps on the emulated CUDA
// backend against the CPU's. Every variant's loss (the model reading its
// weights perturbed: MatMulPerturbed, RowsPerturbed, Perturb) agrees with
// the CPU's within the conformance tolerance; then the CPU's updates (its
// projected gradients) applied to the CUDA model's weights leave them, and
// the optimizer's state, bit for bit the CPU's, step after step: every
// optimizer's rule, float32 and bfloat16 weights, joint and grouped.
//
// The last case has a direction's + and − products paired
// (Options.PairedProducts).
func TestEmulatedFullParameter(t *testing.T) {
	for _, c := range fullParamCases {
		t.Run(c.name, func(t *testing.T) { fullParameterSteps(t, newEmuBackend(t), c) })
	}
	t.Run("meazo/paired", func(t *testing.T) {
		b := newEmuBackend(t)
		b.paired = true
		lc := countLaunches(b)
		fullParameterSteps(t, b, fullParamCases[0])
		if lc.batched[2] == 0 {
			t.Errorf("no paired products (batched calls of 2): %v", lc.batched)
		}
	})
	t.Run("meazo/3xtf32", func(t *testing.T) { // the perturbed blocks' products on gemm_3xtf32
		b := newEmuBackendWith(t, Options{TF32x3: true})
		b.tf32x3MinK = 32
		lc := countLaunches(b)
		fullParameterSteps(t, b, fullParamCases[0])
		if lc.launches["gemm_3xtf32"] == 0 {
			t.Errorf("gemm_3xtf32 never ran: %v", lc.launches)
		}
	})
}
