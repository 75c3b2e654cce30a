// Package depbench measures the libraries docs/DEPENDENCIES.md decides on
// against this project's own code, in a module of its own so that what it
// compares never enters meazo-go's go.mod:
//
//	cd scripts/depbench && GOEXPERIMENT=simd go test -bench . -benchtime 5x
package depbench

import (
	"math/rand/v2"
	"testing"

	"github.com/meazo-go/meazo/tensor/cpu"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// n is the side of the float32 products: 1024³, 2.1 GFLOP each.
const n = 1024

func randMat(seed uint64) []float32 {
	r := rand.New(rand.NewPCG(seed, 1))
	v := make([]float32, n*n)
	for i := range v {
		v[i] = r.Float32() - 0.5
	}
	return v
}

// BenchmarkMatMul1024 times C = A·B for 1024×1024 float32 matrices with
// meazo-go's GEMM (tensor/cpu, the path the CPU gets) and with gorgonia's
// tensor.MatMul (gonum's pure-Go SGEMM underneath), each on every core.
func BenchmarkMatMul1024(b *testing.B) {
	a, bb := randMat(1), randMat(2)
	b.Run("meazo-"+cpu.GEMMPath(), func(b *testing.B) {
		wk := cpu.Workers(0)
		c := make([]float32, n*n)
		for b.Loop() {
			cpu.MatMulNN(wk, c, a, bb, n, n, n)
		}
		b.ReportMetric(2*n*n*n*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	})
	b.Run("gorgonia", func(b *testing.B) {
		ta := tensor.New(tensor.WithShape(n, n), tensor.WithBacking(a))
		tb := tensor.New(tensor.WithShape(n, n), tensor.WithBacking(bb))
		for b.Loop() {
			if _, err := tensor.MatMul(ta, tb); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(2*n*n*n*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	})
}

// BenchmarkGraphMatMul1024 is the same product as a gorgonia expression
// graph run by its tape machine (gorgonia.org/gorgonia's forward pass: what
// a forward-only trainer would use), for its overhead on top of tensor.MatMul.
func BenchmarkGraphMatMul1024(b *testing.B) {
	g := gorgonia.NewGraph()
	ta := tensor.New(tensor.WithShape(n, n), tensor.WithBacking(randMat(1)))
	tb := tensor.New(tensor.WithShape(n, n), tensor.WithBacking(randMat(2)))
	x := gorgonia.NodeFromAny(g, ta, gorgonia.WithName("a"))
	y := gorgonia.NodeFromAny(g, tb, gorgonia.WithName("b"))
	if _, err := gorgonia.Mul(x, y); err != nil {
		b.Fatal(err)
	}
	vm := gorgonia.NewTapeMachine(g)
	defer vm.Close()
	for b.Loop() {
		if err := vm.RunAll(); err != nil {
			b.Fatal(err)
		}
		vm.Reset()
	}
	b.ReportMetric(2*n*n*n*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}
