package backendtest

import (
	"math"

	"github.com/meazo-go/meazo/tensor"
)

// layerNormCases are the checks of the ops of OPT-style blocks: LayerNorm
// with a bias, a projection's bias, ReLU.
func layerNormCases() []opCase { return append(layerNormOnlyCases(), biasReLUCases()...) }

// layerNormOnlyCases check LayerNorm: at offsets, rows wider than a GPU
// block's threads and than the CUDA kernel's shared tile, narrower than its
// partial sums, a constant row.
func layerNormOnlyCases() []opCase {
	return []opCase{
		{"LayerNorm", func(b tensor.Backend, in *inputs) []float32 {
			const rows, n = 5, 45
			x := in.vec(rows*n+3, 3)
			for i := range x {
				x[i] += 2 // a mean far from zero: the deviations are what count
			}
			xb, w, bias, dst := b.FromHost(x), b.FromHost(in.vec(n, 1)), b.FromHost(in.vec(n, 1)), b.Alloc(rows*n+1)
			b.LayerNorm(dst.Slice(1, 1+rows*n), xb.Slice(3, 3+rows*n), w, bias, rows, n, 1e-5) // views at offsets
			b.Free(xb, w, bias)
			return down(b, dst)
		}},
		{"LayerNormInPlaceWide", func(b tensor.Backend, in *inputs) []float32 {
			const n = 2048 // OPT-1.3B's width: more elements than threads
			x, w, bias := b.FromHost(in.vec(3*n, 1)), b.FromHost(in.vec(n, 1)), b.FromHost(in.vec(n, 0.1))
			b.LayerNorm(x, x, w, bias, 3, n, 1e-5)
			b.Free(w, bias)
			return down(b, x)
		}},
		{"LayerNormInPlaceTiled", func(b tensor.Backend, in *inputs) []float32 {
			const n = 5000 // wider than the CUDA kernel's shared tile of 2048: two whole tiles and a part, not a multiple of 16
			x := in.vec(2*n, 1)
			for i := range x {
				x[i] -= 3
			}
			xb, w, bias := b.FromHost(x), b.FromHost(in.vec(n, 1)), b.FromHost(in.vec(n, 0.1))
			b.LayerNorm(xb, xb, w, bias, 2, n, 1e-5)
			b.Free(w, bias)
			return down(b, xb)
		}},
		{"LayerNormInPlaceTwoTiles", func(b tensor.Backend, in *inputs) []float32 {
			const n = 4096 // two whole tiles of the CUDA kernel's 2048: no part tile
			x, w, bias := b.FromHost(in.vec(2*n, 2)), b.FromHost(in.vec(n, 1)), b.FromHost(in.vec(n, 0.1))
			b.LayerNorm(x, x, w, bias, 2, n, 1e-5)
			b.Free(w, bias)
			return down(b, x)
		}},
		{"LayerNormNarrow", func(b tensor.Backend, in *inputs) []float32 {
			const rows, n = 3, 7 // fewer elements than the 16 partial sums
			x := in.vec(rows*n, 1)
			for i := range x {
				x[i] += 5
			}
			xb, w, bias, dst := b.FromHost(x), b.FromHost(in.vec(n, 1)), b.FromHost(in.vec(n, 1)), b.Alloc(rows*n)
			b.LayerNorm(dst, xb, w, bias, rows, n, 1e-5)
			b.Free(xb, w, bias)
			return down(b, dst)
		}},
		{"LayerNormConstantRow", func(b tensor.Backend, in *inputs) []float32 { // variance 0: rstd = 1/√eps, the output is the bias
			const n = 40
			x := make([]float32, 2*n)
			for i := range x {
				x[i] = 0.7
			}
			xb, w, bias := b.FromHost(x), b.FromHost(in.vec(n, 1)), b.FromHost(in.vec(n, 1))
			b.LayerNorm(xb, xb, w, bias, 2, n, 1e-5)
			b.Free(w, bias)
			return down(b, xb)
		}},
	}
}

// biasReLUCases check a projection's bias and ReLU, and the empty calls.
func biasReLUCases() []opCase {
	return []opCase{
		{"AddBias", func(b tensor.Backend, in *inputs) []float32 {
			const rows, n = 7, 300
			y, bias := b.FromHost(in.vec(rows*n+2, 1)), b.FromHost(in.vec(n+1, 1))
			b.AddBias(y.Slice(2, 2+rows*n), bias.Slice(1, 1+n), rows, n)
			b.Free(bias)
			return down(b, y)
		}},
		{"ReLU", func(b tensor.Backend, in *inputs) []float32 {
			v := in.vec(5000, 1)
			v[0], v[1], v[2] = float32(math.Copysign(0, -1)), float32(math.NaN()), float32(math.Inf(-1))
			x := b.FromHost(v)
			b.ReLU(x.Slice(0, 4999))
			return down(b, x)
		}},
		{"EmptyLayerNormOps", func(b tensor.Backend, in *inputs) []float32 { // zero rows: nothing is written
			x, w := b.FromHost(in.vec(8, 1)), b.FromHost(in.vec(8, 1))
			b.LayerNorm(x, x, w, w, 0, 8, 1e-5)
			b.AddBias(x, w, 0, 8)
			b.ReLU(x.Slice(0, 0))
			b.Free(w)
			return down(b, x)
		}},
	}
}
