package cuda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/tensor/backendtest"
)

// useTF32x3 has b run every product it can on gemm_tf32x3, however few its
// rows, and returns a counter of its launches.
func useTF32x3(b *Backend) *launchCounter {
	b.tf32x3MinRows = 1
	return countLaunches(b)
}

// checkTF32x3Products multiplies random matrices of shapes that end inside
// a tile, through gemm_tf32x3 with each of its tiles, and holds every output
// to the error 3xTF32 allows against float64: each input's two TF32 parts
// hold it to 2^-22, the product's dropped small·small term is below 2^-22,
// and the float32 sum of k terms adds up to k·2^-23 (tensor cores may
// truncate) of Σ|x·w|. A plain TF32 product (2^-11 per input) fails it by
// far.
func checkTF32x3Products(t *testing.T, b *Backend, c *launchCounter) {
	sms := b.sms
	defer func() { b.sms = sms }()
	for _, tile := range []struct {
		rows   int
		sms    int // the multiprocessors that make tf32x3Tile pick it
		kernel string
	}{{128, 0, "gemm_tf32x3"}, {64, 1 << 20, "gemm_tf32x3_64"}} {
		b.sms = tile.sms
		for _, s := range []struct {
			name       string
			rows, n, k int
			offset     int // x starts this many floats into its buffer: 16-byte aligned or not
		}{
			{"one tile", 5, 8, 16, 0},
			{"tiles cut in both dimensions", 141, 136, 48, 0},
			{"several k-steps", 64, 256, 160, 4},
			{"x unaligned: cuBLAS", 9, 10, 32, 1},
		} {
			t.Run(fmt.Sprintf("%s, %d-row tiles", s.name, tile.rows), func(t *testing.T) {
				r := rand.New(rand.NewPCG(uint64(s.rows), uint64(s.n*s.k)))
				x := make([]float32, s.offset+s.rows*s.k)
				w := make([]float32, s.n*s.k)
				for i := range x {
					x[i] = float32(r.NormFloat64())
				}
				for i := range w {
					w[i] = float32(r.NormFloat64() * 0.05)
				}
				xb, y := b.FromHost(x), b.Alloc(s.rows*s.n)
				wt := b.Pack(w, s.n, s.k, false)
				before, sgemmBefore := c.launches[tile.kernel], c.sgemms
				b.MatMul(y, xb.Slice(s.offset, len(x)), s.rows, wt)
				got := b.ToHost(y)
				b.Free(xb, y)
				b.FreeWeight(wt)
				if wantKernel := s.offset%4 == 0; (c.launches[tile.kernel] > before) != wantKernel || (c.sgemms > sgemmBefore) == wantKernel {
					t.Fatalf("%s launched %d times, cuBLAS %d, for x at offset %d", tile.kernel, c.launches[tile.kernel]-before,
						c.sgemms-sgemmBefore, s.offset)
				}
				bound := 4*math.Ldexp(1, -22) + float64(s.k)*math.Ldexp(1, -23)
				bad := 0
				for i := range s.rows {
					for j := range s.n {
						var ref, mag float64
						for l := range s.k {
							p := float64(x[s.offset+i*s.k+l]) * float64(w[j*s.k+l])
							ref += p
							mag += math.Abs(p)
						}
						if d := math.Abs(float64(got[i*s.n+j]) - ref); d > bound*mag || math.IsNaN(d) {
							if bad++; bad <= 5 {
								t.Errorf("y[%d][%d] = %.9g, float64 gives %.9g: off by %.3g of Σ|x·w|, allowed %.3g", i, j, got[i*s.n+j], ref, d/mag, bound)
							}
						}
					}
				}
			})
		}
	}
}

// TestEmulatedTF32x3 runs gemm_tf32x3 on the emulator (whose tensor-core
// step follows the PTX ISA's fragment layouts): the products against
// float64, then the ops of the conformance suite with every product it can
// take on it. (The models too take a minute and a half here, emulating
// each tensor-core step with two fiber switches per thread; the GPU runs
// them, TestConformanceTF32x3.)
func TestEmulatedTF32x3(t *testing.T) {
	b := newEmuBackend(t)
	c := useTF32x3(b)
	checkTF32x3Products(t, b, c)
	backendtest.Ops(t, b, backendtest.Float32)
	if c.launches["gemm_tf32x3"] == 0 || c.launches["gemm_tf32x3_64"] == 0 {
		t.Errorf("gemm_tf32x3 ran %d times, gemm_tf32x3_64 %d", c.launches["gemm_tf32x3"], c.launches["gemm_tf32x3_64"])
	}
}

// TestConformanceTF32x3 is the same on the GPU, the models included.
func TestConformanceTF32x3(t *testing.T) {
	b := openOrSkip(t)
	c := useTF32x3(b)
	checkTF32x3Products(t, b, c)
	backendtest.Ops(t, b, backendtest.Float32)
	backendtest.Models(t, b, backendtest.Float32)
	t.Logf("gemm_tf32x3 ran %d times, gemm_tf32x3_64 %d, cuBLAS %d", c.launches["gemm_tf32x3"], c.launches["gemm_tf32x3_64"], c.sgemms)
}

// TestGEMMEnv checks that $MEAZO_CUDA_GEMM=tf32x3, and only it, turns
// gemm_tf32x3 on, and that the description says so.
func TestGEMMEnv(t *testing.T) {
	for env, want := range map[string]int{"": 0, "cublas": 0, "tf32": 0, "tf32x3": tf32x3Rows} {
		t.Setenv(GEMMEnv, env)
		b := newBackend(nil, "gpu", 48<<10)
		if b.tf32x3MinRows != want || strings.Contains(b.Describe(), "3xTF32") != (want > 0) {
			t.Errorf("%s=%q: tf32x3MinRows %d, description %q; want %d", GEMMEnv, env, b.tf32x3MinRows, b.Describe(), want)
		}
	}
}
