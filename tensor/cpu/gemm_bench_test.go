package cpu

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/meazo-go/meazo/noise"
	"github.com/meazo-go/meazo/tensor"
)

// benchLinears are the nn.Linear shapes of the two target models (K in, N out).
var benchLinears = []struct {
	name string
	k, n int
}{
	{"llama1b/q_o", 2048, 2048},
	{"llama1b/k_v", 2048, 512},
	{"llama1b/gate_up", 2048, 8192},
	{"llama1b/down", 8192, 2048},
	{"llama1b/lm_head", 2048, 128256},
	{"qwen06b/q", 1024, 2048},
	{"qwen06b/k_v", 1024, 1024},
	{"qwen06b/o", 2048, 1024},
	{"qwen06b/gate_up", 1024, 3072},
	{"qwen06b/down", 3072, 1024},
	{"qwen06b/lm_head", 1024, 151936},
}

// BenchmarkMatMulPacked reports GFLOP/s of y = x·Wᵀ on the model shapes for
// M ∈ {8, 128, 1024} rows, on the current path (MEAZO_GEMM forces one).
// The lm_head shapes need 0.5–0.6 GiB each; filter them out with -bench.
func BenchmarkMatMulPacked(b *testing.B) {
	const wk = Workers(0)
	r := rand.New(rand.NewPCG(1, 1))
	for _, l := range benchLinears {
		var w *Packed
		for _, m := range []int{8, 128, 1024} {
			b.Run(fmt.Sprintf("%s/M=%d", l.name, m), func(b *testing.B) {
				if w == nil {
					w = Pack(wk, randMat(r, l.n*l.k), l.n, l.k)
				}
				x := randMat(r, m*l.k)
				y := make([]float32, m*l.n)
				b.ResetTimer()
				for b.Loop() {
					MatMulPacked(wk, y, x, m, w)
				}
				b.ReportMetric(2*float64(m)*float64(l.n)*float64(l.k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// BenchmarkMatMulNT: attention scores (q·kᵀ, head_dim 64/128) and LoRA x·Aᵀ (r=16).
func BenchmarkMatMulNT(b *testing.B) {
	const wk = Workers(0)
	r := rand.New(rand.NewPCG(2, 2))
	for _, s := range [][3]int{{128, 128, 64}, {512, 512, 128}, {1024, 16, 2048}} {
		m, n, k := s[0], s[1], s[2]
		b.Run(fmt.Sprintf("m=%d/n=%d/k=%d", m, n, k), func(b *testing.B) {
			a, bb, c := randMat(r, m*k), randMat(r, n*k), make([]float32, m*n)
			for b.Loop() {
				MatMulNT(wk, c, a, bb, m, n, k)
			}
			b.ReportMetric(2*float64(m)*float64(n)*float64(k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// BenchmarkMatMulPackedBF16: the bf16-weight variant on a few shapes.
func BenchmarkMatMulPackedBF16(b *testing.B) {
	const wk = Workers(0)
	r := rand.New(rand.NewPCG(3, 3))
	for _, l := range benchLinears[:4] {
		var w *Packed
		for _, m := range []int{8, 128, 1024} {
			b.Run(fmt.Sprintf("%s/M=%d", l.name, m), func(b *testing.B) {
				if w == nil {
					w = PackBF16(randMat(r, l.n*l.k), l.n, l.k)
				}
				x := randMat(r, m*l.k)
				y := make([]float32, m*l.n)
				for b.Loop() {
					MatMulPacked(wk, y, x, m, w)
				}
				b.ReportMetric(2*float64(m)*float64(l.n)*float64(l.k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// BenchmarkMatMulPerturbed reports GFLOP/s of a full-parameter step's
// product on Qwen3-0.6B's layer shapes, M = 2048 rows (16×64 tokens for
// each of a direction's + and − variants), against the plain product of the
// same rows: "plain" is MatMulPacked, "pair" reads W + εZ for the first
// half of the rows and W − εZ for the second (noise drawn once for both).
func BenchmarkMatMulPerturbed(b *testing.B) {
	const wk, m = Workers(0), 2048
	r := rand.New(rand.NewPCG(1, 1))
	for _, l := range benchLinears[5:10] {
		w := Pack(wk, randMat(r, l.n*l.k), l.n, l.k)
		x := randMat(r, m*l.k)
		y := make([]float32, m*l.n)
		pt := func(scale float64) *tensor.Perturbation {
			return &tensor.Perturbation{Noise: tensor.Noise{Stream: noise.Stream{Seed: 1, Step: 2}, Dist: noise.Normal, Norm: 1}, Scale: scale}
		}
		segs := []tensor.Segment{{Rows: m / 2, P: pt(1e-3)}, {Rows: m / 2, P: pt(-1e-3)}}
		for _, mode := range []string{"plain", "pair"} {
			b.Run(fmt.Sprintf("%s/%s", l.name, mode), func(b *testing.B) {
				for b.Loop() {
					if mode == "plain" {
						MatMulPacked(wk, y, x, m, w)
					} else {
						MatMulPackedPerturbed(wk, y, x, m, w, segs)
					}
				}
				b.ReportMetric(2*float64(m)*float64(l.n)*float64(l.k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// BenchmarkMatMulNTAdd: LoRA's second product, y += s·(x·Aᵀ)·Bᵀ with x·Aᵀ
// given (r = 16), onto the outputs of Qwen3-0.6B's projections at 16×64
// rows: the output is read and written once per call.
func BenchmarkMatMulNTAdd(b *testing.B) {
	be := New(Options{})
	r := rand.New(rand.NewPCG(4, 4))
	for _, s := range [][3]int{{1024, 1024, 16}, {1024, 3072, 16}, {128, 2048, 16}} {
		m, n, k := s[0], s[1], s[2]
		b.Run(fmt.Sprintf("m=%d/n=%d/k=%d", m, n, k), func(b *testing.B) {
			x, bb, y := randMat(r, m*k), randMat(r, n*k), randMat(r, m*n)
			for b.Loop() {
				be.MatMulNTAdd(HostBuf(y), HostBuf(x), HostBuf(bb), m, n, k, 0.5)
			}
			b.ReportMetric(2*float64(m)*float64(n)*float64(k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
