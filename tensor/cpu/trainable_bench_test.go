package cpu

import (
	"math/rand/v2"
	"testing"

	"github.com/meazo-go/meazo/noise"
	"github.com/meazo-go/meazo/tensor"
	"github.com/meazo-go/meazo/update"
)

// BenchmarkUpdateWeight reports the rate (bytes of weights read and
// written) of a full-parameter update of a 96 MiB matrix, past the caches as
// a model's weights are, on each path of the element-wise loops the CPU has
// (avx512, avx2, scalar): "sgd" is MEAZO's and ZO-SGD's q = 1 step, "adam"
// ZO-Adam's (with its two moments), "momentum" ZO-SGD's with momentum,
// "sgd-bf16" and "adam-bf16" the first two on bfloat16 weights (the bytes
// counted as float32's); against the parts of the first, "noise" (the
// normals alone, drawn in the panels' layout) and "pass" (a plain
// read-modify-write of every weight).
func BenchmarkUpdateWeight(b *testing.B) {
	const n, k = 24576, 1024
	wk := Workers(0)
	w := Pack(wk, randMat(rand.New(rand.NewPCG(1, 1)), n*k), n, k)
	be := &Backend{wk: wk}
	u := &tensor.Update{Streams: []noise.Stream{{Seed: 1, Step: 2}}, Dist: noise.Normal, Norms: []float64{1},
		Weights: []float64{0.5}, Rule: update.Rule{Kind: update.SGD, LR: 1e-7}}
	adam, momentum := *u, *u
	adam.Rule = update.Rule{Kind: update.Adam, LR: 1e-7, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, C1: 1, C2: 1}
	momentum.Rule = update.Rule{Kind: update.SGD, LR: 1e-7, Momentum: 0.9}
	m, v := be.NewState(w), be.NewState(w)
	be.updateWeight(w, m, v, &adam) // the state's pages touched
	w16 := PackBF16(randMat(rand.New(rand.NewPCG(1, 1)), n*k), n, k)
	m16, v16 := be.NewState(w16), be.NewState(w16)
	be.updateWeight(w16, m16, v16, &adam)
	defer restoreTrainable()
	cases := []struct {
		name    string
		w, m, v tensor.Weight
		u       *tensor.Update
	}{{"sgd", w, nil, nil, u}, {"adam", w, m, v, &adam}, {"momentum", w, m, nil, &momentum},
		{"sgd-bf16", w16, nil, nil, u}, {"adam-bf16", w16, m16, v16, &adam}}
	for _, path := range trainablePaths() {
		path.use()
		for _, c := range cases {
			b.Run(path.name+"/"+c.name, func(b *testing.B) {
				b.SetBytes(8 * n * k)
				for b.Loop() {
					be.updateWeight(c.w, c.m, c.v, c.u)
				}
			})
		}
	}
	restoreTrainable()
	b.Run("noise", func(b *testing.B) {
		b.SetBytes(8 * n * k)
		for b.Loop() {
			wk.Tasks(panels(n), func(pi int) {
				var z [updateChunk * nr]float32
				for k0 := 0; k0 < k; k0 += updateChunk {
					u.Streams[0].FillPanel(z[:], pi*nr*k+k0, k, nr, updateChunk, nr, u.Dist, 1)
				}
			})
		}
	})
	b.Run("pass", func(b *testing.B) {
		b.SetBytes(8 * n * k)
		for b.Loop() {
			wk.Tasks(panels(n), func(pi int) {
				d := w.data[pi*k*nr : (pi+1)*k*nr]
				for i := range d {
					d[i] *= 1.0000001
				}
			})
		}
	})
}

// BenchmarkPerturbPair reports the rate (weights read) at which the
// perturbed GEMM forms W + εZ and W − εZ of one panel slice as deep as the
// noise it draws at once (noiseDepth), in the caches as there, float32 and
// bfloat16, on each path the CPU has.
func BenchmarkPerturbPair(b *testing.B) {
	const n = noiseDepth * nr
	rng := rand.New(rand.NewPCG(1, 1))
	w, z := randMat(rng, n), randMat(rng, n)
	w16 := make([]uint16, n)
	for i, v := range w {
		w16[i] = f32ToBF16(v)
	}
	plus, minus := make([]float32, n), make([]float32, n)
	defer restoreTrainable()
	for _, path := range trainablePaths() {
		path.use()
		b.Run(path.name+"/f32", func(b *testing.B) {
			b.SetBytes(4 * n)
			for b.Loop() {
				perturbPair(plus, minus, w, z, 1e-3)
			}
		})
		b.Run(path.name+"/bf16", func(b *testing.B) {
			b.SetBytes(4 * n)
			for b.Loop() {
				perturbPairBF16(plus, minus, w16, z, 1e-3)
			}
		})
	}
}
