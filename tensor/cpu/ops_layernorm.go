package cpu

import (
	"math"

	"github.com/meazo-go/meazo/tensor"
)

// The operations of OPT-style blocks (LayerNorm with a bias, biased
// projections, ReLU): scalar loops around the vector float64 reductions
// (sum64, sumSq), which give the same bits on every path. They are a few
// per cent of a forward pass; the GEMMs are the rest.

// LayerNorm is tensor.Backend's LayerNorm: for each row, mean = Σx/n and
// var = Σ(x−mean)²/n in float64 (sumPartials order) rounded to float32, then
// dst = ((x − mean)·rstd)·weight + bias with every operation rounded to
// float32. dst may alias x: the deviations are written into dst first.
func LayerNorm(wk Workers, dst, x, weight, bias []float32, rows, n int, eps float32) {
	weight, bias = weight[:n], bias[:n]
	wk.For(rows, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			xr, dr := x[r*n:(r+1)*n], dst[r*n:(r+1)*n]
			mean := float32(sum64(xr) / float64(n))
			for j, v := range xr {
				dr[j] = v - mean
			}
			variance := float32(sumSq(dr) / float64(n))
			rstd := float32(1 / math.Sqrt(float64(variance+eps)))
			for j, d := range dr {
				// The conversions round each product, so that no build fuses
				// them into a multiply-add (the CUDA kernel rounds each too).
				dr[j] = float32(float32(d*rstd)*weight[j]) + bias[j]
			}
		}
	})
}

// AddBias adds bias [n] to each of the rows rows of y [rows][n].
func AddBias(wk Workers, y, bias []float32, rows, n int) {
	bias = bias[:n]
	wk.For(rows, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			add(y[r*n:(r+1)*n], bias)
		}
	})
}

// ReLU sets the elements of x below zero to zero (−0 and NaN stay).
func ReLU(wk Workers, x []float32) {
	const chunk = 1 << 14
	wk.For((len(x)+chunk-1)/chunk, func(lo, hi int) {
		for i := lo * chunk; i < min(hi*chunk, len(x)); i++ {
			if x[i] < 0 {
				x[i] = 0
			}
		}
	})
}

func (b *Backend) LayerNorm(dst, x, weight, bias tensor.Buf, rows, n int, eps float32) {
	LayerNorm(b.wk, host(dst), host(x), host(weight), host(bias), rows, n, eps)
}

func (b *Backend) AddBias(y, bias tensor.Buf, rows, n int) {
	AddBias(b.wk, host(y), host(bias), rows, n)
}

func (b *Backend) ReLU(x tensor.Buf) { ReLU(b.wk, host(x)) }
