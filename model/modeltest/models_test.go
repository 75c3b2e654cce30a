package modeltest

import (
	"testing"

	"github.com/meazo-go/meazo/tensor/backendtest"
	"github.com/meazo-go/meazo/tensor/cpu"
)

// The model-level suite on the CPU backend, its reference, which must pass
// bit-identically, also with stacked projections; and on
// backendtest.Device (CPU kernels behind copying uploads, with accounting),
// which checks that the model does all its arithmetic through the seam,
// downloads nothing while scoring and frees what it makes.
func TestConformance(t *testing.T) {
	t.Run("cpu-1-thread", func(t *testing.T) {
		b := cpu.New(cpu.Options{Threads: 1})
		Models(t, b, backendtest.Exact)
		Ministral(t, b, backendtest.Exact)
	})
	// Under -short (the runs on emulated CPUs: scripts/test_cpus.sh,
	// test_arm64.sh) the CPU's kernels are what is checked: the stacked
	// and device runs below take the same kernels and check the seam, which
	// the native runs do.
	if testing.Short() {
		t.Log("-short: the cpu-stacked and device runs are left to the native (not -short) test run")
		return
	}
	// Stacked projections (q|k|v and gate|up as one product, split by
	// Gather): the CPU GEMM sums each output in the same order at any
	// width, so the model's results keep their bits.
	t.Run("cpu-stacked", func(t *testing.T) {
		Models(t, cpu.New(cpu.Options{Threads: 2, StackProjections: true}), backendtest.Exact)
	})
	t.Run("device", func(t *testing.T) {
		d := backendtest.NewDevice()
		Models(t, d, backendtest.Exact)
		Ministral(t, d, backendtest.Exact)
		t.Run("Save", func(t *testing.T) { Save(t, d) })
		if d.Downloads == 0 {
			t.Errorf("the suite downloaded nothing from the device: the checks did not run")
		}
	})
}
