package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func randMat(r *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(r.NormFloat64())
	}
	return s
}

// refNT computes c = a·bᵀ in float64 and, per element, Σ|a·b| for the error bound.
func refNT(a, b []float32, m, n, k int) (c, mag []float64) {
	c, mag = make([]float64, m*n), make([]float64, m*n)
	for i := range m {
		for j := range n {
			var s, g float64
			for kk := range k {
				p := float64(a[i*k+kk]) * float64(b[j*k+kk])
				s += p
				g += math.Abs(p)
			}
			c[i*n+j], mag[i*n+j] = s, g
		}
	}
	return c, mag
}

func transpose(b []float32, n, k int) []float32 {
	t := make([]float32, n*k)
	for j := range n {
		for kk := range k {
			t[kk*n+j] = b[j*k+kk]
		}
	}
	return t
}

// checkClose compares against the float64 reference with the float32
// worst-case dot-product bound (k+2)·2⁻²³·Σ|a·b| (a wrong or missing term
// is far above it for any k used here).
func checkClose(t *testing.T, what string, got []float32, want, mag []float64, n, k int) {
	t.Helper()
	eps := float64(k+2) * math.Pow(2, -23)
	for i, w := range want {
		if d := math.Abs(float64(got[i]) - w); !(d <= eps*mag[i]+1e-30) {
			t.Fatalf("%s: c[%d][%d] = %v, want %v (|diff| %.3g > bound %.3g)", what, i/n, i%n, got[i], w, d, eps*mag[i])
		}
	}
}

var gemmShapes = [][3]int{ // m, n, k
	{1, 1, 1}, {1, 3, 31}, {3, 1, 33}, {4, 32, 64}, {5, 33, 65}, {31, 127, 3},
	{33, 65, 127}, {8, 64, 513}, {65, 31, 1030}, {127, 97, 129}, {130, 200, 257},
	{7, 16, 2048}, {6, 40, 4200}, {2, 0, 5}, {0, 4, 4}, {3, 5, 0},
}

// withPaths runs f once per GEMM path this build and CPU support.
func withPaths(t *testing.T, f func(t *testing.T)) {
	defer SetGEMMPath("")
	for _, name := range GEMMPaths() {
		if err := SetGEMMPath(name); err != nil {
			t.Fatal(err)
		}
		t.Run(name, f)
	}
}

func TestGEMMMatchesFloat64(t *testing.T) {
	const wk = Workers(0)
	withPaths(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(1, 2))
		for _, s := range gemmShapes {
			m, n, k := s[0], s[1], s[2]
			a, b := randMat(r, m*k), randMat(r, n*k)
			want, mag := refNT(a, b, m, n, k)
			c := make([]float32, m*n)
			for _, op := range []struct {
				name string
				run  func()
			}{
				{"MatMulPacked", func() { MatMulPacked(wk, c, a, m, Pack(wk, b, n, k)) }},
				{"MatMulNT", func() { MatMulNT(wk, c, a, b, m, n, k) }},
				{"MatMulNN", func() { MatMulNN(wk, c, a, transpose(b, n, k), m, n, k) }},
			} {
				for i := range c {
					c[i] = float32(math.NaN()) // outputs are overwritten, not accumulated
				}
				op.run()
				checkClose(t, fmt.Sprintf("%s m=%d n=%d k=%d", op.name, m, n, k), c, want, mag, n, k)
			}
		}
	})
}

// TestGEMMBitIdentical: results do not depend on the number of workers,
// nor on the other rows in the call, and repeat exactly.
func TestGEMMBitIdentical(t *testing.T) {
	wk := Workers(0)
	withPaths(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(3, 4))
		for _, s := range [][3]int{{67, 300, 1100}, {1030, 16, 200}, {9, 700, 520}} {
			m, n, k := s[0], s[1], s[2]
			a, b := randMat(r, m*k), randMat(r, n*k)
			w := Pack(wk, b, n, k)
			var first []float32
			for _, th := range []int{1, 2, 3, 8, 2} {
				wk = Workers(th)
				c := make([]float32, m*n)
				MatMulPacked(wk, c, a, m, w)
				if first == nil {
					first = c
					continue
				}
				for i := range c {
					if math.Float32bits(c[i]) != math.Float32bits(first[i]) {
						t.Fatalf("m=%d n=%d k=%d threads=%d: c[%d] = %v, threads=1 gave %v", m, n, k, th, i, c[i], first[i])
					}
				}
			}
			// Row i alone gives the same bits as row i inside the batch.
			for _, i := range []int{0, m / 2, m - 1} {
				c := make([]float32, n)
				MatMulPacked(wk, c, a[i*k:(i+1)*k], 1, w)
				for j := range c {
					if math.Float32bits(c[j]) != math.Float32bits(first[i*n+j]) {
						t.Fatalf("m=%d n=%d k=%d: row %d alone differs from row in batch at col %d", m, n, k, i, j)
					}
				}
			}
		}
	})
}

// TestMatMulNTAddBits: MatMulNTAdd, which forms and adds its product a
// block of rows at a time, gives the bits of the whole product (MatMulNT)
// scaled and added after (AddScaled), for any number of workers and rows
// spanning several blocks.
func TestMatMulNTAddBits(t *testing.T) {
	withPaths(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(5, 6))
		for _, s := range [][3]int{{1, 7, 16}, {13, 33, 5}, {300, 1000, 16}, {70, 3072, 16}, {1030, 40, 33}, {9, 70000, 3}} { // the last: n past the block budget (blocks of mr rows)
			m, n, k := s[0], s[1], s[2]
			a, b, y0 := randMat(r, m*k), randMat(r, n*k), randMat(r, m*n)
			want, prod := slices.Clone(y0), make([]float32, m*n)
			MatMulNT(1, prod, a, b, m, n, k)
			AddScaled(1, want, prod, 0.37)
			for _, th := range []int{1, 2, 3} {
				got := slices.Clone(y0)
				MatMulNTAdd(Workers(th), got, a, b, m, n, k, 0.37)
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("m=%d n=%d k=%d threads=%d: y[%d] = %v, MatMulNT then AddScaled give %v", m, n, k, th, i, got[i], want[i])
					}
				}
			}
		}
	})
}

// TestMatMulNTAddEmpty: no rows or no columns add nothing, as MatMulNT then
// AddScaled do (n = 0 divided the block budget by zero).
func TestMatMulNTAddEmpty(t *testing.T) {
	for _, s := range [][3]int{{3, 0, 4}, {0, 5, 4}, {0, 0, 0}} {
		m, n, k := s[0], s[1], s[2]
		y := []float32{1, 2}
		MatMulNTAdd(2, y, make([]float32, m*k), make([]float32, n*k), m, n, k, 0.5)
		if y[0] != 1 || y[1] != 2 {
			t.Errorf("m=%d n=%d k=%d: y became %v", m, n, k, y)
		}
	}
}

// TestGEMMSuperBlocks: cutting K into super-blocks of any depth adds the
// same slices to every tile in the same order, so results agree bit for bit
// (edge tiles, several slices, float32 and bf16 panels).
func TestGEMMSuperBlocks(t *testing.T) {
	const wk = Workers(0)
	defer func() { kSuper = defaultKSuper }()
	withPaths(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(5, 6))
		for _, s := range [][3]int{{67, 300, 1100}, {9, 70, 1537}, {1030, 16, 600}} {
			m, n, k := s[0], s[1], s[2]
			a, b := randMat(r, m*k), randMat(r, n*k)
			for _, w := range []*Packed{Pack(wk, b, n, k), PackBF16(b, n, k)} {
				kSuper = defaultKSuper
				whole := make([]float32, m*n)
				MatMulPacked(wk, whole, a, m, w)
				for _, depth := range []int{kcBlock, 2 * kcBlock} {
					kSuper = depth
					c := make([]float32, m*n)
					MatMulPacked(wk, c, a, m, w)
					for i := range c {
						if math.Float32bits(c[i]) != math.Float32bits(whole[i]) {
							t.Fatalf("m=%d n=%d k=%d bf16=%v: c[%d] = %v in %d-deep super-blocks, %v in one", m, n, k, w.IsBF16(), i, c[i], depth, whole[i])
						}
					}
				}
			}
		}
	})
}

func TestPackedRow(t *testing.T) {
	const wk = Workers(0)
	r := rand.New(rand.NewPCG(5, 6))
	for _, s := range [][2]int{{1, 1}, {33, 7}, {70, 130}, {64, 32}} {
		n, k := s[0], s[1]
		w := randMat(r, n*k)
		p := Pack(wk, w, n, k)
		dst := make([]float32, k)
		for row := range n {
			p.Row(dst, row)
			for kk := range k {
				if dst[kk] != w[row*k+kk] {
					t.Fatalf("n=%d k=%d: Row(%d)[%d] = %v, want %v", n, k, row, kk, dst[kk], w[row*k+kk])
				}
			}
		}
	}
}

func TestGEMMNoAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items on purpose under the race detector")
	}
	wk := Workers(0)
	wk = Workers(2)
	r := rand.New(rand.NewPCG(7, 8))
	m, n, k := 16, 256, 512
	a, b := randMat(r, m*k), randMat(r, n*k)
	w := Pack(wk, b, n, k)
	c := make([]float32, m*n)
	for name, f := range map[string]func(){
		"MatMulPacked": func() { MatMulPacked(wk, c, a, m, w) },
		"MatMulNT":     func() { MatMulNT(wk, c, a, b, m, n, k) },
	} {
		f() // warm up pools and workers
		if allocs := testing.AllocsPerRun(20, f); allocs > 0 {
			t.Errorf("%s: %v allocations per call", name, allocs)
		}
	}
}

func TestSetGEMMPathUnknown(t *testing.T) {
	before := GEMMPath()
	if err := SetGEMMPath("nope"); err == nil {
		t.Fatal("SetGEMMPath(nope) succeeded")
	}
	if GEMMPath() != before {
		t.Fatalf("path changed to %s after a failed SetGEMMPath", GEMMPath())
	}
}

// TestFMAPathsAgree: the AVX-512 and AVX2 paths sum each product in the
// same order with fused multiply-adds, so they give the same bits, float32
// and bfloat16 weights alike (docs/BACKENDS.md, MEAZO_GEMM: a resume across
// them is still recorded as another arithmetic). Skipped where the CPU
// lacks either.
func TestFMAPathsAgree(t *testing.T) {
	paths := GEMMPaths()
	if !slices.Contains(paths, "avx512") || !slices.Contains(paths, "avx2") {
		t.Skipf("this build and CPU have the GEMM paths %v, not both avx512 and avx2", paths)
	}
	defer SetGEMMPath("")
	r := rand.New(rand.NewPCG(3, 4))
	for _, s := range gemmShapes {
		m, n, k := s[0], s[1], s[2]
		a, b := randMat(r, m*k), randMat(r, n*k)
		results := map[string][][]float32{}
		for _, path := range []string{"avx512", "avx2"} {
			if err := SetGEMMPath(path); err != nil {
				t.Fatal(err)
			}
			for _, w := range []*Packed{Pack(2, b, n, k), PackBF16(b, n, k)} {
				c := make([]float32, m*n)
				MatMulPacked(2, c, a, m, w)
				results[path] = append(results[path], c)
			}
		}
		for i, kind := range []string{"float32", "bfloat16"} {
			x, y := results["avx512"][i], results["avx2"][i]
			for j := range x {
				if math.Float32bits(x[j]) != math.Float32bits(y[j]) {
					t.Errorf("m=%d n=%d k=%d, %s weights: element %d is %v on avx512, %v on avx2", m, n, k, kind, j, x[j], y[j])
					break
				}
			}
		}
	}
}
