package sweep_test

import (
	"fmt"

	"github.com/meazo-go/meazo/sweep"
)

// ExampleFineGrid is the paper's second search stage: after the coarse grid
// found η* = 1e-4, the fine grid fills the gap between its neighbours (5e-5
// and 5e-4) with every rate of one significant digit, spelt as run
// directories name them.
func ExampleFineGrid() {
	fine, err := sweep.FineGrid(sweep.DefaultCoarse, 1e-4)
	if err != nil {
		panic(err)
	}
	fmt.Println(fine)
	// Output:
	// [6e-5 7e-5 8e-5 9e-5 2e-4 3e-4 4e-4]
}

// ExampleRateName shows the one spelling of a learning rate that run
// directory names, meazo-sweep's --set and scripts/sweep.sh share: 0.01 and
// 1e-2 are the same run.
func ExampleRateName() {
	for _, lr := range []float64{0.01, 1e-2, 0.00025, 1} {
		fmt.Printf("lr=%s_seed=0\n", sweep.RateName(lr))
	}
	// Output:
	// lr=1e-2_seed=0
	// lr=1e-2_seed=0
	// lr=2.5e-4_seed=0
	// lr=1e0_seed=0
}
