// Package tensorcore models the arithmetic of Hopper's tensor cores on TF32
// operands, and the float32-accurate product the CUDA backend builds from
// it (3xTF32, tensor/cuda/kernels_sm90a/gemm_3xtf32.cu), so that the kernel
// emulator's results can be checked bit for bit on a machine without a GPU
// and accumulation schemes compared (dev/cuda/tcsim.go).
//
// The model is Microsoft's MMA-Sim's for Hopper (github.com/microsoft/MMA-Sim,
// measured on the hardware): one k8 step truncates its inputs to TF32,
// aligns the accumulator and the 8 exact products to the largest exponent
// with 25 fractional bits, truncating each, sums them exactly and truncates
// the sum to float32. It reproduces what an H100 measured of a 3xTF32
// kernel without promotion (rms errors 7e-6 at k = 1,024 and 5.7e-5 at
// 8,192; the model 7.2e-6 and 5.8e-5). Subnormal values are not modelled.
// The kernel emulator (tensor/cuda/emu/emu.cpp) implements the same model
// in C++.
package tensorcore

import "math"

// TF32 rounds v to TF32 as cvt.rna.tf32.f32 does: to nearest, ties away
// from zero; Inf and NaN as they are.
func TF32(v float32) float32 {
	b := math.Float32bits(v)
	if b&0x7f800000 == 0x7f800000 {
		return v
	}
	return math.Float32frombits((b + 0x1000) &^ 0x1fff)
}

// Split gives v's TF32 part and the TF32 rounding of the rest, what
// 3xTF32 multiplies.
func Split(v float32) (hi, lo float32) {
	hi = TF32(v)
	return hi, TF32(v - hi)
}

// Step is one k8 step of the tensor cores: c + a·b for 8 values of a and b.
func Step(c float32, a, b []float32) float32 {
	var sig [9]float64
	var exp [9]int
	n := 0
	term := func(v float64) {
		if v != 0 {
			f, e := math.Frexp(v)
			sig[n], exp[n] = f*2, e-1
		}
		n++
	}
	term(float64(c))
	for i := range 8 {
		ta := math.Float32frombits(math.Float32bits(a[i]) &^ 0x1fff)
		tb := math.Float32frombits(math.Float32bits(b[i]) &^ 0x1fff)
		term(float64(ta) * float64(tb)) // exact: two 11-bit significands
	}
	emax, any := 0, false
	for i := range n {
		if sig[i] != 0 && (!any || exp[i] > emax) {
			emax, any = exp[i], true
		}
	}
	if !any {
		return 0
	}
	sum := 0.0
	for i := range n {
		if sig[i] != 0 {
			sum += math.Trunc(math.Ldexp(sig[i], 25+exp[i]-emax))
		}
	}
	v := math.Ldexp(sum, emax-25)
	f := float32(v)
	if math.Abs(float64(f)) > math.Abs(v) { // truncated, not rounded
		f = math.Nextafter32(f, 0)
	}
	return f
}

// Dot3xTF32 is one output of gemm_3xtf32 in its order of operations: over
// each k8 step, lo·hi, hi·lo and hi·hi of the split x and w on the tensor
// cores into an accumulator that restarts every `every` steps (0: never)
// and is then added, rounded to nearest, to a float32 sum. gemm_3xtf32
// restarts every 4 steps (a tile of 32 k); len(x) = len(w), a multiple of 8.
func Dot3xTF32(x, w []float32, every int) float32 {
	xh, xl := splitAll(x)
	wh, wl := splitAll(w)
	var sum, acc float32
	for k, step := 0, 1; k < len(x); k, step = k+8, step+1 {
		acc = Step(acc, xl[k:k+8], wh[k:k+8])
		acc = Step(acc, xh[k:k+8], wl[k:k+8])
		acc = Step(acc, xh[k:k+8], wh[k:k+8])
		if every > 0 && step%every == 0 {
			sum, acc = sum+acc, 0
		}
	}
	return sum + acc
}

// Dot3xTF32Split is one output of gemm_3xtf32 with k split in slices (its
// kernels gemm_3xtf32_split and gemm_3xtf32_reduce): of the T = len(x)/32
// tiles of k, slice z takes [⌊z·T/slices⌋, ⌊(z+1)·T/slices⌋), its own
// Dot3xTF32 (promoted every tile), and the slices' sums are added in
// order, p0 + p1 + …, each addition rounded to nearest in float32.
// len(x) = len(w), a multiple of 32; 1 ≤ slices ≤ T.
func Dot3xTF32Split(x, w []float32, slices int) float32 {
	tiles := len(x) / 32
	var sum float32
	for z := range slices {
		k0, k1 := 32*(z*tiles/slices), 32*((z+1)*tiles/slices)
		p := Dot3xTF32(x[k0:k1], w[k0:k1], 4)
		if z == 0 {
			sum = p
		} else {
			sum += p
		}
	}
	return sum
}

func splitAll(v []float32) (hi, lo []float32) {
	hi, lo = make([]float32, len(v)), make([]float32, len(v))
	for i, x := range v {
		hi[i], lo[i] = Split(x)
	}
	return hi, lo
}
