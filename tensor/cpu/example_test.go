package cpu_test

import (
	"fmt"

	"github.com/meazo-go/meazo/tensor"
	_ "github.com/meazo-go/meazo/tensor/cpu" // registers the "cpu" backend
)

// A backend opened by name, as a config's model.backend names it, and one
// product y = x·Wᵀ through it. W is stored once (Pack, in HF's out × in
// layout) and reused; x and y are the backend's buffers, whose values
// reach the host through ToHost. (Small integers: every value is exact, the
// same on every CPU and GEMM path.)
func Example() {
	be, _, err := tensor.Open("cpu", tensor.Options{Threads: 2})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer be.Close()
	w := be.Pack([]float32{ // W [3][2]: 3 outputs of 2 inputs
		1, 0,
		0, 1,
		1, 1,
	}, 3, 2, false)
	defer be.FreeWeight(w)
	x := be.FromHost([]float32{ // x [2][2]: 2 rows
		2, 3,
		4, 5,
	})
	y := be.Alloc(2 * 3)
	defer be.Free(x, y)
	be.MatMul(y, x, 2, w)
	fmt.Println(be.Name(), be.ToHost(y))
	// Output:
	// cpu [2 3 5 4 5 9]
}
