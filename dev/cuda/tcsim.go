//go:build ignore

// tcsim simulates float32-accurate products on Hopper's tensor cores
// (3xTF32) on the CPU, to choose how gemm_wgmma.cu accumulates before a GPU
// runs it:
//
//	go run dev/cuda/tcsim.go -k 1024 -n 2000
//
// The tensor cores' arithmetic is package internal/tensorcore's model
// (Microsoft's MMA-Sim's, for Hopper). It is checked against hardware by
// dev/cuda/gemm_tf32x3.cu, whose scheme ("never promoted" below) an H100
// measured at an rms error of 7e-6 (k = 1,024) and 5.7e-5 (k = 8,192): the
// model gives 7.2e-6 and 5.8e-5. "sgemm" is a float32 chain of fused multiply-adds, what
// a cuBLAS SGEMM thread does over k (the H100 measured 3e-7 and 1.6e-6; the
// model 5.5e-7 and 1.6e-6).
//
// Inputs as the harnesses draw them: x ~ N(0, 1), w ~ N(0, 1/k); errors of
// the outputs against float64: rms(y − y64)/rms(y64) and max |y − y64|/Σ|x·w|.
package main

import (
	"flag"
	"fmt"
	"math"
	"math/rand"

	"github.com/meazo-go/meazo/internal/tensorcore"
)

// sgemm is a float32 chain of fused multiply-adds.
func sgemm(x, w []float32) float32 {
	var acc float32
	for i := range x {
		acc = float32(math.FMA(float64(x[i]), float64(w[i]), float64(acc)))
	}
	return acc
}

// tf32x1 is plain TF32: one product per term, never promoted.
func tf32x1(x, w []float32) float32 {
	var acc float32
	xh, wh := make([]float32, 8), make([]float32, 8)
	for k := 0; k < len(x); k += 8 {
		for i := range 8 {
			xh[i], wh[i] = tensorcore.TF32(x[k+i]), tensorcore.TF32(w[k+i])
		}
		acc = tensorcore.Step(acc, xh, wh)
	}
	return acc
}

// tf32x3 takes lo·hi, hi·lo and hi·hi on the tensor cores into one
// accumulator that is added, rounded to nearest, to a float32 sum every
// `every` k8 steps and restarted from zero (never when every is 0).
func tf32x3(every int) func(x, w []float32) float32 {
	return func(x, w []float32) float32 { return tensorcore.Dot3xTF32(x, w, every) }
}

func main() {
	k := flag.Int("k", 1024, "the products' length (a multiple of 8)")
	outputs := flag.Int("n", 2000, "outputs to simulate")
	flag.Parse()
	methods := []struct {
		name string
		f    func(x, w []float32) float32
	}{
		{"sgemm (float32 FMA chain)", sgemm},
		{"tf32 (one product)", tf32x1},
		{"3xTF32 never promoted (gemm_tf32x3)", tf32x3(0)},
		{"3xTF32 promoted every k8 step", tf32x3(1)},
		{"3xTF32 promoted every 2 k8 steps", tf32x3(2)},
		{"3xTF32 promoted every 4 (gemm_wgmma/1)", tf32x3(4)},
		{"3xTF32 promoted every 8 (gemm_wgmma/2)", tf32x3(8)},
		{"3xTF32 promoted every 16", tf32x3(16)},
	}
	rng := rand.New(rand.NewSource(1))
	x, w := make([]float32, *k), make([]float32, *k)
	sq, worst := make([]float64, len(methods)), make([]float64, len(methods))
	ref2 := 0.0
	for o := 0; o < *outputs; o++ {
		for i := range x {
			x[i] = float32(rng.NormFloat64())
			w[i] = float32(rng.NormFloat64() / math.Sqrt(float64(*k)))
		}
		ref, mag := 0.0, 0.0
		for i := range x {
			ref += float64(x[i]) * float64(w[i])
			mag += math.Abs(float64(x[i]) * float64(w[i]))
		}
		ref2 += ref * ref
		for j, m := range methods {
			d := float64(m.f(x, w)) - ref
			sq[j] += d * d
			worst[j] = math.Max(worst[j], math.Abs(d)/mag)
		}
	}
	fmt.Printf("k = %d, %d outputs; errors against float64\n", *k, *outputs)
	fmt.Printf("%-40s %10s %10s %8s\n", "method", "rms", "max/Σ|xw|", "÷ sgemm")
	for j, m := range methods {
		rms := math.Sqrt(sq[j] / ref2)
		fmt.Printf("%-40s %10.2e %10.2e %8.2f\n", m.name, rms, worst[j], rms/math.Sqrt(sq[0]/ref2))
	}
}
