package cuda

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"testing"

	"github.com/meazo-go/meazo/internal/tensorcore"
	"github.com/meazo-go/meazo/model/modeltest"
	"github.com/meazo-go/meazo/tensor"
	"github.com/meazo-go/meazo/tensor/backendtest"
)

// TestGemm3xTF32OnGPU checks Options.TF32x3 on a Hopper GPU, what issue 33
// asks of float32 products on the tensor cores before they may become the
// default: on products of the models' shapes (and partial tiles), an error
// against float64 no worse than cuBLAS SGEMM's (rms over the outputs, with
// a margin of 1.25 for the sample), every output within 8·k·2^-24 of its
// Σ|x·w|, two runs bit-identical; and a product gemm_3xtf32 cannot take
// (k not a multiple of 32) SGEMM's bits. It also says which path each
// product took on this GPU (split3xTF32: SGEMM, gemm_3xtf32, or k split in
// S slices) and how many outputs have the bits of internal/tensorcore's
// model of that path (the emulator's): all of them if the model is exact
// on this GPU. On an H100 or H200 (132 multiprocessors) one shape takes
// gemm_3xtf32 unsplit, two split k, the others SGEMM (too small a grid);
// so every shape is also checked with the kernel unsplit
// (MEAZO_CUDA_3XTF32=all), whatever its grid: there against the bound
// alone, not SGEMM's error, because on a small grid cuBLAS splits k and
// its sums are shorter (on an H200, 165×192×1024 unsplit had 1.41× SGEMM's
// rms error, docs/bench/2026-11-30-h200/run5-ff46f2f); =all is a knob to
// measure the rule, and the rule sends that shape to SGEMM.
// Without a Hopper GPU it skips, unless MEAZO_CUDA_3XTF32=1
// (scripts/gpu/session.sh tcgemm sets it).
func TestGemm3xTF32OnGPU(t *testing.T) {
	tc, err := Open(Options{TF32x3: true})
	if err != nil {
		if os.Getenv("MEAZO_CUDA_3XTF32") == "1" {
			t.Fatal(err)
		}
		t.Skipf("no Hopper GPU here, so gemm_3xtf32 did not run: %v", err)
	}
	defer tc.Close()
	t.Log(tc.Describe())                                           // with the JIT's registers and local memory for gemm_3xtf32
	all, err := Open(Options{TF32x3: true, TF32x3AllShapes: true}) // the kernel on every shape, unsplit
	if err != nil {
		t.Fatal(err)
	}
	defer all.Close()
	sg, err := Open(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sg.Close()
	rng := rand.New(rand.NewPCG(3, 33))
	for _, s := range []struct{ rows, n, k int }{
		{165, 192, 1024},   // partial tiles of rows and columns (k: gemm3xTF32MinK)
		{165, 192, 256},    // below gemm3xTF32MinK (on an H200 1.65x SGEMM's rms error): SGEMM
		{300, 2048, 1024},  // Qwen3-0.6B's q, 300 rows
		{640, 512, 2048},   // Llama-3.2-1B's k/v
		{80, 1024, 3072},   // Qwen3-0.6B's down
		{1280, 1280, 1024}, // 100 blocks: on an H100/H200 (132 multiprocessors, 76 %) gemm_3xtf32 unsplit
		{896, 1024, 1024},  // 56 blocks (42 %): on an H100/H200 in 2 slices (85 %)
		{1280, 512, 2048},  // Llama-3.2-1B's k/v at 8x80: 40 blocks; on an H100/H200 in 3 slices (91 %)
		{64, 256, 48},      // k not a multiple of 32: SGEMM
	} {
		x, w := randomProduct(rng, s.rows, s.n, s.k)
		product := func(b *Backend) []float32 { return matMul(b, x, w, s.rows, s.n, s.k) }
		sgemm := product(sg)
		if s.k%32 != 0 || s.k < gemm3xTF32MinK {
			for _, b := range []*Backend{tc, all} {
				if !slices.Equal(product(b), sgemm) {
					t.Errorf("%d×%d×%d: not SGEMM's bits, though gemm_3xtf32 does not take k = %d", s.rows, s.n, s.k, s.k)
				}
			}
			continue
		}
		// The backend's rule (split3xTF32: SGEMM, gemm_3xtf32 or k in slices
		// on this GPU), then the kernel unsplit whatever the grid: the
		// accuracy of both on the models' shapes.
		ref, mag := reference64(x, w, s.rows, s.n, s.k)
		check3xTF32OnGPU(t, s.rows, s.n, s.k, x, w, ref, mag, product(tc), product(tc), sgemm, split3xTF32(s.rows, s.n, s.k, tc.sms), tc.sms)
		check3xTF32OnGPU(t, s.rows, s.n, s.k, x, w, ref, mag, product(all), product(all), nil, 1, 0)
	}
}

// check3xTF32OnGPU checks and logs one product of TestGemm3xTF32OnGPU: got
// and again (two runs) on the path split says (0: SGEMM; 1: gemm_3xtf32;
// more: k in that many slices) against float64 (ref64, and mag64 its
// Σ|x·w|: reference64) and SGEMM's result sgemm, whose rms error it may
// not pass by more than the sample's margin; with sgemm nil (the kernel
// unsplit on a shape the rule may not give it) only the bound on every
// output holds.
func check3xTF32OnGPU(t *testing.T, rows, n, k int, x, w []float32, ref64, mag64 []float64, got, again, sgemm []float32, split, sms int) {
	t.Helper()
	if !slices.Equal(got, again) {
		t.Errorf("%d×%d×%d: two runs differ", rows, n, k)
	}
	var sqTC, sqSG, sqRef, worst float64
	same, compared := 0, 0 // outputs of the first two rows with the tensor-core model's bits
	for r := range rows {
		for c := range n {
			ref, mag := ref64[r*n+c], mag64[r*n+c]
			if r < 2 && split > 0 {
				compared++
				if got[r*n+c] == tensorcore.Dot3xTF32Split(x[r*k:(r+1)*k], w[c*k:(c+1)*k], split) {
					same++
				}
			}
			d := float64(got[r*n+c]) - ref
			sqTC, sqRef = sqTC+d*d, sqRef+ref*ref
			if sgemm != nil {
				e := float64(sgemm[r*n+c]) - ref
				sqSG += e * e
			}
			worst = math.Max(worst, math.Abs(d)/mag)
		}
	}
	rmsTC, rmsSG := math.Sqrt(sqTC/sqRef), math.Sqrt(sqSG/sqRef)
	path := map[int]string{0: "SGEMM (the grid would not fill the GPU)", 1: "gemm_3xtf32"}[split]
	if split > 1 {
		path = fmt.Sprintf("k in %d slices (gemm_3xtf32_split, gemm_3xtf32_reduce)", split)
	}
	if sms == 0 {
		path += ", every shape (MEAZO_CUDA_3XTF32=all)"
	}
	t.Logf("%d×%d×%d on %d multiprocessors, %s: rms error %.2e; worst |y − y64|/Σ|x·w| %.2e; the tensor-core model's bits on %d of %d outputs",
		rows, n, k, sms, path, rmsTC, worst, same, compared)
	bound := 8 * float64(k) * math.Ldexp(1, -24)
	switch {
	case math.IsNaN(rmsTC) || worst > bound:
		t.Errorf("%d×%d×%d, %s: worst |y − y64|/Σ|x·w| %.2e past 8·k·2^-24 = %.2e (rms %.2e): not float32-accurate", rows, n, k, path, worst, bound, rmsTC)
	case sgemm != nil && rmsTC > 1.25*rmsSG:
		t.Errorf("%d×%d×%d, %s: rms error %.2e against SGEMM's %.2e: less accurate than SGEMM", rows, n, k, path, rmsTC, rmsSG)
	case sgemm != nil:
		t.Logf("%d×%d×%d: SGEMM's rms error %.2e", rows, n, k, rmsSG)
	}
}

// reference64 is x·Wᵀ in float64 and Σ|x·w| of each output.
func reference64(x, w []float32, rows, n, k int) (ref, mag []float64) {
	ref, mag = make([]float64, rows*n), make([]float64, rows*n)
	for r := range rows {
		for c := range n {
			for i := range k {
				p := float64(x[r*k+i]) * float64(w[c*k+i])
				ref[r*n+c], mag[r*n+c] = ref[r*n+c]+p, mag[r*n+c]+math.Abs(p)
			}
		}
	}
	return ref, mag
}

// TestEmulated3xTF32 runs gemm_3xtf32 through the backend on the kernel
// emulator, whose wgmma is package tensorcore's model of Hopper's tensor
// cores: every output must be tensorcore.Dot3xTF32's bits (the kernel's
// loads, split, shared-memory layout, descriptors, accumulator fragments,
// promotion and stores: each output from its own row and column, in its
// order), on shapes with partial tiles of rows and columns and one or more
// tiles of k (taken down to k = 32 here), and from gemm3xTF32MinK (where
// the backend takes it) within SGEMM's error of float64 (rms, 1.25 margin); a
// product it cannot take (k = 48, or k below the backend's minimum) is
// SGEMM's.
func TestEmulated3xTF32(t *testing.T) {
	tc, sg := newEmuBackendWith(t, Options{TF32x3: true}), newEmuBackend(t)
	rng := rand.New(rand.NewPCG(4, 44))
	for _, s := range []struct {
		rows, n, k, minK int
		kernel           bool // gemm_3xtf32 takes it
	}{
		{130, 136, 1024, 0, true},
		{7, 10, 32, 32, true},
		{40, 128, 96, 32, true},
		{20, 64, 48, 32, false},
		{20, 64, 256, 0, false}, // below gemm3xTF32MinK
	} {
		tc.tf32x3MinK = s.minK
		x, w := randomProduct(rng, s.rows, s.n, s.k)
		product := func(b *Backend) []float32 { return matMul(b, x, w, s.rows, s.n, s.k) }
		got, sgemm := product(tc), product(sg)
		if !s.kernel {
			if !slices.Equal(got, sgemm) {
				t.Errorf("%d×%d×%d: not SGEMM's bits, though gemm_3xtf32 does not take it", s.rows, s.n, s.k)
			}
			continue
		}
		var sqTC, sqSG, sqRef float64
		wrong := 0
		for r := range s.rows {
			for c := range s.n {
				xr, wc := x[r*s.k:(r+1)*s.k], w[c*s.k:(c+1)*s.k]
				if want := tensorcore.Dot3xTF32(xr, wc, 4); math.Float32bits(got[r*s.n+c]) != math.Float32bits(want) {
					if wrong++; wrong <= 3 {
						t.Errorf("%d×%d×%d: y[%d][%d] = %g, the model's %g", s.rows, s.n, s.k, r, c, got[r*s.n+c], want)
					}
				}
				var ref float64
				for i := range s.k {
					ref += float64(xr[i]) * float64(wc[i])
				}
				d, e := float64(got[r*s.n+c])-ref, float64(sgemm[r*s.n+c])-ref
				sqTC, sqSG, sqRef = sqTC+d*d, sqSG+e*e, sqRef+ref*ref
			}
		}
		if wrong > 0 {
			t.Errorf("%d×%d×%d: %d of %d outputs differ from the model's", s.rows, s.n, s.k, wrong, s.rows*s.n)
		}
		rmsTC, rmsSG := math.Sqrt(sqTC/sqRef), math.Sqrt(sqSG/sqRef)
		t.Logf("%d×%d×%d: rms error 3xTF32 %.2e, SGEMM %.2e", s.rows, s.n, s.k, rmsTC, rmsSG)
		if s.k >= gemm3xTF32MinK && rmsTC > 1.25*rmsSG {
			t.Errorf("%d×%d×%d: rms error %.2e, SGEMM's %.2e", s.rows, s.n, s.k, rmsTC, rmsSG)
		}
	}
}

// TestEmulated3xTF32Variants launches each of kernels_sm90a's three
// gemm_3xtf32 kernels on the kernel emulator, whose wgmma are asynchronous
// (performed at the wait, on the shared memory of that moment, so that a
// stage overwritten while tensor cores still read it gives other bits):
// gemm_3xtf32 (the backend's: the next tile split and stored while the
// tensor cores work) and gemm_3xtf32_serial (stored after the wait) must
// both give tensorcore.Dot3xTF32's bits promoting every tile, and
// gemm_3xtf32_every2 the model's promoting every second tile, on one to
// five tiles of k (odd counts: the last promotion of every2 is a lone
// tile's) with partial tiles of rows and columns, adding into y or not.
func TestEmulated3xTF32Variants(t *testing.T) {
	b := newEmuBackendWith(t, Options{TF32x3: true})
	rng := rand.New(rand.NewPCG(6, 66))
	for _, s := range []struct{ rows, n, k int }{{7, 10, 32}, {130, 136, 64}, {40, 130, 96}, {129, 2, 160}} {
		x, w := randomProduct(rng, s.rows, s.n, s.k)
		y0 := make([]float32, s.rows*s.n)
		for i := range y0 {
			y0[i] = float32(rng.NormFloat64())
		}
		for _, v := range []struct {
			kernel string
			every  int // k8 steps between promotions: 4 a tile of 32
		}{{"gemm_3xtf32", 4}, {"gemm_3xtf32_serial", 4}, {"gemm_3xtf32_every2", 8}} {
			for _, add := range []int32{0, 1} {
				xb, wb, yb := b.FromHost(slices.Clone(x)), b.FromHost(slices.Clone(w)), b.FromHost(slices.Clone(y0))
				func() {
					defer b.enter()()
					b.launch(v.kernel, [3]uint32{uint32((s.n + 127) / 128), uint32((s.rows + 127) / 128), 1}, 256, gemm3xTF32Shm,
						devPtr(dbuf(yb).ptr), devPtr(dbuf(xb).ptr), devPtr(dbuf(wb).ptr), i32Arg(s.rows), i32Arg(s.n),
						i32Arg(s.k), i32Arg(s.n), i32Arg(add), f32Arg(1), i32Arg(gemm3xTF32Col), i32Arg(128))
				}()
				got, wrong := b.ToHost(yb), 0
				b.Free(xb, wb, yb)
				for r := range s.rows {
					for c := range s.n {
						want := tensorcore.Dot3xTF32(x[r*s.k:(r+1)*s.k], w[c*s.k:(c+1)*s.k], v.every)
						if add == 1 { // the float64 sum of two float32s rounds as fmaf(1, want, y0)
							want = float32(float64(want) + float64(y0[r*s.n+c]))
						}
						if math.Float32bits(got[r*s.n+c]) != math.Float32bits(want) {
							if wrong++; wrong <= 3 {
								t.Errorf("%s %d×%d×%d add %d: y[%d][%d] = %g, the model's %g", v.kernel, s.rows, s.n, s.k, add, r, c,
									got[r*s.n+c], want)
							}
						}
					}
				}
				if wrong > 0 {
					t.Errorf("%s %d×%d×%d add %d: %d of %d outputs differ from the model's", v.kernel, s.rows, s.n, s.k, add,
						wrong, s.rows*s.n)
				}
			}
		}
	}
}

// TestEmulated3xTF32Added runs gemm_3xtf32 on the kernel emulator where it
// adds into y (MatMulAdd: a residual's projection; MatMulNTAdd, scaled) and
// where it writes a block of a wider y's columns (gemmCols: full-parameter
// ZO's blocks): every output is fmaf(s, the model's dot, y's value before),
// rounded once, and every element outside the block keeps its value.
func TestEmulated3xTF32Added(t *testing.T) {
	b := newEmuBackendWith(t, Options{TF32x3: true})
	b.tf32x3MinK = 32
	lc := countLaunches(b)
	rng := rand.New(rand.NewPCG(5, 55))
	const rows, n, k = 70, 136, 64
	x, w := randomProduct(rng, rows, n, k)
	dot := func(r, c int) float32 { return tensorcore.Dot3xTF32(x[r*k:(r+1)*k], w[c*k:(c+1)*k], 4) }
	// A y of ldy columns, the product's n of them from col0 (ldy = n, col0 = 0: all of y).
	check := func(name string, ldy, col0 int, s float32, add bool, run func(yb, xb, wb tensor.Buf)) {
		y0 := make([]float32, rows*ldy)
		for i := range y0 {
			y0[i] = float32(rng.NormFloat64())
		}
		xb, wb, yb := b.FromHost(slices.Clone(x)), b.FromHost(slices.Clone(w)), b.FromHost(slices.Clone(y0))
		defer b.Free(xb, wb, yb)
		before := lc.launches["gemm_3xtf32"]
		run(yb, xb, wb)
		if lc.launches["gemm_3xtf32"] == before {
			t.Fatalf("%s: gemm_3xtf32 did not run: %v", name, lc.launches)
		}
		got, wrong := b.ToHost(yb), 0
		for r := range rows {
			for c := range ldy {
				i, want := r*ldy+c, y0[r*ldy+c]
				if c >= col0 && c < col0+n {
					want = dot(r, c-col0)
					if add { // s·dot is exact for s = 1 and 0.5; the float64 sum of two float32s rounds as fmaf's
						want = float32(float64(s*want) + float64(y0[i]))
					}
				}
				if math.Float32bits(got[i]) != math.Float32bits(want) {
					if wrong++; wrong <= 3 {
						t.Errorf("%s: y[%d][%d] = %g, want %g", name, r, c, got[i], want)
					}
				}
			}
		}
		if wrong > 0 {
			t.Errorf("%s: %d of %d elements of y wrong", name, wrong, rows*ldy)
		}
	}
	check("MatMulAdd", n, 0, 1, true, func(yb, xb, _ tensor.Buf) {
		wt := b.Pack(slices.Clone(w), n, k, false)
		defer b.FreeWeight(wt)
		b.MatMulAdd(yb, xb, rows, wt)
	})
	check("MatMulNTAdd, s = 0.5", n, 0, 0.5, true, func(yb, xb, wb tensor.Buf) { b.MatMulNTAdd(yb, xb, wb, rows, n, k, 0.5) })
	block := func(add bool) func(yb, xb, wb tensor.Buf) {
		return func(yb, xb, wb tensor.Buf) {
			defer b.enter()()
			b.gemmCols(dbuf(yb).ptr+4*34, dbuf(xb).ptr, dbuf(wb).ptr, rows, n, 300, k, add, 1)
		}
	}
	check("a block of columns", 300, 34, 1, false, block(false))
	check("a block of columns, added", 300, 34, 1, true, block(true))
}

// tf32x3Models has TestEmulatedConformance3xTF32 run the fixture models too
// (about 8 minutes on the emulator, too long for every run):
//
//	go test ./tensor/cuda -run TestEmulatedConformance3xTF32 -args -tf32x3-models
var tf32x3Models = flag.Bool("tf32x3-models", false, "TestEmulatedConformance3xTF32 also runs every fixture model and Ministral-3 (minutes)")

// TestEmulatedConformance3xTF32 runs the conformance suite's ops on the
// emulator with gemm_3xtf32 taking every product it can (down to k = 32),
// at the float32 tolerances, and checks that it ran; with -tf32x3-models
// also the fixture models (their HF references, generations token for
// token, LoRA, the model against the CPU) and Ministral-3.
func TestEmulatedConformance3xTF32(t *testing.T) {
	b := newEmuBackendWith(t, Options{TF32x3: true})
	b.tf32x3MinK = 32
	lc := countLaunches(b)
	backendtest.Ops(t, b, backendtest.Float32)
	if *tf32x3Models {
		modeltest.Models(t, b, backendtest.Float32)
		t.Run("Ministral3", func(t *testing.T) { modeltest.Ministral(t, b, backendtest.Float32) })
	}
	if lc.launches["gemm_3xtf32"] == 0 {
		t.Errorf("gemm_3xtf32 never ran: %v", lc.launches)
	}
	t.Logf("gemm_3xtf32 ran %d times", lc.launches["gemm_3xtf32"])
}

// TestEmulatedConformance3xTF32Split is TestEmulatedConformance3xTF32
// with every product gemm_3xtf32 takes split in 3 slices of k (fewer where
// k has fewer tiles: gemm_3xtf32_split and gemm_3xtf32_reduce, their
// workspace from the pool on every product).
func TestEmulatedConformance3xTF32Split(t *testing.T) {
	b := newEmuBackendWith(t, Options{TF32x3: true})
	b.tf32x3MinK, b.tf32x3Split = 32, 3
	lc := countLaunches(b)
	backendtest.Ops(t, b, backendtest.Float32)
	if lc.launches["gemm_3xtf32_split"] == 0 || lc.launches["gemm_3xtf32_reduce"] != lc.launches["gemm_3xtf32_split"] {
		t.Errorf("gemm_3xtf32_split ran %d times and gemm_3xtf32_reduce %d: %v", lc.launches["gemm_3xtf32_split"],
			lc.launches["gemm_3xtf32_reduce"], lc.launches)
	}
	t.Logf("gemm_3xtf32_split ran %d times (by slices: %v), gemm_3xtf32 %d", lc.launches["gemm_3xtf32_split"], lc.slices,
		lc.launches["gemm_3xtf32"])
}

// randomProduct returns x [rows][k] ~ N(0, 1) and W [n][k] ~ N(0, 1/k), as
// the dev/cuda harnesses draw them.
func randomProduct(rng *rand.Rand, rows, n, k int) (x, w []float32) {
	x, w = make([]float32, rows*k), make([]float32, n*k)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	for i := range w {
		w[i] = float32(rng.NormFloat64() / math.Sqrt(float64(k)))
	}
	return x, w
}

// matMul is x · Wᵀ by MatMul on b, W packed as float32.
func matMul(b *Backend, x, w []float32, rows, n, k int) []float32 {
	wb := b.Pack(w, n, k, false)
	xb, yb := b.FromHost(slices.Clone(x)), b.Alloc(rows*n)
	b.MatMul(yb, xb, rows, wb)
	out := b.ToHost(yb)
	b.Free(xb, yb)
	b.FreeWeight(wb)
	return out
}

// TestEmulated3xTF32Split runs gemm_3xtf32 with k in 2 and 3 slices
// (Backend.tf32x3Split: gemm_3xtf32_split, then gemm_3xtf32_reduce) on the
// kernel emulator: every output must be tensorcore.Dot3xTF32Split's bits
// (each slice the model's sum over its tiles, the slices added in order in
// float32), written (MatMul), added (MatMulNTAdd, scaled: fmaf(s, sum, y))
// and into a block of a wider y's columns (gemmCols with ldy > n,
// full-parameter ZO's blocks; elements outside the block untouched), on
// partial tiles of rows and columns and tile counts that do not divide
// evenly; a second run gives the same bits, its workspace from the pool
// (no more device memory held) and returned to it; and gemm_3xtf32 itself
// does not run.
func TestEmulated3xTF32Split(t *testing.T) {
	b := newEmuBackendWith(t, Options{TF32x3: true})
	b.tf32x3MinK = 32
	lc := countLaunches(b)
	rng := rand.New(rand.NewPCG(8, 88))
	for _, c := range []struct {
		rows, n, k, slices int
	}{
		{130, 136, 160, 2}, // 5 tiles: [0, 2), [2, 5)
		{130, 136, 160, 3}, // [0, 1), [1, 3), [3, 5)
		{7, 10, 96, 3},     // a tile a slice
		{40, 130, 64, 2},
	} {
		b.tf32x3Split = c.slices
		x, w := randomProduct(rng, c.rows, c.n, c.k)
		dot := func(r, col int) float32 {
			return tensorcore.Dot3xTF32Split(x[r*c.k:(r+1)*c.k], w[col*c.k:(col+1)*c.k], c.slices)
		}
		for _, v := range []struct {
			name      string
			ldy, col0 int
			add       bool
			s         float32
		}{
			{"MatMul", c.n, 0, false, 1},
			{"MatMulNTAdd, s = 0.5", c.n, 0, true, 0.5},
			{"a block of columns", c.n + 38, 34, false, 1},
			{"a block of columns, added", c.n + 38, 34, true, 1},
		} {
			name := fmt.Sprintf("%d×%d×%d in %d slices, %s", c.rows, c.n, c.k, c.slices, v.name)
			y0 := make([]float32, c.rows*v.ldy)
			for i := range y0 {
				y0[i] = float32(rng.NormFloat64())
			}
			run := func() []float32 {
				xb, wb, yb := b.FromHost(slices.Clone(x)), b.FromHost(slices.Clone(w)), b.FromHost(slices.Clone(y0))
				defer b.Free(xb, wb, yb)
				switch {
				case v.ldy == c.n && v.add:
					b.MatMulNTAdd(yb, xb, wb, c.rows, c.n, c.k, v.s)
				case v.ldy == c.n:
					b.MatMulNT(yb, xb, wb, c.rows, c.n, c.k)
				default:
					func() {
						defer b.enter()()
						b.gemmCols(dbuf(yb).ptr+4*uint64(v.col0), dbuf(xb).ptr, dbuf(wb).ptr, c.rows, c.n, v.ldy, c.k, v.add, v.s)
					}()
				}
				return b.ToHost(yb)
			}
			before, tc := lc.slices[uint32(c.slices)], lc.launches["gemm_3xtf32"]
			reduced := lc.launches["gemm_3xtf32_reduce"]
			got := run()
			if lc.slices[uint32(c.slices)] != before+1 || lc.launches["gemm_3xtf32_reduce"] != reduced+1 || lc.launches["gemm_3xtf32"] != tc {
				t.Fatalf("%s: not one gemm_3xtf32_split of %d slices and one gemm_3xtf32_reduce: %v, %v", name, c.slices, lc.launches, lc.slices)
			}
			wrong := 0
			for r := range c.rows {
				for col := range v.ldy {
					i, want := r*v.ldy+col, y0[r*v.ldy+col]
					if col >= v.col0 && col < v.col0+c.n {
						want = dot(r, col-v.col0)
						if v.add { // s·dot is exact for s = 1 and 0.5; the float64 sum of two float32s rounds as fmaf's
							want = float32(float64(v.s*want) + float64(y0[i]))
						}
					}
					if math.Float32bits(got[i]) != math.Float32bits(want) {
						if wrong++; wrong <= 3 {
							t.Errorf("%s: y[%d][%d] = %g, want %g", name, r, col, got[i], want)
						}
					}
				}
			}
			if wrong > 0 {
				t.Errorf("%s: %d of %d elements of y wrong", name, wrong, c.rows*v.ldy)
			}
			live, held := b.liveBytes, b.heldBytes
			if again := run(); !slices.Equal(again, got) {
				t.Errorf("%s: a second run gave other bits", name)
			}
			if b.liveBytes != live || b.heldBytes != held { // the workspace returned to the pool, and taken from it again
				t.Errorf("%s: a second run left %d bytes live (%d before) and the device holding %d (%d before)", name,
					b.liveBytes, live, b.heldBytes, held)
			}
		}
	}
}

// TestEmulated3xTF32SplitChosen: on a GPU of 4 multiprocessors
// (Backend.sms), a product whose grid leaves most of them idle takes
// split3xTF32's slices (one gemm_3xtf32_split of that many, one
// gemm_3xtf32_reduce) with the model's bits of that split; one that fills
// the GPU gemm_3xtf32 alone, with the model's bits unsplit; and one whose
// slices would be too short SGEMM, with SGEMM's bits.
func TestEmulated3xTF32SplitChosen(t *testing.T) {
	b := newEmuBackendWith(t, Options{TF32x3: true})
	b.sms, b.tf32x3MinK = 4, 32
	ref := newEmuBackend(t) // SGEMM
	rng := rand.New(rand.NewPCG(9, 99))
	for _, c := range []struct {
		rows, n, k int
		slices     int // 0: SGEMM
	}{
		{256, 128, 1024, 2}, // 2 blocks of 4 multiprocessors (50 %); in 2 slices of 16 tiles, 4 (100 %)
		{100, 120, 1536, 3}, // 1 block (25 %); 2 (50 %); in 3 slices of 16 tiles, 3 (75 %)
		{512, 64, 1024, 1},  // 4 blocks: one full wave
		{256, 128, 992, 0},  // 2 blocks, and 31 tiles: slices of 15 are too short
	} {
		lc := countLaunches(b)
		x, w := randomProduct(rng, c.rows, c.n, c.k)
		got := matMul(b, x, w, c.rows, c.n, c.k)
		b.dev = lc.device
		name := fmt.Sprintf("%d×%d×%d on 4 multiprocessors", c.rows, c.n, c.k)
		wantLaunches := map[string]int{}
		switch c.slices {
		case 0:
		case 1:
			wantLaunches["gemm_3xtf32"] = 1
		default:
			wantLaunches["gemm_3xtf32_split"], wantLaunches["gemm_3xtf32_reduce"] = 1, 1
		}
		for _, k := range []string{"gemm_3xtf32", "gemm_3xtf32_split", "gemm_3xtf32_reduce"} {
			if lc.launches[k] != wantLaunches[k] {
				t.Errorf("%s: %d launches of %s, want %d (all: %v)", name, lc.launches[k], k, wantLaunches[k], lc.launches)
			}
		}
		if c.slices > 1 && lc.slices[uint32(c.slices)] != 1 {
			t.Errorf("%s: gemm_3xtf32_split's slices %v, want %d", name, lc.slices, c.slices)
		}
		if c.slices == 0 {
			if !slices.Equal(got, matMul(ref, x, w, c.rows, c.n, c.k)) {
				t.Errorf("%s: not SGEMM's bits", name)
			}
			continue
		}
		wrong := 0
		for r := range c.rows {
			for col := range c.n {
				want := tensorcore.Dot3xTF32Split(x[r*c.k:(r+1)*c.k], w[col*c.k:(col+1)*c.k], c.slices)
				if math.Float32bits(got[r*c.n+col]) != math.Float32bits(want) {
					if wrong++; wrong <= 3 {
						t.Errorf("%s: y[%d][%d] = %g, the model's in %d slices %g", name, r, col, got[r*c.n+col], c.slices, want)
					}
				}
			}
		}
		if wrong > 0 {
			t.Errorf("%s: %d of %d outputs differ from the model's", name, wrong, c.rows*c.n)
		}
	}
}
