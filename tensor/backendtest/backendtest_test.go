package backendtest

import (
	"testing"

	"github.com/meazo-go/meazo/tensor/cpu"
)

// The CPU backend is the suite's reference, so it must pass bit-identically
// with any thread count; Device (CPU kernels behind copying uploads, with
// accounting) must too. The model-level half of the suite runs on both in
// model/modeltest.
func TestConformance(t *testing.T) {
	t.Run("cpu-1-thread", func(t *testing.T) { Ops(t, cpu.New(cpu.Options{Threads: 1}), Exact) })
	t.Run("cpu-3-threads", func(t *testing.T) { Ops(t, cpu.New(cpu.Options{Threads: 3}), Exact) })
	t.Run("cpu-trainer-1-thread", func(t *testing.T) { Trainer(t, cpu.New(cpu.Options{Threads: 1}), Exact) })
	t.Run("cpu-trainer-3-threads", func(t *testing.T) { Trainer(t, cpu.New(cpu.Options{Threads: 3}), Exact) })
	t.Run("device", func(t *testing.T) {
		d := NewDevice()
		Ops(t, d, Exact)
		if d.Downloads == 0 {
			t.Errorf("the suite downloaded nothing from the device: the checks did not run")
		}
	})
}
