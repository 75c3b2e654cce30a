package backendtest

import (
	"testing"

	"github.com/meazo-go/meazo/tensor/cpu"
)

// The CPU backend is the suite's reference, so it must pass bit-identically
// with any thread count; Device (CPU kernels behind copying uploads, with
// accounting) checks that the model does all its arithmetic through the
// seam, downloads nothing while scoring and frees what it makes.
func TestConformance(t *testing.T) {
	t.Run("cpu-1-thread", func(t *testing.T) {
		b := cpu.New(cpu.Options{Threads: 1})
		Ops(t, b, Exact)
		Models(t, b, Exact)
	})
	t.Run("cpu-3-threads", func(t *testing.T) { Ops(t, cpu.New(cpu.Options{Threads: 3}), Exact) })
	t.Run("cpu-trainer-1-thread", func(t *testing.T) { Trainer(t, cpu.New(cpu.Options{Threads: 1})) })
	t.Run("cpu-trainer-3-threads", func(t *testing.T) { Trainer(t, cpu.New(cpu.Options{Threads: 3})) })
	// Stacked projections (q|k|v and gate|up as one product, split by
	// Gather): the CPU GEMM sums each output in the same order at any
	// width, so the model's results keep their bits.
	t.Run("cpu-stacked", func(t *testing.T) { Models(t, cpu.New(cpu.Options{Threads: 2, StackProjections: true}), Exact) })
	t.Run("device", func(t *testing.T) {
		d := NewDevice()
		Ops(t, d, Exact)
		Models(t, d, Exact)
		if d.Downloads == 0 {
			t.Errorf("the suite downloaded nothing from the device: the checks did not run")
		}
	})
}
